//go:build loadbench

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

const (
	stormUsers  = 200
	stormWindow = 10 * time.Second
)

// TestLoadReportSignInStorm is a sign-in storm (everyone at nine in the
// morning): stormUsers distinct users, each from its own address, sign in
// with the right password once, spread evenly over stormWindow, at the
// production argon2id cost, while signed-in users' GETs run through the
// proxy. It prints how many sign-ins succeed and what the others were
// answered, the sign-in p50/p99/max, and the proxied req/s and p99 idle
// and during the storm. It never fails on a timing.
func TestLoadReportSignInStorm(t *testing.T) {
	up := loadUpstream(t)
	db := filepath.Join(t.TempDir(), "storm.db")
	cookies := populate(t, db, 1000)
	const pw = "correct horse battery staple"
	addStormUsers(t, db, pw)
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	g := startGatehouseWith(t, db, func(c *Config) {
		c.Argon2Memory, c.Argon2Time = defaultArgon2Memory, defaultArgon2Time
		c.LogOutput = devNull
	}, "--upstream", up.URL, "--log-level", "error", "--trusted-proxies", "127.0.0.1/32")
	defer g.Stop()

	fmt.Printf("\n== sign-in storm: %d users sign in within %v (argon2id m=19456 t=2, GOMAXPROCS=%d) while %d clients GET through the proxy\n",
		stormUsers, stormWindow, runtimeProcs(), loadClients)
	idle := hammer("signed-in GETs, idle", g.URL+"/page", loadClients, 5*time.Second, cookies)
	fmt.Println(idle)

	type signIn struct {
		status int
		code   string
		took   time.Duration
	}
	results := make([]signIn, stormUsers)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range stormUsers {
		wg.Go(func() {
			time.Sleep(time.Until(start.Add(stormWindow * time.Duration(i) / stormUsers)))
			body := fmt.Sprintf(`{"email":"storm%d@example.com","password":%q}`, i, pw)
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/auth/login", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.77.%d.%d", i/250, i%250+1))
			began := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				results[i] = signIn{status: -1, code: err.Error(), took: time.Since(began)}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := signIn{status: resp.StatusCode, took: time.Since(began)}
			if resp.StatusCode != http.StatusOK {
				r.code = problemCodeOf(b)
			}
			results[i] = r
		})
	}
	// The proxied load runs through the whole storm and its tail.
	stormDone := make(chan struct{})
	go func() { wg.Wait(); close(stormDone) }()
	var busy loadResult
	for round := 0; ; round++ {
		r := hammer("signed-in GETs, during the storm", g.URL+"/page", loadClients, 2*time.Second, cookies)
		busy = busy.add(r, round)
		select {
		case <-stormDone:
		default:
			continue
		}
		break
	}
	<-stormDone
	total := time.Since(start)

	var ok int
	var took []time.Duration
	answers := map[string]int{}
	for _, r := range results {
		took = append(took, r.took)
		if r.status == http.StatusOK {
			ok++
			continue
		}
		answers[strconv.Itoa(r.status)+" "+r.code]++
	}
	slices.Sort(took)
	fmt.Printf("   sign-ins: %d of %d succeeded in %v; sign-in p50 %v  p99 %v  max %v\n",
		ok, stormUsers, total.Round(100*time.Millisecond), took[len(took)/2].Round(time.Millisecond),
		took[len(took)*99/100].Round(time.Millisecond), took[len(took)-1].Round(time.Millisecond))
	var keys []string
	for k := range answers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("   refused: %s ×%d\n", k, answers[k])
	}
	busy.name = "signed-in GETs, during the storm"
	fmt.Println(busy)
	fmt.Printf("   proxied req/s storm/idle: %.3f   proxied p99 idle %v, storm %v   proxied 5xx: %d\n",
		busy.rps/idle.rps, idle.p99.Round(time.Microsecond), busy.p99.Round(time.Microsecond), busy.status5x)
}

// addStormUsers stores the storm's users, all with password pw hashed once
// at the production cost (the sign-ins verify at that cost).
func addStormUsers(t *testing.T, db, pw string) {
	t.Helper()
	phc, err := password.NewHasher(password.DefaultHashParams).Hash(context.Background(), password.Normalize(pw))
	if err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(db, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	for i := range stormUsers {
		u := storage.User{ID: storage.NewUserID(), Email: fmt.Sprintf("storm%d@example.com", i), PasswordHash: phc, CreatedAt: now}
		if err := s.CreateUser(context.Background(), u); err != nil {
			t.Fatal(err)
		}
	}
}

// problemCodeOf is the code of a problem+json body, or the body's start.
func problemCodeOf(b []byte) string {
	if i := bytes.Index(b, []byte(`"code":"`)); i >= 0 {
		rest := b[i+len(`"code":"`):]
		if j := bytes.IndexByte(rest, '"'); j >= 0 {
			return string(rest[:j])
		}
	}
	return string(b[:min(len(b), 40)])
}
