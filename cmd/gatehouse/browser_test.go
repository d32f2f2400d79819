//go:build integration

package main

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// chromiumPath finds headless Chromium, or skips the test loudly: .ci/run
// installs it, so CI always runs these tests.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	webtest.Missing(t, "no chromium on PATH (apt-get install chromium; .ci/run does this); browser test untested")
	return ""
}

// newBrowser starts headless Chromium with the flags this workplace needs,
// and extra ones.
func newBrowser(t *testing.T, extra ...chromedp.ExecAllocatorOption) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(opts, extra...)...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	// The first Run starts the browser and must not carry a deadline;
	// every later step is bounded.
	if _, err := chromedp.Run(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	bounded, cancelBounded := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancelBounded)
	return bounded
}

// browse runs steps and returns the page location and body text afterwards.
func browse(t *testing.T, ctx context.Context, steps ...chromedp.Action[chromedp.Void]) (location, body string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Steps(steps...)); err != nil {
		t.Fatal(err)
	}
	location, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	if body, err = chromedp.Run(ctx, chromedp.Text(`body`)); err != nil {
		t.Fatal(err)
	}
	return location, body
}

// TestBrowserSignInForgotReset drives the pages as a person would: a
// protected page sends the browser to sign in and back; forgot mails a link;
// the link's form sets a new password; the old one stops working.
func TestBrowserSignInForgotReset(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	addUser(t, db, "carol@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL)
	ctx := newBrowser(t)

	location, _ := browse(t, ctx,
		chromedp.Navigate(g.URL+"/reports?year=2026"),
		chromedp.WaitVisible(`#email`),
	)
	if !strings.Contains(location, "/auth/login?rd=") {
		t.Errorf("protected page led to %s, want the sign-in page", location)
	}
	_, body := browse(t, ctx,
		chromedp.SendKeys(`#email`, "carol@example.com"),
		chromedp.SendKeys(`#password`, testPassword),
		chromedp.Submit(`#password`),
		chromedp.WaitNotPresent(`#password`),
	)
	if !strings.Contains(body, `"path":"/reports"`) || !strings.Contains(body, "carol@example.com") {
		t.Fatalf("after sign-in the browser shows %.300q, want the upstream page for carol", body)
	}

	// Forgot: the page answers the same for everyone and the mail arrives as a file.
	browse(t, ctx,
		chromedp.Navigate(g.URL+"/auth/forgot"),
		chromedp.WaitVisible(`#email`),
		chromedp.SendKeys(`#email`, "carol@example.com"),
		chromedp.Submit(`#email`),
		chromedp.WaitNotPresent(`#email`),
	)
	link := waitForResetLink(t, filepath.Join(dir, "mail"), g.URL)

	const newPassword = "a brand new passphrase 42"
	location, _ = browse(t, ctx,
		chromedp.Navigate(link),
		chromedp.WaitVisible(`#password`),
		chromedp.SendKeys(`#password`, newPassword),
		chromedp.SendKeys(`#confirm`, newPassword),
		chromedp.Submit(`#confirm`),
		chromedp.WaitVisible(`#email`),
	)
	if !strings.Contains(location, "/auth/login") {
		t.Errorf("after reset the browser is at %s, want the sign-in page", location)
	}
	// The reset revoked the browser's session: the protected page asks to
	// sign in again (with the email filled in after the reset).
	_, body = browse(t, ctx,
		chromedp.Navigate(g.URL+"/reports"),
		chromedp.WaitVisible(`#email`),
		chromedp.SetValue(`#email`, "carol@example.com"),
		chromedp.SendKeys(`#password`, newPassword),
		chromedp.Submit(`#password`),
		chromedp.WaitNotPresent(`#password`),
	)
	if !strings.Contains(body, `"path":"/reports"`) {
		t.Fatalf("sign-in with the new password shows %.300q", body)
	}
}

// waitForResetLink polls the mail folder for the reset message and returns its link.
func waitForResetLink(t *testing.T, dir, base string) string {
	t.Helper()
	return waitForMailLink(t, dir, base, resetLink)
}

// waitForMailLink returns the first link matching link in a mail file of
// dir, waiting for the mail to arrive.
func waitForMailLink(t *testing.T, dir, base string, link *regexp.Regexp) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		files, _ := filepath.Glob(filepath.Join(dir, "*.eml"))
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				continue
			}
			msg, err := mail.ReadMessage(fh)
			if err != nil {
				fh.Close()
				continue
			}
			raw, _ := os.ReadFile(f)
			fh.Close()
			text := strings.ReplaceAll(strings.ReplaceAll(string(raw), "=\r\n", ""), "=3D", "=")
			if m := link.FindString(text); m != "" && msg.Header.Get("To") != "" {
				if !strings.HasPrefix(m, base) {
					t.Fatalf("mailed link %s is not under the base URL %s", m, base)
				}
				return m
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("no mail with a link like %s arrived in %s", link, dir)
	return ""
}

// TestBrowserBackAfterSignOut (CS1): after signing out from an app page, the
// Back button shows the sign-in page (a fresh request, refused without a
// session), not the app page from the browser's cache.
func TestBrowserBackAfterSignOut(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An ordinary app page: cacheable, with a sign-out button.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Reports</title><h1 id="secret">Reports of %s</h1>`+
			`<form method="post" action="/auth/logout"><button id="signout" type="submit">Sign out</button></form>`,
			html.EscapeString(r.Header.Get("X-Forwarded-Email")))
	}))
	t.Cleanup(up.Close)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "carol@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL)
	ctx := newBrowser(t)

	_, body := browse(t, ctx,
		chromedp.Navigate(g.URL+"/reports"),
		chromedp.WaitVisible(`#email`),
		chromedp.SendKeys(`#email`, "carol@example.com"),
		chromedp.SendKeys(`#password`, testPassword),
		chromedp.Submit(`#password`),
		chromedp.WaitVisible(`#secret`),
	)
	if !strings.Contains(body, "Reports of carol@example.com") {
		t.Fatalf("after sign-in the browser shows %.300q", body)
	}
	location, _ := browse(t, ctx,
		chromedp.Click(`#signout`),
		chromedp.WaitVisible(`#email`),
		// The sign-in page has loaded all it asked for, the cache-clearing
		// stylesheet included.
		chromedp.Poll[chromedp.Void](`document.readyState === "complete"`),
	)
	if !strings.Contains(location, "/auth/login") {
		t.Fatalf("after sign-out the browser is at %s", location)
	}
	signedOutAt := location
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`history.back()`)); err != nil {
		t.Fatal(err)
	}
	// Wait until the browser has left the sign-in page it was on and shows
	// either page. The page is read with one script each time: a page
	// restored from the back/forward cache sends no load events to wait for,
	// and a script run while the page changes fails and is tried again
	// (all within the browser's bound).
	for {
		state, err := chromedp.Run(ctx, chromedp.Evaluate[string](
			`[(document.querySelector("#email, #secret") || {}).id || "", location.href, document.body ? document.body.innerText : ""].join("\n")`))
		parts := strings.SplitN(state, "\n", 3)
		if err == nil && len(parts) == 3 && parts[0] != "" && parts[1] != signedOutAt {
			location, body = parts[1], parts[2]
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("after Back: the browser shows no page (%v)", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(body, "Reports of") {
		t.Fatalf("Back after sign-out shows the app page from the cache (%s): %.200q", location, body)
	}
	if !strings.Contains(location, "/auth/login?rd=") {
		t.Errorf("Back after sign-out led to %s, want the sign-in page for /reports", location)
	}
}
