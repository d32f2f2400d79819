package storagetest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// signingKey returns key n: a real P-256 key in PKCS#8, active from at(d).
func signingKey(t *testing.T, n int, d time.Duration) storage.SigningKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return storage.SigningKey{ID: fmt.Sprintf("key-%d", n), PrivateKey: der, CreatedAt: at(d - time.Hour), ActiveFrom: at(d)}
}

func testSigningKeys(t *testing.T, o Opener) {
	t.Run("EmptyStore", func(t *testing.T) {
		s := o.newStore(t)
		keys, err := s.SigningKeys(t.Context())
		wantErr(t, "SigningKeys", err, nil)
		if len(keys) != 0 {
			t.Fatalf("fresh store has %d signing keys", len(keys))
		}
	})

	t.Run("AddInOrderAndReadBack", func(t *testing.T) {
		s := o.newStore(t)
		k1, k2, k3 := signingKey(t, 1, 0), signingKey(t, 2, 30*24*time.Hour), signingKey(t, 3, 60*24*time.Hour)
		wantErr(t, "AddSigningKey k1", s.AddSigningKey(t.Context(), k1, ""), nil)
		wantErr(t, "AddSigningKey k2", s.AddSigningKey(t.Context(), k2, k1.ID), nil)
		wantErr(t, "AddSigningKey k3", s.AddSigningKey(t.Context(), k3, k2.ID), nil)
		keys, err := s.SigningKeys(t.Context())
		wantErr(t, "SigningKeys", err, nil)
		wantEqual(t, "SigningKeys", keys, []storage.SigningKey{k1, k2, k3})
		// The private key survives byte for byte and still parses.
		if _, err := x509.ParsePKCS8PrivateKey(keys[1].PrivateKey); err != nil {
			t.Fatalf("stored private key does not parse: %v", err)
		}
	})

	t.Run("OrderedByActiveFrom", func(t *testing.T) {
		s := o.newStore(t)
		// IDs sort the other way round from ActiveFrom.
		later, earlier := signingKey(t, 1, time.Hour), signingKey(t, 9, 0)
		later.ID, earlier.ID = "a", "z"
		earlier.ActiveFrom = at(0)
		wantErr(t, "AddSigningKey earlier", s.AddSigningKey(t.Context(), earlier, ""), nil)
		wantErr(t, "AddSigningKey later", s.AddSigningKey(t.Context(), later, "z"), nil)
		keys, err := s.SigningKeys(t.Context())
		wantErr(t, "SigningKeys", err, nil)
		if len(keys) != 2 || keys[0].ID != "z" || keys[1].ID != "a" {
			t.Fatalf("order %v, want z then a", ids(keys))
		}
	})

	t.Run("CompareAndAdd", func(t *testing.T) {
		s := o.newStore(t)
		k1, k2 := signingKey(t, 1, 0), signingKey(t, 2, time.Hour)
		wantErr(t, "AddSigningKey k1", s.AddSigningKey(t.Context(), k1, ""), nil)
		// A stale view (the caller believed the store empty) is a conflict.
		wantErr(t, "AddSigningKey stale", s.AddSigningKey(t.Context(), k2, ""), storage.ErrConflict)
		wantErr(t, "AddSigningKey unknown after", s.AddSigningKey(t.Context(), k2, "nope"), storage.ErrConflict)
		// A duplicate id is a conflict too, even "after" the right key.
		dup := signingKey(t, 1, 2*time.Hour)
		wantErr(t, "AddSigningKey duplicate", s.AddSigningKey(t.Context(), dup, k1.ID), storage.ErrConflict)
		keys, err := s.SigningKeys(t.Context())
		wantErr(t, "SigningKeys", err, nil)
		wantEqual(t, "SigningKeys after conflicts", keys, []storage.SigningKey{k1})
	})

	t.Run("ConcurrentRotationAddsOne", func(t *testing.T) {
		s := o.newStore(t)
		k1 := signingKey(t, 1, 0)
		wantErr(t, "AddSigningKey k1", s.AddSigningKey(t.Context(), k1, ""), nil)
		const racers = 8
		candidates := make([]storage.SigningKey, racers)
		for i := range candidates {
			candidates[i] = signingKey(t, 10+i, time.Hour)
		}
		var wg sync.WaitGroup
		errs := make([]error, racers)
		for i := range racers {
			wg.Go(func() { errs[i] = s.AddSigningKey(t.Context(), candidates[i], k1.ID) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, storage.ErrConflict):
				t.Fatalf("AddSigningKey: %v", err)
			}
		}
		keys, err := s.SigningKeys(t.Context())
		wantErr(t, "SigningKeys", err, nil)
		if won != 1 || len(keys) != 2 {
			t.Fatalf("%d racers won, %d keys stored; want exactly one new key", won, len(keys))
		}
	})

	t.Run("Delete", func(t *testing.T) {
		s := o.newStore(t)
		k1, k2 := signingKey(t, 1, 0), signingKey(t, 2, time.Hour)
		wantErr(t, "AddSigningKey k1", s.AddSigningKey(t.Context(), k1, ""), nil)
		wantErr(t, "AddSigningKey k2", s.AddSigningKey(t.Context(), k2, k1.ID), nil)
		wantErr(t, "DeleteSigningKey", s.DeleteSigningKey(t.Context(), k1.ID), nil)
		wantErr(t, "DeleteSigningKey again", s.DeleteSigningKey(t.Context(), k1.ID), nil)
		keys, err := s.SigningKeys(t.Context())
		wantErr(t, "SigningKeys", err, nil)
		wantEqual(t, "SigningKeys after delete", keys, []storage.SigningKey{k2})
	})
}

func ids(keys []storage.SigningKey) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.ID)
	}
	return out
}
