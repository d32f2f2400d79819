package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/mail"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// Issue 10, item 10: the real binary under a bounded burst of concurrent
// resets, sign-ins and sign-outs, killed with SIGKILL at random moments,
// several times. After each kill the file is opened read-only and must hold:
// bbolt's Check clean and every index matching its records (bolt.Verify); no
// session older than its user's last credential change; every accepted reset
// request mailed or still queued.
func TestCrashKeepsInvariants(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test: builds and kills the real binary; skipped under -short")
	}
	dir := t.TempDir()
	bin := builds.Binary(t, ".")
	db := filepath.Join(dir, "gatehouse.db")
	mailDir := filepath.Join(dir, "mail")
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "app") }))
	defer up.Close()

	const users = 12
	c := &crashLoad{passwords: map[string]string{}, accepted: map[string]int{}, mailDir: mailDir}
	for i := range users {
		email := fmt.Sprintf("user%d@example.com", i)
		c.emails = append(c.emails, email)
		c.passwords[email] = fmt.Sprintf("first passphrase %d of the crash test", i)
		addUser(t, db, email, c.passwords[email])
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))

	const rounds = 5
	for round := range rounds {
		g := startBinary(t, bin, db, mailDir, up.URL)
		c.base = g.base
		c.forgotten = map[string]int{} // a new process: full account buckets
		ctx, stop := context.WithCancel(t.Context())
		var workers sync.WaitGroup
		for w := range 6 {
			workerRng := rand.New(rand.NewPCG(seed, uint64(round*100+w+2)))
			workers.Go(func() { c.work(ctx, workerRng, fmt.Sprintf("10.%d.%d.1", round, w)) })
		}
		time.Sleep(time.Duration(150+rng.IntN(1200)) * time.Millisecond) // a random moment
		g.kill(t)
		stop()
		workers.Wait()

		report, err := bolt.Verify(db, 5*time.Second)
		if err != nil {
			t.Fatalf("round %d: after SIGKILL: %v", round, err)
		}
		if report.StaleSessions != 0 {
			t.Errorf("round %d: %d of %d sessions outlived their user's credential change", round, report.StaleSessions, report.Sessions)
		}
		mailed := c.resetMails(t)
		c.mu.Lock()
		for _, email := range c.emails {
			id := c.userIDs(t, db)[email]
			if got := mailed[email] + report.ResetJobs[id]; got < c.accepted[email] {
				t.Errorf("round %d: %s: %d reset requests accepted, only %d mailed and %d queued",
					round, email, c.accepted[email], mailed[email], report.ResetJobs[id])
			}
		}
		t.Logf("round %d: %d sessions, %d requests accepted, %d reset mails, %d resets, %d sign-ins",
			round, report.Sessions, sum(c.accepted), sum(mailed), c.resets, c.signIns)
		c.mu.Unlock()
	}
	if c.signIns == 0 || sum(c.accepted) == 0 {
		t.Errorf("the load did nothing: %d sign-ins, %d reset requests", c.signIns, sum(c.accepted))
	}
}

// crashLoad is the load of the crash test and what it observed.
type crashLoad struct {
	base    string
	mailDir string
	emails  []string

	mu        sync.Mutex
	passwords map[string]string // the current password of each user
	accepted  map[string]int    // 202s of /auth/forgot per user, all rounds
	forgotten map[string]int    // this round's requests per user (the account bucket holds 3)
	resets    int
	signIns   int
	ids       map[string]string
}

// work runs random steps until ctx ends: sign in and out, ask for a reset,
// or complete one with the newest mailed link. Each worker has its own
// client IP (X-Forwarded-For from a trusted loopback proxy), so the per-IP
// buckets never throttle; a user gets at most 3 reset requests a round, the
// per-account bucket, so every 202 stands for a queued request.
func (c *crashLoad) work(ctx context.Context, rng *rand.Rand, ip string) {
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar, Timeout: 5 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	post := func(path string, body map[string]string) (int, error) {
		b, _ := json.Marshal(body)
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, bytes.NewReader(b))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Forwarded-For", ip)
		resp, err := client.Do(r)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for ctx.Err() == nil {
		email := c.emails[rng.IntN(len(c.emails))]
		switch step := rng.IntN(10); {
		case step < 5: // sign in, use, sign out
			c.mu.Lock()
			password := c.passwords[email]
			c.mu.Unlock()
			if status, err := post("/auth/login", map[string]string{"email": email, "password": password}); err == nil && status == http.StatusOK {
				c.mu.Lock()
				c.signIns++
				c.mu.Unlock()
				if rng.IntN(2) == 0 {
					_, _ = post("/auth/logout", nil)
				}
			}
		case step < 7:
			c.mu.Lock()
			if c.forgotten[email] >= 3 {
				c.mu.Unlock()
				continue
			}
			c.forgotten[email]++
			c.mu.Unlock()
			if status, err := post("/auth/forgot", map[string]string{"email": email}); err == nil && status == http.StatusAccepted {
				c.mu.Lock()
				c.accepted[email]++
				c.mu.Unlock()
			}
		default:
			link := c.newestLink(email)
			if link == "" {
				continue
			}
			_, token, _ := strings.Cut(link, "token=")
			password := fmt.Sprintf("passphrase %d after a reset", rng.Uint64())
			// The new password counts from before the answer: a kill may
			// come between the commit and the answer.
			c.mu.Lock()
			old := c.passwords[email]
			c.passwords[email] = password
			c.mu.Unlock()
			status, err := post("/auth/reset", map[string]string{"token": token, "password": password})
			c.mu.Lock()
			if err == nil && status == http.StatusOK {
				c.resets++
			} else if err == nil && c.passwords[email] == password {
				c.passwords[email] = old // refused: the old one stays
			}
			c.mu.Unlock()
		}
	}
}

// newestLink is the reset link of the newest mail to email, "" if none.
func (c *crashLoad) newestLink(email string) string {
	var newest string
	var newestTime time.Time
	files, _ := filepath.Glob(filepath.Join(c.mailDir, "*.eml"))
	for _, f := range files {
		to, text, ok := readResetMail(f)
		if !ok || to != email {
			continue
		}
		if st, err := os.Stat(f); err == nil && st.ModTime().After(newestTime) {
			newest, newestTime = resetLink.FindString(text), st.ModTime()
		}
	}
	return newest
}

// resetMails counts the reset mails on disk per recipient.
func (c *crashLoad) resetMails(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	files, err := filepath.Glob(filepath.Join(c.mailDir, "*.eml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if to, _, ok := readResetMail(f); ok {
			out[to]++
		}
	}
	return out
}

// readResetMail returns the recipient and decoded text of a reset mail file.
func readResetMail(path string) (to, text string, ok bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", "", false
	}
	msg, err := mail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		return "", "", false
	}
	text = strings.ReplaceAll(strings.ReplaceAll(string(raw), "=\r\n", ""), "=3D", "=")
	if !resetLink.MatchString(text) {
		return "", "", false
	}
	addr, err := mail.ParseAddress(msg.Header.Get("To"))
	if err != nil {
		return "", "", false
	}
	return addr.Address, text, true
}

// userIDs maps each email to its user id, read once with the CLI.
func (c *crashLoad) userIDs(t *testing.T, db string) map[string]string {
	t.Helper()
	if c.ids != nil {
		return c.ids
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"users", "list", "--db", db}, nil, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("users list: %s", errOut.String())
	}
	c.ids = map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		for i, field := range f {
			if strings.Contains(field, "@") && i > 0 {
				c.ids[field] = f[0]
			}
		}
	}
	if len(c.ids) != len(c.emails) {
		t.Fatalf("users list: %d users in %q", len(c.ids), out.String())
	}
	return c.ids
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// binaryRun is one gatehouse process of the crash test.
type binaryRun struct {
	cmd    *exec.Cmd
	base   string
	stderr *bytes.Buffer
	exited chan error
}

// startBinary starts the binary on free loopback ports and waits until it is ready.
func startBinary(t *testing.T, bin, db, mailDir, upstream string) *binaryRun {
	t.Helper()
	addr, admin := freeLoopbackAddr(t), freeLoopbackAddr(t)
	g := &binaryRun{base: "http://" + addr, stderr: &bytes.Buffer{}, exited: make(chan error, 1)}
	g.cmd = exec.Command(bin, "--db", db, "--listen", addr, "--admin-listen", admin, "--base-url", g.base,
		"--upstream", upstream, "--mail-dir", mailDir, "--trusted-proxies", "127.0.0.1/32", "--log-level", "warn")
	g.cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	g.cmd.Stderr = g.stderr
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.exited <- g.cmd.Wait() }()
	t.Cleanup(func() { _ = g.cmd.Process.Kill() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-g.exited:
			t.Fatalf("gatehouse exited at start: %v\n%s", err, g.stderr.String())
		default:
		}
		if resp, err := http.Get("http://" + admin + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gatehouse not ready within 30 s:\n%s", g.stderr.String())
		}
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (g *binaryRun) kill(t *testing.T) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-g.exited
}

// resetLink finds the reset link in a mail.
var resetLink = regexp.MustCompile(`https?://[^\s"<>]+/auth/reset\?token=[A-Za-z0-9_-]+`)
