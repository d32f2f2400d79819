//go:build integration

package main

import (
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// A newcomer tries Gatehouse on a VM or an intranet host over plain HTTP:
// --base-url http://myhost:8080 (the legacy-host walkthrough's shape, with
// a host name instead of 127.0.0.1). In Chromium the sign-in form is then
// refused: 403 "Form refused — Cross-origin request refused. The form was
// sent from another site", although it was posted from Gatehouse's own
// page. Why: http://myhost is not a potentially trustworthy origin, so
// Chromium sends no Sec-Fetch-Site, and because every /auth/ page carries
// Referrer-Policy: no-referrer it sends "Origin: null" with the form post;
// http.CrossOriginProtection then sees a foreign origin. On 127.0.0.1 and
// localhost (every test so far, make run) Sec-Fetch-Site: same-origin hides
// it; behind TLS too. The error blames "another site" and says to "open the
// page here and send it again", which cannot help.
//
// gate.test is mapped to 127.0.0.1 inside the browser only, so the test
// needs no DNS and listens on loopback.
func TestBrowserSignInOnPlainHTTPHost(t *testing.T) {
	ln := listenLoopback(t)
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	base := "http://gate.test:" + port
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	up, _ := echoUpstream(t)
	startGatehouseOn(t, ln, db, nil, "--upstream", up.URL, "--base-url", base)

	ctx := newBrowser(t, chromedp.Flag("host-resolver-rules", "MAP gate.test 127.0.0.1"))

	location, body := browse(t, ctx,
		chromedp.Navigate(base+"/reports"), chromedp.WaitVisible(`#email`),
		chromedp.SendKeys(`#email`, "alice@example.com"), chromedp.SendKeys(`#password`, testPassword),
		chromedp.Submit(`#password`), chromedp.WaitNotPresent(`#password`))
	if location != base+"/reports" || strings.Contains(body, "cross_origin") {
		t.Errorf("sign-in from Gatehouse's own page at %s: landed on %s\n%.400s", base, location, body)
	}
}
