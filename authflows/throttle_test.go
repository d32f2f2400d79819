package authflows

import (
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

func TestKeyedLimiterBurstAndRefill(t *testing.T) {
	clock := webtest.NewClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	k := newKeyedLimiter(10, 15*time.Minute, clock.Now) // one token back every 90 s

	for i := range 10 {
		if !k.allow("a") {
			t.Fatalf("event %d of 10 refused", i+1)
		}
	}
	if k.allow("a") {
		t.Fatal("11th event allowed")
	}
	if !k.allow("b") {
		t.Fatal("another key is throttled too")
	}
	clock.Advance(89 * time.Second)
	if k.allow("a") {
		t.Fatal("token back before 90 s")
	}
	clock.Advance(time.Second)
	if !k.allow("a") {
		t.Fatal("no token back after 90 s")
	}
	if k.allow("a") {
		t.Fatal("two tokens back after 90 s")
	}
	clock.Advance(15 * time.Minute)
	for i := range 10 {
		if !k.allow("a") {
			t.Fatalf("after a full period, event %d of 10 refused", i+1)
		}
	}
}

// A refunded token is there again at once; a refund never fills a bucket
// beyond its burst, and a refund for a full bucket changes nothing.
func TestKeyedLimiterRefund(t *testing.T) {
	clock := webtest.NewClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	k := newKeyedLimiter(3, time.Minute, clock.Now) // one token back every 20 s
	k.refund("a")                                   // a full bucket: nothing to give back
	for i := range 3 {
		if !k.allow("a") {
			t.Fatalf("event %d of 3 refused", i+1)
		}
	}
	if k.allow("a") {
		t.Fatal("4th event allowed")
	}
	k.refund("a")
	if !k.allow("a") {
		t.Fatal("refunded token not there")
	}
	if k.allow("a") {
		t.Fatal("one refund gave back two tokens")
	}
	for range 5 {
		k.refund("a")
	}
	for i := range 3 {
		if !k.allow("a") {
			t.Fatalf("after refunds, event %d of 3 refused", i+1)
		}
	}
	if k.allow("a") {
		t.Fatal("refunds filled the bucket beyond its burst")
	}
	clock.Advance(20 * time.Second)
	if !k.allow("a") || k.allow("a") {
		t.Fatal("want exactly one token back after 20 s")
	}
}

// Buckets that are full again are dropped, so a flood of distinct keys does
// not stay in memory.
func TestKeyedLimiterSweep(t *testing.T) {
	clock := webtest.NewClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	k := newKeyedLimiter(60, time.Minute, clock.Now)
	for i := range 1000 {
		k.allow(fmt.Sprintf("198.51.100.%d", i))
	}
	if n := len(k.fullAt); n != 1000 {
		t.Fatalf("%d buckets, want 1000", n)
	}
	clock.Advance(2 * time.Minute)
	k.allow("fresh")
	if n := len(k.fullAt); n != 1 {
		t.Errorf("%d buckets after the sweep, want 1", n)
	}
}

func TestKeyedLimiterConcurrent(t *testing.T) {
	clock := webtest.NewClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	k := newKeyedLimiter(60, time.Minute, clock.Now)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for range 20 {
				if k.allow("shared") {
					allowed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := allowed.Load(); n != 60 {
		t.Errorf("%d of 320 concurrent events allowed, want exactly 60", n)
	}
}

// The contract's floors pass before any throttling, and the next event
// does not.
func TestLimitsFloors(t *testing.T) {
	clock := webtest.NewClock(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	l := newLimits(clock.Now)
	tests := []struct {
		name  string
		k     *keyedLimiter
		floor int
	}{
		{"login per IP per minute", l.loginIP, 60},
		{"failed logins per account per 15 minutes", l.loginFailures, 10},
		{"forgot per IP per minute", l.forgotIP, 60},
		{"reset mails per account per 15 minutes", l.forgotAccount, 3},
		{"reset per IP per minute", l.resetIP, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.floor {
				if !tt.k.allow("key") {
					t.Fatalf("event %d refused, floor is %d", i+1, tt.floor)
				}
			}
			if tt.k.allow("key") {
				t.Errorf("event %d allowed at once", tt.floor+1)
			}
		})
	}
}

// 60 sign-ins per client IP per minute pass, the 61st is refused whatever
// the password; other addresses are not affected; time restores.
func TestLoginThrottlePerIP(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	forwarded := 0
	from := func(ip string, form bool) *http.Response {
		forwarded++
		var r *http.Request
		if form {
			r = env.FormRequest("/auth/login", url.Values{"email": {aliceEmail}, "password": {alicePassword}})
		} else {
			r = env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
		}
		r.RemoteAddr = ip + ":5000"
		// Not a trusted proxy: a client's own X-Forwarded-For changes nothing.
		r.Header.Set("X-Forwarded-For", fmt.Sprintf("203.0.113.%d", forwarded%250))
		return env.Do(r)
	}
	for i := range 60 {
		if resp := from("198.51.100.1", false); resp.StatusCode != http.StatusOK {
			t.Fatalf("login %d of 60: status %d", i+1, resp.StatusCode)
		}
	}
	before := env.HashRuns()
	if code := env.ProblemCode(t, from("198.51.100.1", false), http.StatusTooManyRequests); code != "rate_limited" {
		t.Errorf("61st: code %q", code)
	}
	if env.HashRuns() != before {
		t.Error("a throttled attempt was hashed")
	}
	page := from("198.51.100.1", true)
	if page.StatusCode != http.StatusTooManyRequests || !strings.Contains(env.Body(t, page), "Too many attempts") {
		t.Errorf("form: status %d, want a 429 page", page.StatusCode)
	}
	if resp := from("198.51.100.2", false); resp.StatusCode != http.StatusOK {
		t.Errorf("another IP: status %d", resp.StatusCode)
	}
	if ev := env.Logs.Events("login_throttled"); len(ev) != 2 || !strings.Contains(ev[0], "scope=ip") {
		t.Errorf("login_throttled events: %q", ev)
	}
	if got := env.CounterValue(t, "gatehouse_logins_total", map[string]string{"result": "throttled"}); got != 2 {
		t.Errorf("throttled counted %v, want 2", got)
	}
	env.Clock.Advance(time.Minute)
	if resp := from("198.51.100.1", false); resp.StatusCode != http.StatusOK {
		t.Errorf("a minute later: status %d", resp.StatusCode)
	}
}

// Every attempt counts against the IP, malformed ones included.
func TestLoginThrottlePerIPCountsMalformed(t *testing.T) {
	env := newTestEnv(t)
	for range 60 {
		env.PostJSON("/auth/login", `{"email":["x"]}`)
	}
	resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword})
	if code := env.ProblemCode(t, resp, http.StatusTooManyRequests); code != "rate_limited" {
		t.Errorf("code %q", code)
	}
}

// 10 failed sign-ins per account in 15 minutes pass; then the account is
// refused even with the right password, from any address, until time passes.
// Unknown emails behave the same, so throttling reveals nothing.
func TestLoginThrottlePerAccount(t *testing.T) {
	for _, account := range []struct{ name, email string }{
		{"known", aliceEmail},
		{"unknown", "nobody@example.com"},
	} {
		t.Run(account.name, func(t *testing.T) {
			env := newTestEnv(t)
			env.CreateUser(t, aliceEmail, alicePassword)
			env.CreateUser(t, "bob@example.com", "bob's own passphrase")
			attempt := func(i int, email, password string) *http.Response {
				r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": email, "password": password})
				r.RemoteAddr = fmt.Sprintf("198.51.100.%d:5000", i%250+1) // a different address each time
				return env.Do(r)
			}
			for i := range 10 {
				// Spelling variants are one account.
				email := account.email
				if i%2 == 1 {
					email = strings.ToUpper(email)
				}
				if resp := attempt(i, email, "wrong password"); resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("failure %d of 10: status %d", i+1, resp.StatusCode)
				}
			}
			before := env.HashRuns()
			for _, password := range []string{alicePassword, "wrong password"} {
				if code := env.ProblemCode(t, attempt(100, account.email, password), http.StatusTooManyRequests); code != "rate_limited" {
					t.Errorf("11th attempt: code %q", code)
				}
			}
			if env.HashRuns() != before {
				t.Error("an attempt on a throttled account was hashed")
			}
			if ev := env.Logs.Events("login_throttled"); len(ev) != 2 || !strings.Contains(ev[0], "scope=account") {
				t.Errorf("login_throttled events: %q", ev)
			}
			if resp := attempt(101, "bob@example.com", "bob's own passphrase"); resp.StatusCode != http.StatusOK {
				t.Errorf("another account: status %d", resp.StatusCode)
			}
			if account.email != aliceEmail {
				return
			}
			env.Clock.Advance(90 * time.Second) // one failure's worth comes back
			if resp := attempt(102, aliceEmail, alicePassword); resp.StatusCode != http.StatusOK {
				t.Errorf("90 s later: status %d", resp.StatusCode)
			}
			env.Clock.Advance(15 * time.Minute)
			for i := range 10 {
				if resp := attempt(i, aliceEmail, "wrong again"); resp.StatusCode != http.StatusUnauthorized {
					t.Fatalf("15 minutes later, failure %d: status %d", i+1, resp.StatusCode)
				}
			}
		})
	}
}

// Successful sign-ins take nothing from the account's failure budget.
func TestLoginSuccessDoesNotCountAsFailure(t *testing.T) {
	env := newTestEnv(t)
	env.CreateUser(t, aliceEmail, alicePassword)
	for i := range 9 {
		if resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": "wrong"}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, resp.StatusCode)
		}
	}
	for range 20 {
		env.Login(t, aliceEmail, alicePassword)
	}
}

// The client IP comes from Config.ClientIP, so a trusted proxy's
// X-Forwarded-For separates clients.
func TestLoginThrottleBehindTrustedProxy(t *testing.T) {
	trusted, err := web.ParseTrustedProxies([]string{"10.0.0.0/8"})
	if err != nil {
		t.Fatal(err)
	}
	env := newTestEnv(t, func(c *Config) { c.ClientIP = trusted.ClientIP })
	from := func(client string) int {
		r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": "x@example.com", "password": "wrong password"})
		r.RemoteAddr = "10.1.2.3:5000"
		r.Header.Set("X-Forwarded-For", client)
		return env.Do(r).StatusCode
	}
	for i := range 60 {
		// Unknown emails, different each time, so that only the IP limit applies.
		r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": fmt.Sprintf("u%d@example.com", i), "password": "wrong password"})
		r.RemoteAddr = "10.1.2.3:5000"
		r.Header.Set("X-Forwarded-For", "203.0.113.7")
		env.Do(r)
	}
	if got := from("203.0.113.7"); got != http.StatusTooManyRequests {
		t.Errorf("61st from one client: %d, want 429", got)
	}
	if got := from("203.0.113.8"); got != http.StatusUnauthorized {
		t.Errorf("another client behind the same proxy: %d, want 401", got)
	}
}

// Concurrent guesses cannot outrun the account's bucket: 15 wrong passwords
// for one account sent at once from 15 addresses, while every verification
// has to wait for a hashing slot, get 10 verifications and 5 refusals
// before any hashing. (Checking the bucket before the hash and taking the
// token after it let all 15 through, and a botnet one guess per address
// per bucket refill.)
func TestLoginThrottlePerAccountConcurrent(t *testing.T) {
	env := newTestEnv(t, hashLimits(password.Limits{Wait: time.Hour}))
	env.CreateUser(t, aliceEmail, alicePassword)
	release := env.FillHashSlots(t)
	const n = 15
	statuses := make(chan int, n)
	for i := range n {
		r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": aliceEmail, "password": "wrong password"})
		r.RemoteAddr = fmt.Sprintf("198.51.100.%d:5000", i+1)
		go func() { statuses <- env.Do(r).StatusCode }()
	}
	// Wait until every attempt has been answered or waits for a slot.
	got := map[int]int{}
	answered := 0
	for answered+int(env.Hasher.Waiting()) < n {
		select {
		case s := <-statuses:
			got[s]++
			answered++
		case <-time.After(time.Millisecond): // poll the waiting count again
		}
	}
	if got[http.StatusTooManyRequests] != n-10 || answered != n-10 {
		t.Errorf("before any hashing: %v answered, want %d × 429", got, n-10)
	}
	release()
	for answered < n {
		got[<-statuses]++
		answered++
	}
	if got[http.StatusUnauthorized] != 10 || got[http.StatusTooManyRequests] != n-10 {
		t.Errorf("answers %v, want 10 × 401 and %d × 429", got, n-10)
	}
	if runs := env.HashRuns(); runs != 10+1 { // +1: CreateUser
		t.Errorf("%d argon2 runs, want 11", runs)
	}
}

// A sign-in that is refused for lack of a hashing slot, or that fails on a
// store error, does not count against the account.
func TestLoginBusyAndStoreErrorsAreNotFailures(t *testing.T) {
	env := newTestEnv(t, func(c *Config) { c.Store = faultyStore{Store: c.Store.(storage.Store), fail: failing("CreateSession")} },
		hashLimits(password.Limits{Wait: -1}))
	env.CreateUser(t, aliceEmail, alicePassword)
	release := env.FillHashSlots(t)
	for i := range 12 {
		if code := env.ProblemCode(t, env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": "wrong password"}), http.StatusServiceUnavailable); code != "busy" {
			t.Fatalf("busy attempt %d: %q", i+1, code)
		}
	}
	release()
	for i := range 12 { // the right password, but the session cannot be stored
		if code := env.ProblemCode(t, env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": alicePassword}), http.StatusServiceUnavailable); code != "store_unavailable" {
			t.Fatalf("store failure %d: %q", i+1, code)
		}
	}
	for i := range 10 {
		if resp := env.PostJSON("/auth/login", map[string]string{"email": aliceEmail, "password": "wrong password"}); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("failure %d of 10: status %d", i+1, resp.StatusCode)
		}
	}
}

// IPv6 clients are throttled by their /64: one subscriber cannot take a
// fresh bucket per address. IPv4 addresses, and IPv4 in IPv6, stay apart.
func TestClientKey(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		same bool
	}{
		{"2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", true},
		{"2001:db8:1:2::1", "2001:db8:1:3::1", false},
		{"192.0.2.1", "192.0.2.2", false},
		{"192.0.2.1", "::ffff:192.0.2.1", true},
	} {
		ka, kb := clientKey(netip.MustParseAddr(tt.a)), clientKey(netip.MustParseAddr(tt.b))
		if (ka == kb) != tt.same {
			t.Errorf("%s → %q, %s → %q: same=%v, want %v", tt.a, ka, tt.b, kb, ka == kb, tt.same)
		}
	}
	env := newTestEnv(t)
	for i := range 61 {
		r := env.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": fmt.Sprintf("u%d@example.com", i), "password": "wrong password"})
		r.RemoteAddr = fmt.Sprintf("[2001:db8:1:2::%x]:5000", i+1) // a new address of one /64 each time
		want := http.StatusUnauthorized
		if i == 60 {
			want = http.StatusTooManyRequests
		}
		if got := env.Do(r).StatusCode; got != want {
			t.Fatalf("attempt %d: status %d, want %d", i+1, got, want)
		}
	}
}
