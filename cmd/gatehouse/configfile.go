package main

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
	"go.yaml.in/yaml/v3"

	"github.com/gatehouse-auth/gatehouse/proxy/route"
)

// The configuration file (--config, YAML) is one more source of flag
// values: every server flag may be set there under its own name without
// "--", a repeatable flag as a list. It ranks below the command line and
// the GATEHOUSE_* environment and above the defaults; a flag set at a
// higher level is not read from the file at all (a list is replaced, not
// merged). Besides flags it holds "routes:", the route rules.
//
// Secrets are not read from the file: smtp-password and the
// *-client-secret keys are refused, their *-file forms (a path to a file
// holding the secret) are accepted. A configuration file is often shared,
// versioned or mounted from a ConfigMap; a secret belongs in a file (or a
// Secret) of its own, readable by Gatehouse alone.

// maxConfigFile caps the configuration file's size.
const maxConfigFile = 1 << 20

// configFile is a parsed configuration file.
type configFile struct {
	path   string
	values []fileValue    // the flags it sets, in file order
	routes []route.Rule   // routes:, checked
	keys   map[string]int // every key and its line
}

// fileValue is one flag's value in the file.
type fileValue struct {
	flag string
	line int
	node *yaml.Node
}

// configReader reads the configuration file: its contents, and what a
// Stat taken before the read said (to watch the file from there).
type configReader func(path string) ([]byte, os.FileInfo, error)

// readConfigFile is the configReader of the file system.
func readConfigFile(path string) ([]byte, os.FileInfo, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > maxConfigFile {
		return nil, nil, fmt.Errorf("%s: larger than %d bytes", path, maxConfigFile)
	}
	return data, fi, nil
}

// fileError is a usage error at a line of the configuration file, naming
// the key: "gatehouse.yaml:3: mode: …".
func fileError(path string, line int, key, format string, args ...any) error {
	return usageErrorf("%s:%d: %s: %s", path, line, key, fmt.Sprintf(format, args...))
}

// yamlLine finds the line in a YAML syntax error.
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseConfigFile reads the settings and routes of data, the contents of
// path. Every key must name a server flag of fs (or be routes); a
// repeated key, an unknown key (with the nearest known one), a raw secret
// and a bad rule are usage errors naming the file, the line and the key.
// Values are checked when applied (applyConfigFile).
func parseConfigFile(path string, data []byte, fs *pflag.FlagSet) (*configFile, error) {
	cf := &configFile{path: path, keys: map[string]int{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return cf, nil // empty: no settings
		}
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			return nil, usageErrorf("%s:%s: not valid YAML: %s", path, m[1], m[2])
		}
		return nil, usageErrorf("%s: not valid YAML: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	var more yaml.Node
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return nil, usageErrorf("%s:%d: a second YAML document (---): the file holds one", path, max(more.Line, 1))
	}
	root := doc.Content[0]
	for root.Kind == yaml.AliasNode {
		root = root.Alias
	}
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return cf, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, usageErrorf("%s:%d: want settings as key: value lines, such as upstream: http://127.0.0.1:3000", path, root.Line)
	}
	known := fileKeys(fs)
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		key := k.Value
		if k.Kind != yaml.ScalarNode {
			return nil, usageErrorf("%s:%d: a key must be a flag name", path, k.Line)
		}
		if at, seen := cf.keys[key]; seen {
			return nil, fileError(path, k.Line, key, "repeated (first at line %d)", at)
		}
		cf.keys[key] = k.Line
		switch {
		case key == "routes":
			rules, err := route.Parse(path, v)
			if err != nil {
				return nil, usageError{err: err}
			}
			cf.routes = rules
		case key == "config":
			return nil, fileError(path, k.Line, key, "the configuration file cannot name another; give --config on the command line or as GATEHOUSE_CONFIG")
		case isSecretFlag(fs, key):
			return nil, fileError(path, k.Line, key, "a secret is not read from the configuration file: put it in a file of its own, readable by Gatehouse alone, and give %s-file: PATH", key)
		case !known[key]:
			hint := ""
			if s := suggest(key, fileKeyList(fs)); s != "" {
				hint = " (did you mean " + s + "?)"
			}
			return nil, usageErrorf("%s:%d: unknown key %q%s; the keys are the flags of gatehouse --help without \"--\", and routes", path, k.Line, key, hint)
		default:
			cf.values = append(cf.values, fileValue{flag: key, line: k.Line, node: v})
		}
	}
	return cf, nil
}

// fileKeys are the keys a configuration file may set: the flags of fs but
// help and config, and routes.
func fileKeys(fs *pflag.FlagSet) map[string]bool {
	known := map[string]bool{"routes": true}
	for _, k := range fileKeyList(fs) {
		known[k] = true
	}
	return known
}

func fileKeyList(fs *pflag.FlagSet) []string {
	keys := []string{"routes"}
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name != "help" && f.Name != "config" && !isSecretFlag(fs, f.Name) {
			keys = append(keys, f.Name)
		}
	})
	return keys
}

// isSecretFlag reports whether flag holds a secret itself: it has a -file
// form (--smtp-password and --smtp-password-file), --db aside (a bbolt
// path, or a URL whose password its printers hide).
func isSecretFlag(fs *pflag.FlagSet, flag string) bool {
	return flag != "db" && !strings.HasSuffix(flag, "-file") && fs.Lookup(flag+"-file") != nil
}

// setAbove reports whether flag, or the other form of a secret (the value
// and its -file), was set at a level above the file.
func setAbove(fs *pflag.FlagSet, flag string) bool {
	if fs.Changed(flag) {
		return true
	}
	sibling, ok := strings.CutSuffix(flag, "-file")
	if !ok {
		sibling = flag + "-file"
	}
	return fs.Lookup(sibling) != nil && fs.Changed(sibling)
}

// applyConfigFile sets every flag of the file that no level above it set,
// and returns where each came from ("FILE:LINE"). A value of the wrong
// type or that the flag refuses is a usage error naming the file, the line
// and the key.
func applyConfigFile(fs *pflag.FlagSet, cf *configFile) (map[string]string, error) {
	from := map[string]string{}
	for _, v := range cf.values {
		if setAbove(fs, v.flag) {
			continue
		}
		value, err := flagText(fs.Lookup(v.flag), v.node)
		if err != nil {
			return nil, fileError(cf.path, v.node.Line, v.flag, "%v", err)
		}
		if err := fs.Set(v.flag, value); err != nil {
			return nil, fileError(cf.path, v.node.Line, v.flag, "%q: want %s", value, want(fs.Lookup(v.flag)))
		}
		from[v.flag] = fmt.Sprintf("%s:%d", cf.path, v.node.Line)
	}
	return from, nil
}

// flagText is a YAML value as the flag's text: a scalar of the flag's type,
// or for a repeatable flag a list, written as the CSV line pflag reads.
func flagText(f *pflag.Flag, n *yaml.Node) (string, error) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if _, list := f.Value.(pflag.SliceValue); list {
		if n.Kind != yaml.SequenceNode {
			return "", fmt.Errorf("want a list, such as [%s], not %s", exampleItem(f), describeNode(n))
		}
		items := make([]string, 0, len(n.Content))
		for _, item := range n.Content {
			for item.Kind == yaml.AliasNode {
				item = item.Alias
			}
			if item.Kind != yaml.ScalarNode || item.Tag == "!!null" || item.Tag == "!!bool" {
				return "", fmt.Errorf("a list item must be a string, not %s", describeNode(item))
			}
			items = append(items, item.Value)
		}
		var b strings.Builder
		w := csv.NewWriter(&b)
		if err := w.Write(items); err != nil {
			return "", err
		}
		w.Flush()
		return strings.TrimSuffix(b.String(), "\n"), nil
	}
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", fmt.Errorf("want %s, not %s", want(f), describeNode(n))
	}
	switch f.Value.Type() {
	case "bool":
		var b bool
		if n.Tag != "!!bool" || n.Decode(&b) != nil {
			return "", fmt.Errorf("want true or false, not %s", describeNode(n))
		}
		return strconv.FormatBool(b), nil
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		if n.Tag != "!!int" {
			return "", fmt.Errorf("want a whole number, not %s", describeNode(n))
		}
	case "duration":
		if n.Tag != "!!str" && !(n.Tag == "!!int" && n.Value == "0") {
			return "", fmt.Errorf("want a duration such as 30s or 15m, not %s", describeNode(n))
		}
	default:
		if n.Tag == "!!bool" {
			return "", fmt.Errorf("want a string, not %s (quote it: \"%s\")", describeNode(n), n.Value)
		}
	}
	return n.Value, nil
}

// want says what values flag f takes.
func want(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		return "true or false"
	case "int", "int32", "int64", "uint", "uint32", "uint64":
		return "a whole number"
	case "duration":
		return "a duration such as 30s or 15m"
	}
	if _, list := f.Value.(pflag.SliceValue); list {
		return "a list"
	}
	return "a string (write \"\" for an empty one)"
}

func exampleItem(f *pflag.Flag) string {
	switch f.Name {
	case "public-path":
		return "/static"
	case "allow-email-domain":
		return "corp.com"
	}
	return "…"
}

// describeNode names what a YAML value holds, for a wrong-type error.
func describeNode(n *yaml.Node) string {
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
	return strconv.Quote(n.Value)
}
