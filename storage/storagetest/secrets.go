package storagetest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func testSecrets(t *testing.T, o Opener) {
	t.Run("MadeOnceAndKept", func(t *testing.T) {
		s := o.newStore(t)
		first, err := s.Secret(t.Context(), "device-cookie")
		if err != nil {
			t.Fatal(err)
		}
		if len(first) != storage.SecretSize || bytes.Equal(first, make([]byte, storage.SecretSize)) {
			t.Fatalf("secret %x: want %d random bytes", first, storage.SecretSize)
		}
		again, err := s.Secret(t.Context(), "device-cookie")
		if err != nil || !bytes.Equal(first, again) {
			t.Fatalf("second call: %x, %v; want the first secret", again, err)
		}
		other, err := s.Secret(t.Context(), "another")
		if err != nil || bytes.Equal(first, other) {
			t.Fatalf("another name: %x, %v; want a secret of its own", other, err)
		}
	})
	t.Run("ConcurrentFirstUse", func(t *testing.T) {
		s := o.newStore(t)
		var wg sync.WaitGroup
		got := make([][]byte, 8)
		errs := make([]error, 8)
		for i := range got {
			wg.Go(func() { got[i], errs[i] = s.Secret(t.Context(), "shared") })
		}
		wg.Wait()
		for i := range got {
			if errs[i] != nil || !bytes.Equal(got[i], got[0]) {
				t.Fatalf("call %d: %x, %v; want one secret for all (%x)", i, got[i], errs[i], got[0])
			}
		}
	})
}
