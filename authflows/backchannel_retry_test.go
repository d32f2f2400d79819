package authflows

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// endFailsOnce is a store whose first EndGrantSessions fails, as a store
// outage in the middle of a back-channel logout does.
type endFailsOnce struct {
	storage.Store
	failed atomic.Bool
}

func (s *endFailsOnce) EndGrantSessions(ctx context.Context, provider, subject, sid string) ([]storage.Grant, error) {
	if s.failed.CompareAndSwap(false, true) {
		return nil, errors.New("store unavailable")
	}
	return s.Store.EndGrantSessions(ctx, provider, subject, sid)
}

// A back-channel logout the store could not carry out answers 503, and
// the OpenID Provider's retry of the same logout token (same jti) ends
// the session: a failure must not use the jti up.
func TestBackchannelLogoutRetriedAfterStoreFailure(t *testing.T) {
	idp := newTestIdP(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idp.RefreshTTL = 24 * time.Hour
	key := testTokenKey(t)
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: idp.config("groups"),
		wrapStore: func(s storage.Store) storage.Store { return &endFailsOnce{Store: s} },
		edit:      func(c *Config) { c.TokenKey, c.SessionRefresh = key, time.Hour }})
	b := signInOIDC(t, e, idp, "erin", "op-5")
	token := signLogout(t, idp.Keypair, logoutClaims(e, idp, "", "op-5", "jti-retried"))
	if status, _ := e.postLogout(t, token); status != http.StatusServiceUnavailable {
		t.Fatalf("logout during a store failure: %d, want 503", status)
	}
	if status, code := e.postLogout(t, token); status != http.StatusOK {
		t.Errorf("the OP's retry of the same logout token: %d %s, want 200", status, code)
	}
	if _, ok := b.me(); ok {
		t.Error("the session outlived a back-channel logout retried after a store failure")
	}
}
