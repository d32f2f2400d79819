package main

import (
	"bytes"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// README (provider tokens): with --token-key-file and PostgreSQL, a
// Google sign-in through the real server keeps its tokens in the
// session_grants table sealed: no token the provider issued is in any
// column in clear.
func TestProviderTokensSealedInPostgres(t *testing.T) {
	db := pg.NewDatabase(t)
	up, _ := echoUpstream(t)
	ln := listenLoopback(t)
	base := "http://" + ln.Addr().String()
	google := oauthtest.NewGoogle(oauthtest.Client{ID: "google-seal-client", Secret: "google-seal-secret", RedirectURL: base + "/auth/callback/google"}, nil)
	defer google.Close()
	google.SetIssuer("https://accounts.google.com")
	startGatehouseOn(t, ln, db, nil, "--upstream", up.URL, "--open-signup", "--token-key-file", writeTokenKey(t),
		"--google-client-id", "google-seal-client", "--google-client-secret", "google-seal-secret",
		"--google-auth-url", google.AuthURL(), "--google-token-url", google.TokenURL(),
		"--google-userinfo-url", google.UserinfoURL(), "--google-jwks-url", google.JWKSURL())

	google.SetNext(oauthtest.Account{Subject: "g-1", Email: "gia@example.com", EmailVerified: true})
	b := newCanaryBrowser(t, base)
	callback, _ := b.oauth("/auth/login/google")
	status, _, body := b.do("GET", callback, "", "")
	b.want("google callback", status, http.StatusSeeOther, body)

	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	rows, err := conn.Query(t.Context(), "SELECT session_hash, user_id, provider, subject, sid, tokens FROM session_grants")
	if err != nil {
		t.Fatal(err)
	}
	var stored [][]byte
	for rows.Next() {
		var hash, tokens []byte
		var userID, provider, subject, sid string
		if err := rows.Scan(&hash, &userID, &provider, &subject, &sid, &tokens); err != nil {
			t.Fatal(err)
		}
		stored = append(stored, hash, []byte(userID+provider+subject+sid), tokens)
		if tokens == nil {
			t.Errorf("the grant of the %s sign-in holds no sealed tokens", provider)
		}
	}
	if rows.Err() != nil || len(stored) == 0 {
		t.Fatalf("no grant stored: %v", rows.Err())
	}
	secrets := google.Secrets()
	if len(secrets) < 3 {
		t.Fatalf("the fake issued %d secrets, want a code, an access, a refresh and an ID token", len(secrets))
	}
	for _, s := range secrets {
		for _, col := range stored {
			if bytes.Contains(col, []byte(s)) {
				t.Errorf("a provider token is in session_grants in clear")
			}
		}
	}
}

// The refresher runs off the request path: with --session-refresh 1s and
// the provider hanging on the refresher's call, the proxy keeps serving
// the signed-in browser; once the provider answers again the session
// stands (nothing changed).
func TestProxyServesWhileProviderHangs(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	up, _ := echoUpstream(t)
	ln := listenLoopback(t)
	base := "http://" + ln.Addr().String()
	google := oauthtest.NewGoogle(oauthtest.Client{ID: "google-hang-client", Secret: "google-hang-secret", RedirectURL: base + "/auth/callback/google"}, nil)
	defer google.Close()
	google.SetIssuer("https://accounts.google.com")
	startGatehouseOn(t, ln, db, nil, "--upstream", up.URL, "--open-signup", "--token-key-file", writeTokenKey(t),
		"--session-refresh", "1s",
		"--google-client-id", "google-hang-client", "--google-client-secret", "google-hang-secret",
		"--google-auth-url", google.AuthURL(), "--google-token-url", google.TokenURL(),
		"--google-userinfo-url", google.UserinfoURL(), "--google-jwks-url", google.JWKSURL())
	google.SetNext(oauthtest.Account{Subject: "g-2", Email: "hal@example.com", EmailVerified: true})
	b := newCanaryBrowser(t, base)
	callback, _ := b.oauth("/auth/login/google")
	status, _, body := b.do("GET", callback, "", "")
	b.want("google callback", status, http.StatusSeeOther, body)

	release := make(chan struct{})
	google.Hang(release)
	// Watchdog only: the refresher calls within a couple of seconds.
	for deadline := time.Now().Add(time.Minute); google.Hanging() == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the refresher never called the provider")
		}
	}
	for range 3 {
		status, _, body = b.do("GET", "/app", "", "")
		b.want("GET /app while the provider hangs on the refresher's call", status, http.StatusOK, body)
	}
	close(release)
	status, _, body = b.do("GET", "/app", "", "")
	b.want("GET /app after the provider answered again", status, http.StatusOK, body)
}
