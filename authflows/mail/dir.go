package mail

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Dir writes each message as an RFC 5322 .eml file into a directory, for a
// first run without a relay, for development and for tests. Files are
// written atomically (a temporary file renamed into place) with mode 0600:
// they carry reset links.
type Dir struct {
	path string
	from string
}

// NewDir creates path (mode 0700) if needed and returns the sender; from is
// the From address of every message.
func NewDir(path, from string) (*Dir, error) {
	if path == "" {
		return nil, fmt.Errorf("mail: no mail directory")
	}
	if _, err := Message(storage.Mail{To: "check@example.com"}, from, time.Now()); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(path, 0o700); err != nil {
		return nil, fmt.Errorf("mail: create %s: %w", path, err)
	}
	return &Dir{path: path, from: from}, nil
}

// Send writes m as <created>-<id>.eml. Sending the same record twice
// replaces the file rather than adding a second one.
func (d *Dir) Send(ctx context.Context, m storage.Mail) error {
	msg, err := Message(m, d.from, time.Now())
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	created := m.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	name := created.UTC().Format("20060102T150405.000000000Z") + "-" + strconv.FormatUint(m.ID, 10) + ".eml"
	return writeFileAtomic(filepath.Join(d.path, name), msg)
}

// writeFileAtomic writes data to a temporary file in the same directory,
// syncs it and renames it to path, so a reader never sees half a message.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".tmp-*") // not *.eml: a reader of *.eml never sees a partial file
	if err != nil {
		return fmt.Errorf("mail: %w", err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if err = f.Chmod(0o600); err == nil {
		if _, err = f.Write(data); err == nil {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("mail: write %s: %w", tmp, err)
	}
	if err = os.Rename(tmp, path); err != nil {
		return fmt.Errorf("mail: %w", err)
	}
	if d, derr := os.Open(dir); derr == nil { // make the rename durable
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
