//go:build loadbench

package main

// The load report of `make bench`: the upstream directly, a bare
// httputil.ReverseProxy and Gatehouse with a valid session, side by side in
// one process over loopback TCP, with 32 concurrent keep-alive clients. It
// prints figures and never fails on a timing.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

const (
	loadClients  = 32
	loadDuration = 10 * time.Second
	loadRounds   = 5
)

// loadResult is one measured run.
type loadResult struct {
	name     string
	requests int
	errors   int
	status5x int
	rps      float64
	p50, p99 time.Duration
}

// add merges round i of a measurement into r: requests and errors add up;
// the rate and the percentiles are averaged over the rounds.
func (r loadResult) add(o loadResult, i int) loadResult {
	if i == 0 {
		return o
	}
	k := float64(i)
	r.requests += o.requests
	r.errors += o.errors
	r.status5x += o.status5x
	r.rps = (r.rps*k + o.rps) / (k + 1)
	r.p50 = time.Duration((float64(r.p50)*k + float64(o.p50)) / (k + 1))
	r.p99 = time.Duration((float64(r.p99)*k + float64(o.p99)) / (k + 1))
	return r
}

func (r loadResult) String() string {
	return fmt.Sprintf("%-34s %9.0f req/s   p50 %7s   p99 %7s   errors %d",
		r.name, r.rps, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.errors+r.status5x)
}

// hammer sends GETs to target from clients keep-alive connections for d;
// client i sends session cookie cookies[i mod len] when cookies are given.
func hammer(name, target string, clients int, d time.Duration, cookies []string) loadResult {
	return hammerWith(name, target, clients, d, cookies, nil)
}

// hammerWith is hammer with header added to every request.
func hammerWith(name, target string, clients int, d time.Duration, cookies []string, header http.Header) loadResult {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	lat := make([][]time.Duration, clients)
	var errs, fivexx atomic.Int64
	for i := range clients {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				req, _ := http.NewRequest(http.MethodGet, target, nil)
				for k, v := range header {
					req.Header[k] = v
				}
				if len(cookies) > 0 {
					req.Header.Set("Cookie", "gatehouse_session="+cookies[i%len(cookies)])
				}
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					errs.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					fivexx.Add(1)
				} else if resp.StatusCode != http.StatusOK {
					errs.Add(1)
				}
				lat[i] = append(lat[i], time.Since(start))
			}
		})
	}
	wg.Wait()
	all := slices.Concat(lat...)
	slices.Sort(all)
	r := loadResult{name: name, requests: len(all), errors: int(errs.Load()), status5x: int(fivexx.Load())}
	r.rps = float64(len(all)) / d.Seconds()
	if len(all) > 0 {
		r.p50, r.p99 = all[len(all)/2], all[len(all)*99/100]
	}
	return r
}

// loadUpstream answers a 1 KiB page, like a small app response.
func loadUpstream(t testing.TB) *httptest.Server {
	page := bytes.Repeat([]byte("x"), 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(page)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// bareProxy is the baseline: httputil.ReverseProxy with the same tuned
// transport and pooled copy buffers, so the difference is the gate alone.
func bareProxy(t testing.TB, upstream string) string {
	u, _ := url.Parse(upstream)
	rp := &httputil.ReverseProxy{
		Rewrite:    func(pr *httputil.ProxyRequest) { pr.SetURL(u); pr.SetXForwarded() },
		Transport:  proxy.NewTransport(time.Minute),
		BufferPool: proxy.NewBufferPool(),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := proxy.NewServer("", rp)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// populate writes n sessions into a new database and closes it; the first
// loadClients of them are returned as cookie values, one per load client, so
// the lookups spread over the file like real users'.
func populate(t testing.TB, db string, n int) []string {
	s, err := bolt.Open(db, bolt.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sessions, cookies := loadSessions(n)
	// One transaction: many batches would leave a fragmented file.
	if err := s.ImportSessions(context.Background(), sessions); err != nil {
		t.Fatal(err)
	}
	return cookies
}

// loadSessions returns n sessions of 50,000 users at most, valid for an
// hour, and the first loadClients of them as cookie values.
func loadSessions(n int) ([]storage.Session, []string) {
	now := time.Now()
	var cookies []string
	sessions := make([]storage.Session, n)
	for i := range sessions {
		secret := randomHex(32)
		if i < loadClients {
			cookies = append(cookies, secret)
		}
		sessions[i] = storage.Session{
			IDHash: storage.HashSecret(secret), UserID: fmt.Sprintf("%032x", i%50_000), Email: fmt.Sprintf("user%d@example.com", i%50_000),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now,
		}
	}
	return sessions, cookies
}

// bareCookies are what the load's clients send the bare proxy: session
// cookies of the same name and size as Gatehouse's, so that every proxy
// reads the same requests (a browser in front of an app sends its cookies
// whatever proxy is there); the bare proxy forwards them, Gatehouse strips
// its own.
var bareCookies = func() []string {
	c := make([]string, loadClients)
	for i := range c {
		c[i] = randomHex(32)
	}
	return c
}()

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func TestLoadReport(t *testing.T) {
	up := loadUpstream(t)
	bare := bareProxy(t, up.URL)
	fmt.Printf("\n== proxied GET of a 1 KiB page, %d keep-alive clients, %v each, GOMAXPROCS=%s\n",
		loadClients, loadDuration, strconv.Itoa(runtimeProcs()))
	direct := hammer("upstream directly", up.URL+"/page", loadClients, loadDuration, nil)
	fmt.Println(direct)

	sizes := []int{1_000, 100_000, 1_000_000}
	if os.Getenv("GATEHOUSETEST_LOAD_QUICK") != "" {
		sizes = []int{1_000, 100_000}
	}
	// Every store size runs at once, and the rounds rotate over the bare
	// proxy and each Gatehouse, so drift of the machine hits all alike.
	// One more instance, at the smallest size, runs with --access-log=false:
	// the access log's cost is the ratio of the two. Logs go to /dev/null,
	// as a file or pipe would take them.
	type instance struct {
		n         int
		accessOff bool
		url       string
		cookies   []string
		result    loadResult
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	var instances []*instance
	for i, n := range append(sizes, sizes[0]) {
		accessOff := i == len(sizes)
		db := filepath.Join(t.TempDir(), fmt.Sprintf("load-%d-%d.db", n, i))
		start := time.Now()
		cookies := populate(t, db, n)
		fmt.Printf("   (stored %d sessions in %v)\n", n, time.Since(start).Round(time.Millisecond))
		g := startGatehouseWith(t, db, func(c *Config) { c.LogOutput = devNull }, "--upstream", up.URL, "--log-level", "error",
			"--access-log="+strconv.FormatBool(!accessOff))
		defer g.Stop()
		instances = append(instances, &instance{n: n, accessOff: accessOff, url: g.URL, cookies: cookies})
	}
	time.Sleep(time.Second) // let the start-up sweeps finish
	var b loadResult
	for round := range loadRounds {
		rb := hammer("bare httputil.ReverseProxy", bare+"/page", loadClients, loadDuration/loadRounds, bareCookies)
		b = b.add(rb, round)
		for _, in := range instances {
			name := fmt.Sprintf("gatehouse, %d sessions stored", in.n)
			if in.accessOff {
				name += ", --access-log=false"
			}
			rg := hammer(name, in.url+"/page", loadClients, loadDuration/loadRounds, in.cookies)
			in.result = in.result.add(rg, round)
		}
	}
	fmt.Println(b)
	ratios := map[int]float64{}
	for _, in := range instances {
		fmt.Println(in.result)
		if in.accessOff {
			off := in.result.rps / b.rps
			fmt.Printf("   ratio gatehouse/bare at %d sessions, access log off: %.3f; on/off: %.3f\n", in.n, off, ratios[in.n]/off)
			continue
		}
		ratios[in.n] = in.result.rps / b.rps
		fmt.Printf("   ratio gatehouse/bare at %d sessions (access log on): %.3f\n", in.n, ratios[in.n])
	}
	if r1m, ok := ratios[1_000_000]; ok {
		fmt.Printf("   ratio at 1,000,000 vs at 1,000: %+.1f%%\n", (r1m/ratios[1_000]-1)*100)
	}
	assertionReport(t, up.URL, bare)
	revokeReport(t)
	forgotReport(t, up.URL)
	loadUnderLoginFlood(t, up.URL)
}

// revokeReport times DeleteUserSessions of one user with 1,000 sessions among 1,000,000.
func revokeReport(t *testing.T) {
	if os.Getenv("GATEHOUSETEST_LOAD_QUICK") != "" {
		return
	}
	db := filepath.Join(t.TempDir(), "revoke.db")
	populate(t, db, 999_000)
	s, err := bolt.Open(db, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	victim := make([]storage.Session, 1000)
	for i := range victim {
		victim[i] = storage.Session{IDHash: storage.HashSecret(randomHex(32)), UserID: "ffffffffffffffffffffffffffffffff", Email: "victim@example.com",
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now}
	}
	if err := s.ImportSessions(context.Background(), victim); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	n, err := s.DeleteUserSessions(context.Background(), "ffffffffffffffffffffffffffffffff")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("\n== revoke all sessions of one user: %d sessions among 1,000,000 deleted in %v (with fsync)\n", n, time.Since(start).Round(10*time.Microsecond))
}

// forgotReport compares /auth/forgot answer times for a registered and an unknown email.
func forgotReport(t *testing.T, upstream string) {
	db := filepath.Join(t.TempDir(), "forgot.db")
	addUser(t, db, "known@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", upstream, "--log-level", "error", "--trusted-proxies", "127.0.0.1/32")
	defer g.Stop()
	measure := func(email string) (p50, p99 time.Duration) {
		var lat []time.Duration
		for i := range 400 {
			body, _ := json.Marshal(map[string]string{"email": email})
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/auth/forgot", bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Forwarded-For", fmt.Sprintf("10.9.%d.%d", i/250, i%250)) // per-IP limits out of the way
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		return lat[len(lat)/2], lat[len(lat)*99/100]
	}
	k50, k99 := measure("known@example.com")
	u50, u99 := measure("nobody@example.com")
	fmt.Printf("\n== POST /auth/forgot, 400 requests each\n   registered: p50 %v  p99 %v\n   unknown:    p50 %v  p99 %v\n   median difference %v\n",
		k50.Round(time.Microsecond), k99.Round(time.Microsecond), u50.Round(time.Microsecond), u99.Round(time.Microsecond), (k50 - u50).Round(time.Microsecond))
}

// loadUnderLoginFlood measures proxied throughput of signed-in users while 20
// clients hammer /auth/login (production argon2 cost, unknown emails) and
// /auth/reset (random tokens): once with one address per client, where the
// per-IP limits answer most of the flood, and once with every request from a
// new address (a botnet), where every login reaches the hasher.
func loadUnderLoginFlood(t *testing.T, upstream string) {
	db := filepath.Join(t.TempDir(), "flood.db")
	cookies := populate(t, db, 1000)
	g := startGatehouseWith(t, db, func(c *Config) { c.Argon2Memory, c.Argon2Time = defaultArgon2Memory, defaultArgon2Time },
		"--upstream", upstream, "--log-level", "error", "--trusted-proxies", "127.0.0.1/32")
	defer g.Stop()
	fmt.Printf("\n== proxied throughput while 20 clients hammer /auth/login and /auth/reset (argon2id m=19456 t=2)\n")
	idle := hammer("signed-in GETs, idle", g.URL+"/page", loadClients, loadDuration, cookies)
	fmt.Println(idle)
	for _, rotate := range []bool{false, true} {
		busy, answers := underFlood(g.URL, cookies, rotate)
		fmt.Println(busy)
		fmt.Printf("   ratio flooded/idle: %.3f   proxied 5xx: %d\n   flood answers:%s\n", busy.rps/idle.rps, busy.status5x, answers)
	}
}

func underFlood(base string, cookies []string, rotate bool) (loadResult, string) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var floodStatus sync.Map
	for i := range 20 {
		wg.Go(func() {
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			for j := 0; ctx.Err() == nil; j++ {
				path, body := "/auth/login", fmt.Sprintf(`{"email":"flood%d-%d@example.com","password":"wrong password %d"}`, i, j, j)
				if i%2 == 1 {
					path, body = "/auth/reset", fmt.Sprintf(`{"token":"%s","password":"a new long password"}`, randomHex(32))
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+path, bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				ip := fmt.Sprintf("10.0.0.%d", i)
				if rotate {
					ip = fmt.Sprintf("10.%d.%d.%d", i, (j/250)%250, j%250)
				}
				req.Header.Set("X-Forwarded-For", ip)
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				v, _ := floodStatus.LoadOrStore(path+" "+strconv.Itoa(resp.StatusCode), new(atomic.Int64))
				v.(*atomic.Int64).Add(1)
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	name := "signed-in GETs, flood, 1 IP/client"
	if rotate {
		name = "signed-in GETs, flood, rotating IPs"
	}
	busy := hammer(name, base+"/page", loadClients, loadDuration, cookies)
	cancel()
	wg.Wait()
	var answers []string
	floodStatus.Range(func(k, v any) bool {
		answers = append(answers, fmt.Sprintf("  %s ×%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	slices.Sort(answers)
	return busy, strings.Join(answers, "")
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
