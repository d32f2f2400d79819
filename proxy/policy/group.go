package policy

import "fmt"

// maxGroupPrefix bounds the prefix of a qualified group.
const maxGroupPrefix = 32

// ParseQualifiedGroup checks a group as Gatehouse writes it in
// X-Forwarded-Groups and as a service token or a route names it:
// "prefix:name", the prefix lower-case letters, digits and "-" starting with
// a letter ("github", "google", "oidc", or one an operator chooses for
// service tokens), the name as ParseGroup accepts it ("github:acme/ops",
// "oidc:admins").
func ParseQualifiedGroup(s string) (string, error) {
	i := 0
	for i < len(s) && i <= maxGroupPrefix && (s[i] >= 'a' && s[i] <= 'z' || i > 0 && (s[i] >= '0' && s[i] <= '9' || s[i] == '-')) {
		i++
	}
	if i == 0 || i > maxGroupPrefix || i == len(s) || s[i] != ':' || !validGroup(s[i+1:]) {
		return "", fmt.Errorf("%q is not a group of the form prefix:name (e.g. oidc:admins, github:acme/ops; a lower-case prefix, a name without comma, surrounding space or control character)", s)
	}
	return s, nil
}
