//go:build loadbench

package main

// The PostgreSQL part of `make bench`: signed-in requests through Gatehouse
// on bbolt and on PostgreSQL (with its per-replica session cache) against
// the bare proxy, rounds rotating over the three; then how long a
// revocation through one of three replicas takes to reach the other two.
// It prints figures and never fails on a timing.

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/postgres"
)

const pgLoadSessions = 100_000

// populatePostgres writes n sessions into the database at url and returns
// the first loadClients of them as cookie values.
func populatePostgres(t testing.TB, url string, n int) []string {
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions, cookies := loadSessions(n)
	if err := s.ImportSessions(context.Background(), sessions); err != nil {
		t.Fatal(err)
	}
	return cookies
}

func TestPostgresLoadReport(t *testing.T) {
	url := pg.NewDatabase(t)
	up := loadUpstream(t)
	bare := bareProxy(t, up.URL)
	mail := filepath.Join(t.TempDir(), "mail")

	boltDB := filepath.Join(t.TempDir(), "load.db")
	boltCookies := populate(t, boltDB, pgLoadSessions)
	gBolt := startGatehouse(t, boltDB, "--upstream", up.URL, "--log-level", "error")
	defer gBolt.Stop()
	pgCookies := populatePostgres(t, url, pgLoadSessions)
	gPG := startGatehouse(t, url, "--upstream", up.URL, "--log-level", "error", "--mail-dir", mail)
	defer gPG.Stop()
	time.Sleep(time.Second) // start-up sweeps; the cache becomes live

	fmt.Printf("\n== signed-in GET of a 1 KiB page, %d sessions stored, %d keep-alive clients, %v each, GOMAXPROCS=%d\n",
		pgLoadSessions, loadClients, loadDuration, runtimeProcs())
	var b, rb, rp loadResult
	for round := range loadRounds {
		b = b.add(hammer("bare httputil.ReverseProxy", bare+"/page", loadClients, loadDuration/loadRounds, bareCookies), round)
		rb = rb.add(hammer("gatehouse on bbolt", gBolt.URL+"/page", loadClients, loadDuration/loadRounds, boltCookies), round)
		rp = rp.add(hammer("gatehouse on PostgreSQL (cached)", gPG.URL+"/page", loadClients, loadDuration/loadRounds, pgCookies), round)
	}
	fmt.Println(b)
	fmt.Println(rb)
	fmt.Println(rp)
	ratioBolt, ratioPG := rb.rps/b.rps, rp.rps/b.rps
	fmt.Printf("   ratio to bare: bbolt %.3f, PostgreSQL %.3f (PostgreSQL's ratio %+.1f%% of bbolt's)\n",
		ratioBolt, ratioPG, (ratioPG/ratioBolt-1)*100)

	revocationPropagation(t, url, up.URL, mail)
}

// revocationPropagation signs a session out through replica 0 of three and
// times, from the logout's answer, until replicas 1 and 2 refuse it; each
// replica had the session in its cache.
func revocationPropagation(t *testing.T, url, upstream, mail string) {
	var rs []*gatehouse
	for range 3 {
		g := startGatehouse(t, url, "--upstream", upstream, "--log-level", "error", "--mail-dir", mail)
		defer g.Stop()
		rs = append(rs, g)
	}
	s, err := postgres.Open(context.Background(), url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	time.Sleep(time.Second)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(g *gatehouse, secret string) int {
		req, _ := http.NewRequest(http.MethodGet, g.URL+"/page", nil)
		req.Header.Set("Cookie", "gatehouse_session="+secret)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// CreateSession needs the session's user (credential epoch).
	if err := s.CreateUser(context.Background(), storage.User{ID: "load", Email: "load@example.com", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	const runs = 200
	var seen []time.Duration
	for range runs {
		secret := rand.Text() + rand.Text() // the form of a session id, which logout checks
		now := time.Now()
		sess := storage.Session{IDHash: storage.HashSecret(secret), UserID: "load", Email: "load@example.com",
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
		if err := s.CreateSession(context.Background(), sess); err != nil {
			t.Fatal(err)
		}
		for _, g := range rs {
			get(g, secret)
			get(g, secret) // now from the cache
		}
		req, _ := http.NewRequest(http.MethodPost, rs[0].URL+"/auth/logout", nil)
		req.Header.Set("Cookie", "gatehouse_session="+secret)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		start := time.Now()
		for _, g := range rs[1:] {
			for get(g, secret) == http.StatusOK {
				if time.Since(start) > 5*time.Second {
					_, err := s.Session(context.Background(), sess.IDHash)
					t.Fatalf("a revocation did not arrive within 5s (in the database: %v)", err)
				}
			}
			seen = append(seen, time.Since(start))
		}
	}
	slices.Sort(seen)
	fmt.Printf("\n== revocation propagation across 3 replicas on PostgreSQL: logout on one, refused on the other two (%d samples)\n", len(seen))
	fmt.Printf("   p50 %v   p99 %v   max %v\n", seen[len(seen)/2].Round(time.Microsecond),
		seen[len(seen)*99/100].Round(time.Microsecond), seen[len(seen)-1].Round(time.Microsecond))
}
