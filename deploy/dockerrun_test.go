//go:build integration

package deploy

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The `docker run` the Dockerfile teaches keeps the admin listener (/metrics,
// /readyz, /jwks.json) where the contract puts it by default, on loopback:
// `-p 9090:9090` publishes a port on every interface of the host (and Docker's
// rules pass it by ufw and firewalld), so the example would hand /metrics to
// anyone who reaches the host, which the Kubernetes base takes care to admit
// from Prometheus only (MX1). A published admin port names a loopback host
// address: `-p 127.0.0.1:9090:9090`.
func TestDockerRunExampleKeepsAdminOnLoopback(t *testing.T) {
	data, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	b := loadBase(t)
	admin := listenPort(t, "admin-listen", b.flag("admin-listen"))

	// The comment block's commands, continuation lines joined.
	var commands []string
	var cur string
	for _, line := range strings.Split(string(data), "\n") {
		text, ok := strings.CutPrefix(strings.TrimSpace(line), "#")
		if !ok {
			continue
		}
		text = strings.TrimSpace(text)
		if more, cont := strings.CutSuffix(text, `\`); cont {
			cur += more + " "
			continue
		}
		cur += text
		if strings.Contains(cur, "docker run") {
			commands = append(commands, cur)
		}
		cur = ""
	}
	if len(commands) == 0 {
		t.Skip("the Dockerfile shows no docker run")
	}
	publish := regexp.MustCompile(`(?:^|\s)(?:-p|--publish)[ =](\S+)`)
	for _, cmd := range commands {
		for _, m := range publish.FindAllStringSubmatch(cmd, -1) {
			spec := strings.TrimSuffix(m[1], "/tcp")
			parts := strings.Split(spec, ":")
			if parts[len(parts)-1] != strconv.Itoa(int(admin)) {
				continue
			}
			if len(parts) < 3 || (parts[0] != "127.0.0.1" && parts[0] != "[::1]") {
				t.Errorf("Dockerfile example %q publishes the admin port %d on every interface of the host (-p %s): /metrics, /readyz and /jwks.json open to the network; want -p 127.0.0.1:%d:%d", cmd, admin, m[1], admin, admin)
			}
		}
	}
}
