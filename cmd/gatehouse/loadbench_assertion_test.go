//go:build loadbench

package main

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
)

// assertionReport puts Gatehouse with the identity assertion on and off
// beside the bare proxy (1,000 sessions stored, rounds rotating), and the
// forward-auth check endpoint's req/s beside the proxy's.
func assertionReport(t *testing.T, upstream, bare string) {
	fmt.Printf("\n== identity assertion and forward-auth, 1,000 sessions stored\n")
	start := func(name string, args ...string) (*gatehouse, []string) {
		db := filepath.Join(t.TempDir(), name+".db")
		cookies := populate(t, db, 1_000)
		g := startGatehouse(t, db, append([]string{"--upstream", upstream, "--log-level", "error"}, args...)...)
		t.Cleanup(g.Stop)
		return g, cookies
	}
	gOn, onCookies := start("on", "--forward-auth-trusted", "127.0.0.1/32")
	gOff, offCookies := start("off", "--identity-assertion=false")
	on, off := gOn.URL, gOff.URL
	check := http.Header{
		"X-Forwarded-Method": {"GET"}, "X-Forwarded-Proto": {"https"},
		"X-Forwarded-Host": {"app.example.com"}, "X-Forwarded-Uri": {"/page"},
	}
	var b, rOn, rOff, rCheck loadResult
	d := loadDuration / loadRounds
	runs := []func(round int){
		func(round int) {
			b = b.add(hammer("bare httputil.ReverseProxy", bare+"/page", loadClients, d, bareCookies), round)
		},
		func(round int) {
			rOn = rOn.add(hammer("gatehouse, assertion on", on+"/page", loadClients, d, onCookies), round)
		},
		func(round int) {
			rOff = rOff.add(hammer("gatehouse, assertion off", off+"/page", loadClients, d, offCookies), round)
		},
		func(round int) {
			rCheck = rCheck.add(hammerWith("forward-auth check (signed in)", on+"/auth/check/forward-auth", loadClients, d, onCookies, check), round)
		},
	}
	// The order rotates every round: the run right after another
	// process's burst is slower, and that must not land on one target.
	for round := range loadRounds {
		for i := range runs {
			runs[(i+round)%len(runs)](round)
		}
	}
	for _, r := range []loadResult{b, rOn, rOff, rCheck} {
		fmt.Println(r)
	}
	fmt.Printf("   ratio gatehouse/bare, assertion on: %.3f, off: %.3f\n", rOn.rps/b.rps, rOff.rps/b.rps)
	fmt.Printf("   forward-auth check req/s vs proxied req/s (assertion on): %.2f\n", rCheck.rps/rOn.rps)
	fmt.Printf("   assertions signed: %d for %d sessions over %d requests\n", gOn.srv.issuer.Minted(), len(onCookies), rOn.requests+rCheck.requests)
}

// TestAssertionLoadReport runs assertionReport alone (make bench runs it
// inside TestLoadReport).
func TestAssertionLoadReport(t *testing.T) {
	up := loadUpstream(t)
	assertionReport(t, up.URL, bareProxy(t, up.URL))
}
