package policy

import "testing"

func TestParseQualifiedGroup(t *testing.T) {
	for _, tc := range []struct {
		group string
		ok    bool
	}{
		{"oidc:admins", true},
		{"github:acme/ops", true},
		{"google:corp.com", true},
		{"svc-2:deployers", true},
		{"oidc:a:b", true},
		{"oidc:Domain Admins", true},
		{"admins", false},
		{":admins", false},
		{"oidc:", false},
		{"OIDC:admins", false},
		{"2fa:x", false},
		{"-x:y", false},
		{"oidc: admins", false},
		{"oidc:admins ", false},
		{"oidc:a,b", false},
		{"oidc:a\nb", false},
		{"oi dc:a", false},
		{"abcdefghijklmnopqrstuvwxyzabcdefg:x", false}, // a 33-character prefix
		{"abcdefghijklmnopqrstuvwxyzabcdef:x", true},   // 32
		{"", false},
	} {
		_, err := ParseQualifiedGroup(tc.group)
		if (err == nil) != tc.ok {
			t.Errorf("ParseQualifiedGroup(%q): %v, want ok %v", tc.group, err, tc.ok)
		}
	}
}
