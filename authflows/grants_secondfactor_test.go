package authflows

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// oidcSecondFactorEnv is oidcRefreshEnv under --second-factor=policy.
func oidcSecondFactorEnv(t *testing.T, policy SecondFactorPolicy) (*oauthEnv, *testIdP) {
	t.Helper()
	idp := newTestIdP(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idp.RefreshTTL = 24 * time.Hour
	key := testTokenKey(t)
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: idp.config("groups"), secondFactor: policy,
		edit: func(c *Config) { c.TokenKey, c.SessionRefresh = key, time.Hour }})
	return e, idp
}

// requireGrantReachable checks that the session of cookie kept its
// provider grant (sid and sealed tokens) and that a back-channel logout
// of that OP session ends it: a session made through the second-factor
// step must not escape the refresher and the provider's sign-out.
func requireGrantReachable(t *testing.T, e *oauthEnv, idp *testIdP, cookie *http.Cookie, sid, jti string) {
	t.Helper()
	g, err := e.Store.GrantOf(t.Context(), storage.HashSecret(cookie.Value))
	if err != nil {
		t.Fatalf("the session made through the second-factor step has no provider grant (%v): refresh and back-channel logout cannot reach it", err)
	}
	if g.SID != sid || g.Tokens == nil {
		t.Errorf("grant sid %q, tokens kept %v; want sid %q and tokens", g.SID, g.Tokens != nil, sid)
	}
	if status, code := e.postLogout(t, signLogout(t, idp.Keypair, logoutClaims(e, idp, "", sid, jti))); status != http.StatusOK {
		t.Fatalf("back-channel logout: %d %s", status, code)
	}
	if _, err := e.Store.Session(t.Context(), storage.HashSecret(cookie.Value)); err == nil {
		t.Error("the session outlived a back-channel logout of its OP session")
	}
}

// ?reauth=second-factor on an oidc session re-issues it with both
// factors: the new session keeps the sign-in's provider grant.
func TestSecondFactorReauthKeepsTheProviderGrant(t *testing.T) {
	e, idp := oidcSecondFactorEnv(t, SecondFactorOptional)
	b := signInOIDC(t, e, idp, "alice", "op-1")
	plain := &http.Cookie{Name: oauthCookieName, Value: b.sessionID()}
	secret, _ := e.enrolTOTP(t, plain)

	r := e.NewRequest(http.MethodGet, "/auth/login?reauth=second-factor&rd=%2Fadmin", nil)
	r.Header.Set("Accept", "text/html")
	resp := e.Do(r, plain)
	step := cookieOf(resp, stepCookieName)
	if resp.StatusCode != http.StatusSeeOther || step == nil {
		t.Fatalf("reauth: %d", resp.StatusCode)
	}
	resp = e.PostForm("/auth/2fa", url.Values{"code": {totpCode(t, secret, e.Clock.Now())}}, step, plain)
	upgraded := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || upgraded == nil {
		t.Fatalf("upgrade: %d", resp.StatusCode)
	}
	requireGrantReachable(t, e, idp, upgraded, "op-1", "jti-reauth")
}

// Under --second-factor=required-all an oidc sign-in goes through
// /auth/2fa: the session the step makes is the provider sign-in's, with
// its grant.
func TestSecondFactorRequiredAllKeepsTheProviderGrant(t *testing.T) {
	e, idp := oidcSecondFactorEnv(t, SecondFactorRequiredAll)
	idp.QueueUser(&changingUser{sub: "bob", ext: map[string]any{"email": "bob@example.com", "email_verified": true, "sid": "op-2"}})
	a := e.newBrowser().flow("/auth/login/oidc")
	step, ok := a.cookie(stepCookieName)
	if a.status != http.StatusSeeOther || a.location() != "/auth/2fa" || !ok {
		t.Fatalf("callback: %d to %q, step %v", a.status, a.location(), ok)
	}
	var begun struct{ ID, Secret string }
	e.DecodeJSON(t, e.PostJSON("/auth/2fa/totp", map[string]string{}, step), &begun)
	if begun.ID == "" || begun.Secret == "" {
		t.Fatalf("enrolment during the step: %+v", begun)
	}
	resp := e.PostJSON("/auth/2fa/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(t, begun.Secret, e.Clock.Now())}, step)
	session := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusOK || session == nil {
		t.Fatalf("confirm: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	requireGrantReachable(t, e, idp, session, "op-2", "jti-required-all")
}

// A ?reauth=second-factor step of an oidc session the provider signed out
// of (back-channel logout) while the step ran makes no session: there is
// nothing left to upgrade.
func TestSecondFactorReauthAfterBackchannelLogout(t *testing.T) {
	e, idp := oidcSecondFactorEnv(t, SecondFactorOptional)
	b := signInOIDC(t, e, idp, "carol", "op-3")
	plain := &http.Cookie{Name: oauthCookieName, Value: b.sessionID()}
	secret, _ := e.enrolTOTP(t, plain)
	r := e.NewRequest(http.MethodGet, "/auth/login?reauth=second-factor&rd=%2Fadmin", nil)
	r.Header.Set("Accept", "text/html")
	step := cookieOf(e.Do(r, plain), stepCookieName)
	if step == nil {
		t.Fatal("reauth began no step")
	}
	if status, code := e.postLogout(t, signLogout(t, idp.Keypair, logoutClaims(e, idp, "", "op-3", "jti-mid-step"))); status != http.StatusOK {
		t.Fatalf("back-channel logout: %d %s", status, code)
	}
	resp := e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step, plain)
	if c := e.SessionCookie(resp); c != nil && c.MaxAge > 0 {
		t.Fatalf("a step of a session the provider signed out of made a new session (%d)", resp.StatusCode)
	}
	if code := e.ProblemCode(t, resp, http.StatusUnauthorized); code != "step_expired" {
		t.Errorf("step of an ended session: %q, want step_expired", code)
	}
}

// A group the provider took away while a ?reauth=second-factor step ran
// (a refresh between its start and its code) stays away: the upgraded
// session has the groups of the session it replaces as it is at the end
// of the step, not as it was at the start.
func TestSecondFactorReauthKeepsGroupsARefreshRemoved(t *testing.T) {
	idp := newTestIdP(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idp.RefreshTTL = 24 * time.Hour
	key := testTokenKey(t)
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: idp.config("groups"),
		edit: func(c *Config) { c.TokenKey, c.SessionRefresh = key, time.Second }})
	user := &changingUser{sub: "dave", ext: map[string]any{
		"email": "dave@example.com", "email_verified": true, "groups": []string{"admins", "staff"}, "sid": "op-4",
	}}
	idp.QueueUser(user)
	b := e.newBrowser()
	if a := b.flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in: %d %s", a.status, a.body)
	}
	plain := &http.Cookie{Name: oauthCookieName, Value: b.sessionID()}
	secret, _ := e.enrolTOTP(t, plain)
	r := e.NewRequest(http.MethodGet, "/auth/login?reauth=second-factor&rd=%2Fadmin", nil)
	r.Header.Set("Accept", "text/html")
	step := cookieOf(e.Do(r, plain), stepCookieName)
	if step == nil {
		t.Fatal("reauth began no step")
	}
	user.set("groups", []string{"staff"})
	e.Clock.Advance(2 * time.Second)
	idp.FastForward(2 * time.Second)
	e.Handler.RefreshDue(t.Context())
	if got := b.sessionGroups(); got != "oidc:staff" {
		t.Fatalf("groups after the refresh: %q", got)
	}
	resp := e.PostForm("/auth/2fa", url.Values{"code": {totpCode(t, secret, e.Clock.Now())}}, step, plain)
	upgraded := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusSeeOther || upgraded == nil {
		t.Fatalf("upgrade: %d", resp.StatusCode)
	}
	if got := e.sessionOf(t, upgraded).Groups; got != "oidc:staff" {
		t.Errorf("upgraded session's groups %q: the step brought back a group the provider removed", got)
	}
}
