//go:build loadbench

package main

// The CPU part of the load report: CPU time per request of each proxy, each
// in its own process (this test binary run again as TestLoadChild), read
// from the child's getrusage while the same load generator (this process,
// 32 keep-alive clients) drives it. Rounds rotate over the targets, so the
// drift of a shared machine hits all alike; the report gives the median and
// the spread over the rounds, and per round the ratio to the bare proxy.
// With GATEHOUSETEST_LOAD_PROFILE=dir, every child writes a CPU profile of the
// measured rounds and an allocation profile to dir. It never fails on a
// timing.

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy"
)

// cpuTarget is one proxy under test, run in a child process.
type cpuTarget struct {
	kind    string // what TestLoadChild starts: one of the kinds in cpuReport's list
	name    string
	bin     string // the test binary to run; default this one
	up      *countingUpstream
	child   *loadChild
	cookies []string
	rounds  []cpuRound
	maxRSS  uint64 // the most resident memory seen after a turn
}

// stem names the target's profiles.
func (c *cpuTarget) stem() string {
	if c.bin != "" {
		return "before"
	}
	return c.kind
}

// cpuRound is one target's figures in one round.
type cpuRound struct {
	requests          int
	rps               float64
	cpuPerReq         float64 // µs of the child's CPU (user+system) per request
	allocsPerReq      float64
	bytesUpPerReq     float64 // bytes the upstream read per request
	gcPer10k          float64
	heapAlloc, nextGC uint64
	failed, notOK     int
	gcCPUFraction     float64
	syscallsPerReq    float64 // read and write system calls (/proc/PID/io)
	switchesPerReq    float64 // context switches, voluntary or not (getrusage)
}

// childStats is what a child says about itself.
type childStats struct {
	cpu                               time.Duration
	mallocs, numGC, heapAlloc, nextGC uint64
	gcCPUFraction                     float64
	syscalls, switches                uint64
	rss                               uint64 // bytes resident (VmRSS)
}

// loadSlices is how many turns each target gets in one round.
const loadSlices = 4

func TestLoadCPU(t *testing.T) { cpuReport(t) }

func cpuReport(t *testing.T) {
	profileDir := os.Getenv("GATEHOUSETEST_LOAD_PROFILE")
	d := loadDuration / loadRounds
	// GATEHOUSETEST_LOAD_ROUND=5s: longer rounds (of this report only), for
	// figures to quote.
	if v := os.Getenv("GATEHOUSETEST_LOAD_ROUND"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d < 100*time.Millisecond {
			t.Fatalf("GATEHOUSETEST_LOAD_ROUND=%q: want a duration of at least 100ms, like 5s", v)
		}
	}
	targets := []*cpuTarget{
		{kind: "bare", name: "bare ReverseProxy, pooled buffers"},
		{kind: "bare-timeouts", name: "bare + header timeouts (server, transport)"},
		{kind: "bare-server-timeouts", name: "bare + server timeouts (header, idle)"},
		{kind: "bare-transport-timeout", name: "bare + transport ResponseHeaderTimeout"},
		{kind: "bare-identity", name: "bare + timeouts + Gatehouse's upstream headers"},
		{kind: "gatehouse", name: "gatehouse, every default on"},
		{kind: "gatehouse-gogc100", name: "gatehouse, defaults, GC tuner off"},
		{kind: "gatehouse-policy", name: "gatehouse, defaults + policy"},
		{kind: "gatehouse-policy-file", name: "gatehouse, 3 domains + 10k emails file"},
		{kind: "gatehouse-noassert", name: "gatehouse, --identity-assertion=false"},
		{kind: "gatehouse-noaccesslog", name: "gatehouse, --access-log=false"},
	}
	// GATEHOUSETEST_LOAD_BEFORE names the loadbench test binary of an older
	// commit (go test -tags loadbench -c): its Gatehouse joins the rounds,
	// for before/after figures measured together.
	if bin := os.Getenv("GATEHOUSETEST_LOAD_BEFORE"); bin != "" {
		targets = append(targets, &cpuTarget{kind: "gatehouse", bin: bin, name: "gatehouse before (" + filepath.Base(bin) + ")"})
	}
	if k := os.Getenv("GATEHOUSETEST_LOAD_TARGETS"); k != "" {
		keep := strings.Split(k, ",")
		targets = slices.DeleteFunc(targets, func(c *cpuTarget) bool { return !slices.Contains(keep, c.kind) })
	}
	dir := t.TempDir()
	for i, c := range targets {
		c.up = newCountingUpstream(t)
		env := []string{"GATEHOUSETEST_LOAD_CHILD=" + c.kind, "GATEHOUSETEST_LOAD_UPSTREAM=" + c.up.URL}
		if strings.HasPrefix(c.kind, "gatehouse") {
			db := filepath.Join(dir, strconv.Itoa(i), "cpu.db") // a directory each: the admin socket sits beside the db
			if err := os.Mkdir(filepath.Dir(db), 0o700); err != nil {
				t.Fatal(err)
			}
			c.cookies = populate(t, db, 1_000)
			env = append(env, "GATEHOUSETEST_LOAD_DB="+db)
		}
		if c.cookies == nil {
			c.cookies = bareCookies // every target reads the same requests
		}
		c.child = startLoadChild(t, cmp.Or(c.bin, os.Args[0]), env)
	}
	for _, c := range targets { // warm up: connections, pools, heap
		hammer(c.name, c.child.url+"/page", loadClients, d/4, c.cookies)
	}
	if profileDir != "" {
		for _, c := range targets {
			c.child.command("cpuprofile " + filepath.Join(profileDir, c.stem()+".cpu.pprof"))
		}
	}
	// A round gives every target loadSlices slices of d/loadSlices, taking
	// turns, so that a burst of another process on the shared machine
	// falls on all targets of the round rather than on one.
	type sums struct {
		requests, failed, notOK int
		cpu                     time.Duration
		mallocs, upBytes, gcs   uint64
		syscalls, switches      uint64
		last                    childStats
	}
	for round := range loadRounds {
		acc := make([]sums, len(targets))
		for slice := range loadSlices {
			for i := range targets {
				k := (i + round + slice) % len(targets)
				c := targets[k]
				before, up0 := c.child.stats(), c.up.bytes.Load()
				r := hammer(c.name, c.child.url+"/page", loadClients, d/loadSlices, c.cookies)
				after, up1 := c.child.stats(), c.up.bytes.Load()
				a := &acc[k]
				a.requests += r.requests
				a.failed += r.errors
				a.notOK += r.status5x
				a.cpu += after.cpu - before.cpu
				a.mallocs += after.mallocs - before.mallocs
				a.upBytes += uint64(up1 - up0)
				a.gcs += after.numGC - before.numGC
				a.syscalls += after.syscalls - before.syscalls
				a.switches += after.switches - before.switches
				a.last = after
				c.maxRSS = max(c.maxRSS, after.rss)
			}
		}
		for k, c := range targets {
			a := acc[k]
			n := float64(max(a.requests, 1))
			c.rounds = append(c.rounds, cpuRound{
				requests: a.requests, rps: n / d.Seconds(), failed: a.failed, notOK: a.notOK,
				cpuPerReq:      float64(a.cpu.Microseconds()) / n,
				allocsPerReq:   float64(a.mallocs) / n,
				bytesUpPerReq:  float64(a.upBytes) / n,
				gcPer10k:       float64(a.gcs) * 10_000 / n,
				syscallsPerReq: float64(a.syscalls) / n,
				switchesPerReq: float64(a.switches) / n,
				heapAlloc:      a.last.heapAlloc, nextGC: a.last.nextGC, gcCPUFraction: a.last.gcCPUFraction,
			})
		}
	}
	if profileDir != "" {
		for _, c := range targets {
			c.child.command("stopcpu")
			c.child.command("allocs " + filepath.Join(profileDir, c.stem()+".allocs.pprof"))
		}
	}
	for _, c := range targets {
		c.child.stop()
	}

	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("\n== CPU per proxied request (each proxy in its own process; getrusage of that process), 1 KiB page,\n"+
		"   the same requests to every proxy (with a session cookie), %d keep-alive clients,\n"+
		"   %d rounds of %v per target (%d turns of %v, rotating over the targets); load average at the end: %s",
		loadClients, loadRounds, d, loadSlices, d/loadSlices, load)
	fmt.Printf("   %-44s %22s %18s %8s %8s %9s %8s %8s %8s %8s %9s\n", "", "CPU µs/req med [min–max]", "req/s med", "allocs", "B up", "GC/10k", "heap MB", "RSS MB", "syscalls", "switches", "errors")
	bare := targets[0]
	for _, c := range targets {
		cpu := column(c.rounds, func(r cpuRound) float64 { return r.cpuPerReq })
		rps := column(c.rounds, func(r cpuRound) float64 { return r.rps })
		errs := 0
		for _, r := range c.rounds {
			errs += r.failed + r.notOK
		}
		last := c.rounds[len(c.rounds)-1]
		fmt.Printf("   %-44s %6.1f [%5.1f–%5.1f] %9.0f [±%3.0f%%] %8.1f %8.0f %9.2f %8.1f %8.1f %8.2f %8.2f %9d\n", c.name,
			median(cpu), cpu[0], cpu[len(cpu)-1], median(rps), spreadPct(rps),
			median(column(c.rounds, func(r cpuRound) float64 { return r.allocsPerReq })),
			median(column(c.rounds, func(r cpuRound) float64 { return r.bytesUpPerReq })),
			median(column(c.rounds, func(r cpuRound) float64 { return r.gcPer10k })),
			float64(last.heapAlloc)/(1<<20), float64(c.maxRSS)/(1<<20),
			median(column(c.rounds, func(r cpuRound) float64 { return r.syscallsPerReq })),
			median(column(c.rounds, func(r cpuRound) float64 { return r.switchesPerReq })), errs)
	}
	if bare.kind != "bare" {
		return
	}
	for _, c := range targets[1:] {
		ratios := make([]float64, loadRounds)
		for i := range ratios {
			ratios[i] = c.rounds[i].cpuPerReq / bare.rounds[i].cpuPerReq
		}
		slices.Sort(ratios)
		fmt.Printf("   CPU per request, %s / bare: median %.3f [%.3f–%.3f] (per round)\n", c.name, median(ratios), ratios[0], ratios[len(ratios)-1])
	}
	// The policy's own cost: each policy target against "gatehouse" (the
	// same defaults without a policy), round by round.
	i := slices.IndexFunc(targets, func(c *cpuTarget) bool { return c.kind == "gatehouse" && c.bin == "" })
	if i < 0 {
		return
	}
	// Gatehouse's own work: against the bare proxy that carries the same
	// headers with the same timeouts (what the contract's promises cost by
	// themselves), round by round.
	// The bare proxies run Go's default GC; so does gatehouse-gogc100, the
	// like-for-like figure (the tuner's gain is not Gatehouse's work).
	if j := slices.IndexFunc(targets, func(c *cpuTarget) bool { return c.kind == "bare-identity" }); j >= 0 {
		for _, c := range targets {
			if c.bin != "" || (c.kind != "gatehouse" && c.kind != "gatehouse-gogc100") {
				continue
			}
			ratios := make([]float64, loadRounds)
			for r := range ratios {
				ratios[r] = c.rounds[r].cpuPerReq / targets[j].rounds[r].cpuPerReq
			}
			slices.Sort(ratios)
			fmt.Printf("   CPU per request, %s / %s (Gatehouse's own work): median %.3f [%.3f–%.3f] (per round)\n",
				c.name, targets[j].name, median(ratios), ratios[0], ratios[len(ratios)-1])
		}
	}
	for _, c := range targets {
		if !strings.HasPrefix(c.kind, "gatehouse-policy") {
			continue
		}
		ratios := make([]float64, loadRounds)
		for r := range ratios {
			ratios[r] = c.rounds[r].cpuPerReq / targets[i].rounds[r].cpuPerReq
		}
		slices.Sort(ratios)
		fmt.Printf("   CPU per request, %s / %s: median %+.1f%% [%+.1f%% – %+.1f%%] (per round)\n", c.name, targets[i].name,
			(median(ratios)-1)*100, (ratios[0]-1)*100, (ratios[len(ratios)-1]-1)*100)
	}
}

// tenThousandEmails writes the bench's emails file: user0…user9999@example.com.
func tenThousandEmails(t *testing.T) string {
	var list strings.Builder
	list.WriteString("# 10,000 addresses\n")
	for i := range 10_000 {
		fmt.Fprintf(&list, "user%d@example.com\n", i)
	}
	path := filepath.Join(t.TempDir(), "emails.txt")
	if err := os.WriteFile(path, []byte(list.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func column(rounds []cpuRound, f func(cpuRound) float64) []float64 {
	out := make([]float64, len(rounds))
	for i, r := range rounds {
		out[i] = f(r)
	}
	slices.Sort(out)
	return out
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// spreadPct is half the range as a percentage of the median.
func spreadPct(sorted []float64) float64 {
	return (sorted[len(sorted)-1] - sorted[0]) / 2 / median(sorted) * 100
}

// countingUpstream is loadUpstream counting the bytes it reads: the bytes
// a proxy writes upstream.
type countingUpstream struct {
	*httptest.Server
	bytes atomic.Int64
}

func newCountingUpstream(t *testing.T) *countingUpstream {
	u := &countingUpstream{}
	page := []byte(strings.Repeat("x", 1024))
	u.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write(page)
	}))
	u.Listener = countingListener{u.Listener, &u.bytes}
	u.Start()
	t.Cleanup(u.Close)
	return u
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{c, l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// loadChild is this test binary running TestLoadChild.
type loadChild struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	url   string
	exits chan error
}

func startLoadChild(t *testing.T, bin string, env []string) *loadChild {
	cmd := exec.Command(bin, "-test.run=^TestLoadChild$", "-test.count=1", "-test.timeout=60m")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &loadChild{t: t, cmd: cmd, in: in, out: bufio.NewScanner(out), exits: make(chan error, 1)}
	c.url = c.reply("url")
	t.Cleanup(c.stop)
	return c
}

// reply reads the child's lines up to the one starting with "LOADCHILD
// what " and returns the rest of it.
func (c *loadChild) reply(what string) string {
	prefix := "LOADCHILD " + what + " "
	for c.out.Scan() {
		line := c.out.Text()
		if strings.HasPrefix(line, prefix) {
			return strings.TrimPrefix(line, prefix)
		}
		if strings.TrimSpace(line) != "" && line != "PASS" {
			fmt.Fprintln(os.Stderr, "load child:", line)
		}
	}
	c.t.Fatalf("load child: no %q line: %v", what, c.out.Err())
	return ""
}

func (c *loadChild) command(cmd string) string {
	if _, err := fmt.Fprintln(c.in, cmd); err != nil {
		c.t.Fatal(err)
	}
	return c.reply(strings.Fields(cmd)[0])
}

func (c *loadChild) stats() childStats {
	f := strings.Fields(c.command("stats"))
	n := func(i int) uint64 { // 0 for a field an older binary (GATEHOUSETEST_LOAD_BEFORE) does not give
		if i >= len(f) {
			return 0
		}
		v, _ := strconv.ParseUint(f[i], 10, 64)
		return v
	}
	frac, _ := strconv.ParseFloat(f[5], 64)
	return childStats{cpu: time.Duration(n(0)) * time.Microsecond, mallocs: n(1), numGC: n(2), heapAlloc: n(3), nextGC: n(4), gcCPUFraction: frac,
		syscalls: n(6), switches: n(7), rss: n(8)}
}

func (c *loadChild) stop() {
	if c.cmd.ProcessState != nil || c.in == nil {
		return
	}
	c.in.Close()
	c.in = nil
	_ = c.cmd.Wait()
}

// TestLoadChild is the child process of cpuReport: it starts the proxy
// GATEHOUSETEST_LOAD_CHILD names, prints its URL, answers commands read from
// stdin and returns when stdin closes.
func TestLoadChild(t *testing.T) {
	kind := os.Getenv("GATEHOUSETEST_LOAD_CHILD")
	if kind == "" {
		t.Skip("only run by TestLoadCPU")
	}
	upstream := os.Getenv("GATEHOUSETEST_LOAD_UPSTREAM")
	var target string
	switch kind {
	case "bare":
		target = plainBareProxy(t, upstream, false, false)
	case "bare-timeouts":
		target = plainBareProxy(t, upstream, true, true)
	case "bare-server-timeouts":
		target = plainBareProxy(t, upstream, true, false)
	case "bare-transport-timeout":
		target = plainBareProxy(t, upstream, false, true)
	case "bare-identity":
		target = plainBareProxy(t, upstream, true, true, identityHeaders(t)...)
	case "gatehouse", "gatehouse-policy", "gatehouse-policy-file", "gatehouse-gogc100", "gatehouse-noassert", "gatehouse-noaccesslog":
		if kind != "gatehouse-gogc100" {
			tuneGC(os.Getenv) // as main does
		}
		devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer devNull.Close()
		args := []string{"--upstream", upstream, "--log-level", "error"}
		switch kind {
		case "gatehouse-policy":
			args = append(args, "--allow-email-domain", "example.com")
		case "gatehouse-policy-file":
			// Issue 8's bench policy: 3 domains that the sessions'
			// addresses (user0…user999@example.com) do not match, so every
			// request walks them, then finds the address in a 10,000-line
			// emails file.
			args = append(args, "--allow-email-domain", "corp.com", "--allow-email-domain", ".corp.net",
				"--allow-email-domain", "example.org", "--allow-emails-file", tenThousandEmails(t))
		case "gatehouse-noassert":
			args = append(args, "--identity-assertion=false")
		case "gatehouse-noaccesslog":
			args = append(args, "--access-log=false")
		}
		g := startGatehouseWith(t, os.Getenv("GATEHOUSETEST_LOAD_DB"), func(c *Config) { c.LogOutput = devNull }, args...)
		defer g.Stop()
		target = g.URL
	default:
		t.Fatalf("unknown load child %q", kind)
	}
	fmt.Printf("LOADCHILD url %s\n", target)
	var cpuProfile *os.File
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "stats":
			var ru syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
			cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			fmt.Printf("LOADCHILD stats %d %d %d %d %d %g %d %d %d\n", cpu.Microseconds(), m.Mallocs, m.NumGC, m.HeapAlloc, m.NextGC, m.GCCPUFraction,
				procSyscalls(), ru.Nvcsw+ru.Nivcsw, procRSS())
		case "cpuprofile":
			var err error
			if cpuProfile, err = os.Create(f[1]); err != nil {
				t.Fatal(err)
			}
			if err := pprof.StartCPUProfile(cpuProfile); err != nil {
				t.Fatal(err)
			}
			fmt.Println("LOADCHILD cpuprofile ok")
		case "stopcpu":
			pprof.StopCPUProfile()
			cpuProfile.Close()
			fmt.Println("LOADCHILD stopcpu ok")
		case "allocs":
			out, err := os.Create(f[1])
			if err != nil {
				t.Fatal(err)
			}
			_ = pprof.Lookup("allocs").WriteTo(out, 0)
			out.Close()
			fmt.Println("LOADCHILD allocs ok")
		}
	}
}

// procSyscalls is the number of read and write system calls this process
// made (syscr + syscw of /proc/self/io), 0 where there is no such file.
func procSyscalls() uint64 {
	b, _ := os.ReadFile("/proc/self/io")
	var n uint64
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscr: "); ok {
			x, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			n += x
		} else if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			x, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			n += x
		}
	}
	return n
}

// procRSS is this process's resident memory in bytes (VmRSS of
// /proc/self/status), 0 where there is no such file.
func procRSS() uint64 {
	b, _ := os.ReadFile("/proc/self/status")
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// plainBareProxy is the baseline of the CPU report: httputil.ReverseProxy
// with pooled copy buffers, a keep-alive pool sized for the load, and
// nothing else: no server timeouts, no response header timeout. With
// timeouts, it gets Gatehouse's server limits (ReadHeaderTimeout,
// IdleTimeout) and the transport's ResponseHeaderTimeout: the cost of those
// two promises alone.
//
// With extra headers (name, value pairs), it also sets those on every
// forwarded request: Gatehouse's identity headers and assertion, of their
// real sizes, so that the cost of carrying them is measured apart from the
// work of deciding them; it then drops the Cookie header, as Gatehouse
// strips the session cookie that is the load's only cookie.
func plainBareProxy(t testing.TB, upstream string, serverTimeouts, transportTimeout bool, extra ...string) string {
	u, _ := url.Parse(upstream)
	tr := &http.Transport{MaxIdleConns: proxy.MaxIdleConns, MaxIdleConnsPerHost: proxy.MaxIdleConns, IdleConnTimeout: proxy.IdleConnTimeout}
	srv := &http.Server{}
	if transportTimeout {
		tr = proxy.NewTransport(time.Minute)
	}
	if serverTimeouts {
		srv = proxy.NewServer("", nil)
	}
	values := make([][]string, len(extra)/2) // built once: Gatehouse's rewrite allocates none either
	for i := range values {
		values[i] = []string{extra[2*i+1]}
	}
	srv.Handler = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.SetXForwarded()
			if len(extra) > 0 {
				delete(pr.Out.Header, "Cookie") // as Gatehouse strips its session cookie
			}
			for i, v := range values {
				pr.Out.Header[extra[2*i]] = v
			}
		},
		Transport:  tr,
		BufferPool: proxy.NewBufferPool(),
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// identityHeaders are the headers Gatehouse adds to a forwarded request of
// the load's sessions, with values of their sizes (the assertion's is that
// of a token for http://127.0.0.1:port with no groups): the bare proxy that
// sets them writes as many bytes upstream per request as Gatehouse does.
func identityHeaders(t testing.TB) []string {
	assertion := strings.Repeat("eyJhbGciOiJFUzI1NiJ9.", 30)[:569]
	return []string{
		"X-Forwarded-User", fmt.Sprintf("%032x", 7),
		"X-Forwarded-Email", "user7@example.com",
		"X-Request-Id", randomHex(16),
		proxy.AssertionHeader, assertion,
	}
}
