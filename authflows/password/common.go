package password

import (
	_ "embed"
	"strings"
	"sync"

	"golang.org/x/text/unicode/norm"
)

// commonPasswordList is the built-in list of common passwords (PW3), one a
// line; see the file's header.
//
//go:embed commonpasswords.txt
var commonPasswordList string

// commonPasswords is the list as a set of keys (commonPasswordKey), built
// once on first use. It is read-only after that.
var commonPasswords = sync.OnceValue(func() map[string]struct{} {
	set := make(map[string]struct{}, 1024)
	for line := range strings.Lines(commonPasswordList) {
		line = strings.TrimRight(line, "\r\n")
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		set[commonPasswordKey(line)] = struct{}{}
	}
	return set
})

// commonPasswordKey is the form in which passwords are compared with the
// list: NFKC, then lower case.
func commonPasswordKey(password string) string {
	return strings.ToLower(norm.NFKC.String(password))
}

// isCommonPassword reports whether password is on the built-in list,
// ignoring case, after NFKC.
func isCommonPassword(password string) bool {
	_, ok := commonPasswords()[commonPasswordKey(password)]
	return ok
}
