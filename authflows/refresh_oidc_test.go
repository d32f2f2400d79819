package authflows

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// changingUser is a mockoidc account whose claims the test changes
// between sign-in and refresh (mockoidc keeps the account with the
// session and signs each refreshed ID token from it).
type changingUser struct {
	sub string
	mu  sync.Mutex
	ext map[string]any
}

func (u *changingUser) set(k string, v any) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ext[k] = v
}

func (u *changingUser) ID() string { return u.sub }

func (u *changingUser) Userinfo([]string) ([]byte, error) {
	return json.Marshal(map[string]any{"sub": u.sub})
}

func (u *changingUser) Claims(_ []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	m := jwt.MapClaims{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, v := range u.ext {
		m[k] = v
	}
	return m, nil
}

// oidcRefreshEnv is an env with the mockoidc provider, a token key and
// --session-refresh 1h; mockoidc's refresh tokens outlive the test.
func oidcRefreshEnv(t *testing.T) (*oauthEnv, *testIdP) {
	t.Helper()
	idp := newTestIdP(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idp.RefreshTTL = 24 * time.Hour
	key := testTokenKey(t)
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: idp.config("groups"),
		edit: func(c *Config) { c.TokenKey, c.SessionRefresh = key, time.Hour }})
	return e, idp
}

// refreshBoth moves Gatehouse's clock and mockoidc's past the interval
// and runs one refresh pass.
func (e *oauthEnv) refreshBoth(idp *testIdP) {
	idp.FastForward(time.Hour + time.Second)
	e.refreshNow()
}

// OIDC: a group removed at the OpenID Provider disappears from the
// session at the next check (the refreshed ID token's groups claim); the
// sid of the sign-in is kept with the grant; a refresh token the provider
// refuses ends the session.
func TestRefreshOIDC(t *testing.T) {
	e, idp := oidcRefreshEnv(t)
	user := &changingUser{sub: "alice", ext: map[string]any{
		"email": "alice@example.com", "email_verified": true, "groups": []string{"admins", "staff"}, "sid": "op-session-1",
	}}
	idp.QueueUser(user)
	b := e.newBrowser()
	if a := b.flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	if got := b.sessionGroups(); got != "oidc:admins,oidc:staff" {
		t.Fatalf("groups after sign-in: %q", got)
	}
	g, err := e.Store.GrantOf(context.Background(), storage.HashSecret(b.sessionID()))
	if err != nil || g.SID != "op-session-1" || g.Tokens == nil {
		t.Fatalf("grant of the OIDC session: %+v %v; want the sid and sealed tokens", g, err)
	}
	user.set("groups", []string{"staff"})
	e.refreshBoth(idp)
	if got := b.sessionGroups(); got != "oidc:staff" {
		t.Fatalf("groups after admins was removed at the provider and the session checked: %q", got)
	}
	idp.refuseRefresh.Store(true)
	e.refreshBoth(idp)
	if _, ok := b.me(); ok {
		t.Fatal("the provider refused the refresh token, yet the session stands")
	}
}
