package session

import (
	"net/http"
	"slices"
	"strings"
	"testing"
)

// SS7: the id is the value of the cookie of exactly that name, in any
// Cookie line; nothing else counts.
func TestCookieValue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"alone", []string{"gatehouse_session=abc"}, "abc"},
		{"among others", []string{"a=1; gatehouse_session=abc; b=2"}, "abc"},
		{"second line", []string{"a=1", "gatehouse_session=abc"}, "abc"},
		{"quoted", []string{`gatehouse_session="abc"`}, "abc"},
		{"spaces and tabs", []string{" \tgatehouse_session = abc ;x=1"}, "abc"},
		{"first of two", []string{"gatehouse_session=a; gatehouse_session=b"}, "a"},
		{"other name", []string{"session=abc"}, ""},
		{"name case differs", []string{"Gatehouse_Session=abc"}, ""},
		{"longer names", []string{"xgatehouse_session=abc; gatehouse_session_2=abc"}, ""},
		{"name as value", []string{"x=abcgatehouse_session"}, ""},
		{"no header", nil, ""},
	} {
		h := http.Header{}
		if tc.lines != nil {
			h["Cookie"] = tc.lines
		}
		if got := cookieValue(h, cookieName); got != tc.want {
			t.Errorf("%s: cookieValue = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// SS8: the named cookies leave the Cookie header, every other cookie stays
// as it was, and a line left empty goes.
func TestRemoveCookies(t *testing.T) {
	names := []string{cookieName, "__Host-gatehouse_oauth"}
	for _, tc := range []struct {
		name  string
		lines []string
		want  []string // nil: no Cookie header at all
	}{
		{"alone", []string{"gatehouse_session=x"}, nil},
		{"middle", []string{"a=1; gatehouse_session=x; b=2"}, []string{"a=1; b=2"}},
		{"first", []string{"gatehouse_session=x;theme=dark"}, []string{"theme=dark"}},
		{"last", []string{"theme=dark; gatehouse_session=x"}, []string{"theme=dark"}},
		{"duplicate", []string{"gatehouse_session=x; a=1; gatehouse_session=y"}, []string{"a=1"}},
		{"two lines", []string{`a=1; b="q"`, "gatehouse_session=x"}, []string{`a=1; b="q"`}},
		{"both names", []string{"__Host-gatehouse_oauth=t; a=1; gatehouse_session=x"}, []string{"a=1"}},
		{"similar names kept", []string{"gatehouse_session=x; gatehouse_session_x=1; xgatehouse_session=2"},
			[]string{"gatehouse_session_x=1; xgatehouse_session=2"}},
		{"none of them", []string{"a=1;b=2"}, []string{"a=1;b=2"}},
	} {
		h := http.Header{"Cookie": slices.Clone(tc.lines)}
		RemoveCookies(h, names...)
		got, ok := h["Cookie"]
		if strings.Join(got, "|") != strings.Join(tc.want, "|") || ok != (tc.want != nil) {
			t.Errorf("%s: Cookie %q, want %q", tc.name, got, tc.want)
		}
	}
}

// SS8: Set-Cookie lines of the named cookies go, however the name is
// dressed (spaces, a nameless cookie, an expiry); others stay in order.
func TestDropSetCookies(t *testing.T) {
	h := http.Header{"Set-Cookie": {
		"gatehouse_session=planted; Path=/; HttpOnly",
		"theme=dark; Path=/",
		" gatehouse_session =x",
		"=gatehouse_session=nameless",
		"gatehouse_session=; Max-Age=0",
		"__Host-gatehouse_oauth=t; Secure",
		"gatehouse_session_other=1",
	}}
	DropSetCookies(h, cookieName, "__Host-gatehouse_oauth")
	want := []string{"theme=dark; Path=/", "gatehouse_session_other=1"}
	if got := h["Set-Cookie"]; !slices.Equal(got, want) {
		t.Fatalf("Set-Cookie %q, want %q", got, want)
	}
	h = http.Header{"Set-Cookie": {"gatehouse_session=planted"}}
	if DropSetCookies(h, cookieName); h["Set-Cookie"] != nil {
		t.Fatalf("Set-Cookie %q left", h["Set-Cookie"])
	}
	if _, ok := h["Set-Cookie"]; ok {
		t.Fatal("an empty Set-Cookie entry is left in the header")
	}
}
