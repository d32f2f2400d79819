package secondfactor

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// Recovery codes and the values of the step and ceremony cookies reach the
// database only as hashes: a copy of the file signs nobody in.
func TestSecretsNotStoredInTheClear(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	s, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u, _, codes := enrolled(t, s, f, c, "ada")
	more, err := f.RegenerateRecoveryCodes(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	step, err := f.BeginStep(t.Context(), StepStart{User: u, Method: "pwd"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewPasskeys(s, PasskeyConfig{BaseURL: testOrigin, Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	begun, err := p.BeginLogin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{step, begun.Binding}
	for _, code := range append(codes, more...) {
		plain := strings.ToUpper(strings.ReplaceAll(code, "-", ""))
		secrets = append(secrets, code, plain, strings.ToLower(plain))
	}
	for _, secret := range secrets {
		if bytes.Contains(file, []byte(secret)) {
			t.Fatalf("the database file holds %q in the clear", secret)
		}
	}
}
