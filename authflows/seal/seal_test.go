package seal

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func newKeyBytes(t *testing.T) []byte {
	t.Helper()
	b := make([]byte, KeySize)
	_, _ = rand.Read(b)
	return b
}

// README (--token-key-file): the key file holds 32 bytes, raw or base64
// with or without a trailing newline; anything else is refused without
// showing the file's content.
func TestReadKeyFile(t *testing.T) {
	raw := newKeyBytes(t)
	std := base64.StdEncoding.EncodeToString(raw)
	for _, tc := range []struct {
		name    string
		content []byte
		ok      bool
	}{
		{"raw", raw, true},
		{"base64", []byte(std), true},
		{"base64 newline", []byte(std + "\n"), true},
		{"base64 crlf", []byte(std + "\r\n"), true},
		{"base64 unpadded", []byte(base64.RawStdEncoding.EncodeToString(raw) + "\n"), true},
		{"base64url", []byte(base64.URLEncoding.EncodeToString(raw)), true},
		{"short raw", raw[:16], false},
		{"base64 of 16 bytes", []byte(base64.StdEncoding.EncodeToString(raw[:16]) + "\n"), false},
		{"empty", nil, false},
		{"text", []byte("correct horse battery staple, not a key\n"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key")
			if err := os.WriteFile(path, tc.content, 0o600); err != nil {
				t.Fatal(err)
			}
			k, err := ReadKeyFile(path)
			if (err == nil) != tc.ok {
				t.Fatalf("ReadKeyFile: %v, want ok %v", err, tc.ok)
			}
			if err != nil && len(tc.content) > 8 && strings.Contains(err.Error(), string(tc.content[:8])) {
				t.Errorf("error %q shows the file's content", err)
			}
			if k != nil && tc.ok {
				want, _ := ParseKey(raw)
				if k.id != want.id {
					t.Errorf("%s: read a different key than the raw bytes", tc.name)
				}
			}
		})
	}
	if _, err := ReadKeyFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("a missing key file was accepted")
	}
}

// Sealed tokens open only with the same key and for the same session; the
// sealed bytes hold no token in clear; a value sealed under a rotated-away
// key is told apart from a damaged one.
func TestSealOpen(t *testing.T) {
	k, _ := ParseKey(newKeyBytes(t))
	other, _ := ParseKey(newKeyBytes(t))
	session, elsewhere := []byte("session-hash-1"), []byte("session-hash-2")
	in := Tokens{Refresh: "1//refresh-token-value", Access: "ya29.access-token-value", Expiry: time.Unix(1700000000, 0).UTC(), IDToken: "eyJhbGciOi.id.token"}
	sealed, err := k.Seal(in, session)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{in.Refresh, in.Access, in.IDToken} {
		if bytes.Contains(sealed, []byte(secret)) {
			t.Errorf("sealed value holds %q in clear", secret)
		}
	}
	out, err := k.Open(sealed, session)
	if err != nil || out != in {
		t.Fatalf("Open = %+v, %v; want %+v", out, err, in)
	}
	if _, err := k.Open(sealed, elsewhere); !errors.Is(err, ErrDamaged) {
		t.Errorf("opened for another binding: %v, want ErrDamaged", err)
	}
	if _, err := other.Open(sealed, session); !errors.Is(err, ErrOtherKey) {
		t.Errorf("opened with another key: %v, want ErrOtherKey", err)
	}
	flipped := bytes.Clone(sealed)
	flipped[len(flipped)-1] ^= 1
	if _, err := k.Open(flipped, session); !errors.Is(err, ErrDamaged) {
		t.Errorf("altered value: %v, want ErrDamaged", err)
	}
	if _, err := k.Open(sealed[:10], session); !errors.Is(err, ErrDamaged) {
		t.Errorf("truncated value: %v, want ErrDamaged", err)
	}
}
