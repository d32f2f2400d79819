package policy

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
)

func mustNew(t *testing.T, r Rules) *Policy {
	t.Helper()
	p, err := New(r, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestPassesEmailDomains(t *testing.T) {
	p := mustNew(t, Rules{EmailDomains: []string{"corp.com", ".Sub.Example.org"}})
	for _, tc := range []struct {
		email string
		want  bool
	}{
		{"alice@corp.com", true},
		{"alice@eu.corp.com", false}, // corp.com is exact
		{"alice@notcorp.com", false},
		{"alice@corp.com.evil.net", false},
		{"alice@sub.example.org", true}, // .sub.example.org: itself
		{"alice@eu.sub.example.org", true},
		{"alice@a.b.sub.example.org", true},
		{"alice@xsub.example.org", false},
		{"alice@example.org", false},
		{"", false}, // an unverified email is passed as ""
		{"corp.com", false},
		{"alice@", false},
	} {
		if got := p.Passes(tc.email, false, ""); got != tc.want {
			t.Errorf("Passes(%q) = %t, want %t", tc.email, got, tc.want)
		}
	}
}

func TestPassesOffAndDisabled(t *testing.T) {
	var off *Policy
	if off.On() || !off.Passes("anyone@anywhere.net", false, "") {
		t.Fatal("a nil policy must be off and pass everyone")
	}
	if off.Passes("anyone@anywhere.net", true, "") {
		t.Fatal("a disabled user passed with the policy off")
	}
	empty := mustNew(t, Rules{})
	if empty.On() || !empty.Passes("x@y.z", false, "") {
		t.Fatal("no rules: policy must be off")
	}
	on := mustNew(t, Rules{EmailDomains: []string{"corp.com"}})
	if on.Passes("alice@corp.com", true, "") {
		t.Fatal("a disabled user passed a matching domain")
	}
}

func TestPassesGroups(t *testing.T) {
	p := mustNew(t, Rules{
		GitHubOrgs:          []string{"Acme"},
		GitHubTeams:         []string{"other/Ops"},
		GoogleHostedDomains: []string{"corp.com"},
		AllowGroups:         []string{"admins"},
	})
	for _, tc := range []struct {
		groups string
		want   bool
	}{
		{"github:acme", true},
		{"github:acme/ops", false}, // a team of acme is not a configured team; the org rule needs github:acme
		{"github:other/ops", true},
		{"github:other", false},
		{"google:corp.com", true},
		{"google:evil.com", false},
		{"oidc:admins", true},
		{"oidc:Admins", false}, // OIDC groups compare exactly
		{"oidc:users,oidc:admins", true},
		{"github:acm", false},
		{"github:acmex", false},
		{"", false},
		{",", false},
	} {
		if got := p.Passes("nobody@elsewhere.net", false, tc.groups); got != tc.want {
			t.Errorf("Passes(groups %q) = %t, want %t", tc.groups, got, tc.want)
		}
	}
}

func TestEarned(t *testing.T) {
	p := mustNew(t, Rules{GitHubOrgs: []string{"acme"}, GitHubTeams: []string{"acme/ops"}, GoogleHostedDomains: []string{"corp.com"}})
	got := p.Earned([]string{
		"github:ACME", "github:acme/ops", "github:acme/dev", "github:other",
		"google:corp.com", "google:evil.com",
		"oidc:admins", "oidc:a,b", "oidc:", "oidc:Users", "oidc:admins",
		"plain",
	})
	want := "github:acme,github:acme/ops,google:corp.com,oidc:admins,oidc:Users"
	if got != want {
		t.Fatalf("Earned = %q, want %q", got, want)
	}
	var off *Policy
	if got := off.Earned([]string{"github:acme", "oidc:x"}); got != "oidc:x" {
		t.Fatalf("Earned without a policy = %q, want only the oidc groups", got)
	}
}

func TestParseFlags(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func(string) (string, error)
		in    string
		want  string // "" : an error
	}{
		{"domain", ParseEmailDomain, "corp.com", "corp.com"},
		{"domain", ParseEmailDomain, ".Corp.com", ".corp.com"},
		{"domain", ParseEmailDomain, "corp..com", ""},
		{"domain", ParseEmailDomain, "..corp.com", ""},
		{"domain", ParseEmailDomain, "corp.com.", ""},
		{"domain", ParseEmailDomain, "", ""},
		{"domain", ParseEmailDomain, ".", ""},
		{"domain", ParseEmailDomain, "@corp.com", ""},
		{"domain", ParseEmailDomain, "-corp.com", ""},
		{"domain", ParseEmailDomain, "corp .com", ""},
		{"hd", ParseHostedDomain, "corp.com", "corp.com"},
		{"hd", ParseHostedDomain, ".corp.com", ""},
		{"org", ParseGitHubOrg, "Acme-Inc", "acme-inc"},
		{"org", ParseGitHubOrg, "acme/", ""},
		{"org", ParseGitHubOrg, "-acme", ""},
		{"org", ParseGitHubOrg, "ac--me", ""},
		{"org", ParseGitHubOrg, "", ""},
		{"team", ParseGitHubTeam, "Acme/Ops_Team-1", "acme/ops_team-1"},
		{"team", ParseGitHubTeam, "org/", ""},
		{"team", ParseGitHubTeam, "/team", ""},
		{"team", ParseGitHubTeam, "org", ""},
		{"team", ParseGitHubTeam, "org/a/b", ""},
		{"group", ParseGroup, "Admins Team", "Admins Team"},
		{"group", ParseGroup, "a,b", ""},
		{"group", ParseGroup, " a", ""},
		{"group", ParseGroup, "", ""},
		{"group", ParseGroup, "a\nb", ""},
	} {
		got, err := tc.parse(tc.in)
		if tc.want == "" {
			if err == nil {
				t.Errorf("%s %q: no error, want one", tc.name, tc.in)
			} else if !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.in)) {
				t.Errorf("%s %q: error %q does not quote the value", tc.name, tc.in, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s %q = %q, %v; want %q", tc.name, tc.in, got, err, tc.want)
		}
	}
	if _, err := New(Rules{EmailDomains: []string{"corp..com"}}, nil); err == nil {
		t.Error("New accepted corp..com")
	}
	if _, err := New(Rules{GitHubTeams: []string{"/team"}}, nil); err == nil {
		t.Error("New accepted /team")
	}
}

func TestEmailsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	writeFile(t, path, "# staff\nAlice@Example.com\n\n  bob@example.net   # Bob, contractor\n")
	p := mustNew(t, Rules{EmailsFile: path})
	if !p.On() {
		t.Fatal("an emails file alone must turn the policy on")
	}
	for _, tc := range []struct {
		email string
		want  bool
	}{
		{"alice@example.com", true}, // the file's case does not matter
		{"bob@example.net", true},
		{"carol@example.com", false},
		{"alice@example.co", false},
	} {
		if got := p.Passes(tc.email, false, ""); got != tc.want {
			t.Errorf("Passes(%q) = %t, want %t", tc.email, got, tc.want)
		}
	}
}

func TestEmailsFileBadLine(t *testing.T) {
	for _, tc := range []struct{ content, wantLine string }{
		{"a@example.com\nnot-an-address\n", ":2:"},
		{"a@example.com\n\n# c\nAlice <alice@example.com>\n", ":4:"},
		{"a@example.com b@example.com\n", ":1:"},
		{"a@corp..com\n", ":1:"},
		{"a@\n", ":1:"},
	} {
		path := filepath.Join(t.TempDir(), "emails.txt")
		writeFile(t, path, tc.content)
		_, err := New(Rules{EmailsFile: path}, nil)
		if err == nil {
			t.Errorf("content %q: New succeeded, want an error", tc.content)
			continue
		}
		if !strings.Contains(err.Error(), path+tc.wantLine) {
			t.Errorf("content %q: error %q does not name %s%s", tc.content, err, path, tc.wantLine)
		}
	}
	if _, err := New(Rules{EmailsFile: filepath.Join(t.TempDir(), "missing")}, nil); err == nil {
		t.Error("New with a missing emails file succeeded")
	}
}

// logBuffer is the shared concurrency-safe log sink.
type logBuffer = webtest.LogBuffer

// touchLater moves the file's modification time forward, so that a rewrite
// within the file system's time granularity still looks changed.
func touchLater(t *testing.T, path string, by time.Duration) {
	t.Helper()
	later := time.Now().Add(by)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

func TestEmailsFileRefresh(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "emails.txt")
	writeFile(t, path, "alice@example.com\nbob@example.com\n")
	logs := &logBuffer{}
	p, err := New(Rules{EmailsFile: path}, slog.New(slog.NewTextHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	passes := func(email string) bool { return p.Passes(email, false, "") }

	// Removed: refused at the next look.
	writeFile(t, path, "alice@example.com\n")
	touchLater(t, path, time.Second)
	p.Refresh()
	if passes("bob@example.com") || !passes("alice@example.com") {
		t.Fatal("after removing bob: bob must be refused, alice kept")
	}

	// Broken: the last good list stays, one error line however many looks.
	writeFile(t, path, "alice@example.com\ncarol@example.com\nbroken line here\n")
	touchLater(t, path, 2*time.Second)
	for range 3 {
		p.Refresh()
	}
	if !passes("alice@example.com") || passes("carol@example.com") {
		t.Fatal("a broken file must keep the last good list (alice yes, carol no)")
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 1 {
		t.Fatalf("%d error lines for one broken file, want 1:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), path+":3:") {
		t.Fatalf("the error does not name the file and line:\n%s", logs)
	}

	// Unreadable (removed): still the last good list, one more error line.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p.Refresh()
	}
	if !passes("alice@example.com") {
		t.Fatal("a missing file must keep the last good list")
	}
	if n := strings.Count(logs.String(), "level=ERROR"); n != 2 {
		t.Fatalf("%d error lines after the file went, want 2:\n%s", n, logs)
	}

	// Back, replaced by a rename like editors do: the new list applies.
	tmp := filepath.Join(dir, "emails.tmp")
	writeFile(t, tmp, "carol@example.com\n")
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	p.Refresh()
	if passes("alice@example.com") || !passes("carol@example.com") {
		t.Fatal("after the file came back: carol must pass and alice not")
	}
}

func TestPassesDoesNotAllocate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	writeFile(t, path, "alice@example.com\n")
	p := mustNew(t, Rules{EmailDomains: []string{"corp.com", ".corp.net"}, EmailsFile: path, GitHubOrgs: []string{"acme"}})
	allocs := testing.AllocsPerRun(100, func() {
		p.Passes("bob@eu.example.org", false, "github:other,oidc:x,github:acme")
		p.Passes("alice@example.com", false, "")
	})
	if allocs != 0 {
		t.Fatalf("Passes allocates %.1f times a call", allocs)
	}
}

func BenchmarkPasses(b *testing.B) {
	path := filepath.Join(b.TempDir(), "emails.txt")
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, "user%d@example.com\n", i)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	p, err := New(Rules{EmailDomains: []string{"corp.com", ".corp.net", "example.org"}, EmailsFile: path}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		p.Passes("user9999@example.com", false, "")
	}
}

// A rewrite that keeps the size and the modification time (within the file
// system's timestamp granularity) is still seen, by its contents.
func TestEmailsFileSameSizeSameTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	writeFile(t, path, "alice@example.com\n")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	p := mustNew(t, Rules{EmailsFile: path})
	writeFile(t, path, "carol@example.com\n")
	if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	p.Refresh()
	if p.Passes("alice@example.com", false, "") || !p.Passes("carol@example.com", false, "") {
		t.Fatal("a same-size rewrite with the same modification time was missed")
	}
}
