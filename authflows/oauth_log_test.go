package authflows

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// LG1 canary: codes, states, transaction cookies, session ids, access tokens
// and ID tokens pushed through every OAuth path (throttled starts and HEAD
// callbacks included) never appear in a log line, while the events (LG2) do.
func TestOAuthLogCanary(t *testing.T) {
	e := newOAuthEnv(t, oauthEnvOptions{})
	var secrets []string
	keep := func(b *oauthBrowser, callback string) string {
		secrets = append(secrets, stateOf(t, callback), b.sessionID())
		if c := b.heldTransactionCookie(); c != nil {
			secrets = append(secrets, c.Value)
		}
		if u, err := url.Parse(callback); err == nil {
			secrets = append(secrets, u.Query().Get("code"))
		}
		return callback
	}

	// Logins creating users, on both providers.
	for _, provider := range bothProviders {
		e.setNext(provider, oauthtest.Account{Subject: "100", Email: provider + "-canary@example.com", EmailVerified: true})
		b := e.newBrowser()
		b.get(keep(b, b.authorize("/auth/login/"+provider)))
		secrets = append(secrets, b.sessionID())
	}
	// A link, a refused link, an unlink.
	u := e.newUser("canary@example.com", true)
	b := e.newBrowser()
	b.signIn(u)
	e.github.SetNext(oauthtest.Account{Subject: "200", Email: "canary@example.com", EmailVerified: true})
	b.get(keep(b, b.authorize("/auth/link/github")))
	e.google.SetNext(oauthtest.Account{Subject: "100", Email: "x@example.com", EmailVerified: true})
	b.get(keep(b, b.authorize("/auth/link/google"))) // 409 identity_in_use
	b.do(http.MethodDelete, "/auth/link/github")
	// State failures: replay, other browser, expiry, mix-up.
	callback := keep(b, b.authorize("/auth/link/github"))
	b.get(callback)
	b.get(callback)
	e.newBrowser().get(keep(b, b.authorize("/auth/login/google")))
	callback = keep(b, b.authorize("/auth/login/google"))
	e.Clock.Advance(11 * time.Minute)
	b.get(callback)
	b.get(strings.Replace(keep(b, b.authorize("/auth/login/github")), "/github", "/google", 1))
	// ID token and exchange failures.
	e.google.EditNextIDToken(func(c map[string]any) { c["nonce"] = "x" })
	b.get(keep(b, b.authorize("/auth/login/google")))
	e.google.SetNext(oauthtest.Account{Subject: "300", Email: "unverified@example.com"})
	b.get(keep(b, b.authorize("/auth/login/google")))
	e.github.DenyNext("access_denied")
	b.get(keep(b, b.authorize("/auth/login/github")))
	// A HEAD of a callback, then the GET.
	e.github.SetNext(oauthtest.Account{Subject: "400", Email: "head@example.com", EmailVerified: true})
	callback = keep(b, b.authorize("/auth/login/github"))
	b.do(http.MethodHead, callback)
	b.get(callback)
	// Starts past the per-IP limit.
	for range flowStartBurst {
		if a := b.get("/auth/login/google"); a.status == http.StatusTooManyRequests {
			break
		}
	}

	secrets = append(secrets, e.google.Secrets()...)
	secrets = append(secrets, e.github.Secrets()...)
	logs := e.Logs.String()
	checked := 0
	for _, s := range secrets {
		if s == "" {
			continue
		}
		checked++
		if strings.Contains(logs, s) {
			t.Errorf("a secret (%.6s…) appears in the logs", s)
		}
	}
	if checked < 30 {
		t.Errorf("only %d secrets checked", checked)
	}
	for _, event := range []string{"oauth_login", "oauth_user_created", "oauth_linked", "oauth_unlinked", "oauth_state_failed", "oauth_refused", "oauth_error", "oauth_throttled"} {
		if !e.hasEvent(event) {
			t.Errorf("no %s event in the logs", event)
		}
	}
	counts := map[[2]string]float64{
		{"google", "user_created"}: 1, {"github", "user_created"}: 2,
		{"github", "linked"}: 2, {"github", "unlinked"}: 1,
	}
	for labels, want := range counts {
		if got := e.oauthCount(labels[0], labels[1]); got != want {
			t.Errorf("gatehouse_oauth_events_total%v = %v, want %v", labels, got, want)
		}
	}
	if got := e.oauthCount("google", "state_failed"); got < 3 {
		t.Errorf("google state_failed = %v, want ≥ 3", got)
	}
}

// oauthCount reads gatehouse_oauth_events_total{provider, result}.
func (e *oauthEnv) oauthCount(provider, result string) float64 {
	return e.CounterValue(e.t, "gatehouse_oauth_events_total", map[string]string{"provider": provider, "result": result})
}
