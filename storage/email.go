package storage

import (
	"net/mail"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalizeEmail is the one form in which emails are compared and stored:
// trimmed and lower-cased.
func NormalizeEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// maxAddress is the longest usable address (RFC 5321 paths hold 256
// octets with the angle brackets).
const maxAddress = 254

// ValidAddress reports whether raw, as given, is one plain address that
// Gatehouse may store, match and send upstream in X-Forwarded-Email (EM1):
// net/mail parses it with no display name, comment or angle brackets; it is
// valid UTF-8 of printable characters without spaces (no zero-width or
// bidi controls), with none of the characters that would let one value
// read as several (a comma, a semicolon, quotes, a backslash, brackets: no
// domain literal); and it is a PlainAddress. Callers normalize it after.
func ValidAddress(raw string) bool {
	if raw == "" || len(raw) > maxAddress || !utf8.ValidString(raw) {
		return false
	}
	for _, r := range raw {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) || strings.ContainsRune(`,;"\<>()[]`, r) {
			return false
		}
	}
	if strings.Count(raw, "@") != 1 {
		return false
	}
	addr, err := mail.ParseAddress(raw)
	return err == nil && addr.Name == "" && addr.Address == raw && PlainAddress(raw)
}

// PlainAddress reports whether an address (a provider's, or a line of the
// emails file) can be taken as one mailbox, compared lower-cased, matched
// against the access policy and sent to the upstream in X-Forwarded-Email
// (OA6, AP1): one @; a dot-atom local part of ASCII atext, or of non-ASCII
// letters, digits and marks that lower-casing leaves as they are; a domain
// of ASCII labels. Refused are what would make another mailbox match an
// allowed address or domain, or read otherwise downstream: a letter that
// lower-cases into ASCII (KELVIN SIGN to k, CAPITAL I WITH DOT to i),
// spaces and control bytes (trimmed or split on), a comma, quotes, a
// second @, a trailing dot.
func PlainAddress(s string) bool {
	if len(s) > maxAddress || !utf8.ValidString(s) {
		return false
	}
	local, domain, ok := strings.Cut(s, "@")
	if !ok || local == "" || len(local) > 64 || !ValidDomain(domain) {
		return false
	}
	if local[0] == '.' || local[len(local)-1] == '.' || strings.Contains(local, "..") {
		return false
	}
	for _, r := range local {
		switch {
		case r < utf8.RuneSelf:
			if r != '.' && !isAtext(byte(r)) {
				return false
			}
		case unicode.ToLower(r) != r:
			return false
		case !unicode.In(r, unicode.L, unicode.M, unicode.N):
			return false
		}
	}
	return true
}

// isAtext is RFC 5322 atext in ASCII.
func isAtext(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-/=?^_`{|}~", c) >= 0
}

// ValidDomain reports whether s is a DNS name as Gatehouse takes one: at
// most 253 octets of dot-separated labels of ASCII letters, digits and
// inner hyphens, each label 1 to 63 octets.
func ValidDomain(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !isAlnum(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

// isAlnum is an ASCII letter or digit.
func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}
