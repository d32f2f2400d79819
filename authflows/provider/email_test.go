package provider

import (
	"testing"
)

// EM1: only a single, valid, printable address without display name is
// taken from a provider.
func TestValidProviderEmail(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{"alice@example.com", "alice@example.com", true},
		{"Alice@Example.COM", "alice@example.com", true},
		{" alice@example.com", "", false}, // a provider's address comes without padding
		{"alice@example.com\n", "", false},
		{"first.last+tag@sub.example.co", "first.last+tag@sub.example.co", true},
		// Non-ASCII letters could fold into another address (KELVIN SIGN
		// into k); an IDN domain is accepted in its xn-- form only.
		{"jörg@exämple.de", "", false},
		{"\u212aim@corp.com", "", false},
		{"", "", false},
		{"alice@example.com,mallory@evil.example", "", false},
		{"alice@example.com, mallory@evil.example", "", false},
		{"alice@example.com;mallory@evil.example", "", false},
		{"alice@example.com\r\nX-Forwarded-User: admin", "", false},
		{"alice@example.com\nmallory@evil.example", "", false},
		{"alice@exa\x00mple.com", "", false},
		{"alice\x7f@example.com", "", false},
		{"alice\u200b@example.com", "", false},
		{"Alice <alice@example.com>", "", false},
		{"<alice@example.com>", "", false},
		{"alice@example.com (work)", "", false},
		{`"alice,bob"@example.com`, "", false},
		{`"alice bob"@example.com`, "", false},
		{"alice", "", false},
		{"alice@", "", false},
		{"@example.com", "", false},
		{"alice@@example.com", "", false},
		{"alice@bob@example.com", "", false},
		{"alice bob@example.com", "", false},
		{"\xff@example.com", "", false},
	}
	for _, tt := range tests {
		got, ok := validProviderEmail(tt.raw)
		if ok != tt.ok || got != tt.want {
			t.Errorf("validProviderEmail(%q) = %q, %v; want %q, %v", tt.raw, got, ok, tt.want, tt.ok)
		}
	}
}
