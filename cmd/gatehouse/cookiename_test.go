package main

import (
	"bytes"
	"strings"
	"testing"
)

// Cookie tossing: with an https base URL (and so Secure cookies) and no
// --cookie-name, the session cookie carries the __Host- prefix; an explicit
// name is kept; a prefixed name without Secure is refused at start.
func TestSessionCookieHostPrefix(t *testing.T) {
	up := []string{"--upstream", "http://127.0.0.1:3000"}
	cases := []struct {
		args    []string
		env     map[string]string
		want    string
		wantErr string
	}{
		{args: []string{"--base-url", "https://app.example.com"}, want: "__Host-gatehouse_session"},
		{args: []string{"--tls-domain", "app.example.com", "--db", "/tmp/x/gatehouse.db"}, want: "__Host-gatehouse_session"},
		{args: []string{"--base-url", "http://localhost:8080"}, want: "gatehouse_session"},
		{args: []string{"--base-url", "https://app.example.com", "--cookie-secure=false"}, want: "gatehouse_session"},
		{args: []string{"--base-url", "https://app.example.com", "--cookie-name", "my_session"}, want: "my_session"},
		{args: []string{"--base-url", "https://app.example.com"}, env: map[string]string{"GATEHOUSE_COOKIE_NAME": "env_session"}, want: "env_session"},
		{args: []string{"--base-url", "https://app.example.com", "--cookie-name", "__Host-mine"}, want: "__Host-mine"},
		{args: []string{"--base-url", "http://localhost:8080", "--cookie-name", "__Host-mine"}, wantErr: "--cookie-name"},
		{args: []string{"--base-url", "http://localhost:8080", "--cookie-name", "__Secure-mine"}, wantErr: "--cookie-name"},
		// A cookie shared with sibling hosts has a Domain, which __Host- forbids.
		{args: []string{"--base-url", "https://auth.example.com", "--cookie-domain", "example.com"}, want: "gatehouse_session"},
		{args: []string{"--base-url", "https://auth.example.com", "--cookie-domain", "example.com", "--cookie-name", "__Host-mine"}, wantErr: "--cookie-name"},
	}
	for _, tc := range cases {
		c, err := parseServe(append(append([]string{}, up...), tc.args...), envOf(tc.env), &bytes.Buffer{})
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%v: error %v, want one naming %s", tc.args, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if c.CookieName != tc.want {
			t.Errorf("%v %v: cookie name %q, want %q", tc.args, tc.env, c.CookieName, tc.want)
		}
	}
}
