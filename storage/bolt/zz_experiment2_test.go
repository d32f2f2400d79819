package bolt

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

func TestZZExperiment2(t *testing.T) {
	if os.Getenv("EXP2") == "" {
		t.Skip()
	}
	nfs := os.Getenv("NFS") != ""
	opts := &bbolt.Options{FreelistType: bbolt.FreelistMapType, NoFreelistSync: nfs}
	sessions := benchSessions(1_000_000, 2)
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType, NoFreelistSync: nfs, NoSync: true})
	must(t, err)
	s := &Store{db: db}
	must(t, db.Update(func(tx *bbolt.Tx) error {
		for _, name := range allBuckets {
			tx.CreateBucketIfNotExists(name)
		}
		return nil
	}))
	for c := range sliceChunks(sessions, 250_000) {
		must(t, s.ImportSessions(t.Context(), c))
	}
	s.Close()
	exec := func(label string) {
		start := time.Now()
		db, err := bbolt.Open(path, 0o600, opts)
		must(t, err)
		s := &Store{db: db}
		t.Logf("%s: reopen %v free=%d", label, time.Since(start), db.Stats().FreePageN)
		start = time.Now()
		for i := range 20 {
			must(t, s.CreateSession(t.Context(), storage.Session{IDHash: storage.HashSecret(label + string(rune(i))), UserID: "u", ExpiresAt: time.Now()}))
		}
		t.Logf("%s: 20 CreateSession %v", label, time.Since(start)/20)
		s.Close()
	}
	exec("first")
	exec("second")
	// drop page cache is not possible without root? try
	os.WriteFile("/proc/sys/vm/drop_caches", []byte("3"), 0)
	exec("cold")
}
