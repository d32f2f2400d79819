// Package assertion signs the identity Gatehouse vouches for, so that an
// upstream can verify who the user is instead of trusting a plain header
// (JW1): ES256 JWTs minted once per session and lifetime and cached in
// memory, and the signing keys, kept in the store and rotated automatically
// with overlap, published as a JWKS.
//
// Dependencies: assertion → storage, go-jose. The proxy uses it through the
// small interface it declares (proxy.Assertions); cmd/gatehouse wires it.
package assertion

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Rotation schedule (contract, "Signed identity for the upstream").
const (
	// RotationPeriod is how long a key signs before the next one takes over.
	RotationPeriod = 30 * 24 * time.Hour
	// PublishAhead is how long the next key is published before it signs,
	// so every verifier's cached key set knows it in time.
	PublishAhead = 24 * time.Hour
	// RetiredKept is how long a retired key stays published, so that
	// tokens it signed keep verifying.
	RetiredKept = 7 * 24 * time.Hour
	// ClockSkew is how far ahead of this replica's clock the first key may
	// activate and still count as the key (another replica made it an
	// instant later, or its clock runs a little ahead): no second first key.
	ClockSkew = time.Minute
	// RefreshInterval is how often Run re-reads the keys: rotations made by
	// another replica or by `gatehouse keys rotate` are seen within it.
	RefreshInterval = time.Minute
	// JWKSMaxAge is the Cache-Control max-age of the published key set.
	JWKSMaxAge = 300
)

// KeyStore is what Keys needs of the store.
type KeyStore = storage.SigningKeyStore

// Keys keeps the signing keys: it loads them from the store, rotates them on
// schedule, and holds the current signer and the published key set. Build
// it with NewKeys; it is safe for concurrent use.
type Keys struct {
	store KeyStore
	clock func() time.Time
	log   *slog.Logger
	set   atomic.Pointer[keySet]
}

// keySet is one consistent view of the keys: the signing key at the time it
// was built, the next one (if published), and the JWKS document.
type keySet struct {
	signers []signer // every stored key, ordered by ActiveFrom
	jwks    []byte
}

type signer struct {
	id         string
	activeFrom time.Time
	private    *ecdsa.PrivateKey
	jose       jose.Signer
}

// NewKeys loads the keys, creating or rotating them as the schedule says, so
// that a signing key exists when it returns. clock nil: time.Now.
func NewKeys(ctx context.Context, store KeyStore, clock func() time.Time, log *slog.Logger) (*Keys, error) {
	if clock == nil {
		clock = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	k := &Keys{store: store, clock: clock, log: log}
	if err := k.Refresh(ctx); err != nil {
		return nil, err
	}
	return k, nil
}

// Refresh applies the rotation schedule at the current time (add the first
// or the next key, delete keys retired longer than RetiredKept) and reloads
// the keys. A conflict with another replica doing the same is not an error:
// its key is used.
func (k *Keys) Refresh(ctx context.Context) error {
	keys, err := k.store.SigningKeys(ctx)
	if err != nil {
		return fmt.Errorf("assertion: reading signing keys: %w", err)
	}
	now := k.clock() // after the read: a key another replica just added is not "in the future"
	p := plan(keys, now)
	for _, id := range p.retire {
		if err := k.store.DeleteSigningKey(ctx, id); err != nil {
			return fmt.Errorf("assertion: deleting retired key: %w", err)
		}
		k.log.LogAttrs(ctx, slog.LevelInfo, "signing key removed", slog.String("kid", id))
	}
	if p.add {
		if err := k.add(ctx, keys, p.activeFrom, now); err != nil {
			return err
		}
	}
	if p.add || len(p.retire) > 0 {
		if keys, err = k.store.SigningKeys(ctx); err != nil {
			return fmt.Errorf("assertion: reading signing keys: %w", err)
		}
	}
	set, err := newKeySet(keys)
	if err != nil {
		return err
	}
	k.set.Store(set)
	return nil
}

// Rotate adds a new key that signs from now on; the previous one retires now
// and stays published for RetiredKept. It is `gatehouse keys rotate`.
func (k *Keys) Rotate(ctx context.Context) (string, error) {
	return Rotate(ctx, k.store, k.clock())
}

// Rotate adds a key to store that signs from now on (see Keys.Rotate). A
// running server picks it up within RefreshInterval.
func Rotate(ctx context.Context, store KeyStore, now time.Time) (string, error) {
	for range 3 {
		keys, err := store.SigningKeys(ctx)
		if err != nil {
			return "", fmt.Errorf("assertion: reading signing keys: %w", err)
		}
		// The new key must sort after the one signing now, even if that
		// one began this very instant.
		activeFrom := now
		for _, k := range keys {
			if !k.ActiveFrom.After(now) && !activeFrom.After(k.ActiveFrom) {
				activeFrom = k.ActiveFrom.Add(time.Microsecond)
			}
		}
		key, err := newSigningKey(activeFrom, now)
		if err != nil {
			return "", err
		}
		err = store.AddSigningKey(ctx, key, newestID(keys))
		if errors.Is(err, storage.ErrConflict) {
			continue // someone rotated meanwhile: try on top of theirs
		}
		if err != nil {
			return "", fmt.Errorf("assertion: storing signing key: %w", err)
		}
		return key.ID, nil
	}
	return "", fmt.Errorf("assertion: rotating: %w", storage.ErrConflict)
}

// Run refreshes the keys every RefreshInterval until ctx ends; failures
// are logged and retried, and Run returns nil.
func (k *Keys) Run(ctx context.Context) error {
	t := time.NewTicker(RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			if err := k.Refresh(ctx); err != nil && ctx.Err() == nil {
				k.log.LogAttrs(ctx, slog.LevelWarn, "signing keys refresh failed", slog.String("error", err.Error()))
			}
		}
	}
}

// ServeHTTP answers the JWKS: every published public key, cacheable for
// JWKSMaxAge seconds.
func (k *Keys) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body := k.set.Load().jwks
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", JWKSMaxAge))
	_, _ = w.Write(body)
}

// signer returns the key that signs at now: the last one active by then.
func (k *Keys) signer(now time.Time) (*signer, error) {
	set := k.set.Load()
	for i := len(set.signers) - 1; i >= 0; i-- {
		if !set.signers[i].activeFrom.After(now) {
			return &set.signers[i], nil
		}
	}
	// The first key, made by a replica whose clock is a moment ahead.
	if len(set.signers) > 0 && !set.signers[0].activeFrom.After(now.Add(ClockSkew)) {
		return &set.signers[0], nil
	}
	return nil, errors.New("assertion: no signing key is active")
}

// rotationPlan is what the schedule asks for at some time.
type rotationPlan struct {
	add        bool
	activeFrom time.Time
	retire     []string
}

// plan applies the schedule to keys (ordered by ActiveFrom) at now: without
// an active key, one that signs at once; when the newest key has signed for
// RotationPeriod-PublishAhead, the next one, signing PublishAhead later (at
// the earliest at the end of the period); a key whose successor has signed
// for RetiredKept is removed.
func plan(keys []storage.SigningKey, now time.Time) rotationPlan {
	var p rotationPlan
	// A first key that activates within ClockSkew is another replica's,
	// made an instant after this one read its clock: it is the key.
	if len(keys) == 0 || keys[0].ActiveFrom.After(now.Add(ClockSkew)) {
		return rotationPlan{add: true, activeFrom: now}
	}
	for i := 0; i+1 < len(keys); i++ {
		if !keys[i+1].ActiveFrom.Add(RetiredKept).After(now) {
			p.retire = append(p.retire, keys[i].ID)
		}
	}
	newest := keys[len(keys)-1]
	if !newest.ActiveFrom.After(now) && !newest.ActiveFrom.Add(RotationPeriod-PublishAhead).After(now) {
		p.add = true
		p.activeFrom = newest.ActiveFrom.Add(RotationPeriod)
		if earliest := now.Add(PublishAhead); p.activeFrom.Before(earliest) {
			p.activeFrom = earliest
		}
	}
	return p
}

func (k *Keys) add(ctx context.Context, keys []storage.SigningKey, activeFrom, now time.Time) error {
	key, err := newSigningKey(activeFrom, now)
	if err != nil {
		return err
	}
	err = k.store.AddSigningKey(ctx, key, newestID(keys))
	switch {
	case errors.Is(err, storage.ErrConflict):
		return nil // another replica added one: it is read back below
	case err != nil:
		return fmt.Errorf("assertion: storing signing key: %w", err)
	}
	k.log.LogAttrs(ctx, slog.LevelInfo, "signing key added", slog.String("kid", key.ID), slog.Time("active_from", activeFrom))
	return nil
}

func newestID(keys []storage.SigningKey) string {
	if len(keys) == 0 {
		return ""
	}
	return keys[len(keys)-1].ID
}

// newSigningKey makes a fresh P-256 key with a random 128-bit kid.
func newSigningKey(activeFrom, now time.Time) (storage.SigningKey, error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return storage.SigningKey{}, fmt.Errorf("assertion: generating key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return storage.SigningKey{}, fmt.Errorf("assertion: encoding key: %w", err)
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	return storage.SigningKey{
		ID: base64.RawURLEncoding.EncodeToString(id[:]), PrivateKey: der,
		CreatedAt: now, ActiveFrom: activeFrom,
	}, nil
}

func newKeySet(keys []storage.SigningKey) (*keySet, error) {
	set := &keySet{signers: make([]signer, 0, len(keys))}
	var jwks jose.JSONWebKeySet
	for _, key := range keys {
		parsed, err := x509.ParsePKCS8PrivateKey(key.PrivateKey)
		if err != nil {
			return nil, fmt.Errorf("assertion: signing key %s: %w", key.ID, err)
		}
		priv, ok := parsed.(*ecdsa.PrivateKey)
		if !ok || priv.Curve != elliptic.P256() {
			return nil, fmt.Errorf("assertion: signing key %s is not ECDSA P-256", key.ID)
		}
		js, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv},
			(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), key.ID))
		if err != nil {
			return nil, fmt.Errorf("assertion: signer of key %s: %w", key.ID, err)
		}
		set.signers = append(set.signers, signer{id: key.ID, activeFrom: key.ActiveFrom, private: priv, jose: js})
		jwks.Keys = append(jwks.Keys, jose.JSONWebKey{Key: &priv.PublicKey, KeyID: key.ID, Algorithm: string(jose.ES256), Use: "sig"})
	}
	if jwks.Keys == nil {
		jwks.Keys = []jose.JSONWebKey{}
	}
	var err error
	if set.jwks, err = json.Marshal(jwks); err != nil {
		return nil, fmt.Errorf("assertion: encoding JWKS: %w", err)
	}
	return set, nil
}
