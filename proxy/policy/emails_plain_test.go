package policy

import (
	"path/filepath"
	"strings"
	"testing"
)

// A file saved with a byte-order mark (Windows editors) still lets its
// first address in, instead of silently refusing it.
func TestEmailsFileByteOrderMark(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	writeFile(t, path, "\ufeffalice@example.com\r\nbob@example.com\r\n")
	p := mustNew(t, Rules{EmailsFile: path})
	for _, email := range []string{"alice@example.com", "bob@example.com"} {
		if !p.Passes(email, false, "") {
			t.Errorf("%s refused", email)
		}
	}
}

// An entry that lower-cases into another address (KELVIN SIGN → k) or is
// not a plain address is a bad line, as provider addresses are not used
// (the same storage.PlainAddress): it never silently grants someone else.
func TestEmailsFileEntriesArePlain(t *testing.T) {
	for _, entry := range []string{"\u212Aim@corp.com", "ann@\u212Acorp.com", `"x@evil.com"@corp.com`, "kim@corp.com."} {
		path := filepath.Join(t.TempDir(), "emails.txt")
		writeFile(t, path, "ok@corp.com\n"+entry+"\n")
		_, err := New(Rules{EmailsFile: path}, nil)
		if err == nil || !strings.Contains(err.Error(), path+":2:") {
			t.Errorf("entry %q: err = %v, want a bad line 2", entry, err)
		}
	}
}
