package main

import (
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/mail/mailtest"
	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// canaryBrowser is a user agent with its own cookie jar that does not
// follow redirects, so that each step's answer can be checked.
type canaryBrowser struct {
	t    *testing.T
	base *url.URL
	jar  *cookiejar.Jar
	c    *http.Client
}

func newCanaryBrowser(t *testing.T, base string) *canaryBrowser {
	u, _ := url.Parse(base)
	jar, _ := cookiejar.New(nil)
	return &canaryBrowser{t: t, base: u, jar: jar, c: &http.Client{
		Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}}
}

// do sends a request (a path is relative to the base URL) and returns the
// status, the Location and the body.
func (b *canaryBrowser) do(method, target, contentType, body string) (int, string, string) {
	b.t.Helper()
	if strings.HasPrefix(target, "/") {
		target = b.base.String() + target
	}
	req, err := http.NewRequest(method, target, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Location"), string(data)
}

// want fails unless a step answered status.
func (b *canaryBrowser) want(step string, status, wantStatus int, body string) {
	b.t.Helper()
	if status != wantStatus {
		b.t.Fatalf("%s: status %d, want %d: %.300s", step, status, wantStatus, body)
	}
}

// cookies returns the browser's cookies for Gatehouse by name.
func (b *canaryBrowser) cookies() map[string]string {
	out := map[string]string{}
	for _, c := range b.jar.Cookies(b.base) {
		out[c.Name] = c.Value
	}
	return out
}

// oauth runs an OAuth start through the fake provider and returns the
// callback URL, with the transaction cookies the browser holds by then.
func (b *canaryBrowser) oauth(start string) (callback string, txCookies []string) {
	b.t.Helper()
	status, location, body := b.do("GET", start, "", "")
	b.want("GET "+start, status, http.StatusFound, body)
	status, callback, body = b.do("GET", location, "", "")
	b.want("provider authorize", status, http.StatusFound, body)
	for name, value := range b.cookies() {
		if name != "gatehouse_session" {
			txCookies = append(txCookies, value)
		}
	}
	return callback, txCookies
}

// LG1: a password, a session id, a reset token, an OAuth code and state
// (and the SMTP and client secrets) pushed through sign-in, sign-out,
// forgot, reset, OAuth login, link and unlink of the whole server never
// appear in a log line at debug level, while the event lines (LG2) do,
// each with time, client IP, request id and, where known, the user id.
func TestLogCanary(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	secret := func(prefix string) string { return prefix + rand.Text() }
	var (
		password     = secret("Canary-Pa55-")
		wrong        = secret("Wrong-Canary-")
		newPassword  = secret("New-Canary-Pa55-")
		invitePass   = secret("Invite-Canary-Pa55-")
		adminPass    = secret("Admin-Set-Canary-Pa55-")
		smtpPassword = secret("smtp-canary-")
		googleSecret = secret("google-canary-")
		githubSecret = secret("github-canary-")
	)
	secrets := []string{password, wrong, newPassword, invitePass, adminPass, smtpPassword, googleSecret, githubSecret}
	keep := func(s ...string) {
		for _, v := range s {
			if v == "" {
				t.Fatal("a secret of the flow is empty: the test lost track of it")
			}
		}
		secrets = append(secrets, s...)
	}
	addUser(t, db, "alice@example.com", password)

	relay := mailtest.NewServer(t, mailtest.Options{Username: "gatehouse-relay", Password: smtpPassword})
	smtpFile := filepath.Join(dir, "smtp-password")
	if err := os.WriteFile(smtpFile, []byte(smtpPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ln := listenLoopback(t)
	base := "http://" + ln.Addr().String()
	google := oauthtest.NewGoogle(oauthtest.Client{ID: "google-canary-client", Secret: googleSecret, RedirectURL: base + "/auth/callback/google"}, nil)
	defer google.Close()
	google.SetIssuer("https://accounts.google.com") // what Gatehouse expects of Google
	github := oauthtest.NewGitHub(oauthtest.Client{ID: "github-canary-client", Secret: githubSecret, RedirectURL: base + "/auth/callback/github"}, nil)
	defer github.Close()

	auditFile := filepath.Join(dir, "audit.log")
	g := startGatehouseOn(t, ln, db, nil, "--upstream", up.URL, "--audit-log", auditFile, "--open-signup",
		"--smtp-addr", relay.Addr, "--smtp-tls", "none", "--smtp-username", "gatehouse-relay",
		"--smtp-password-file", smtpFile, "--smtp-from", "gatehouse@example.com",
		"--google-client-id", "google-canary-client", "--google-client-secret", googleSecret,
		"--google-auth-url", google.AuthURL(), "--google-token-url", google.TokenURL(), "--google-userinfo-url", google.UserinfoURL(), "--google-jwks-url", google.JWKSURL(),
		"--github-client-id", "github-canary-client", "--github-client-secret", githubSecret,
		"--github-auth-url", github.AuthURL(), "--github-token-url", github.TokenURL(), "--github-api-url", github.APIURL())
	asJSON := func(v map[string]string) string { b, _ := json.Marshal(v); return string(b) }
	const jsonType, formType = "application/json", "application/x-www-form-urlencoded"

	// Password sign-in: a failure, a success (JSON), sign-out, a form sign-in.
	a := newCanaryBrowser(t, base)
	status, _, body := a.do("POST", "/auth/login", jsonType, asJSON(map[string]string{"email": "alice@example.com", "password": wrong}))
	a.want("login with a wrong password", status, http.StatusUnauthorized, body)
	status, _, body = a.do("POST", "/auth/login", jsonType, asJSON(map[string]string{"email": "alice@example.com", "password": password}))
	a.want("login", status, http.StatusOK, body)
	var signedIn struct{ User struct{ ID string } }
	if err := json.Unmarshal([]byte(body), &signedIn); err != nil || signedIn.User.ID == "" {
		t.Fatalf("login answer %q: %v", body, err)
	}
	alice := signedIn.User.ID
	keep(a.cookies()["gatehouse_session"])
	status, _, body = a.do("GET", "/app", "", "")
	a.want("signed-in GET /app", status, http.StatusOK, body)
	status, _, body = a.do("POST", "/auth/logout", "", "")
	a.want("logout", status, http.StatusNoContent, body)
	status, location, body := a.do("POST", "/auth/login", formType, url.Values{"email": {"alice@example.com"}, "password": {password}, "rd": {"/app"}}.Encode())
	a.want("form login", status, http.StatusSeeOther, body)
	if location != "/app" {
		t.Errorf("form login went to %q, want /app", location)
	}
	keep(a.cookies()["gatehouse_session"])

	// Forgot and reset, the token from the mail the relay received.
	b := newCanaryBrowser(t, base)
	status, _, body = b.do("POST", "/auth/forgot", jsonType, asJSON(map[string]string{"email": "alice@example.com"}))
	b.want("forgot", status, http.StatusAccepted, body)
	msg := relay.Next(t, 30*time.Second)
	if msg.AuthUser != "gatehouse-relay" {
		t.Errorf("the relay saw AUTH user %q", msg.AuthUser)
	}
	parsed, err := mailtest.Parse(msg.Data)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(regexp.QuoteMeta(base) + `/auth/reset\?token=([A-Za-z0-9_-]+)`).FindStringSubmatch(parsed.Text)
	if m == nil {
		t.Fatalf("no reset link in the mail:\n%s", parsed.Text)
	}
	token := m[1]
	keep(token)
	status, _, body = b.do("GET", "/auth/reset?token="+token, "", "")
	b.want("reset page", status, http.StatusOK, body)
	status, _, body = b.do("POST", "/auth/reset", jsonType, asJSON(map[string]string{"token": token, "password": "short"}))
	b.want("reset with a weak password", status, http.StatusBadRequest, body)
	status, _, body = b.do("POST", "/auth/reset", jsonType, asJSON(map[string]string{"token": token, "password": newPassword}))
	b.want("reset", status, http.StatusOK, body)
	relay.Next(t, 30*time.Second) // the notice that the password changed
	status, _, body = b.do("POST", "/auth/reset", jsonType, asJSON(map[string]string{"token": token, "password": newPassword + "x"}))
	b.want("reset with a used token", status, http.StatusBadRequest, body)
	// RS4 through the server: the session from before the reset is revoked
	// on its next request.
	status, _, body = a.do("GET", "/app", "", "")
	a.want("GET /app with a session from before the reset", status, http.StatusFound, body)

	// Sign in with the new password; link GitHub and unlink it again.
	c := newCanaryBrowser(t, base)
	status, _, body = c.do("POST", "/auth/login", jsonType, asJSON(map[string]string{"email": "alice@example.com", "password": newPassword}))
	c.want("login with the new password", status, http.StatusOK, body)
	keep(c.cookies()["gatehouse_session"])
	github.SetNext(oauthtest.Account{Subject: "4242", Email: "alice@example.com", EmailVerified: true})
	callback, tx := c.oauth("/auth/link/github?rd=/account")
	keep(tx...)
	keep(queryOf(t, callback, "code"), queryOf(t, callback, "state"))
	status, location, body = c.do("GET", callback, "", "")
	c.want("link callback", status, http.StatusSeeOther, body)
	if location != "/account" {
		t.Errorf("link callback went to %q", location)
	}
	status, _, body = c.do("DELETE", "/auth/link/github", "", "")
	c.want("unlink", status, http.StatusNoContent, body)

	// Google sign-in creating a user; the callback replayed.
	d := newCanaryBrowser(t, base)
	google.SetNext(oauthtest.Account{Subject: "g-" + rand.Text(), Email: "gina@example.com", EmailVerified: true})
	callback, tx = d.oauth("/auth/login/google?rd=/app")
	keep(tx...)
	keep(queryOf(t, callback, "code"), queryOf(t, callback, "state"))
	status, location, body = d.do("GET", callback, "", "")
	d.want("Google callback", status, http.StatusSeeOther, body)
	if location != "/app" {
		t.Errorf("Google callback went to %q", location)
	}
	keep(d.cookies()["gatehouse_session"])
	status, _, body = d.do("GET", "/app", "", "")
	d.want("GET /app after Google sign-in", status, http.StatusOK, body)
	status, _, body = d.do("GET", callback, "", "")
	d.want("replayed callback", status, http.StatusBadRequest, body)

	// Administration through the running server's socket: an invitation
	// accepted, a password set, a user disabled, enabled and deleted.
	admin := func(stdin string, args ...string) {
		t.Helper()
		if code, out, errOut := cli(t, stdin, append(args, "--db", db)...); code != 0 {
			t.Fatalf("%v: exit %d %q %q", args, code, out, errOut)
		}
	}
	admin("", "users", "add", "ivy@example.com", "--invite")
	invite, err := mailtest.Parse(relay.Next(t, 30*time.Second).Data)
	if err != nil {
		t.Fatal(err)
	}
	m = regexp.MustCompile(regexp.QuoteMeta(base) + `/auth/invite\?token=([A-Za-z0-9_-]+)`).FindStringSubmatch(invite.Text)
	if m == nil {
		t.Fatalf("no invitation link in the mail:\n%s", invite.Text)
	}
	inviteToken := m[1]
	keep(inviteToken)
	e := newCanaryBrowser(t, base)
	status, _, body = e.do("GET", "/auth/invite?token="+inviteToken, "", "")
	e.want("invitation page", status, http.StatusOK, body)
	status, _, body = e.do("POST", "/auth/invite", jsonType, asJSON(map[string]string{"token": inviteToken, "password": invitePass}))
	e.want("accept invitation", status, http.StatusOK, body)
	keep(e.cookies()["gatehouse_session"])
	status, _, body = e.do("GET", "/app", "", "")
	e.want("GET /app after the invitation", status, http.StatusOK, body)
	status, _, body = e.do("POST", "/auth/invite", jsonType, asJSON(map[string]string{"token": inviteToken, "password": invitePass + "x"}))
	e.want("invitation used twice", status, http.StatusBadRequest, body)
	admin(adminPass+"\n", "users", "set-password", "ivy@example.com", "--password-stdin")
	admin("", "users", "disable", "gina@example.com")
	status, _, body = d.do("GET", "/app", "", "")
	d.want("GET /app of a disabled user", status, http.StatusFound, body)
	admin("", "users", "enable", "gina@example.com")
	admin("", "users", "revoke-sessions", "alice@example.com")
	admin("", "users", "delete", "ivy@example.com")

	secrets = append(secrets, google.Secrets()...)
	secrets = append(secrets, github.Secrets()...)
	g.Stop()
	logs := g.Logs.String()
	trail, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	checkAuditTrail(t, string(trail), secrets, alice)

	// No secret, nor any 16-character piece of one, in any line.
	for _, s := range secrets {
		random := s
		if strings.HasPrefix(s, "eyJ") { // a JWT: its header is common to all, its signature is not
			random = s[strings.LastIndexByte(s, '.')+1:]
		}
		if strings.Contains(logs, s) || leaksPiece(logs, random, 16) {
			t.Errorf("a secret (%.8s…) appears in the logs", s)
		}
	}
	if len(secrets) < 20 {
		t.Errorf("only %d secrets checked", len(secrets))
	}

	// The events, each with time, client IP and request id.
	events := map[string][]string{}
	for line := range strings.SplitSeq(strings.TrimSpace(logs), "\n") {
		if m := regexp.MustCompile(` msg="auth event" event=(\w+)`).FindStringSubmatch(line); m != nil {
			events[m[1]] = append(events[m[1]], line)
		}
	}
	requestID := regexp.MustCompile(` request_id=[0-9a-f]{32}( |$)`)
	withUser := " user_id=" + alice
	for _, want := range []struct{ event, must string }{
		{"login_failed", ""},
		{"login_ok", withUser},
		{"logout", withUser},
		{"forgot_requested", ""},
		{"reset_failed", ""},
		{"reset_completed", withUser},
		{"oauth_started", ""},
		{"oauth_linked", withUser},
		{"oauth_unlinked", withUser},
		{"oauth_user_created", " user_id="},
		{"oauth_state_failed", ""},
	} {
		lines := events[want.event]
		if len(lines) == 0 {
			t.Errorf("no %s event in the log", want.event)
			continue
		}
		for _, line := range lines {
			if !strings.HasPrefix(line, "time=") || !strings.Contains(line, " client_ip=127.0.0.1") || !requestID.MatchString(line) || !strings.Contains(line, want.must) {
				t.Errorf("%s event lacks time, client_ip, request_id or %q: %s", want.event, want.must, line)
			}
		}
	}
	if lines := events["reset_completed"]; len(lines) > 0 && !strings.Contains(lines[0], " sessions_revoked=1") {
		t.Errorf("reset_completed does not count the revoked session: %s", lines[0])
	}
	if !strings.Contains(logs, `msg="mail delivered"`) {
		t.Error("no delivery line for the mail sent through the relay")
	}
	if t.Failed() {
		t.Logf("logs:\n%s", logs)
	}
}

// leaksPiece reports whether logs contain any n-byte piece of secret.
func leaksPiece(logs, secret string, n int) bool {
	for i := 0; i+n <= len(secret); i++ {
		if strings.Contains(logs, secret[i:i+n]) {
			return true
		}
	}
	return false
}

// queryOf returns a query parameter of u.
func queryOf(t *testing.T, u, name string) string {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	return parsed.Query().Get(name)
}

// checkAuditTrail checks the audit log of the canary's day: every event the
// day caused, each a JSON object with the contract's fields only, HTTP ones
// with client IP and request id, and no secret.
func checkAuditTrail(t *testing.T, trail string, secrets []string, alice string) {
	t.Helper()
	for _, s := range secrets {
		if strings.Contains(trail, s) || leaksPiece(trail, s[max(0, len(s)-16):], 16) {
			t.Errorf("a secret (%.8s…) appears in the audit log", s)
		}
	}
	seen := map[string][]map[string]string{}
	allowed := map[string]bool{"time": true, "event": true, "request_id": true, "client_ip": true, "user_id": true, "email": true, "provider": true}
	for line := range strings.SplitSeq(strings.TrimSpace(trail), "\n") {
		var ev map[string]string
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Errorf("audit line is not one JSON object of strings: %q: %v", line, err)
			continue
		}
		for k := range ev {
			if !allowed[k] {
				t.Errorf("audit line has field %q beyond the contract: %s", k, line)
			}
		}
		if _, err := time.Parse(time.RFC3339Nano, ev["time"]); err != nil {
			t.Errorf("audit line without a time: %s", line)
		}
		seen[ev["event"]] = append(seen[ev["event"]], ev)
	}
	httpEvents := []string{"login", "login_failed", "logout", "reset_requested", "reset_completed", "invite_accepted",
		"identity_linked", "identity_unlinked"}
	adminEvents := []string{"user_created", "invite_sent", "password_changed", "user_disabled", "user_enabled", "user_deleted", "sessions_revoked"}
	for _, name := range append(httpEvents, adminEvents...) {
		if len(seen[name]) == 0 {
			t.Errorf("no %s event in the audit log:\n%s", name, trail)
		}
	}
	for _, name := range httpEvents {
		for _, ev := range seen[name] {
			if ev["client_ip"] != "127.0.0.1" || len(ev["request_id"]) != 32 {
				t.Errorf("%s without client IP or request id: %v", name, ev)
			}
		}
	}
	for _, name := range append(adminEvents, "login", "reset_completed") {
		for _, ev := range seen[name] {
			if ev["user_id"] == "" || ev["email"] == "" {
				t.Errorf("%s does not name its target: %v", name, ev)
			}
		}
	}
	if ev := seen["identity_linked"]; len(ev) > 0 && (ev[0]["provider"] != "github" || ev[0]["user_id"] != alice) {
		t.Errorf("identity_linked: %v", ev[0])
	}
	for name := range seen {
		if !slices.Contains(audit.Names, name) {
			t.Errorf("audit event %q is not one of the contract's", name)
		}
	}
}
