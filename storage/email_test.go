package storage

import (
	"strings"
	"testing"
)

func TestPlainAddress(t *testing.T) {
	for _, tc := range []struct {
		email string
		ok    bool
	}{
		{"ada@example.com", true},
		{"Ada.Lovelace+tag@Sub.Example.COM", true},
		{"o'neil_{x}=y@example.com", true},
		{"jürgen@example.de", true}, // lower-case non-ASCII letter
		{"δοκιμή@example.gr", true}, // already lower case
		{"ada@xn--bcher-kva.example", true},
		{"Jürgen@example.de", true},   // ASCII upper case is fine
		{"JÜRGEN@example.de", false},  // Ü lower-cases: could collide
		{"\u212Aim@corp.com", false},  // KELVIN SIGN → k
		{"\u0130nfo@corp.com", false}, // İ → i
		{"\u2126@corp.com", false},    // OHM SIGN → ω
		{"ann@\u212Acorp.com", false}, // non-ASCII domain
		{"ann@bücher.example", false}, // IDN not in xn-- form
		{"a\u200bb@corp.com", false},  // zero-width space
		{"a\u202eb@corp.com", false},  // right-to-left override
		{"a\u00a0b@corp.com", false},  // no-break space
		{"kim@corp.com\n", false},
		{" kim@corp.com", false},
		{"kim@corp.com\x00", false},
		{"x@evil.com,y@corp.com", false},
		{"x@evil.com@corp.com", false},
		{`"x@evil.com"@corp.com`, false},
		{"x y@corp.com", false},
		{"<x@corp.com>", false},
		{"kim@corp.com.", false},
		{".kim@corp.com", false},
		{"kim.@corp.com", false},
		{"k..im@corp.com", false},
		{"@corp.com", false},
		{"kim@", false},
		{"kim", false},
		{"", false},
		{"k\xffim@corp.com", false},
	} {
		if got := PlainAddress(tc.email); got != tc.ok {
			t.Errorf("PlainAddress(%q) = %t, want %t", tc.email, got, tc.ok)
		}
	}
}

func TestValidAddress(t *testing.T) {
	for _, tc := range []struct {
		email string
		ok    bool
	}{
		{"ada@example.com", true},
		{"Ada@Example.com", true},
		{"jürgen@example.de", true},
		{"Ada <ada@example.com>", false}, // a display name
		{"ada@example.com (Ada)", false}, // a comment
		{"ada@[192.0.2.1]", false},       // a domain literal
		{"a,b@example.com", false},
		{"ada@example.com\u200b", false},
		{"ada@@example.com", false},
		{"", false},
		{strings.Repeat("a", 64) + "@" + strings.Repeat("b", 190) + ".com", false}, // 259 bytes
	} {
		if got := ValidAddress(tc.email); got != tc.ok {
			t.Errorf("ValidAddress(%q) = %t, want %t", tc.email, got, tc.ok)
		}
	}
}

func TestValidDomain(t *testing.T) {
	for _, tc := range []struct {
		domain string
		ok     bool
	}{
		{"example.com", true},
		{"xn--bcher-kva.example", true},
		{"a-b.c0", true},
		{"localhost", true},
		{"", false},
		{"example..com", false},
		{".example.com", false},
		{"-a.com", false},
		{"a-.com", false},
		{"a_b.com", false},
		{"bücher.example", false},
		{strings.Repeat("a", 64) + ".com", false},
		{strings.Repeat("a.", 127) + "aa", false}, // 256 octets
	} {
		if got := ValidDomain(tc.domain); got != tc.ok {
			t.Errorf("ValidDomain(%q) = %t, want %t", tc.domain, got, tc.ok)
		}
	}
}
