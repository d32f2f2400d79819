package authflows

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/secondfactor/passkeytest"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// begin posts to a ceremony's begin endpoint and returns its options and
// the ceremony cookie.
func (e *testEnv) beginCeremony(t *testing.T, path string, cookies ...*http.Cookie) (json.RawMessage, *http.Cookie) {
	t.Helper()
	resp := e.PostJSON(path, "", cookies...)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"publicKey"`) {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, body)
	}
	c := cookieOf(resp, ceremonyCookieName)
	if c == nil || c.Value == "" || !c.HttpOnly || c.Path != "/auth/" {
		t.Fatalf("%s: ceremony cookie %+v", path, c)
	}
	return body, c
}

// Register a passkey, sign in with it and no password (amr hwk, mfa), use
// it as the second factor after a password (pwd, hwk, mfa), remove it.
func TestPasskeyJourney(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "ann@example.com", testPassword)
	session := e.Login(t, "ann@example.com", testPassword)
	a := passkeytest.New(t, testBaseURL, "gatehouse.test")

	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/register/begin", ""), http.StatusUnauthorized); code == "" {
		t.Error("register begin without a session")
	}
	_, ceremony := e.beginCeremony(t, "/auth/passkey/register/begin", session)
	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/register/finish", `{"id":"x"}`, session, ceremony), http.StatusBadRequest); code != "invalid_credential" {
		t.Errorf("garbage registration: %q", code)
	}
	options, ceremony := e.beginCeremony(t, "/auth/passkey/register/begin", session)
	resp := e.PostJSON("/auth/passkey/register/finish?name=Laptop", a.Create(t, options), session, ceremony)
	var registered struct {
		ID            string   `json:"id"`
		RecoveryCodes []string `json:"recovery_codes"`
	}
	e.DecodeJSON(t, resp, &registered)
	if resp.StatusCode != http.StatusOK || registered.ID == "" || len(registered.RecoveryCodes) != 10 {
		t.Fatalf("register finish: %d %+v", resp.StatusCode, registered)
	}
	// The ceremony is used once.
	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/register/finish", a.Create(t, options), session, ceremony), http.StatusBadRequest); code != "invalid_credential" {
		t.Errorf("a replayed registration: %q", code)
	}
	var list factorsAnswer
	e.DecodeJSON(t, e.Get("/auth/account/factors", session), &list)
	if len(list.Factors) != 1 || list.Factors[0].Type != "passkey" || list.Factors[0].Name != "Laptop" || list.Factors[0].ID != registered.ID {
		t.Errorf("factors %+v", list)
	}

	// Passkey sign-in, no password: two factors in one.
	options, ceremony = e.beginCeremony(t, "/auth/passkey/login/begin")
	if strings.Contains(string(options), "allowCredentials") {
		t.Errorf("discoverable sign-in options name credentials: %s", options)
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/login/finish", `{}`, ceremony), http.StatusUnauthorized); code != "invalid_credential" {
		t.Errorf("garbage assertion: %q", code)
	}
	options, ceremony = e.beginCeremony(t, "/auth/passkey/login/begin")
	resp = e.PostJSON("/auth/passkey/login/finish?rd=%2Fapp", a.Get(t, options), ceremony)
	var signedIn struct {
		User     userAnswer `json:"user"`
		Redirect string     `json:"redirect"`
	}
	e.DecodeJSON(t, resp, &signedIn)
	passkeySession := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusOK || signedIn.User.ID != u.ID || signedIn.Redirect != "/app" || passkeySession == nil {
		t.Fatalf("passkey sign-in: %d %+v", resp.StatusCode, signedIn)
	}
	if s := e.sessionOf(t, passkeySession); !slices.Equal(s.AMR(), []string{"hwk", "mfa"}) {
		t.Errorf("passkey session amr %v", s.AMR())
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/login/finish", a.Get(t, options)), http.StatusUnauthorized); code != "invalid_credential" {
		t.Errorf("an assertion without the ceremony cookie: %q", code)
	}

	// The passkey as the second factor of a password sign-in.
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa/passkey/begin", ""), http.StatusUnauthorized); code != "step_expired" {
		t.Errorf("2fa passkey begin without a step: %q", code)
	}
	step, methods := e.passwordStep(t, "ann@example.com", testPassword)
	if !slices.Equal(methods, []string{"passkey", "recovery_code"}) {
		t.Errorf("methods %v", methods)
	}
	options, ceremony = e.beginCeremony(t, "/auth/2fa/passkey/begin", step)
	if !strings.Contains(string(options), passkeytest.B64.EncodeToString(a.Credential)) {
		t.Errorf("second-factor options do not allow the user's credential: %s", options)
	}
	other := passkeytest.New(t, testBaseURL, "gatehouse.test")
	other.UserHandle = []byte(u.ID)
	if code := e.ProblemCode(t, e.PostJSON("/auth/2fa/passkey/finish", other.Get(t, options), step, ceremony), http.StatusUnauthorized); code != "invalid_credential" {
		t.Errorf("an unregistered authenticator as the second factor: %q", code)
	}
	options, ceremony = e.beginCeremony(t, "/auth/2fa/passkey/begin", step)
	resp = e.PostJSON("/auth/2fa/passkey/finish", a.Get(t, options), step, ceremony)
	stepped := e.SessionCookie(resp)
	if resp.StatusCode != http.StatusOK || stepped == nil {
		t.Fatalf("2fa passkey finish: %d", resp.StatusCode)
	}
	if s := e.sessionOf(t, stepped); !slices.Equal(s.AMR(), []string{"pwd", "hwk", "mfa"}) {
		t.Errorf("stepped session amr %v", s.AMR())
	}

	// Removed, it signs in no more.
	if resp := e.Do(e.JSONRequest(http.MethodDelete, "/auth/account/factors/"+registered.ID, ""), stepped); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("remove: %d", resp.StatusCode)
	}
	options, ceremony = e.beginCeremony(t, "/auth/passkey/login/begin")
	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/login/finish", a.Get(t, options), ceremony), http.StatusUnauthorized); code != "invalid_credential" {
		t.Errorf("a removed passkey: %q", code)
	}
	if have, _ := e.Store.SecondFactors(t.Context(), u.ID); have.Enrolled() || have.RecoveryCodesLeft != 0 {
		t.Errorf("after removing the only factor: %+v", have)
	}
}

// With an IP address as the base URL's host and no relying-party id,
// passkeys are off: no button, 404 passkeys_off.
func TestPasskeysOffForIPBaseURL(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.BaseURL, _ = url.Parse("http://192.0.2.1:8080") })
	r := e.NewRequest(http.MethodGet, "/auth/login", nil)
	r.Header.Set("Accept", "text/html")
	if body := e.Body(t, e.Do(r)); strings.Contains(body, "passkey") {
		t.Errorf("the sign-in page offers passkeys:\n%s", body)
	}
	if code := e.ProblemCode(t, e.PostJSON("/auth/passkey/login/begin", ""), http.StatusNotFound); code != "passkeys_off" {
		t.Errorf("passkey begin: %q", code)
	}
	on := newTestEnv(t)
	r = on.NewRequest(http.MethodGet, "/auth/login", nil)
	r.Header.Set("Accept", "text/html")
	if body := on.Body(t, on.Do(r)); !strings.Contains(body, `data-passkey="login"`) || !strings.Contains(body, `src="/auth/assets/passkey.js"`) {
		t.Errorf("the sign-in page lacks the passkey button:\n%s", body)
	}
	resp := on.Get("/auth/assets/passkey.js")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") || !strings.Contains(on.Body(t, resp), "navigator.credentials.get") {
		t.Errorf("passkey.js: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
}

// MF1, fixation: the second factor and a passkey sign-in mint a new session id;
// a session the browser brought (planted or its own) is replaced, never kept.
func TestSecondFactorSignInsMintNewSessionIDs(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, "ann@example.com", testPassword)
	mallory := e.CreateUser(t, "mallory@example.com", testPassword)
	session := e.Login(t, "ann@example.com", testPassword)
	secret, _ := e.enrolTOTP(t, session)
	a := passkeytest.New(t, testBaseURL, "gatehouse.test")
	options, ceremony := e.beginCeremony(t, "/auth/passkey/register/begin", session)
	if resp := e.PostJSON("/auth/passkey/register/finish", a.Create(t, options), session, ceremony); resp.StatusCode != http.StatusOK {
		t.Fatalf("register: %d", resp.StatusCode)
	}

	for _, tc := range []struct {
		name   string
		signIn func(planted *http.Cookie) *http.Response
	}{
		{"password and code", func(planted *http.Cookie) *http.Response {
			step, _ := e.passwordStep(t, "ann@example.com", testPassword, planted)
			return e.PostJSON("/auth/2fa", map[string]string{"code": totpCode(t, secret, e.Clock.Now())}, step, planted)
		}},
		{"passkey", func(planted *http.Cookie) *http.Response {
			options, ceremony := e.beginCeremony(t, "/auth/passkey/login/begin", planted)
			return e.PostJSON("/auth/passkey/login/finish", a.Get(t, options), ceremony, planted)
		}},
	} {
		e.Clock.Advance(30 * time.Second)
		planted := e.StartSession(t, mallory)
		resp := tc.signIn(planted)
		got := e.SessionCookie(resp)
		if resp.StatusCode != http.StatusOK || got == nil || got.Value == planted.Value {
			t.Fatalf("%s: %d, cookie %+v", tc.name, resp.StatusCode, got)
		}
		if _, err := e.Store.Session(t.Context(), storage.HashSecret(planted.Value)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s: the planted session survived: %v", tc.name, err)
		}
	}
}

// MF4: WebAuthn answers and codes are bounded before any parsing: an oversized
// body is refused as such.
func TestSecondFactorBodiesBounded(t *testing.T) {
	e := newTestEnv(t)
	huge := `{"id":"` + strings.Repeat("A", web.MaxAuthBody+1) + `"}`
	for _, path := range []string{"/auth/passkey/login/finish", "/auth/2fa/passkey/finish", "/auth/2fa", "/auth/passkey/register/finish"} {
		if code := e.ProblemCode(t, e.PostJSON(path, huge), http.StatusRequestEntityTooLarge); code != "body_too_large" {
			t.Errorf("%s: %q", path, code)
		}
	}
}
