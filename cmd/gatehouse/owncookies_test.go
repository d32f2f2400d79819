package main

import (
	"slices"
	"testing"
)

// SS8: with Secure cookies, Gatehouse's __Host- cookies other than the
// session's (Path=/, so the browser sends them to the app too) are
// stripped by the proxy: the OAuth transaction cookie, the second-factor
// step cookie and the passkey ceremony cookie.
func TestOwnCookiesStripped(t *testing.T) {
	got := ownCookies(Config{CookieSecure: true})
	for _, name := range []string{"__Host-gatehouse_oauth", "__Host-gatehouse_2fa", "__Host-gatehouse_webauthn"} {
		if !slices.Contains(got, name) {
			t.Errorf("ownCookies = %q, want %s among them", got, name)
		}
	}
	if got := ownCookies(Config{}); len(got) != 0 {
		t.Errorf("ownCookies without Secure = %q: the others are scoped to /auth/ paths", got)
	}
}
