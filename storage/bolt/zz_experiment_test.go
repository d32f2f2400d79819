package bolt

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

func TestZZExperiment(t *testing.T) {
	if os.Getenv("EXP") == "" {
		t.Skip()
	}
	sessions := benchSessions(1_000_000, 2)
	victim := benchSessions(1000, 3)
	for i := range victim {
		victim[i].UserID, victim[i].Email = "victim", "victim@example.com"
	}
	path := filepath.Join(t.TempDir(), "x.db")
	s, _ := Open(path, Options{NoSync: true})
	start := time.Now()
	chunk := 1_000_000
	if os.Getenv("CHUNK") != "" {
		chunk = 250_000
	}
	for c := range sliceChunks(sessions, chunk) {
		must(t, s.ImportSessions(t.Context(), c))
	}
	t.Logf("import %v stats free=%d pending=%d alloc=%d", time.Since(start), s.db.Stats().FreePageN, s.db.Stats().PendingPageN, s.db.Stats().FreeAlloc)
	s.Close()
	info, _ := os.Stat(path)
	t.Logf("file %d MB", info.Size()>>20)
	nfs := os.Getenv("NFS") != ""
	start = time.Now()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{FreelistType: bbolt.FreelistMapType, NoFreelistSync: nfs, NoSync: os.Getenv("NOSYNC") != ""})
	must(t, err)
	t.Logf("reopen %v (NoFreelistSync=%v)", time.Since(start), nfs)
	s = &Store{db: db}
	defer s.Close()
	for i := range 5 {
		must(t, s.ImportSessions(t.Context(), victim))
		start = time.Now()
		n, err := s.DeleteUserSessions(t.Context(), "victim")
		must(t, err)
		st := db.Stats()
		t.Logf("delete %d: %d in %v (free=%d)", i, n, time.Since(start), st.FreePageN)
	}
}
