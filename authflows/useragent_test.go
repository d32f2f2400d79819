package authflows

import (
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The account page names a session's browser and system, not the raw
// User-Agent header.
func TestBrowserLabel(t *testing.T) {
	for _, tc := range []struct{ ua, want string }{
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome on Windows"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0", "Edge on Windows"},
		{"Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15", "Safari on macOS"},
		{"Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0", "Firefox on Linux"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Mobile/15E148 Safari/604.1", "Safari on iOS"},
		{"Mozilla/5.0 (iPhone; CPU iPhone OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/131.0.6778.73 Mobile/15E148 Safari/604.1", "Chrome on iOS"},
		{"Mozilla/5.0 (iPad; CPU OS 18_1 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) FxiOS/133.0 Mobile/15E148 Safari/605.1.15", "Firefox on iPadOS"},
		{"Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Mobile Safari/537.36", "Chrome on Android"},
		{"Mozilla/5.0 (Linux; Android 14; SM-S918B) AppleWebKit/537.36 (KHTML, like Gecko) SamsungBrowser/26.0 Chrome/122.0.0.0 Mobile Safari/537.36", "Samsung Internet on Android"},
		{"Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 OPR/115.0.0.0", "Opera on Windows"},
		{"Mozilla/5.0 (X11; CrOS x86_64 14541.0.0) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36", "Chrome on ChromeOS"},
		{"curl/8.5.0", "curl"},
		{"Mozilla/5.0 (X11; Linux x86_64)", "Browser on Linux"},
		{"Bob's browser", "Unknown browser"},
		{"", "Unknown browser"},
	} {
		if got := browserLabel(tc.ua); got != tc.want {
			t.Errorf("browserLabel(%q) = %q, want %q", tc.ua, got, tc.want)
		}
	}
}

// The raw header stays at hand as the label's tooltip, with the controls
// and bidirectional overrides a user agent may carry taken out, so that it
// cannot reorder what the page shows.
func TestUserAgentShownNeutralized(t *testing.T) {
	for _, ua := range []string{"Mozilla/5.0 \u202etxt.exe", "Mozilla/5.0 \u009b2J", "Mozilla/5.0 \u2066x\u2069", "a\x01b\x7fc"} {
		got := displayUserAgent(ua)
		if i := strings.IndexFunc(got, func(r rune) bool {
			return r < 0x20 || (r >= 0x7f && r <= 0x9f) || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069)
		}); i >= 0 {
			t.Errorf("displayUserAgent(%q) = %q keeps a control", ua, got)
		}
	}
}

// The account page: each session shows its browser and system with the
// raw header as a tooltip; "sign out everywhere else" only when there is
// somewhere else; one filled (primary) button.
func TestAccountPageSessionsAndButtons(t *testing.T) {
	const firefox = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
	e := newTestEnv(t)
	e.CreateUser(t, "ann@example.com", testPassword)
	login := func() []*http.Cookie {
		r := withUA(e.JSONRequest(http.MethodPost, "/auth/login", map[string]string{"email": "ann@example.com", "password": testPassword}), firefox)
		resp := e.Do(r)
		if resp.StatusCode != http.StatusOK {
			t.Fatal(resp.StatusCode)
		}
		return resp.Cookies()
	}
	page := func(c []*http.Cookie) string {
		r := e.NewRequest(http.MethodGet, "/auth/account", nil)
		r.Header.Set("Accept", "text/html")
		for _, ck := range c {
			r.AddCookie(ck)
		}
		return e.Body(t, e.Do(r))
	}
	mine := login()
	one := page(mine)
	if !strings.Contains(one, `title="`+firefox+`">Firefox on Linux<`) {
		t.Errorf("the session is not shown as Firefox on Linux with the header as its tooltip:\n%s", one)
	}
	if strings.Contains(one, "Sign out everywhere else") {
		t.Error("one session, yet \"Sign out everywhere else\"")
	}
	primary := regexp.MustCompile(`<(button|a)\b[^>]*class="button"[^>]*>|<button(?: type="submit")?>`)
	if n := len(primary.FindAllString(one, -1)); n != 1 {
		t.Errorf("%d filled buttons on the account page, want 1: %q", n, primary.FindAllString(one, -1))
	}
	login()
	if two := page(mine); !strings.Contains(two, "Sign out everywhere else") {
		t.Error("two sessions, no \"Sign out everywhere else\"")
	}
}
