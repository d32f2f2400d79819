package bolt

import "testing"

// checkIndexesOf fails unless every index entry of the store points at a
// record that points back at it, and every record has its index entries.
// The conformance run calls it on each test's file after the suite closed it.
func checkIndexesOf(t *testing.T, path string) {
	t.Helper()
	s := openTest(t, path)
	defer s.Close()
	if err := s.db.View(checkIndexes); err != nil {
		t.Errorf("index check of %s: %v", path, err)
	}
}
