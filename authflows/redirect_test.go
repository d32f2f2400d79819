package authflows

import "testing"

func TestLocalRedirect(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"/app", "/app"},
		{"/app/page?x=1&y=2", "/app/page?x=1&y=2"},
		{"/a%20b", "/a%20b"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"/\\evil.example", "/"},
		{"\\\\evil.example", "/"},
		{"/%09/evil.example", "/"},
		{"/\t/evil.example", "/"},
		{"/%2f/evil.example", "/"},
		{"/%2F%2Fevil.example", "/"},
		{"/%5cevil.example", "/"},
		{"https:evil.example", "/"},
		{"https://evil.example", "/"},
		{"http://localhost:8080@evil.example", "/"},
		{"https://base@evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"JavaScript:alert(1)", "/"},
		{"data:text/html,x", "/"},
		{"evil.example", "/"},
		{"./x", "/"},
		{"/\r\nLocation: https://evil.example", "/"},
		{"/x\x00y", "/"},
		{"/ok#frag", "/ok#frag"},
	}
	for _, tt := range tests {
		if got := localRedirect(tt.in); got != tt.want {
			t.Errorf("localRedirect(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
