package oauthtest

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"
)

// RunOIDC starts a real OpenID Provider (github.com/oauth2-proxy/mockoidc)
// on loopback for the generic-OIDC tests, and stops it when t ends. prepare,
// when not nil, runs before it starts: the place to add middleware or move
// its clock.
func RunOIDC(t testing.TB, prepare func(*mockoidc.MockOIDC)) *mockoidc.MockOIDC {
	t.Helper()
	m, err := mockoidc.NewServer(nil)
	if err != nil {
		t.Fatal(err)
	}
	if prepare != nil {
		prepare(m)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ln, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return m
}

// ClaimsUser is a mockoidc account whose ID token carries exactly Extra
// beyond iss, sub, aud, exp and nonce (e.g. email_verified false, or a
// groups claim of an odd shape); its userinfo holds only sub.
type ClaimsUser struct {
	Sub   string
	Extra map[string]any
}

// ID is the subject.
func (u ClaimsUser) ID() string { return u.Sub }

// Userinfo is {"sub": Sub}.
func (u ClaimsUser) Userinfo([]string) ([]byte, error) {
	return json.Marshal(map[string]any{"sub": u.Sub})
}

// Claims are mockoidc's base claims with Extra laid over them.
func (u ClaimsUser) Claims(_ []string, base *mockoidc.IDTokenClaims) (jwt.Claims, error) {
	b, err := json.Marshal(base)
	if err != nil {
		return nil, err
	}
	m := jwt.MapClaims{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range u.Extra {
		m[k] = v
	}
	return m, nil
}
