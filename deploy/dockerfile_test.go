//go:build integration

package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dockerInstruction is one instruction of a Dockerfile, continuation lines
// joined.
type dockerInstruction struct {
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string
}

// dockerStage is one FROM and the instructions after it.
type dockerStage struct {
	from, name string
	body       []dockerInstruction
}

// parseDockerfile splits a Dockerfile into stages. Comments, parser
// directives and blank lines are dropped; a line ending in a backslash
// continues on the next.
func parseDockerfile(t *testing.T, file string) []dockerStage {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var stages []dockerStage
	var logical string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if cont, ok := strings.CutSuffix(line, `\`); ok {
			logical += cont + " "
			continue
		}
		logical += line
		cmd, args, _ := strings.Cut(logical, " ")
		logical = ""
		in := dockerInstruction{strings.ToUpper(cmd), strings.Join(strings.Fields(args), " ")}
		if in.cmd == "FROM" {
			fields := strings.Fields(in.args)
			st := dockerStage{from: fields[0]}
			if len(fields) == 3 && strings.EqualFold(fields[1], "AS") {
				st.name = fields[2]
			}
			stages = append(stages, st)
			continue
		}
		if len(stages) == 0 {
			if in.cmd != "ARG" {
				t.Fatalf("%s: %s before the first FROM", file, in.cmd)
			}
			continue
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stages
}

// last returns the arguments of the stage's last instruction cmd, "" if none.
func (s dockerStage) last(cmd string) string {
	for i := len(s.body) - 1; i >= 0; i-- {
		if s.body[i].cmd == cmd {
			return s.body[i].args
		}
	}
	return ""
}

// TestDockerfile checks the image the manifests run: a multi-stage build of
// a static binary with the Go of go.mod, a small base, a numeric non-root
// user that is the Deployment's, the binary as the entrypoint (the
// Deployment passes only args), a writable working directory for the
// relative default paths, and the Deployment's ports exposed.
func TestDockerfile(t *testing.T) {
	b := loadBase(t)
	stages := parseDockerfile(t, "../Dockerfile")
	if len(stages) < 2 {
		t.Fatalf("Dockerfile has %d stages, want a build stage and a small final one", len(stages))
	}
	build, final := stages[0], stages[len(stages)-1]

	goMod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	goVersion := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	if goVersion == nil {
		t.Fatal("go.mod has no go line")
	}
	if want := "golang:" + string(goVersion[1]); !strings.HasPrefix(build.from, want) {
		t.Errorf("build stage FROM %s, want %s… (the go line of go.mod)", build.from, want)
	}
	var built string // the -o of the go build of ./cmd/gatehouse
	for _, in := range build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") && strings.Contains(in.args, "./cmd/gatehouse") {
			if !strings.Contains(in.args, "CGO_ENABLED=0") {
				t.Error("the go build of ./cmd/gatehouse does not set CGO_ENABLED=0: the binary would not be static")
			}
			if m := regexp.MustCompile(`-o (\S+)`).FindStringSubmatch(in.args); m != nil {
				built = m[1]
			}
		}
	}
	if built == "" {
		t.Fatal("the build stage has no `go build -o … ./cmd/gatehouse`")
	}

	if !strings.Contains(final.from, "distroless/static") && final.from != "scratch" {
		t.Errorf("final stage FROM %s, want a minimal base (distroless/static or scratch)", final.from)
	}
	user, _, _ := strings.Cut(final.last("USER"), ":")
	uid, err := strconv.ParseInt(user, 10, 64)
	if err != nil || uid == 0 {
		t.Errorf("final USER %q, want a numeric non-root uid (Kubernetes checks runAsNonRoot on the number)", final.last("USER"))
	}
	if sc := b.deployment.Spec.Template.Spec.SecurityContext; sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != uid {
		t.Errorf("final USER %d differs from the Deployment's runAsUser", uid)
	}

	var entrypoint []string
	if err := json.Unmarshal([]byte(final.last("ENTRYPOINT")), &entrypoint); err != nil || len(entrypoint) != 1 {
		t.Fatalf("ENTRYPOINT %q, want the exec form naming the binary alone (the Deployment gives only args)", final.last("ENTRYPOINT"))
	}
	var copied, workdirOwned bool
	workdir := final.last("WORKDIR")
	for _, in := range final.body {
		if in.cmd != "COPY" {
			continue
		}
		fields := strings.Fields(in.args)
		src, dst := fields[len(fields)-2], fields[len(fields)-1]
		if slices.Contains(fields, "--from="+build.name) && src == built && dst == entrypoint[0] {
			copied = true
		}
		if dst == workdir && slices.ContainsFunc(fields, func(f string) bool {
			return strings.HasPrefix(f, "--chown="+strconv.FormatInt(uid, 10)+":")
		}) {
			workdirOwned = true
		}
	}
	if !copied {
		t.Errorf("the final stage does not copy %s from stage %q to the entrypoint %s", built, build.name, entrypoint[0])
	}
	if !path.IsAbs(workdir) || !workdirOwned {
		t.Errorf("WORKDIR %q is not a folder copied with --chown=%d: the default --db and --mail-dir (relative) would not be writable", workdir, uid)
	}

	exposed := strings.Fields(final.last("EXPOSE"))
	for _, c := range b.gatehouse.Ports {
		if !slices.Contains(exposed, strconv.Itoa(int(c.ContainerPort))) {
			t.Errorf("Dockerfile EXPOSE %q lacks the Deployment's container port %d (%s)", exposed, c.ContainerPort, c.Name)
		}
	}
}

// TestDockerignore: the build context leaves out what `make run` and `make
// build` write in the repository (a database with password hashes, mail
// with reset links, certificates, binaries) and the Git history, and keeps
// what the build needs.
func TestDockerignore(t *testing.T) {
	data, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for line := range strings.SplitSeq(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}
	for _, p := range []string{".git/config", "bin/gatehouse", "gatehouse.db", "cmd/gatehouse/gatehouse.db",
		"mail/1.eml", "gatehouse-certs/acme/key.pem", "authflows/authflows.test"} {
		if !dockerIgnored(patterns, p) {
			t.Errorf(".dockerignore sends %s to the build", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/gatehouse/main.go", "authflows/oauth.go",
		"authflows/pages/login.html", "authflows/password/commonpasswords.txt", "proxy/proxy.go", "storage/bolt/bolt.go"} {
		if dockerIgnored(patterns, p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
}

// dockerIgnored applies .dockerignore patterns to a path of the context as
// Docker does: filepath.Match per pattern, ** for any number of folders, a
// pattern that matches a folder excludes what is below it, the last
// matching pattern wins and ! re-includes.
func dockerIgnored(patterns []string, name string) bool {
	ignored := false
	for _, p := range patterns {
		exclude := !strings.HasPrefix(p, "!")
		p = strings.Trim(strings.TrimPrefix(p, "!"), "/")
		parts := strings.Split(name, "/")
		for i := range parts {
			if dockerMatch(p, strings.Join(parts[:i+1], "/")) {
				ignored = exclude
				break
			}
		}
	}
	return ignored
}

func dockerMatch(pattern, name string) bool {
	if rest, ok := strings.CutPrefix(pattern, "**/"); ok {
		for {
			if dockerMatch(rest, name) {
				return true
			}
			_, after, found := strings.Cut(name, "/")
			if !found {
				return false
			}
			name = after
		}
	}
	ok, _ := path.Match(pattern, name)
	return ok
}

func TestDockerMatch(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		name     string
		want     bool
	}{
		{[]string{"bin"}, "bin/x", true},
		{[]string{"bin"}, "cmd/bin", false},
		{[]string{"**/*.db"}, "a/b/c.db", true},
		{[]string{"**/*.db"}, "c.db", true},
		{[]string{"*.db"}, "a/c.db", false},
		{[]string{"deploy", "!deploy/x"}, "deploy/x", false},
	} {
		if got := dockerIgnored(tc.patterns, tc.name); got != tc.want {
			t.Errorf("dockerIgnored(%q, %q) = %v, want %v", tc.patterns, tc.name, got, tc.want)
		}
	}
}
