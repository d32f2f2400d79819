//go:build integration && unix

package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	corev1 "k8s.io/api/core/v1"
)

// requireConfigFile stops the test, loudly (a failure under
// GATEHOUSETEST_REQUIRE_ALL=1), when the gatehouse binary built from this
// tree reads no configuration file: everything the chart configures is in
// one, so nothing of it could be checked against the binary.
func requireConfigFile(t *testing.T, flags map[string]flagInfo) {
	t.Helper()
	if !hasFlag(flags, "config") {
		webtest.Missing(t, "gatehouse built from this tree has no --config: the chart's arguments and configuration file are not checked against the binary")
	}
}

// checkReleaseAgainstBinary checks the rendered release against the
// gatehouse binary built from this tree: every argument and every key of the
// configuration file is a flag of it, with a value of the flag's type;
// `gatehouse config check` accepts the configuration as the pod would run
// it (the volumes' files laid out in a folder, fake secrets in the Secret
// files); and a release on bbolt without providers starts and answers
// /readyz.
func checkReleaseAgainstBinary(t *testing.T, r release) {
	t.Helper()
	flags := gatehouseFlags(t)
	requireConfigFile(t, flags)
	where := "the chart's gatehouse container"
	args := checkArgs(t, where, r.gatehouse.Args, flags)
	for _, e := range r.gatehouse.Env {
		checkEnvName(t, where, e.Name, flags)
	}
	for key, value := range helmConfig(t, r) {
		if key == "routes" {
			continue // gatehouse config check judges the rules
		}
		info, ok := flags[key]
		if !ok {
			t.Errorf("the configuration file sets %s, which is no flag of gatehouse", key)
			continue
		}
		if err := fitsFlag(info.typ, value); err != nil {
			t.Errorf("the configuration file's %s: %v", key, err)
		}
	}
	if t.Failed() {
		return
	}

	c, secrets := materialize(t, r)
	out, err := exec.Command(binary(t, "../cmd/gatehouse"), append([]string{"config", "check"}, c.Args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("gatehouse config check with the pod's arguments: %v\n%s", err, out)
	}
	for _, s := range secrets {
		if strings.Contains(string(out), s) {
			t.Errorf("gatehouse config check printed the secret %q:\n%s", s, out)
		}
	}
	_, postgres := args["db-file"]
	if postgres || len(secrets) > 0 {
		return // a real start would need the database, or the providers on the network
	}
	drain, err := time.ParseDuration(args["shutdown-timeout"])
	if err != nil {
		t.Fatal(err)
	}
	runContainerConfig(t, c, nil, drain)
}

// fitsFlag reports whether a value of the configuration file suits a flag
// of the pflag type typ ("" for a boolean), as `gatehouse --help` names it.
func fitsFlag(typ string, value any) error {
	switch typ {
	case "":
		if _, ok := value.(bool); ok {
			return nil
		}
	case "string":
		if _, ok := value.(string); ok {
			return nil
		}
	case "duration":
		if s, ok := value.(string); ok {
			_, err := time.ParseDuration(s)
			return err
		}
	case "int":
		if f, ok := value.(float64); ok && f == float64(int(f)) {
			return nil
		}
	case "strings":
		if list, ok := value.([]any); ok && !slices.ContainsFunc(list, func(v any) bool { _, ok := v.(string); return !ok }) {
			return nil
		}
	default:
		return fmt.Errorf("flag type %q: teach fitsFlag what values it takes", typ)
	}
	return fmt.Errorf("%v (%T) is no %s value", value, value, strconv.Quote(typ))
}

// materialize lays out the gatehouse container's volumes in a temporary
// folder, the way the kubelet would: the ConfigMap's keys as files, each
// projected Secret key as a file with a made-up value, empty folders for the
// rest. It returns the container with every path under a mount moved there
// (in the arguments and in the configuration file), and the made-up secret
// values.
func materialize(t *testing.T, r release) (corev1.Container, []string) {
	t.Helper()
	root := t.TempDir()
	var mounts []string // mount paths, for the rewrite
	for _, m := range r.gatehouse.VolumeMounts {
		mounts = append(mounts, m.MountPath)
	}
	move := func(s string) string {
		for _, m := range mounts {
			s = strings.ReplaceAll(s, m+"/", filepath.Join(root, m)+"/")
		}
		return s
	}
	var secrets []string
	write := func(file, content string) {
		if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range r.gatehouse.VolumeMounts {
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		_, v := mountOf(r, m.MountPath+"/x")
		switch {
		case v.ConfigMap != nil:
			for name, data := range r.configMap.Data {
				write(filepath.Join(dir, name), move(data))
			}
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				for _, item := range src.Secret.Items {
					value := "made-up-" + item.Path + "-value"
					if item.Path == "db" {
						value = "postgres://gatehouse:made-up-db-password@127.0.0.1:1/gatehouse?sslmode=disable"
						secrets = append(secrets, "made-up-db-password")
					} else {
						secrets = append(secrets, value)
					}
					write(filepath.Join(dir, item.Path), value+"\n")
				}
			}
		}
	}
	c := *r.gatehouse.DeepCopy()
	for i, a := range c.Args {
		c.Args[i] = move(a)
	}
	return c, secrets
}
