package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// waitUntil polls cond until it holds, failing the test after a deadline
// far above the 5 s the README promises (the machine may be loaded; the
// promise itself is TestConfigRefreshIntervalWithinContract's).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not within 30 s: %s", what)
		}
	}
}

// replaceFile writes content to a new file and renames it over path, as
// editors and Kubernetes ConfigMaps do.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// adminMetric reads one unlabelled metric's value from g's /metrics.
func adminMetric(t *testing.T, g *gatehouse, name string) float64 {
	t.Helper()
	_, body := get(t, newClient(), g.AdminURL+"/metrics")
	m := regexp.MustCompile(`(?m)^` + name + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no metric %s", name)
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// ruleAt is the Source of the rule in force for GET path on any host.
func ruleAt(g *gatehouse, path string) string {
	return g.srv.routes.Rules().Match("app.example.com", "GET", path).Source
}

// Three looks a second apart (the change seen, read again the same, and
// one that fell in the write) fit the README's 5 s, with room for the reads.
func TestConfigRefreshIntervalWithinContract(t *testing.T) {
	if 3*configRefreshInterval > 4*time.Second {
		t.Fatalf("configRefreshInterval %v: three looks no longer fit 5 s", configRefreshInterval)
	}
}

// A new file renamed over the old one puts its routes and access policy in
// force for the next request, without a restart.
func TestReloadOnRename(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	addUser(t, db, "ann@corp.com", testPassword)
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "allow-email-domain: [corp.com]\nroutes:\n  - path: /static/\n    allow: public\n")
	g := startGatehouse(t, db, "--upstream", up.URL, "--config", path)
	c := newClient()
	login(t, c, g.URL, "ann@corp.com", testPassword)
	if code, _ := get(t, c, g.URL+"/app"); code != http.StatusOK {
		t.Fatalf("before the reload: GET /app = %d, want 200", code)
	}
	if got := ruleAt(g, "/static/x"); got != path+":3" {
		t.Fatalf("rule for /static/x = %q", got)
	}
	before := adminMetric(t, g, "gatehouse_config_last_reload_timestamp_seconds")

	replaceFile(t, path, "allow-email-domain: [other.com]\nroutes:\n  - path: /assets/\n    allow: public\n")
	waitUntil(t, "the new routes in force", func() bool { return ruleAt(g, "/assets/x") == path+":3" })
	if got := ruleAt(g, "/static/x"); got != "default" {
		t.Errorf("the old rule is still in force: %q", got)
	}
	// The access policy changed with it: ann's domain no longer passes.
	if code, _ := get(t, c, g.URL+"/app"); code != http.StatusForbidden {
		t.Errorf("after the reload: GET /app = %d, want 403 (corp.com no longer allowed)", code)
	}
	if v := adminMetric(t, g, "gatehouse_config_reload_success"); v != 1 {
		t.Errorf("gatehouse_config_reload_success = %v, want 1", v)
	}
	if after := adminMetric(t, g, "gatehouse_config_last_reload_timestamp_seconds"); after < before || after == 0 {
		t.Errorf("last reload timestamp %v, before %v", after, before)
	}
	if !strings.Contains(g.Logs.String(), "configuration file reloaded") {
		t.Errorf("no reload line in the log:\n%s", g.Logs)
	}
}

// SIGHUP (reload, here called directly) reads the file even when it looks
// unchanged to the watcher: same size, same old modification time.
func TestReloadOnHangupSeesWhatPollingCannot(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	old := time.Now().Add(-time.Hour)
	write := func(content string) {
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
	}
	write("routes:\n  - path: /aaaa/\n    allow: public\n")
	g := startGatehouse(t, filepath.Join(dir, "g.db"), "--upstream", up.URL, "--config", path)
	write("routes:\n  - path: /bbbb/\n    allow: public\n") // same size, same time, same inode
	g.srv.reloader.look(false)                              // what the poller does: nothing to see
	if got := ruleAt(g, "/bbbb/x"); got != "default" {
		t.Fatalf("the poller saw an invisible change (%q); this test proves nothing", got)
	}
	g.srv.reload()
	waitUntil(t, "the routes of the file in force after SIGHUP", func() bool { return ruleAt(g, "/bbbb/x") == path+":2" })
}

// A file that fails validation changes nothing: the last good routes and
// policy stay, one error line names the file and the line, /readyz stays
// 200 and says so, the gauge reads 0; a good file puts everything right.
func TestReloadBrokenFileKeepsLastGood(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	good := "allow-email-domain: [corp.com]\nroutes:\n  - path: /static/\n    allow: public\n"
	replaceFile(t, path, good)
	g := startGatehouse(t, filepath.Join(dir, "g.db"), "--upstream", up.URL, "--config", path)
	stamp := adminMetric(t, g, "gatehouse_config_last_reload_timestamp_seconds")

	for _, broken := range []struct{ content, at string }{
		{"allow-email-domain: [other.com]\nroutes:\n  - path: /assets/\n    allow: pubic\n", path + ":4: routes: allow:"},
		{"allow-email-domain: [other..com]\n", path + ":1: allow-email-domain:"},
		{"allow-email-domain: [other.com]\nsesion-ttl: 1h\n", path + ":2: unknown key"},
	} {
		logsBefore := strings.Count(g.Logs.String(), "configuration file not reloaded")
		replaceFile(t, path, broken.content)
		waitUntil(t, "the broken file noticed", func() bool {
			_, body := get(t, newClient(), g.AdminURL+"/readyz")
			return strings.Contains(body, broken.at)
		})
		code, body := get(t, newClient(), g.AdminURL+"/readyz")
		if code != http.StatusOK || !strings.HasPrefix(body, "ready; configuration file not reloaded (") || !strings.Contains(body, broken.at) || !strings.Contains(body, "the last good configuration is in force") {
			t.Errorf("/readyz = %d %q, want 200 naming %q", code, body, broken.at)
		}
		if v := adminMetric(t, g, "gatehouse_config_reload_success"); v != 0 {
			t.Errorf("gatehouse_config_reload_success = %v, want 0", v)
		}
		if v := adminMetric(t, g, "gatehouse_config_last_reload_timestamp_seconds"); v != stamp {
			t.Errorf("the timestamp moved to %v on a failed reload (was %v)", v, stamp)
		}
		if got := ruleAt(g, "/static/x"); got != path+":3" {
			t.Errorf("the last good routes are gone: /static/x gets %q", got)
		}
		if !g.srv.policy.Passes("a@corp.com", false, "") || g.srv.policy.Passes("a@other.com", false, "") {
			t.Error("the broken file changed the access policy")
		}
		// Looking again at the same broken file says nothing more.
		g.srv.reloader.look(false)
		g.srv.reloader.look(false)
		if n := strings.Count(g.Logs.String(), "configuration file not reloaded") - logsBefore; n != 1 {
			t.Errorf("%d error lines for one broken file, want 1:\n%s", n, g.Logs)
		}
		if lines := logLines(g.Logs.String(), "configuration file not reloaded"); !strings.Contains(lines[len(lines)-1], broken.at) {
			t.Errorf("the error line does not name %q: %s", broken.at, lines[len(lines)-1])
		}
	}

	replaceFile(t, path, strings.Replace(good, "/static/", "/public/", 1))
	waitUntil(t, "the fixed file in force", func() bool { return ruleAt(g, "/public/x") == path+":3" })
	if code, body := get(t, newClient(), g.AdminURL+"/readyz"); code != http.StatusOK || body != "ready\n" {
		t.Errorf("/readyz after the fix = %d %q, want ready", code, body)
	}
	if v := adminMetric(t, g, "gatehouse_config_reload_success"); v != 1 {
		t.Errorf("gatehouse_config_reload_success after the fix = %v, want 1", v)
	}

	// A file that disappears keeps the configuration too, and says so.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the missing file noticed", func() bool {
		_, body := get(t, newClient(), g.AdminURL+"/readyz")
		return strings.Contains(body, "not reloaded")
	})
	if got := ruleAt(g, "/public/x"); got != path+":3" {
		t.Errorf("a missing file dropped the routes: %q", got)
	}
}

// logLines are the lines of logs that contain sub.
func logLines(logs, sub string) []string {
	return strings.Split(grepLines(logs, sub), "\n")
}

// A change to a key that applies only at a start is logged as needing a
// restart and not applied; the reloadable keys of the same file are.
func TestReloadRestartNeededKey(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "session-ttl: 2h\ngithub-org: [acme]\nroutes:\n  - path: /a/\n    allow: public\n")
	g := startGatehouse(t, filepath.Join(dir, "g.db"), "--upstream", up.URL, "--config", path, "--github-client-id", "id", "--github-client-secret", "s")
	replaceFile(t, path, "session-ttl: 3h\ninvite-ttl: 1h\ngithub-org: [other]\nroutes:\n  - path: /b/\n    allow: public\n")
	waitUntil(t, "the new routes in force", func() bool { return ruleAt(g, "/b/x") == path+":5" })
	lines := logLines(g.Logs.String(), "need a restart")
	if len(lines) != 1 || !strings.Contains(lines[0], "session-ttl") || !strings.Contains(lines[0], "invite-ttl") || !strings.Contains(lines[0], "github-org") || strings.Contains(lines[0], "routes") {
		t.Errorf("restart lines: %q, want one naming session-ttl, invite-ttl and github-org", lines)
	}
	if g.srv.cfg.SessionTTL != 2*time.Hour {
		t.Errorf("session-ttl in force = %v, want the start's 2h", g.srv.cfg.SessionTTL)
	}
	// github-org decides what a sign-in asks GitHub for: the policy keeps
	// the start's, in step with the provider.
	if !g.srv.policy.Passes("", false, "github:acme") || g.srv.policy.Passes("", false, "github:other") {
		t.Error("a reload changed the GitHub organizations of the access policy")
	}
}

// The emails file keeps its own reload rules: a broken change keeps the
// last good list, /readyz stays 200 and says so, the gauge reads 0.
func TestEmailsFileReloadStatus(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	emails := filepath.Join(dir, "emails.txt")
	replaceFile(t, emails, "ann@example.com\n")
	g := startGatehouse(t, filepath.Join(dir, "g.db"), "--upstream", up.URL, "--allow-emails-file", emails)
	if v := adminMetric(t, g, "gatehouse_emails_file_reload_success"); v != 1 {
		t.Fatalf("gauge at start = %v, want 1", v)
	}
	replaceFile(t, emails, "ann@example.com\nnot an address\n")
	waitUntil(t, "the broken emails file noticed", func() bool { return adminMetric(t, g, "gatehouse_emails_file_reload_success") == 0 })
	code, body := get(t, newClient(), g.AdminURL+"/readyz")
	if code != http.StatusOK || !strings.Contains(body, "emails file "+emails+" not reloaded") || !strings.Contains(body, "the last good list is in force") {
		t.Errorf("/readyz = %d %q", code, body)
	}
	if strings.Contains(body, "not an address") {
		t.Errorf("/readyz repeats the file's contents: %q", body)
	}
	if !g.srv.policy.Passes("ann@example.com", false, "") {
		t.Error("the last good list is gone")
	}
	replaceFile(t, emails, "bob@example.com\n")
	waitUntil(t, "the fixed emails file in force", func() bool { return adminMetric(t, g, "gatehouse_emails_file_reload_success") == 1 })
	if _, body := get(t, newClient(), g.AdminURL+"/readyz"); body != "ready\n" {
		t.Errorf("/readyz after the fix = %q", body)
	}
}

// The allow-* keys of the file turn the policy on at a reload, even when
// the start had none: the proxy checks the policy from the start when a
// configuration file could turn it on.
func TestReloadTurnsThePolicyOn(t *testing.T) {
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "g.db")
	addUser(t, db, "ann@corp.com", testPassword)
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "routes: []\n")
	g := startGatehouse(t, db, "--upstream", up.URL, "--config", path)
	c := newClient()
	login(t, c, g.URL, "ann@corp.com", testPassword)
	replaceFile(t, path, "allow-email-domain: [other.com]\n")
	waitUntil(t, "the policy on", func() bool { return g.srv.policy.On() })
	if code, _ := get(t, c, g.URL+"/app"); code != http.StatusForbidden {
		t.Errorf("GET /app = %d, want 403 once the reloaded policy is on", code)
	}
}

// With --config, SIGHUP reloads the file and the server keeps running;
// SIGTERM still stops it cleanly. (Without --config SIGHUP stops it:
// TestHangupStopsLikeTerminate.)
func TestHangupReloadsWithConfig(t *testing.T) {
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "gatehouse.yaml")
	replaceFile(t, path, "routes:\n  - path: /static/\n    allow: public\n")
	addr, admin := freeLoopbackAddr(t), freeLoopbackAddr(t)
	cmd := exec.Command(bin, "--config", path, "--db", filepath.Join(dir, "g.db"), "--listen", addr, "--admin-listen", admin,
		"--base-url", "http://"+addr, "--upstream", up.URL, "--mail-dir", filepath.Join(dir, "mail"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ready := func() bool {
		resp, err := http.Get("http://" + admin + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
	waitUntil(t, "ready", ready)
	for i := 1; i <= 2; i++ {
		if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the reload after SIGHUP", func() bool { return strings.Count(stderr.String(), "configuration file reloaded") == i })
		select {
		case err := <-exited:
			t.Fatalf("gatehouse exited after SIGHUP: %v\n%s", err, stderr)
		default:
		}
		if !ready() {
			t.Fatalf("not ready after SIGHUP:\n%s", stderr)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no exit within 30 s of SIGTERM")
	}
}
