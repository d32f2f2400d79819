package bearer

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
	"github.com/gatehouse-auth/gatehouse/storage/cache"
)

// countingStore is a bbolt store that counts the token lookups reaching it.
type countingStore struct {
	*bolt.Store
	lookups atomic.Int64
}

func (c *countingStore) APITokenByHash(ctx context.Context, h storage.Hash) (storage.APIToken, storage.APITokenOwner, error) {
	c.lookups.Add(1)
	return c.Store.APITokenByHash(ctx, h)
}

// tokenEnv is a Verifier over a real bbolt store holding a user with a
// token and a service token, each made as the admin API makes them.
type tokenEnv struct {
	store           *bolt.Store
	counted         *countingStore
	clock           *webtest.Clock
	v               *Verifier
	user            storage.User
	mine, svc       string // the secrets
	mineID, svcID   string
	mineTok, svcTok storage.APIToken
}

func newTokenEnv(t testing.TB) *tokenEnv {
	t.Helper()
	store, err := bolt.Open(filepath.Join(t.TempDir(), "g.db"), bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	e := &tokenEnv{store: store, clock: webtest.NewClock(time.Date(2031, 5, 6, 7, 0, 0, 0, time.UTC))}
	e.user = storage.User{ID: storage.NewUserID(), Email: "ann@example.com", CreatedAt: e.clock.Now()}
	if err := store.CreateUser(t.Context(), e.user); err != nil {
		t.Fatal(err)
	}
	e.mine, e.mineTok = e.create(t, storage.APIToken{Name: "laptop", UserID: e.user.ID})
	e.svc, e.svcTok = e.create(t, storage.APIToken{Name: "ci", Service: "ci.deploy", Groups: []string{"oidc:deployers", "svc:ci"},
		ExpiresAt: e.clock.Now().Add(time.Hour)})
	e.mineID, e.svcID = e.mineTok.ID, e.svcTok.ID
	e.counted = &countingStore{Store: store}
	e.v, err = New(Config{Tokens: e.counted, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// create stores a token like t with a new secret, id and hash.
func (e *tokenEnv) create(t testing.TB, tok storage.APIToken) (string, storage.APIToken) {
	t.Helper()
	secret, h := storage.NewAPIToken()
	tok.ID, tok.Hash, tok.CreatedAt = storage.NewAPITokenID(), h, e.clock.Now()
	if err := e.store.CreateAPIToken(t.Context(), tok); err != nil {
		t.Fatal(err)
	}
	return secret, tok
}

func bearer(credential string) []string { return []string{"Bearer " + credential} }

// wantRefused fails unless err is an *Error of kind and reason.
func wantRefused(t *testing.T, what string, err error, kind error, reason string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, kind) || e.Reason != reason {
		t.Fatalf("%s: %v, want %v (%s)", what, err, kind, reason)
	}
}

func TestAPITokenIdentities(t *testing.T) {
	e := newTokenEnv(t)
	id, err := e.v.Verify(t.Context(), bearer(e.mine))
	if err != nil {
		t.Fatal(err)
	}
	want := Identity{UserID: e.user.ID, Email: "ann@example.com", AMR: AMRToken, TokenID: e.mineID}
	if id.UserID != want.UserID || id.Email != want.Email || id.AMR != want.AMR || id.TokenID != want.TokenID || len(id.Groups) != 0 || !id.ExpiresAt.IsZero() {
		t.Errorf("user's token: %+v, want %+v", id, want)
	}
	id, err = e.v.Verify(t.Context(), []string{"bearer " + e.svc}) // the scheme in any case
	if err != nil {
		t.Fatal(err)
	}
	if id.UserID != "service:ci.deploy" || id.Email != "" || id.AMR != AMRToken || strings.Join(id.Groups, ",") != "oidc:deployers,svc:ci" ||
		!id.ExpiresAt.Equal(e.svcTok.ExpiresAt) {
		t.Errorf("service token: %+v", id)
	}
}

// An unknown, revoked, expired token, or one whose owner is disabled or
// deleted, is ErrInvalid; each is one lookup.
func TestAPITokenRefusals(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	unknown, _ := storage.NewAPIToken()
	_, err := e.v.Verify(ctx, bearer(unknown))
	wantRefused(t, "unknown token", err, ErrInvalid, ReasonUnknownToken)

	e.clock.Advance(time.Hour) // the service token expires now
	_, err = e.v.Verify(ctx, bearer(e.svc))
	wantRefused(t, "expired token", err, ErrInvalid, ReasonExpired)

	if _, err := e.store.SetUserDisabled(ctx, e.user.ID, true); err != nil {
		t.Fatal(err)
	}
	_, err = e.v.Verify(ctx, bearer(e.mine))
	wantRefused(t, "token of a disabled user", err, ErrInvalid, ReasonOwnerDisabled)
	if _, err := e.store.SetUserDisabled(ctx, e.user.ID, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.v.Verify(ctx, bearer(e.mine)); err != nil {
		t.Fatalf("token of a user enabled again: %v", err)
	}

	if _, err := e.store.RevokeAPIToken(ctx, e.mineID); err != nil {
		t.Fatal(err)
	}
	_, err = e.v.Verify(ctx, bearer(e.mine))
	wantRefused(t, "revoked token", err, ErrInvalid, ReasonUnknownToken)

	other, _ := e.create(t, storage.APIToken{Name: "other", UserID: e.user.ID})
	if err := e.store.DeleteUser(ctx, e.user.ID); err != nil {
		t.Fatal(err)
	}
	_, err = e.v.Verify(ctx, bearer(other))
	wantRefused(t, "token of a deleted user", err, ErrInvalid, ReasonUnknownToken)
	if n := e.counted.lookups.Load(); n != 6 {
		t.Errorf("%d lookups for 6 verifications", n)
	}
}

// A store that does not answer never lets a token pass: ErrUnavailable.
func TestAPITokenStoreDown(t *testing.T) {
	e := newTokenEnv(t)
	_ = e.store.Close()
	_, err := e.v.Verify(t.Context(), bearer(e.mine))
	wantRefused(t, "store closed", err, ErrUnavailable, ReasonStore)
}

// Bad input is refused from the header alone: no store read, whatever it is.
func TestBadInputReadsNoStore(t *testing.T) {
	e := newTokenEnv(t)
	big := "ghp_" + strings.Repeat("A", 64<<10)
	for _, tc := range []struct {
		name   string
		values []string
		kind   error
		reason string
	}{
		{"no header", nil, ErrNoCredential, "none"},
		{"another scheme", []string{"Basic YTpi"}, ErrNoCredential, "none"},
		{"a longer scheme name", []string{"Bearerish " + e.mine}, ErrNoCredential, "none"},
		{"64 KiB value", []string{"Bearer " + big}, ErrInvalid, ReasonTooLarge},
		{"64 KiB value of another scheme, then a bearer", []string{"Basic " + big, "Bearer " + e.mine}, ErrInvalid, ReasonMalformed},
		{"two bearer headers", []string{"Bearer " + e.mine, "Bearer " + e.svc}, ErrInvalid, ReasonMalformed},
		{"scheme alone", []string{"Bearer"}, ErrInvalid, ReasonMalformed},
		{"scheme and space", []string{"Bearer "}, ErrInvalid, ReasonMalformed},
		{"two spaces", []string{"Bearer  " + e.mine}, ErrInvalid, ReasonMalformed},
		{"tab", []string{"Bearer\t" + e.mine}, ErrInvalid, ReasonMalformed},
		{"trailing space", []string{"Bearer " + e.mine + " "}, ErrInvalid, ReasonMalformed},
		{"two credentials", []string{"Bearer " + e.mine + " " + e.svc}, ErrInvalid, ReasonMalformed},
		{"comma", []string{"Bearer " + e.mine + ",x"}, ErrInvalid, ReasonMalformed},
		{"quoted", []string{`Bearer "` + e.mine + `"`}, ErrInvalid, ReasonMalformed},
		{"non-ASCII", []string{"Bearer ghp_é" + e.mine[6:]}, ErrInvalid, ReasonMalformed},
		{"token one short", bearer(e.mine[:len(e.mine)-1]), ErrInvalid, ReasonUnknownShape},
		{"token one long", bearer(e.mine + "A"), ErrInvalid, ReasonUnknownShape},
		{"token in another prefix", bearer("gho_" + e.mine[4:]), ErrInvalid, ReasonUnknownShape},
		{"token without prefix", bearer(e.mine[4:]), ErrInvalid, ReasonUnknownShape},
		{"token with padding", bearer(e.mine + "="), ErrInvalid, ReasonUnknownShape},
		{"a session-like value", bearer(strings.Repeat("a", 43)), ErrInvalid, ReasonUnknownShape},
		{"a JWT, no issuer configured", bearer("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln"), ErrInvalid, ReasonUnknownShape},
	} {
		_, err := e.v.Verify(t.Context(), tc.values)
		wantRefused(t, tc.name, err, tc.kind, tc.reason)
	}
	if n := e.counted.lookups.Load(); n != 0 {
		t.Fatalf("bad input read the store %d times, want 0", n)
	}
}

// Through the replica cache (as the server wires it over PostgreSQL), a
// known token is answered from memory: the store is read once, however
// many requests follow, and a revocation through the cache holds on the
// next request.
func TestAPITokenSteadyStateThroughCache(t *testing.T) {
	e := newTokenEnv(t)
	c := cache.New(e.counted, cache.Options{HeartbeatTimeout: time.Hour, Now: e.clock.Now})
	c.Resync()
	c.Heartbeat(e.clock.Now())
	v, err := New(Config{Tokens: c, Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if _, err := v.Verify(t.Context(), bearer(e.mine)); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.counted.lookups.Load(); n != 1 {
		t.Fatalf("100 requests with one token read the store %d times, want 1", n)
	}
	if _, err := c.RevokeAPIToken(t.Context(), e.mineID); err != nil {
		t.Fatal(err)
	}
	_, err = v.Verify(t.Context(), bearer(e.mine))
	wantRefused(t, "token revoked through the cache", err, ErrInvalid, ReasonUnknownToken)
}

// Last use is recorded off the request path and written by a flush at
// most once a TouchInterval per token; a failed write is kept for the next.
func TestAPITokenLastUsed(t *testing.T) {
	e := newTokenEnv(t)
	ctx := t.Context()
	lastUsed := func(secret string) time.Time {
		t.Helper()
		tok, _, err := e.store.APITokenByHash(ctx, storage.HashSecret(secret))
		if err != nil {
			t.Fatal(err)
		}
		return tok.LastUsed
	}
	var first time.Time // the last use before the flush
	for range 3 {
		first = e.clock.Now()
		if _, err := e.v.Verify(ctx, bearer(e.mine)); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second)
	}
	if !lastUsed(e.mine).IsZero() {
		t.Fatal("last use written on the request path")
	}
	if err := e.v.FlushLastUsed(ctx); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(e.mine); !got.Equal(first) {
		t.Fatalf("last used %v, want the last use %v", got, first)
	}
	// Within a minute of the written time, uses are not written again.
	if _, err := e.v.Verify(ctx, bearer(e.mine)); err != nil {
		t.Fatal(err)
	}
	if err := e.v.FlushLastUsed(ctx); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(e.mine); !got.Equal(first) {
		t.Fatalf("last used moved to %v within a minute", got)
	}
	// A minute on, the next use is written; a failed write is retried.
	e.clock.Advance(TouchInterval)
	later := e.clock.Now()
	if _, err := e.v.Verify(ctx, bearer(e.mine)); err != nil {
		t.Fatal(err)
	}
	failing := &failingToucher{TokenStore: e.counted}
	e.v.tokens = failing
	if err := e.v.FlushLastUsed(ctx); err == nil {
		t.Fatal("a failed write reported no error")
	}
	e.v.tokens = e.counted
	if err := e.v.FlushLastUsed(ctx); err != nil {
		t.Fatal(err)
	}
	if got := lastUsed(e.mine); !got.Equal(later) {
		t.Fatalf("last used %v, want %v after the retried write", got, later)
	}
}

type failingToucher struct{ TokenStore }

func (failingToucher) TouchAPITokens(context.Context, map[storage.Hash]time.Time) error {
	return errors.New("disk full")
}

func TestCredentialShapes(t *testing.T) {
	for _, tc := range []struct {
		s   string
		jwt bool
	}{
		{"a.b.c", true},
		{"eyJ0.eyJ0.c2ln-_", true},
		{"a.b.", false},
		{"a..c", false},
		{".b.c", false},
		{"a.b.c.d", false},
		{"a.b", false},
		{"a.b.c=", false},
		{"a+b.c.d", false},
	} {
		if got := isJWTShape(tc.s); got != tc.jwt {
			t.Errorf("isJWTShape(%q) = %v, want %v", tc.s, got, tc.jwt)
		}
	}
}
