package route

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is a bad route rule in a file: Error() is one line naming the
// file, the line and the key.
type Error struct {
	File string
	Line int
	Key  string // "routes", "routes: allow", …
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s: %v", e.File, e.Line, e.Key, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// ruleKeys are the keys a rule may have.
func ruleKeys() []string {
	return []string{"path", "methods", "host", "allow", "groups", "second-factor", "max-age", "tokens"}
}

// Parse reads the value of "routes:" of file, a list of rules, into
// checked rules in order, each with its Source ("FILE:LINE"). An unknown
// or repeated key, a value of the wrong type and a bad value are an
// *Error. A missing or null node is no rules.
func Parse(file string, node *yaml.Node) ([]Rule, error) {
	node = resolve(node)
	if node == nil || node.Kind == yaml.ScalarNode && node.Tag == "!!null" {
		return nil, nil
	}
	if node.Kind != yaml.SequenceNode {
		return nil, &Error{file, node.Line, "routes", errors.New("want a list of rules (- path: /static/ …)")}
	}
	rules := make([]Rule, 0, len(node.Content))
	for _, item := range node.Content {
		r, err := parseRule(file, resolve(item))
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
	}
	return rules, nil
}

func parseRule(file string, node *yaml.Node) (Rule, error) {
	fail := func(line int, key string, err error) (Rule, error) {
		if key != "" {
			key = "routes: " + key
		} else {
			key = "routes"
		}
		return Rule{}, &Error{file, line, key, err}
	}
	if node.Kind != yaml.MappingNode {
		return fail(node.Line, "", errors.New("each rule is a mapping (path: …, allow: …)"))
	}
	r := Rule{Source: fmt.Sprintf("%s:%d", file, node.Line)}
	lines := map[string]int{}
	for i := 0; i+1 < len(node.Content); i += 2 {
		k, v := node.Content[i], resolve(node.Content[i+1])
		key := k.Value
		if at, seen := lines[key]; seen {
			return fail(k.Line, key, fmt.Errorf("repeated (first at line %d)", at))
		}
		lines[key] = k.Line
		var err error
		switch key {
		case "path":
			r.Path, err = stringValue(v)
		case "host":
			r.Host, err = stringValue(v)
		case "allow":
			var s string
			if s, err = stringValue(v); err == nil {
				if r.Allow, err = ParseAllow(s); err != nil {
					err = withHint(err, s, []string{"public", "authenticated", "deny"})
				}
			}
		case "methods":
			r.Methods, err = listValue(v, "[GET, HEAD]")
		case "groups":
			r.Groups, err = listValue(v, "[oidc:admins]")
		case "second-factor":
			var s string
			if s, err = stringValue(v); err == nil {
				r.SecondFactor, err = ParseSecondFactor(s)
			}
		case "max-age":
			var s string
			if s, err = stringValue(v); err == nil {
				r.MaxAge, err = ParseMaxAge(s)
			}
		case "tokens":
			r.Tokens, err = boolValue(v)
		default:
			return fail(k.Line, "", withHint(fmt.Errorf("unknown key %q", key), key, ruleKeys()))
		}
		if err != nil {
			return fail(v.Line, key, err)
		}
	}
	if _, ok := lines["path"]; !ok {
		return fail(node.Line, "", errors.New("a rule needs a path"))
	}
	if err := r.compile(); err != nil {
		var ke *keyError
		if errors.As(err, &ke) {
			return fail(lines[ke.key], ke.key, ke.err)
		}
		return fail(node.Line, "", err)
	}
	return r, nil
}

// resolve follows an alias to the node it names.
func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func stringValue(n *yaml.Node) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!str" {
		return "", fmt.Errorf("want a string, not %s", describe(n))
	}
	return n.Value, nil
}

func boolValue(n *yaml.Node) (bool, error) {
	var b bool
	if n.Kind != yaml.ScalarNode || n.Tag != "!!bool" || n.Decode(&b) != nil {
		return false, fmt.Errorf("want true or false, not %s", describe(n))
	}
	return b, nil
}

func listValue(n *yaml.Node, example string) ([]string, error) {
	if n.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("want a list such as %s, not %s", example, describe(n))
	}
	out := make([]string, 0, len(n.Content))
	for _, item := range n.Content {
		s, err := stringValue(resolve(item))
		if err != nil {
			return nil, fmt.Errorf("list item: %w", err)
		}
		out = append(out, s)
	}
	return out, nil
}

// describe names what a node holds, for a wrong-type error.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	switch n.Tag {
	case "!!null":
		return "nothing"
	case "!!bool":
		return "the boolean " + n.Value
	case "!!int", "!!float":
		return "the number " + n.Value
	}
	return fmt.Sprintf("%q", n.Value)
}

// withHint adds "(did you mean X?)" to err when given is a near miss of
// one of known: at most two letters wrong.
func withHint(err error, given string, known []string) error {
	best, bestDistance := "", 3
	for _, k := range known {
		if d := levenshtein(strings.ToLower(given), k); d < bestDistance {
			best, bestDistance = k, d
		}
	}
	if best == "" || best == given {
		return err
	}
	return fmt.Errorf("%w (did you mean %s?)", err, best)
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
