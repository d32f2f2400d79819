//go:build loadbench

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLoadReportPolicy is the access policy's part of the load report: the
// ratio to the bare proxy of Gatehouse with a policy of 3 email domains and
// a 10,000-line emails file, next to the ratio without a policy. The
// sessions' addresses are in the file and match no domain, so every request
// walks the domain rules and then looks the address up. Both Gatehouses run
// at once and the rounds rotate over all three, so machine drift hits all
// alike. It prints figures and never fails on a timing.
func TestLoadReportPolicy(t *testing.T) {
	up := loadUpstream(t)
	bare := bareProxy(t, up.URL)
	dir := t.TempDir()
	emails := filepath.Join(dir, "emails.txt")
	var list strings.Builder
	list.WriteString("# 10,000 addresses\n")
	for i := range 10_000 {
		fmt.Fprintf(&list, "user%d@example.com\n", i)
	}
	if err := os.WriteFile(emails, []byte(list.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	type instance struct {
		name    string
		url     string
		cookies []string
		result  loadResult
	}
	var instances []*instance
	for _, c := range []struct {
		name string
		args []string
	}{
		{"gatehouse, no policy", nil},
		{"gatehouse, policy of 3 domains + 10,000-line emails file", []string{
			"--allow-email-domain", "corp.com", "--allow-email-domain", ".corp.net", "--allow-email-domain", "example.org",
			"--allow-emails-file", emails}},
	} {
		db := filepath.Join(dir, fmt.Sprintf("policy-%d.db", len(instances)))
		cookies := populate(t, db, 1_000)
		g := startGatehouse(t, db, append([]string{"--upstream", up.URL, "--log-level", "error"}, c.args...)...)
		defer g.Stop()
		instances = append(instances, &instance{name: c.name, url: g.URL, cookies: cookies})
	}
	time.Sleep(time.Second) // let the start-up sweeps finish
	fmt.Printf("\n== access policy: proxied GET of a 1 KiB page, %d keep-alive clients, 1,000 sessions stored\n", loadClients)
	var b loadResult
	for round := range loadRounds {
		b = b.add(hammer("bare httputil.ReverseProxy", bare+"/page", loadClients, loadDuration/loadRounds, bareCookies), round)
		for _, in := range instances {
			in.result = in.result.add(hammer(in.name, in.url+"/page", loadClients, loadDuration/loadRounds, in.cookies), round)
		}
	}
	fmt.Println(b)
	var ratios []float64
	for _, in := range instances {
		if in.result.errors > 0 {
			t.Errorf("%s: %d requests not answered 200", in.name, in.result.errors)
		}
		ratios = append(ratios, in.result.rps/b.rps)
		fmt.Println(in.result)
		fmt.Printf("   ratio to bare: %.3f\n", ratios[len(ratios)-1])
	}
	fmt.Printf("   ratio with the policy vs without: %+.1f%%\n", (ratios[1]/ratios[0]-1)*100)
}
