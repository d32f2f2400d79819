package authflows

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
)

// A wrong client secret (the token endpoint answers invalid_client) is the
// operator's mistake, not the user's: it is logged at ERROR naming the flag
// to fix, and never with the secret.
func TestWrongClientSecretIsLoggedAsAnError(t *testing.T) {
	for _, name := range bothProviders {
		t.Run(name, func(t *testing.T) {
			wrong := "wrong-secret-" + name + "-5f1c"
			e := newOAuthEnv(t, oauthEnvOptions{configure: func(c *provider.Config) { c.ClientSecret = wrong }})
			e.setNext(name, oauthtest.Account{Subject: "46", Email: "x@example.com", EmailVerified: true})
			if a := e.newBrowser().flow("/auth/login/" + name); a.status != http.StatusBadGateway {
				t.Fatalf("%d %s, want 502 provider_error", a.status, a.body)
			}
			var found bool
			for _, line := range e.Logs.Lines() {
				if strings.Contains(line, "level=ERROR") && strings.Contains(line, "--"+name+"-client-secret") {
					found = true
				}
			}
			if !found {
				t.Errorf("no ERROR line naming --%s-client-secret:\n%s", name, e.Logs.String())
			}
			if strings.Contains(e.Logs.String(), wrong) {
				t.Errorf("the secret is in the log:\n%s", e.Logs.String())
			}
		})
	}
}
