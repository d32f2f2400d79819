package storage

import (
	"context"
	"errors"
	"time"
)

// ErrConflict: the record changed since the caller read it (another replica
// or command got there first); nothing was written.
var ErrConflict = errors.New("storage: changed concurrently")

// SigningKey is an ECDSA P-256 key that signs identity assertions for the
// upstream. A key signs from ActiveFrom until the next key's ActiveFrom; it
// is published in the JWKS from the moment it is stored (so verifiers know it
// before it signs) until it is deleted.
type SigningKey struct {
	ID         string // the JWS "kid"; unique
	PrivateKey []byte // PKCS#8 DER of the ECDSA P-256 private key
	CreatedAt  time.Time
	ActiveFrom time.Time
}

// SigningKeyStore keeps the signing keys. It is part of Store.
type SigningKeyStore interface {
	// SigningKeys returns every stored key, ordered by ActiveFrom then ID.
	SigningKeys(ctx context.Context) ([]SigningKey, error)
	// AddSigningKey stores k only if the newest stored key (the last one of
	// SigningKeys) has the ID after ("" when no key is stored), so that two
	// replicas rotating at once add one key, not two. Otherwise, and when a
	// key with k.ID exists: ErrConflict and nothing is written.
	AddSigningKey(ctx context.Context, k SigningKey, after string) error
	// DeleteSigningKey removes the key; an unknown id is not an error.
	DeleteSigningKey(ctx context.Context, id string) error
}
