package authflows

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// logoutClaims are a valid logout token's claims from idp for sub and
// sid (either may be empty), issued now on Gatehouse's clock.
func logoutClaims(e *oauthEnv, idp *testIdP, sub, sid, jti string) jwt.MapClaims {
	now := e.Clock.Now()
	c := jwt.MapClaims{
		"iss": idp.Issuer(), "aud": idp.ClientID, "iat": now.Unix(), "exp": now.Add(2 * time.Minute).Unix(), "jti": jti,
		"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}},
	}
	if sub != "" {
		c["sub"] = sub
	}
	if sid != "" {
		c["sid"] = sid
	}
	return c
}

// signLogout signs claims with key (the IdP's own, unless a test forges).
func signLogout(t *testing.T, key *mockoidc.Keypair, claims jwt.MapClaims) string {
	t.Helper()
	tok, err := key.SignJWT(claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// postLogout posts a logout token as the OpenID Provider does: a form,
// from another origin, asking for a page (which it must not get).
func (e *oauthEnv) postLogout(t *testing.T, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.base+BackchannelLogoutPath, strings.NewReader(url.Values{"logout_token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://idp.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.Header.Set("Accept", "text/html")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&body)
	if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
		t.Errorf("back-channel logout answered %q, want JSON whatever the Accept", ct)
	}
	code, _ := body["code"].(string)
	return resp.StatusCode, code
}

// signInOIDC signs a browser in as sub with an OP session sid.
func signInOIDC(t *testing.T, e *oauthEnv, idp *testIdP, sub, sid string) *oauthBrowser {
	t.Helper()
	idp.QueueUser(&changingUser{sub: sub, ext: map[string]any{"email": sub + "@example.com", "email_verified": true, "sid": sid}})
	b := e.newBrowser()
	if a := b.flow("/auth/login/oidc"); a.status != http.StatusSeeOther {
		t.Fatalf("sign-in of %s: %d %s", sub, a.status, a.body)
	}
	return b
}

// README (back-channel logout): a valid logout token with a sid ends that
// OP session's Gatehouse sessions only; one with only a sub ends every
// session of that account; each answers 200 as JSON. The cross-origin
// check of /auth/ POSTs does not apply to this path.
func TestBackchannelLogout(t *testing.T) {
	e, idp := oidcRefreshEnv(t)
	alice1 := signInOIDC(t, e, idp, "alice", "op-1")
	alice2 := signInOIDC(t, e, idp, "alice", "op-2")
	bob := signInOIDC(t, e, idp, "bob", "op-3")

	if status, code := e.postLogout(t, signLogout(t, idp.Keypair, logoutClaims(e, idp, "", "op-1", "jti-1"))); status != http.StatusOK {
		t.Fatalf("logout by sid: %d %s", status, code)
	}
	if _, ok := alice1.me(); ok {
		t.Error("the session of the OP session logged out stands")
	}
	if _, ok := alice2.me(); !ok {
		t.Error("alice's other OP session was ended by a logout of op-1")
	}
	if !e.hasEvent("session_ended_by_provider") {
		t.Error("no session_ended_by_provider event")
	}

	if status, code := e.postLogout(t, signLogout(t, idp.Keypair, logoutClaims(e, idp, "alice", "", "jti-2"))); status != http.StatusOK {
		t.Fatalf("logout by sub: %d %s", status, code)
	}
	if _, ok := alice2.me(); ok {
		t.Error("a logout of alice's account left one of her sessions")
	}
	if _, ok := bob.me(); !ok {
		t.Error("a logout of alice ended bob's session")
	}
	// A cross-site POST to any other /auth/ path is still refused.
	req, _ := http.NewRequest(http.MethodPost, e.base+"/auth/logout", nil)
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site POST /auth/logout: %d, want 403 (only the back-channel path is exempt)", resp.StatusCode)
	}
}

// Every logout token that fails a check is refused with 400
// invalid_request, as JSON, and ends nothing.
func TestBackchannelLogoutRefused(t *testing.T) {
	e, idp := oidcRefreshEnv(t)
	signInOIDC(t, e, idp, "carol", "op-9") // a session for the first, valid token to end
	foreign, err := mockoidc.RandomKeypair(2048)
	if err != nil {
		t.Fatal(err)
	}
	foreign.Kid, _ = idp.Keypair.KeyID()
	valid := func(jti string) jwt.MapClaims { return logoutClaims(e, idp, "carol", "op-9", jti) }
	used := signLogout(t, idp.Keypair, valid("jti-used"))
	if status, _ := e.postLogout(t, used); status != http.StatusOK {
		t.Fatalf("the first use of a valid token: %d", status)
	}
	b := signInOIDC(t, e, idp, "carol", "op-9") // signed in again, same OP session
	for _, tc := range []struct {
		name  string
		token string
	}{
		{"wrong signature", signLogout(t, foreign, valid("a"))},
		{"wrong aud", signLogout(t, idp.Keypair, with(valid("b"), "aud", "another-client"))},
		{"wrong iss", signLogout(t, idp.Keypair, with(valid("c"), "iss", "https://other-idp.example"))},
		{"nonce present", signLogout(t, idp.Keypair, with(valid("d"), "nonce", "n-1"))},
		{"nonce present as null", signLogout(t, idp.Keypair, with(valid("d2"), "nonce", nil))},
		{"events missing", signLogout(t, idp.Keypair, without(valid("e"), "events"))},
		{"other event", signLogout(t, idp.Keypair, with(valid("f"), "events", map[string]any{"http://schemas.openid.net/event/other": map[string]any{}}))},
		{"jti missing", signLogout(t, idp.Keypair, without(valid("g"), "jti"))},
		{"neither sub nor sid", signLogout(t, idp.Keypair, without(without(valid("h"), "sub"), "sid"))},
		{"expired", signLogout(t, idp.Keypair, with(valid("i"), "exp", e.Clock.Now().Add(-time.Minute).Unix()))},
		{"reused jti", used},
		{"not a JWT", "not-a-jwt"},
		{"missing", ""},
		{"oversized body", strings.Repeat("a", maxLogoutBody)},
	} {
		status, code := e.postLogout(t, tc.token)
		if status != http.StatusBadRequest || code != "invalid_request" {
			t.Errorf("%s: %d %q, want 400 invalid_request", tc.name, status, code)
		}
		if _, ok := b.me(); !ok {
			t.Fatalf("%s: a refused logout token ended the session", tc.name)
		}
	}
	g, err := e.Store.GrantOf(context.Background(), storage.HashSecret(b.sessionID()))
	if err != nil || g.SID != "op-9" {
		t.Fatalf("grant after the refusals: %+v %v", g, err)
	}
}

func with(c jwt.MapClaims, k string, v any) jwt.MapClaims { c[k] = v; return c }

func without(c jwt.MapClaims, k string) jwt.MapClaims { delete(c, k); return c }
