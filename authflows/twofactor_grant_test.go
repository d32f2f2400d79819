package authflows

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// postJSON posts body as JSON from the browser (its cookies, no Accept).
func (b *oauthBrowser) postJSON(path string, body any) oauthAnswer {
	b.t.Helper()
	raw, err := json.Marshal(body)
	if err != nil {
		b.t.Fatal(err)
	}
	resp, err := b.client.Post(b.env.base+path, "application/json", bytes.NewReader(raw))
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return oauthAnswer{status: resp.StatusCode, header: resp.Header, body: string(got), cookies: resp.Cookies()}
}

// enrolThroughStep enrols an authenticator app at the browser's
// second-factor step and finishes it with the first code.
func (b *oauthBrowser) enrolThroughStep() {
	b.t.Helper()
	a := b.postJSON("/auth/2fa/totp", struct{}{})
	var begun struct{ ID, Secret string }
	if err := json.Unmarshal([]byte(a.body), &begun); a.status != http.StatusOK || err != nil || begun.Secret == "" {
		b.t.Fatalf("enrol at the step: %d %s", a.status, a.body)
	}
	a = b.postJSON("/auth/2fa/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(b.t, begun.Secret, b.env.Clock.Now())})
	if a.status != http.StatusOK {
		b.t.Fatalf("confirm at the step: %d %s", a.status, a.body)
	}
}

// MF1 with required-all: a provider sign-in that goes through /auth/2fa
// keeps its grant for the session made there, as one without the step
// does: the OpenID Provider's sid, sealed tokens the refresher can open,
// and a back-channel logout of that sid ends the session.
func TestSecondFactorStepKeepsTheProviderGrant(t *testing.T) {
	idp := newTestIdP(t, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	idp.RefreshTTL = 24 * time.Hour
	key := testTokenKey(t)
	e := newOAuthEnv(t, oauthEnvOptions{providers: []string{}, oidc: idp.config("groups"), secondFactor: SecondFactorRequiredAll,
		edit: func(c *Config) { c.TokenKey, c.SessionRefresh = key, time.Hour }})
	idp.QueueUser(&changingUser{sub: "alice", ext: map[string]any{"email": "alice@example.com", "email_verified": true, "sid": "op-1"}})
	b := e.newBrowser()
	if a := b.flow("/auth/login/oidc"); a.status != http.StatusSeeOther || a.location() != "/auth/2fa" {
		t.Fatalf("callback: %d to %q, want the second-factor step", a.status, a.location())
	}
	b.enrolThroughStep()
	if _, ok := b.me(); !ok {
		t.Fatal("no session after the step")
	}
	g, err := e.Store.GrantOf(t.Context(), storage.HashSecret(b.sessionID()))
	if err != nil {
		t.Fatalf("the session made at the step has no grant: %v", err)
	}
	if g.Provider != "oidc" || g.SID != "op-1" || g.Tokens == nil {
		t.Errorf("grant %+v, want oidc's with the sid and sealed tokens", g)
	}
	if _, err := e.Handler.openTokens(g); err != nil {
		t.Errorf("the grant's tokens do not open: %v", err)
	}
	if status, code := e.postLogout(t, signLogout(t, idp.Keypair, logoutClaims(e, idp, "", "op-1", "jti-1"))); status != http.StatusOK {
		t.Fatalf("logout by sid: %d %s", status, code)
	}
	if _, ok := b.me(); ok {
		t.Error("a back-channel logout of the sid left the session made at the step")
	}
}

// A provider session given its second factor afterwards
// (?reauth=second-factor) is re-issued with its grant: the sid still
// finds it.
func TestSecondFactorReauthCarriesTheProviderGrant(t *testing.T) {
	e, idp := oidcRefreshEnv(t)
	b := signInOIDC(t, e, idp, "ann", "op-9")
	a := b.postJSON("/auth/account/totp", map[string]string{"name": "Phone"})
	var begun struct{ ID, Secret string }
	if err := json.Unmarshal([]byte(a.body), &begun); a.status != http.StatusOK || err != nil {
		t.Fatalf("begin totp: %d %s", a.status, a.body)
	}
	if a := b.postJSON("/auth/account/totp/confirm", map[string]string{"id": begun.ID, "code": totpCode(t, begun.Secret, e.Clock.Now())}); a.status != http.StatusOK {
		t.Fatalf("confirm totp: %d %s", a.status, a.body)
	}
	e.Clock.Advance(30 * time.Second)
	before := b.sessionID()
	if a := b.get("/auth/login?reauth=second-factor"); a.status != http.StatusSeeOther || a.location() != "/auth/2fa" {
		t.Fatalf("reauth: %d to %q", a.status, a.location())
	}
	if a := b.postJSON("/auth/2fa", map[string]string{"code": totpCode(t, begun.Secret, e.Clock.Now())}); a.status != http.StatusOK {
		t.Fatalf("second factor: %d %s", a.status, a.body)
	}
	after := b.sessionID()
	if after == before {
		t.Fatal("the session was not re-issued")
	}
	if g, err := e.Store.GrantOf(t.Context(), storage.HashSecret(after)); err != nil || g.SID != "op-9" {
		t.Fatalf("grant of the upgraded session: %+v %v", g, err)
	}
	if status, code := e.postLogout(t, signLogout(t, idp.Keypair, logoutClaims(e, idp, "", "op-9", "jti-9"))); status != http.StatusOK {
		t.Fatalf("logout by sid: %d %s", status, code)
	}
	if _, ok := b.me(); ok {
		t.Error("a back-channel logout of the sid left the upgraded session")
	}
}
