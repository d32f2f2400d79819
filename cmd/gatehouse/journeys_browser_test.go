//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

// The journeys suite walks every sign-in journey in headless Chromium and
// runs axe-core on every Gatehouse page it passes, in light and dark mode,
// at 390 and 1280 px wide; any violation fails the test. With
// GATEHOUSETEST_SCREENSHOTS=dir it also writes a PNG of each page in each of
// those four looks to dir, for a reviewer.
//
// axe-core comes from npm: .ci/run installs it with
// `npm install --prefix .ci/node axe-core`; GATEHOUSETEST_AXE_JS may name
// axe.min.js elsewhere. Without it (or without Chromium) the test skips,
// loudly.

// axeSource returns axe.min.js or skips the test loudly.
func axeSource(t *testing.T) string {
	candidates := []string{os.Getenv("GATEHOUSETEST_AXE_JS"), filepath.Join("..", "..", ".ci", "node", "node_modules", "axe-core", "axe.min.js")}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if b, err := os.ReadFile(p); err == nil {
			return string(b)
		}
	}
	webtest.Missing(t, "axe-core not found (npm install --prefix .ci/node axe-core, or set GATEHOUSETEST_AXE_JS; .ci/run does this); browser journeys unchecked")
	return ""
}

// look is one way a page is seen: a width and a colour scheme.
type look struct {
	width, height int64
	scheme        string
}

var looks = []look{{390, 844, "light"}, {390, 844, "dark"}, {1280, 800, "light"}, {1280, 800, "dark"}}

// pageAudit runs axe-core on pages and keeps screenshots.
type pageAudit struct {
	t     *testing.T
	axe   string
	shots string // screenshot folder, or ""
	seen  map[string]bool
}

func newPageAudit(t *testing.T) *pageAudit {
	a := &pageAudit{t: t, axe: axeSource(t), shots: os.Getenv("GATEHOUSETEST_SCREENSHOTS"), seen: map[string]bool{}}
	if a.shots != "" {
		if err := os.MkdirAll(a.shots, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return a
}

// setLook emulates a viewport and a prefers-color-scheme.
func setLook(l look) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		var mobile []chromedp.EmulateViewportOption
		if l.width < 600 {
			mobile = append(mobile, chromedp.EmulateMobile)
		}
		if _, err := chromedp.EmulateViewport(l.width, l.height, mobile...)(ctx, tg); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: l.scheme}},
		})
		return err
	})
}

// axeResult is the part of axe.run's answer the test reads.
type axeResult struct {
	Violations []struct {
		ID     string `json:"id"`
		Impact string `json:"impact"`
		Help   string `json:"help"`
		Nodes  []struct {
			Target  []any  `json:"target"`
			Summary string `json:"failureSummary"`
		} `json:"nodes"`
	} `json:"violations"`
	Passes int `json:"passes"`
}

// check audits the page the browser shows now, once per name, in every
// look; it fails the test on any axe-core violation.
func (a *pageAudit) check(ctx context.Context, name string) {
	a.t.Helper()
	if a.seen[name] {
		return
	}
	a.seen[name] = true
	// Works without JavaScript: the page has none to run but the passkey
	// script, which only adds the passkey buttons.
	if n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('script:not([src="/auth/assets/passkey.js"])').length + document.querySelectorAll("[onclick],[onsubmit],[onload]").length`)); err != nil || n != 0 {
		a.t.Errorf("%s: %d scripts or inline handlers (%v), want none but the passkey script", name, n, err)
	}
	for _, l := range looks {
		if err := chromedp.Do(ctx, setLook(l)); err != nil {
			a.t.Fatalf("%s: set look: %v", name, err)
		}
		script := `(async () => {
			if (typeof axe === "undefined") { ` + a.axe + `
			}
			const r = await axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "wcag22aa", "best-practice"]}, resultTypes: ["violations"]});
			return JSON.stringify({violations: r.violations, passes: r.passes.length});
		})()`
		out, err := chromedp.Run(ctx, chromedp.Evaluate[string](script, chromedp.EvalAwaitPromise))
		if err != nil {
			a.t.Fatalf("%s: axe-core: %v", name, err)
		}
		var res axeResult
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			a.t.Fatalf("%s: axe-core answer: %v", name, err)
		}
		for _, v := range res.Violations {
			var where []string
			for _, n := range v.Nodes {
				where = append(where, fmt.Sprint(n.Target)+": "+n.Summary)
			}
			a.t.Errorf("axe-core on %s (%dpx, %s): %s (%s, %s)\n  %s", name, l.width, l.scheme, v.ID, v.Impact, v.Help, strings.Join(where, "\n  "))
		}
		if a.shots != "" {
			png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
			if err != nil {
				a.t.Fatalf("%s: screenshot: %v", name, err)
			}
			file := filepath.Join(a.shots, fmt.Sprintf("%s-%d-%s.png", name, l.width, l.scheme))
			if err := os.WriteFile(file, png, 0o644); err != nil {
				a.t.Fatal(err)
			}
		}
	}
	if err := chromedp.Do(ctx, setLook(looks[2])); err != nil {
		a.t.Fatal(err)
	}
}

// step runs actions and fails the test on error.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkFocusVisible fails unless the focused element is a tag and shows a
// focus outline of at least 2 px.
func checkFocusVisible(t *testing.T, ctx context.Context, tag string) {
	t.Helper()
	got, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => { const e = document.activeElement, s = getComputedStyle(e);
		return e.tagName + " " + s.outlineStyle + " " + parseFloat(s.outlineWidth); })()`))
	if err != nil {
		t.Fatal(err)
	}
	var gotTag, style string
	var width float64
	fmt.Sscanf(got, "%s %s %g", &gotTag, &style, &width)
	if gotTag != tag || style == "none" || width < 2 {
		t.Errorf("keyboard focus: %q, want a visible outline on a %s", got, tag)
	}
}

// script runs JavaScript that returns true.
func script(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Evaluate[bool](expr)(ctx, tg)
		return err
	})
}

// where returns the browser's location and the page's text.
func where(t *testing.T, ctx context.Context) (string, string) {
	t.Helper()
	loc, err := chromedp.Run(ctx, chromedp.Location())
	if err != nil {
		t.Fatal(err)
	}
	body, err := chromedp.Run(ctx, chromedp.Text(`body`))
	if err != nil {
		t.Fatal(err)
	}
	return loc, body
}

// otherBrowser is a second browser (own cookies) in the same Chromium.
func otherBrowser(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	other, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(other, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("second browser: %v", err)
	}
	return other
}

// TestBrowserJourneys walks every journey a person takes through the pages.
func TestBrowserJourneys(t *testing.T) {
	audit := newPageAudit(t)
	ctx := newBrowser(t)
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "gatehouse.db")
	addUser(t, db, "carol@example.com", testPassword)
	// The access policy lets in the people of the journeys; carol is taken
	// off the list at the end to see the access-denied page.
	emails := filepath.Join(dir, "allowed-emails")
	allowed := "carol@example.com\ndave@example.com\nivy@example.com\n"
	if err := os.WriteFile(emails, []byte(allowed), 0o600); err != nil {
		t.Fatal(err)
	}

	ln := listenLoopback(t)
	base := "http://" + ln.Addr().String()
	google := oauthtest.NewGoogle(oauthtest.Client{ID: "google-client", Secret: "google-secret", RedirectURL: base + "/auth/callback/google"}, nil)
	t.Cleanup(google.Close)
	google.SetIssuer("https://accounts.google.com")
	github := oauthtest.NewGitHub(oauthtest.Client{ID: "github-client", Secret: "github-secret", RedirectURL: base + "/auth/callback/github"}, nil)
	t.Cleanup(github.Close)
	g := startGatehouseOn(t, ln, db, nil, "--upstream", up.URL, "--allow-emails-file", emails, "--app-name", "Acme Reports",
		"--google-client-id", "google-client", "--google-client-secret", "google-secret",
		"--google-auth-url", google.AuthURL(), "--google-token-url", google.TokenURL(), "--google-userinfo-url", google.UserinfoURL(), "--google-jwks-url", google.JWKSURL(),
		"--github-client-id", "github-client", "--github-client-secret", "github-secret",
		"--github-auth-url", github.AuthURL(), "--github-token-url", github.TokenURL(), "--github-api-url", github.APIURL())

	// Another browser signed in before the reset: the reset signs it out.
	early := otherBrowser(t, ctx)
	step(t, early, "sign in the other browser",
		chromedp.Navigate(g.URL+"/auth/login"), chromedp.WaitVisible(`#email`),
		chromedp.SendKeys(`#email`, "carol@example.com"), chromedp.SendKeys(`#password`, testPassword),
		chromedp.Submit(`#password`), chromedp.WaitNotPresent(`#password`))

	// 1. A deep link with query and fragment → sign in, keyboard only:
	// a wrong password, then the right one → back to the exact URL.
	const deepLink = "/reports/2026?sort=desc&page=2#totals"
	step(t, ctx, "open the deep link", chromedp.Navigate(g.URL+deepLink), chromedp.WaitVisible(`#email`))
	loc, _ := where(t, ctx)
	if !strings.Contains(loc, "/auth/login?rd=") {
		t.Fatalf("deep link led to %s, want the sign-in page", loc)
	}
	audit.check(ctx, "login")
	step(t, ctx, "email, then Tab", chromedp.KeyEvent("carol@example.com"), chromedp.KeyEvent("\t"))
	checkFocusVisible(t, ctx, "INPUT")
	step(t, ctx, "wrong password, keyboard only",
		chromedp.KeyEvent("not the password at all"), chromedp.KeyEvent("\r"),
		chromedp.WaitVisible(`#form-error`))
	if inv, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#password").getAttribute("aria-invalid")`)); err != nil || inv != "true" {
		t.Errorf("password after a refusal: aria-invalid %q %v", inv, err)
	}
	audit.check(ctx, "login-error")
	// The refused page has the email kept and the password focused.
	focused, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.activeElement.id`))
	if err != nil || focused != "password" {
		t.Errorf("focus after a refusal: %q %v, want the password", focused, err)
	}
	step(t, ctx, "right password, Tab to the button", chromedp.KeyEvent(testPassword), chromedp.KeyEvent("\t"))
	checkFocusVisible(t, ctx, "BUTTON")
	step(t, ctx, "press the button with the keyboard", chromedp.KeyEvent("\r"), chromedp.WaitNotPresent(`#password`))
	loc, body := where(t, ctx)
	if loc != g.URL+deepLink || !strings.Contains(body, `"path":"/reports/2026"`) {
		t.Fatalf("after sign-in: %s (%.200q), want %s", loc, body, g.URL+deepLink)
	}

	// 2. Signed in: the sign-in page says who, the account page links back.
	step(t, ctx, "sign-in page while signed in", chromedp.Navigate(g.URL+"/auth/login?rd=%2Freports"), chromedp.WaitVisible(`main`))
	if _, body := where(t, ctx); !strings.Contains(body, "Signed in as carol@example.com") {
		t.Errorf("signed-in sign-in page: %.300q", body)
	}
	audit.check(ctx, "login-signed-in")
	step(t, ctx, "account page", chromedp.Navigate(g.URL+"/auth/account?rd=%2Freports"), chromedp.WaitVisible(`main`))
	audit.check(ctx, "account")

	// 3. Link Google, see the notice; unlink after confirming.
	google.SetNext(oauthtest.Account{Subject: "g-carol", Email: "carol@example.com", EmailVerified: true})
	step(t, ctx, "link Google", chromedp.Click(`a[aria-label="Link Google"]`), chromedp.WaitVisible(`.notice`))
	if loc, body := where(t, ctx); !strings.HasSuffix(loc, "/auth/account?notice=linked") || !strings.Contains(body, "The account was linked") {
		t.Errorf("after link: %s %.300q", loc, body)
	}
	audit.check(ctx, "account-linked")
	step(t, ctx, "unlink asks first", chromedp.Click(`a[aria-label="Unlink Google"]`), chromedp.WaitVisible(`form[action="/auth/unlink/google"]`))
	audit.check(ctx, "unlink-confirm")
	step(t, ctx, "confirm unlink", chromedp.Click(`form[action="/auth/unlink/google"] button`), chromedp.WaitVisible(`.notice`))
	if loc, body := where(t, ctx); !strings.HasSuffix(loc, "/auth/account?notice=unlinked") || !strings.Contains(body, "The account was unlinked") {
		t.Errorf("after unlink: %s %.300q", loc, body)
	}

	// 4. Sign out from the app's page, then Back: the sign-in page or a
	// fresh request, never the protected page from the cache.
	step(t, ctx, "protected page", chromedp.Navigate(g.URL+"/reports/2026"), chromedp.WaitVisible(`body`))
	step(t, ctx, "sign out from the app",
		script(`(() => { const f = document.createElement("form"); f.method = "post"; f.action = "/auth/logout"; document.body.append(f); f.submit(); return true; })()`),
		chromedp.WaitVisible(`#email`))
	if _, body := where(t, ctx); !strings.Contains(body, "You are signed out.") {
		t.Errorf("after sign-out: %.300q", body)
	}
	audit.check(ctx, "login-signed-out")
	// Back, then wait for the page it lands on, whether loaded afresh or
	// restored from the back/forward cache (which fires no load event).
	step(t, ctx, "Back after sign-out", script(`window.gatehouseBefore = true; setTimeout(() => history.back(), 0); true`))
	landed := ""
	for range 20 { // the poll does not survive a navigation: poll again
		landed, _ = chromedp.Run(ctx, chromedp.Poll[string](`!window.gatehouseBefore && document.readyState === "complete" && document.body ? location.pathname + " " + document.body.innerText : ""`,
			chromedp.WithPollingTimeout(5*time.Second)))
		if landed != "" {
			break
		}
	}
	if landed == "" || strings.Contains(landed, `"path":"/reports/2026"`) {
		t.Errorf("Back after sign-out shows %.200q, want the sign-in page or a fresh request", landed)
	}

	// 5. Forgot → mail → reset, starting from a sign-in page with rd: the
	// new password works, the email is filled in, rd is kept.
	step(t, ctx, "forgot from the sign-in page",
		chromedp.Navigate(g.URL+"/auth/login?rd="+url.QueryEscape("/reports/2026?sort=desc")),
		chromedp.WaitVisible(`#email`), chromedp.Click(`a[href^="/auth/forgot"]`), chromedp.WaitVisible(`#email`))
	audit.check(ctx, "forgot")
	step(t, ctx, "ask for a link", chromedp.SendKeys(`#email`, "carol@example.com"), chromedp.Submit(`#email`), chromedp.WaitNotPresent(`#email`))
	audit.check(ctx, "forgot-sent")
	link := waitForResetLink(t, filepath.Join(dir, "mail"), g.URL)
	step(t, ctx, "open the mailed link", chromedp.Navigate(link), chromedp.WaitVisible(`#password`))
	audit.check(ctx, "reset")
	const newPassword = "a brand new passphrase 42"
	step(t, ctx, "passwords that differ",
		chromedp.SendKeys(`#password`, newPassword), chromedp.SendKeys(`#confirm`, newPassword+"!"),
		chromedp.Submit(`#confirm`), chromedp.WaitVisible(`#password-error`))
	audit.check(ctx, "reset-error")
	step(t, ctx, "set the new password",
		chromedp.SendKeys(`#password`, newPassword), chromedp.SendKeys(`#confirm`, newPassword),
		chromedp.Submit(`#confirm`), chromedp.WaitVisible(`.notice`))
	email, err := chromedp.Run(ctx, chromedp.Value(`#email`))
	if err != nil || email != "carol@example.com" {
		t.Errorf("email after reset: %q %v, want it filled in", email, err)
	}
	audit.check(ctx, "login-after-reset")
	step(t, ctx, "sign in with the new password",
		chromedp.SendKeys(`#password`, newPassword), chromedp.Submit(`#password`), chromedp.WaitNotPresent(`#password`))
	if loc, _ := where(t, ctx); loc != g.URL+"/reports/2026?sort=desc" {
		t.Errorf("after reset and sign-in: %s, want the page asked for before forgot", loc)
	}
	step(t, early, "the other browser after the reset", chromedp.Navigate(g.URL+"/reports/2026"), chromedp.WaitVisible(`#email`))

	// 6. The used link again: 410 with a way to a new one.
	resp, err := chromedp.RunResponse(ctx, chromedp.Navigate(link))
	if err != nil || resp.Status != 410 {
		t.Errorf("used link: %v %v, want 410", resp, err)
	}
	audit.check(ctx, "link-expired")

	// 7. OAuth sign-in with a new GitHub account in a fresh browser, and
	// a broken callback's error page.
	fresh := otherBrowser(t, ctx)
	github.SetNext(oauthtest.Account{Subject: "777", Email: "dave@example.com", EmailVerified: true, Login: "dave"})
	step(t, fresh, "GitHub sign-in",
		chromedp.Navigate(g.URL+"/reports/q3"), chromedp.WaitVisible(`#email`),
		chromedp.Click(`a[href^="/auth/login/github"]`), chromedp.WaitNotPresent(`#email`))
	if loc, body := where(t, fresh); loc != g.URL+"/reports/q3" || !strings.Contains(body, "dave@example.com") {
		t.Errorf("after GitHub sign-in: %s %.200q", loc, body)
	}
	step(t, fresh, "stale callback", chromedp.Navigate(g.URL+"/auth/callback/github?code=x&state=stale"), chromedp.WaitVisible(`main`))
	audit.check(fresh, "error-sign-in-interrupted")

	// 8. The account page: a wrong current password is tied to its input;
	// a change says so; "sign out everywhere else" says so.
	const changed = "yet another long passphrase 77"
	step(t, ctx, "account page again", chromedp.Navigate(g.URL+"/auth/account"), chromedp.WaitVisible(`#current_password`))
	step(t, ctx, "a wrong current password",
		chromedp.SendKeys(`#current_password`, "not my password at all"), chromedp.SendKeys(`#password`, changed),
		chromedp.SendKeys(`#confirm`, changed), chromedp.Submit(`#confirm`), chromedp.WaitVisible(`#password-error`))
	if inv, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#current_password").getAttribute("aria-invalid") + " " + document.querySelector("#current_password").getAttribute("aria-describedby")`)); err != nil || inv != "true password-error" {
		t.Errorf("current password after a refusal: %q %v, want aria-invalid tied to the error", inv, err)
	}
	audit.check(ctx, "account-password-error")
	step(t, ctx, "change the password",
		chromedp.SendKeys(`#current_password`, newPassword), chromedp.SendKeys(`#password`, changed),
		chromedp.SendKeys(`#confirm`, changed), chromedp.Submit(`#confirm`), chromedp.WaitVisible(`.notice`))
	if _, body := where(t, ctx); !strings.Contains(body, "Your password was changed.") || !strings.Contains(body, "(this browser)") {
		t.Errorf("after a password change: %.400q", body)
	}
	audit.check(ctx, "account-password-changed")
	// "Sign out everywhere else" shows only when there is somewhere else.
	if _, body := where(t, ctx); strings.Contains(body, "Sign out everywhere else") {
		t.Errorf("one session left, yet \"Sign out everywhere else\": %.400q", body)
	}
	login(t, newClient(), g.URL, "carol@example.com", changed) // another device
	step(t, ctx, "account page with another device", chromedp.Navigate(g.URL+"/auth/account"), chromedp.WaitVisible(`form[action="/auth/account/sessions/revoke-others"] button`))
	step(t, ctx, "sign out everywhere else", chromedp.Click(`form[action="/auth/account/sessions/revoke-others"] button`), chromedp.WaitVisible(`.notice`))
	if _, body := where(t, ctx); !strings.Contains(body, "Every other device was signed out.") {
		t.Errorf("after signing out elsewhere: %.400q", body)
	}

	// 9. An invitation: the mailed link's page, an error tied to the
	// inputs, the password set and signed in; the used link is 410.
	adminClient, err := admin.Dial(t.Context(), filepath.Join(dir, "gatehouse.sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(adminClient.Close)
	if _, err := adminClient.AddUser(t.Context(), admin.AddUserRequest{Email: "ivy@example.com", Invite: true}); err != nil {
		t.Fatal(err)
	}
	invite := waitForMailLink(t, filepath.Join(dir, "mail"), g.URL, inviteLink)
	ivy := otherBrowser(t, ctx)
	step(t, ivy, "open the invitation", chromedp.Navigate(invite), chromedp.WaitVisible(`#password`))
	if user, err := chromedp.Run(ivy, chromedp.Evaluate[string](`document.querySelector('input[name="username"]').value`)); err != nil || user != "ivy@example.com" {
		t.Errorf("invite form username: %q %v", user, err)
	}
	audit.check(ivy, "invite")
	const ivyPassword = "ivy chooses a long passphrase"
	step(t, ivy, "passwords that differ",
		chromedp.SendKeys(`#password`, ivyPassword), chromedp.SendKeys(`#confirm`, ivyPassword+"?"),
		chromedp.Submit(`#confirm`), chromedp.WaitVisible(`#password-error`))
	audit.check(ivy, "invite-error")
	step(t, ivy, "accept the invitation",
		chromedp.SendKeys(`#password`, ivyPassword), chromedp.SendKeys(`#confirm`, ivyPassword),
		chromedp.Submit(`#confirm`), chromedp.WaitNotPresent(`#password`))
	if loc, body := where(t, ivy); loc != g.URL+"/" || !strings.Contains(body, "ivy@example.com") {
		t.Errorf("after the invitation: %s %.200q", loc, body)
	}
	resp, err = chromedp.RunResponse(ivy, chromedp.Navigate(invite))
	if err != nil || resp.Status != 410 {
		t.Errorf("used invitation: %v %v, want 410", resp, err)
	}
	audit.check(ivy, "invite-expired")

	// 10. The policy stops letting carol in (the list is re-read): her
	// next page is the access-denied page, whose button signs her out.
	if err := os.WriteFile(emails, []byte("dave@example.com\nivy@example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	denied := false
	for range 60 { // the list is re-read within seconds; wait for it, do not time it
		step(t, ctx, "protected page", chromedp.Navigate(g.URL+"/reports/2026"), chromedp.WaitVisible(`body`))
		if _, body := where(t, ctx); strings.Contains(body, "access_denied") {
			denied = true
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if !denied {
		t.Fatal("carol, off the list, still reaches the app")
	}
	if title, err := chromedp.Run(ctx, chromedp.Title()); err != nil || title != "Not allowed · Acme Reports" {
		t.Errorf("access-denied page: title %q (%v), want %q", title, err, "Not allowed · Acme Reports")
	}
	if _, body := where(t, ctx); !strings.Contains(body, "Acme Reports") {
		t.Errorf("access-denied page does not name the app: %s", body)
	}
	audit.check(ctx, "access-denied")
	step(t, ctx, "sign out from the access-denied page", chromedp.Click(`form[action="/auth/logout"] button`), chromedp.WaitVisible(`#email`))
	if _, body := where(t, ctx); !strings.Contains(body, "You are signed out.") {
		t.Errorf("after signing out from the access-denied page: %.300q", body)
	}
}

var inviteLink = regexp.MustCompile(`https?://[^\s"<>]+/auth/invite\?token=[A-Za-z0-9_-]+`)
