package policy

import "testing"

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
