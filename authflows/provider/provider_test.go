package provider

import (
	"testing"
	"time"
)

// New refuses configurations that cannot work.
func TestNewProvidersRefuses(t *testing.T) {
	ok := Config{Name: "github", ClientID: "id", ClientSecret: "s", RedirectURL: "http://x/auth/callback/github"}
	bad := map[string][]Config{
		"unsupported":            {{Name: "gitlab", ClientID: "id", ClientSecret: "s", RedirectURL: "r"}},
		"no secret":              {{Name: "github", ClientID: "id", RedirectURL: "r"}},
		"no redirect":            {{Name: "github", ClientID: "id", ClientSecret: "s"}},
		"twice":                  {ok, ok},
		"http API off loopback":  {{Name: "github", ClientID: "id", ClientSecret: "s", RedirectURL: "r", APIURL: "http://github.example"}},
		"http auth off loopback": {{Name: "github", ClientID: "id", ClientSecret: "s", RedirectURL: "r", AuthURL: "http://github.example/authorize"}},
		"http JWKS off loopback": {{Name: "google", ClientID: "id", ClientSecret: "s", RedirectURL: "r", JWKSURL: "http://keys.example/certs"}},
		"bad team":               {{Name: "github", ClientID: "id", ClientSecret: "s", RedirectURL: "r", Teams: []string{"no-slash"}}},
	}
	for name, cfgs := range bad {
		if _, err := New(t.Context(), cfgs, time.Now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	m, err := New(t.Context(), []Config{ok}, time.Now)
	if err != nil || m["github"].oauth.Endpoint.AuthURL != "https://github.com/login/oauth/authorize" || m["github"].id.(*githubIdentifier).apiURL != "https://api.github.com" {
		t.Errorf("defaults: %v %+v", err, m["github"])
	}
	// http:// on a loopback host is fine (a provider beside Gatehouse, tests).
	local := ok
	local.APIURL, local.AuthURL = "http://127.0.0.1:9/api", "http://localhost:9/authorize"
	if _, err := New(t.Context(), []Config{local}, time.Now); err != nil {
		t.Errorf("loopback http: %v", err)
	}
}
