package policy

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// An emails file rewritten in place while Refresh reads it: the read sees
// only the first bytes ("bob@corp.co", a real domain of someone else).
// Such a torn read is never put in force; the next look reads the whole
// file.
func TestEmailsFileTornRead(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	writeFile(t, path, "alice@example.com\n")
	p := mustNew(t, Rules{EmailsFile: path})
	final := "alice@example.com\nbob@corp.com\n"
	p.read = func(name string) ([]byte, error) {
		// The writer has truncated the file and written a part when the
		// read happens; it finishes right after.
		torn := final[:len(final)-2]
		if err := os.WriteFile(name, []byte(final), 0o600); err != nil {
			return nil, err
		}
		later := time.Now().Add(time.Second)
		_ = os.Chtimes(name, later, later)
		return []byte(torn), nil
	}
	p.Refresh()
	if p.Passes("bob@corp.co", false, "") {
		t.Fatal("a torn read of the emails file was put in force: bob@corp.co passes")
	}
	p.read = readCapped
	p.Refresh()
	if !p.Passes("bob@corp.com", false, "") || !p.Passes("alice@example.com", false, "") || p.Passes("bob@corp.co", false, "") {
		t.Fatal("the next look did not load the whole file")
	}
}
