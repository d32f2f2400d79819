//go:build integration

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"
)

// virtualAuthenticator gives the browser a DevTools virtual authenticator:
// a platform authenticator (CTAP2, internal) with resident keys and user
// verification that always succeeds, as a phone or laptop with a
// fingerprint reader is.
func virtualAuthenticator() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := cdp.Call(ctx, tg, webauthn.Enable, webauthn.EnableParams{}); err != nil {
			return fmt.Errorf("webauthn.enable: %w", err)
		}
		_, err := cdp.Call(ctx, tg, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Transport: webauthn.AuthenticatorTransportInternal,
			HasResidentKey: true, HasUserVerification: true, IsUserVerified: true, AutomaticPresenceSimulation: true,
		}})
		return err
	})
}

// TestBrowserPasskeysAndTOTP walks the second factor in Chromium with a
// virtual authenticator: enrol an authenticator app (code from the secret
// the page shows) and keep the recovery codes, register a passkey, sign in
// with it and no password, use it as the second factor after a password,
// remove it; axe-core checks every new page in each look.
func TestBrowserPasskeysAndTOTP(t *testing.T) {
	audit := newPageAudit(t)
	ctx := newBrowser(t)
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "carol@example.com", testPassword)
	ln := listenLoopback(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// A WebAuthn relying party is a host name, never an IP address.
	base := "http://localhost:" + port
	startGatehouseOn(t, ln, db, nil, "--upstream", up.URL, "--base-url", base, "--app-name", "Acme Reports")
	step(t, ctx, "virtual authenticator", virtualAuthenticator())

	signIn := func(what string) {
		t.Helper()
		step(t, ctx, what, chromedp.Navigate(base+"/auth/login?rd=%2Freports"), chromedp.WaitVisible(`#email`),
			chromedp.SendKeys(`#email`, "carol@example.com"), chromedp.SendKeys(`#password`, testPassword),
			chromedp.Submit(`#password`), chromedp.WaitNotPresent(`#password`))
	}
	signOut := func() {
		t.Helper()
		step(t, ctx, "sign out", chromedp.Navigate(base+"/auth/account"), chromedp.WaitVisible(`main`),
			chromedp.Click(`form[action="/auth/logout"] button`), chromedp.WaitVisible(`#email`))
	}

	// 1. An authenticator app: the QR page, its code, the recovery codes.
	signIn("password sign-in")
	step(t, ctx, "account page", chromedp.Navigate(base+"/auth/account"), chromedp.WaitVisible(`#factors`))
	audit.check(ctx, "account-factors")
	step(t, ctx, "add an authenticator app", chromedp.Click(`form[action="/auth/account/totp"] button`), chromedp.WaitVisible(`code.secret`))
	audit.check(ctx, "factor-totp")
	secret, err := chromedp.Run(ctx, chromedp.Text(`code.secret`))
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCode(strings.TrimSpace(secret), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "confirm the code", chromedp.SendKeys(`#code`, code), chromedp.Submit(`#code`), chromedp.WaitVisible(`ul.recovery-codes`))
	audit.check(ctx, "factor-codes")
	codes, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("ul.recovery-codes li").length`))
	if err != nil || codes != 10 {
		t.Errorf("%d recovery codes shown (%v), want 10", codes, err)
	}

	// 2. A passkey, registered from the account page.
	step(t, ctx, "account page again", chromedp.Navigate(base+"/auth/account"), chromedp.WaitVisible(`[data-passkey="register"]`))
	step(t, ctx, "add a passkey", chromedp.Click(`[data-passkey="register"]`), chromedp.WaitVisible(`.notice`))
	if loc, body := where(t, ctx); !strings.Contains(loc, "done=passkey_added") || !strings.Contains(body, "Passkey") {
		t.Fatalf("after registering: %s %.400q", loc, body)
	}

	// 3. Sign in with the passkey alone.
	signOut()
	audit.check(ctx, "login-passkey")
	step(t, ctx, "sign in with a passkey", chromedp.Navigate(base+"/auth/login?rd=%2Freports"), chromedp.WaitVisible(`[data-passkey="login"]`),
		chromedp.Click(`[data-passkey="login"]`), chromedp.WaitNotPresent(`[data-passkey="login"]`))
	if loc, body := where(t, ctx); loc != base+"/reports" || !strings.Contains(body, `"path":"/reports"`) {
		t.Fatalf("after the passkey sign-in: %s %.300q", loc, body)
	}

	// 4. A password, then the passkey as the second factor.
	signOut()
	signIn("password, then the second factor")
	if loc, _ := where(t, ctx); !strings.HasSuffix(loc, "/auth/2fa") {
		t.Fatalf("a password sign-in with a factor led to %s, want /auth/2fa", loc)
	}
	step(t, ctx, "2fa page", chromedp.WaitVisible(`[data-passkey="second-factor"]`))
	audit.check(ctx, "2fa")
	step(t, ctx, "use the passkey", chromedp.Click(`[data-passkey="second-factor"]`), chromedp.WaitNotPresent(`[data-passkey="second-factor"]`))
	if loc, _ := where(t, ctx); loc != base+"/reports" {
		t.Fatalf("after the passkey as second factor: %s", loc)
	}

	// 5. Remove the passkey and the app: none left.
	for range 2 {
		step(t, ctx, "remove a factor", chromedp.Navigate(base+"/auth/account"), chromedp.WaitVisible(`ul.factors`),
			chromedp.Click(`ul.factors form button`), chromedp.WaitVisible(`.notice`))
	}
	if _, body := where(t, ctx); !strings.Contains(body, "No second factor yet") {
		t.Errorf("after removing both factors: %.500q", body)
	}
}

// TestBrowserRequiredEnrolment: under --second-factor=required a password
// sign-in without a factor lands on the enrolment page (axe-checked), whose
// code signs in and shows the recovery codes once, then goes on to rd.
func TestBrowserRequiredEnrolment(t *testing.T) {
	audit := newPageAudit(t)
	ctx := newBrowser(t)
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "dave@example.com", testPassword)
	ln := listenLoopback(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	base := "http://localhost:" + port
	startGatehouseOn(t, ln, db, nil, "--upstream", up.URL, "--base-url", base, "--second-factor", "required")

	step(t, ctx, "password sign-in", chromedp.Navigate(base+"/reports"), chromedp.WaitVisible(`#email`),
		chromedp.SendKeys(`#email`, "dave@example.com"), chromedp.SendKeys(`#password`, testPassword),
		chromedp.Submit(`#password`), chromedp.WaitVisible(`code.secret`))
	if loc, _ := where(t, ctx); !strings.HasSuffix(loc, "/auth/2fa") {
		t.Fatalf("without a factor under required: %s, want /auth/2fa", loc)
	}
	audit.check(ctx, "2fa-enrol")
	step(t, ctx, "the app without a session", chromedp.Navigate(base+"/reports"), chromedp.WaitVisible(`#email`))
	step(t, ctx, "back to the enrolment", chromedp.Navigate(base+"/auth/2fa"), chromedp.WaitVisible(`code.secret`))
	secret, err := chromedp.Run(ctx, chromedp.Text(`code.secret`))
	if err != nil {
		t.Fatal(err)
	}
	code, err := totp.GenerateCode(strings.TrimSpace(secret), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	step(t, ctx, "confirm", chromedp.SendKeys(`#code`, code), chromedp.Submit(`#code`), chromedp.WaitVisible(`ul.recovery-codes`))
	audit.check(ctx, "2fa-codes")
	step(t, ctx, "continue", chromedp.Click(`a.button`), chromedp.WaitNotPresent(`ul.recovery-codes`))
	if loc, body := where(t, ctx); loc != base+"/reports" || !strings.Contains(body, `"path":"/reports"`) {
		t.Errorf("after enrolling: %s %.300q", loc, body)
	}
}
