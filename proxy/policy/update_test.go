package policy

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Update puts a new rule set in force as a whole; a bad one changes
// nothing.
func TestUpdate(t *testing.T) {
	dir := t.TempDir()
	first := filepath.Join(dir, "first.txt")
	second := filepath.Join(dir, "second.txt")
	writeFile(t, first, "ann@example.com\n")
	writeFile(t, second, "bob@example.com\n")
	p := mustNew(t, Rules{EmailDomains: []string{"corp.com"}})
	passes := func(email, groups string) bool { return p.Passes(email, false, groups) }

	steps := []struct {
		name  string
		rules Rules
		err   bool
		want  map[string]bool // email or "groups:G" → passes
		on    bool
	}{
		{"another domain", Rules{EmailDomains: []string{".corp.net"}}, false,
			map[string]bool{"a@corp.com": false, "a@eu.corp.net": true}, true},
		{"policy off", Rules{}, false,
			map[string]bool{"a@corp.com": true, "x@anywhere.test": true}, false},
		{"back on with a group and a file", Rules{AllowGroups: []string{"admins"}, EmailsFile: first}, false,
			map[string]bool{"x@anywhere.test": false, "groups:oidc:admins": true, "ann@example.com": true}, true},
		{"a bad domain changes nothing", Rules{EmailDomains: []string{"not a domain"}}, true,
			map[string]bool{"groups:oidc:admins": true, "ann@example.com": true, "a@corp.com": false}, true},
		{"a missing file changes nothing", Rules{EmailsFile: filepath.Join(dir, "missing")}, true,
			map[string]bool{"groups:oidc:admins": true, "ann@example.com": true}, true},
		{"another file", Rules{EmailsFile: second}, false,
			map[string]bool{"ann@example.com": false, "bob@example.com": true, "groups:oidc:admins": false}, true},
	}
	for _, s := range steps {
		err := p.Update(s.rules)
		if (err != nil) != s.err {
			t.Fatalf("%s: Update error %v, want error %t", s.name, err, s.err)
		}
		if p.On() != s.on {
			t.Errorf("%s: On() = %t, want %t", s.name, p.On(), s.on)
		}
		for who, want := range s.want {
			email, groups := who, ""
			if g, ok := strings.CutPrefix(who, "groups:"); ok {
				email, groups = "", g
			}
			if got := passes(email, groups); got != want {
				t.Errorf("%s: %s passes = %t, want %t", s.name, who, got, want)
			}
		}
	}

	// A broken emails file named by an update changes nothing either.
	broken := filepath.Join(dir, "broken.txt")
	writeFile(t, broken, "carol@example.com\nnot an address\n")
	if err := p.Update(Rules{EmailsFile: broken}); err == nil {
		t.Fatal("an update naming a broken emails file succeeded")
	}
	if !passes("bob@example.com", "") || passes("carol@example.com", "") {
		t.Fatal("a failed update changed the list in force")
	}
}

// An update that keeps the emails file keeps its list, including what
// Refresh loaded since, and keeps watching it.
func TestUpdateKeepsTheWatchedFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	writeFile(t, path, "ann@example.com\n")
	p := mustNew(t, Rules{EmailsFile: path})
	writeFile(t, path, "bob@example.com\n")
	touchLater(t, path, time.Second)
	p.Refresh()
	if err := p.Update(Rules{EmailsFile: path, EmailDomains: []string{"corp.com"}}); err != nil {
		t.Fatal(err)
	}
	if !p.Passes("bob@example.com", false, "") || p.Passes("ann@example.com", false, "") || !p.Passes("x@corp.com", false, "") {
		t.Fatal("the update lost the reloaded list or the new domain")
	}
	writeFile(t, path, "carol@example.com\n")
	touchLater(t, path, 2*time.Second)
	p.Refresh()
	if !p.Passes("carol@example.com", false, "") {
		t.Fatal("the file is no longer watched after the update")
	}
}

// EmailsFileStatus says whether the last change of the emails file is in
// force: false while a broken or missing file keeps the last good list.
func TestEmailsFileStatus(t *testing.T) {
	path := filepath.Join(t.TempDir(), "emails.txt")
	writeFile(t, path, "ann@example.com\n")
	p := mustNew(t, Rules{EmailsFile: path})
	status := func(step string, want bool) {
		t.Helper()
		file, ok := p.EmailsFileStatus()
		if file != path || ok != want {
			t.Fatalf("%s: status (%q, %t), want (%q, %t)", step, file, ok, path, want)
		}
	}
	status("start", true)
	writeFile(t, path, "ann@example.com\nbroken line\n")
	touchLater(t, path, time.Second)
	for range 2 {
		p.Refresh()
		status("broken", false)
	}
	writeFile(t, path, "ann@example.com\n")
	touchLater(t, path, 2*time.Second)
	p.Refresh()
	status("fixed", true)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	p.Refresh()
	status("missing", false)
	writeFile(t, path, "ann@example.com\n")
	p.Refresh()
	status("back with the list in force", true)

	if file, ok := mustNew(t, Rules{}).EmailsFileStatus(); file != "" || !ok {
		t.Fatalf("no emails file: (%q, %t), want (\"\", true)", file, ok)
	}
	var none *Policy
	if _, ok := none.EmailsFileStatus(); !ok {
		t.Fatal("nil policy: status not ok")
	}
}

// Requests read the rules while an update replaces them (go test -race).
func TestUpdateWhileServing(t *testing.T) {
	p := mustNew(t, Rules{EmailDomains: []string{"corp.com"}})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				p.Passes("a@corp.com", false, "oidc:x")
				p.Earned([]string{"github:acme"})
			}
		}
	})
	for i := range 200 {
		rules := Rules{EmailDomains: []string{"corp.com"}}
		if i%2 == 0 {
			rules.GitHubOrgs = []string{"acme"}
		}
		if err := p.Update(rules); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}
