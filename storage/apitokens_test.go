package storage

import (
	"strings"
	"testing"
	"time"
)

func TestNewAPITokenShape(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		tok, h := NewAPIToken()
		if len(tok) != APITokenLen || !strings.HasPrefix(tok, "ghp_") || len(tok) != 4+43 {
			t.Fatalf("token %q: want ghp_ and 43 characters", tok)
		}
		if !IsAPITokenShape(tok) {
			t.Fatalf("a new token %q does not have the token shape", tok)
		}
		if h != HashSecret(tok) {
			t.Fatal("the hash returned is not the token's SHA-256")
		}
		if seen[tok] {
			t.Fatal("a token came twice")
		}
		seen[tok] = true
	}
}

func TestIsAPITokenShape(t *testing.T) {
	good, _ := NewAPIToken()
	for _, tc := range []struct {
		value string
		want  bool
	}{
		{good, true},
		{"ghp_" + strings.Repeat("A", 43), true},
		{"ghp_" + strings.Repeat("A", 42), false},
		{"ghp_" + strings.Repeat("A", 44), false},
		{"GHP_" + strings.Repeat("A", 43), false},
		{"gho_" + strings.Repeat("A", 43), false},
		{strings.Repeat("A", 47), false},
		{"ghp_" + strings.Repeat("A", 42) + "B", false}, // non-zero padding bits: not a canonical 256-bit value
		{"ghp_" + strings.Repeat("A", 42) + "+", false}, // standard base64, not base64url
		{"ghp_" + strings.Repeat("A", 41) + "==", false},
		{"ghp_" + strings.Repeat("-", 42) + "w", true},
		{"", false},
	} {
		if got := IsAPITokenShape(tc.value); got != tc.want {
			t.Errorf("IsAPITokenShape(%q) = %v, want %v", tc.value, got, tc.want)
		}
	}
}

func TestAPITokenExpired(t *testing.T) {
	now := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		expires time.Time
		want    bool
	}{
		{time.Time{}, false},
		{now.Add(time.Second), false},
		{now, true},
		{now.Add(-time.Second), true},
	} {
		if got := (APIToken{ExpiresAt: tc.expires}).Expired(now); got != tc.want {
			t.Errorf("expires %v at %v: Expired %v, want %v", tc.expires, now, got, tc.want)
		}
	}
}
