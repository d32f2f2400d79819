// Package seal owns the encryption of provider tokens at rest: the
// --token-key-file key (32 bytes, raw or base64) and AES-256-GCM sealing of
// a sign-in's refresh, access and ID tokens, bound to what the caller names
// (authflows: the user, provider and account of the sign-in) so that a
// sealed value copied into another user's record does not open. Without a
// key, no provider token is stored at all.
//
// Dependencies: seal imports the standard library only. authflows (the
// OAuth callback and the refresher) and cmd/gatehouse (the flag) import it.
package seal

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// KeySize is the length of a token key: AES-256.
const KeySize = 32

// version is the first byte of every sealed value.
const version = 1

// keyIDSize is how many bytes of the key's SHA-256 lead a sealed value,
// so that a value sealed under another key (before a rotation) is told
// apart from a damaged one.
const keyIDSize = 4

// ErrOtherKey: the value was sealed under another key (the key was
// rotated since); the tokens are gone for good.
var ErrOtherKey = errors.New("seal: sealed under another token key")

// ErrDamaged: the value is not one this package sealed, or it was altered
// or moved to another binding.
var ErrDamaged = errors.New("seal: sealed tokens damaged or bound to another sign-in")

// Tokens are what a provider sign-in leaves to keep: the refresh token
// (google, oidc), the access token (github's never expires) and the ID
// token (the logout hint of an oidc sign-in).
type Tokens struct {
	Refresh string    `json:"r,omitempty"`
	Access  string    `json:"a,omitempty"`
	Expiry  time.Time `json:"e,omitzero"` // of Access, zero when it does not expire
	IDToken string    `json:"i,omitempty"`
}

// Key seals and opens Tokens. The zero value is unusable; see ParseKey.
type Key struct {
	aead cipher.AEAD
	id   [keyIDSize]byte
}

// ReadKeyFile reads a key file: 32 raw bytes, or their standard or URL-safe
// base64 (padded or not) with or without a trailing newline.
func ReadKeyFile(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseKey(b)
}

// ParseKey reads a key as ReadKeyFile does. The error never shows the key.
func ParseKey(b []byte) (*Key, error) {
	raw := b
	if len(b) != KeySize {
		text := bytes.TrimRight(b, "\r\n")
		raw = nil
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			if d, err := enc.DecodeString(string(text)); err == nil {
				raw = d
				break
			}
		}
		if raw == nil {
			return nil, fmt.Errorf("%d bytes, neither a raw %d-byte key nor base64 of one (make one with: head -c 32 /dev/urandom | base64)", len(b), KeySize)
		}
		if len(raw) != KeySize {
			return nil, fmt.Errorf("base64 of %d bytes, want %d (make one with: head -c 32 /dev/urandom | base64)", len(raw), KeySize)
		}
	}
	block, err := aes.NewCipher(raw)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	k := &Key{aead: aead}
	sum := sha256.Sum256(raw)
	copy(k.id[:], sum[:])
	return k, nil
}

// Seal encrypts t bound to binding: version, key id, random nonce, then
// the AES-GCM ciphertext of t's JSON with binding as additional data.
func (k *Key) Seal(t Tokens, binding []byte) ([]byte, error) {
	plain, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	out := make([]byte, 1+keyIDSize+k.aead.NonceSize(), 1+keyIDSize+k.aead.NonceSize()+len(plain)+k.aead.Overhead())
	out[0] = version
	copy(out[1:], k.id[:])
	nonce := out[1+keyIDSize:]
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	return k.aead.Seal(out, nonce, plain, binding), nil
}

// Open decrypts what Seal made for the same binding: ErrOtherKey when it
// was sealed under another key, ErrDamaged when it does not open.
func (k *Key) Open(sealed, binding []byte) (Tokens, error) {
	head := 1 + keyIDSize + k.aead.NonceSize()
	if len(sealed) < head+k.aead.Overhead() || sealed[0] != version {
		return Tokens{}, ErrDamaged
	}
	if !bytes.Equal(sealed[1:1+keyIDSize], k.id[:]) {
		return Tokens{}, ErrOtherKey
	}
	plain, err := k.aead.Open(nil, sealed[1+keyIDSize:head], sealed[head:], binding)
	if err != nil {
		return Tokens{}, ErrDamaged
	}
	var t Tokens
	if err := json.Unmarshal(plain, &t); err != nil {
		return Tokens{}, ErrDamaged
	}
	return t, nil
}
