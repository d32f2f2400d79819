package bolt

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"go.etcd.io/bbolt"
)

// fullCheckMaxSize is the largest file Open checks page by page (bbolt's
// Check); a larger one gets the quick check, so that a start stays fast.
const fullCheckMaxSize = 128 << 20

// errDamaged marks a file that is not a sound bbolt database.
var errDamaged = errors.New("database file is damaged or not a Gatehouse database")

// checkPath refuses what Open must not open or create, and returns the size
// of an existing file (-1 when there is none).
func checkPath(path string, mustExist bool) (int64, error) {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return 0, fmt.Errorf("storage/bolt: %s is a directory, not a database file", path)
	case err == nil && st.Size() == 0:
		return 0, fmt.Errorf("storage/bolt: %s is an empty file (0 bytes), not a database; remove it to start a new one", path)
	case err == nil:
		return st.Size(), nil
	case !errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("storage/bolt: %w", err)
	case mustExist:
		return 0, fmt.Errorf("storage/bolt: database %s does not exist", path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return 0, fmt.Errorf("storage/bolt: folder %s of the database does not exist", dir)
	}
	return -1, nil
}

// openRecovering opens the file with bbolt, turning bbolt's panics and
// memory faults (a truncated file read through the mmap) into errDamaged,
// and checks an existing file (size ≥ 0) before it is used.
func openRecovering(path string, size int64, opts *bbolt.Options) (db *bbolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if p := recover(); p != nil {
			if db != nil {
				_ = db.Close()
			}
			db, err = nil, fmt.Errorf("%w: %s", errDamaged, oneLine(fmt.Sprint(p)))
		}
	}()
	db, err = bbolt.Open(path, 0o600, opts)
	if err != nil {
		if strings.Contains(err.Error(), "invalid") || strings.Contains(err.Error(), "too small") ||
			strings.Contains(err.Error(), "version mismatch") || strings.Contains(err.Error(), "checksum") {
			return nil, fmt.Errorf("%w: %s", errDamaged, oneLine(err.Error()))
		}
		return nil, err
	}
	if size < 0 {
		return db, nil
	}
	if err := db.View(func(tx *bbolt.Tx) error { return checkStructure(tx, size) }); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("%w: %s", errDamaged, oneLine(err.Error()))
	}
	return db, nil
}

// checkStructure is Open's check of an existing file: bbolt's Check of
// every page for a file up to fullCheckMaxSize, else the first and last
// key of every bucket (the paths from each root to its edge leaves). A file
// whose pages reach past its end is damaged.
func checkStructure(tx *bbolt.Tx, size int64) error {
	if pages := int64(tx.Size()); pages > size {
		return fmt.Errorf("file is %d bytes but its pages need %d (truncated)", size, pages)
	}
	if size <= fullCheckMaxSize {
		var problems []string
		for err := range tx.Check() {
			if len(problems) < 3 {
				problems = append(problems, err.Error())
			}
		}
		if len(problems) > 0 {
			return errors.New(strings.Join(problems, "; "))
		}
		return nil
	}
	return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		c := b.Cursor()
		c.First()
		c.Last()
		return nil
	})
}

// oneLine keeps an error message on one line.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
