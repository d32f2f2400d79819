package provider

import (
	"testing"
)

// ID1: a provider endpoint over http:// is refused unless its host is a
// loopback address.
func TestCheckEndpointURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://accounts.google.com/o/oauth2/v2/auth", true},
		{"https://idp.example/realms/x", true},
		{"http://127.0.0.1:8080/token", true},
		{"http://[::1]:8080/token", true},
		{"http://localhost:5556/dex", true},
		{"http://idp.example/token", false},
		{"http://10.0.0.1/token", false},
		{"http://127.0.0.1.evil.example/token", false},
		{"ftp://idp.example/x", false},
		{"/relative", false},
		{"https://user:pw@idp.example/x", false},
	}
	for _, tt := range tests {
		if err := CheckEndpointURL(tt.url); (err == nil) != tt.ok {
			t.Errorf("CheckEndpointURL(%q) = %v, want ok %v", tt.url, err, tt.ok)
		}
	}
}
