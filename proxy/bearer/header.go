package bearer

import (
	"errors"
	"strings"
)

// MaxCredential bounds a bearer credential: a longer Authorization value
// is refused before it is parsed, decoded or looked up. It leaves room for
// the JWTs of identity providers that list many groups.
const MaxCredential = 16 << 10

const scheme = "bearer"

// Credential returns the bearer credential of the Authorization header
// values: the token68 after "Bearer " (scheme case-insensitive, RFC 9110).
// No value, or only values of another scheme (Basic, …): ErrNoCredential,
// the request is judged as if it had none. A bearer value that is longer
// than MaxCredential (checked first), empty, padded, or not one token68, or
// a bearer value beside another Authorization value: ErrInvalid.
func Credential(values []string) (string, error) {
	bearers := 0
	for _, v := range values {
		if hasBearerScheme(v) {
			bearers++
		}
	}
	switch {
	case bearers == 0:
		return "", errNoCredential
	case len(values) > 1:
		return "", invalid(ReasonMalformed, errors.New("more than one Authorization header"))
	}
	v := values[0]
	if len(v) > len(scheme)+1+MaxCredential {
		return "", invalid(ReasonTooLarge, nil)
	}
	credential := v[len(scheme):]
	if len(credential) < 2 || credential[0] != ' ' || !isToken68(credential[1:]) {
		return "", invalid(ReasonMalformed, errors.New(`not "Bearer" and one token68`))
	}
	return credential[1:], nil
}

// hasBearerScheme reports whether v names the Bearer scheme: "Bearer"
// alone or followed by a space, in any case. It reads six bytes at most.
func hasBearerScheme(v string) bool {
	if len(v) < len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return false
	}
	return len(v) == len(scheme) || v[len(scheme)] == ' ' || v[len(scheme)] == '\t'
}

// isToken68 reports whether s is one token68 (RFC 9110 11.2):
// 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=".
func isToken68(s string) bool {
	i := 0
	for i < len(s) && isToken68Char(s[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	for i < len(s) && s[i] == '=' {
		i++
	}
	return i == len(s)
}

func isToken68Char(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/'
}

// isJWTShape reports whether s is a compact JWS: three base64url parts,
// none empty (a JWT with an empty signature, "alg":"none", never is).
func isJWTShape(s string) bool {
	parts := 0
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return false
			}
			continue
		}
		if i == start {
			return false
		}
		parts++
		start = i + 1
	}
	return parts == 3
}
