package assertion

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// JW1, for verifiers using the published JWKS: the header names ES256 and
// the kid only (no embedded "jwk", "jku" or "x5u" a lax verifier would
// trust), the payload holds the contract's claims and no others, and a
// token re-signed with HS256 over the published key, or with "none", does
// not verify with the published key.
func TestAssertionShape(t *testing.T) {
	e := newEnv(t)
	token, err := e.issuer.Token(session(1))
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("not a compact JWS: %q", token)
	}
	keysOf := func(part string) []string {
		raw, err := base64.RawURLEncoding.DecodeString(part)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	if got, want := keysOf(parts[0]), []string{"alg", "kid", "typ"}; !slices.Equal(got, want) {
		t.Errorf("header fields %v, want %v", got, want)
	}
	header, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if !strings.Contains(string(header), `"alg":"ES256"`) {
		t.Errorf("header %s", header)
	}
	contract := []string{"amr", "aud", "auth_time", "email", "email_verified", "exp", "groups", "iat", "iss", "jti", "nbf", "sid", "sub"}
	if got := keysOf(parts[1]); !slices.Equal(got, contract) {
		t.Errorf("claims %v, want the contract's %v", got, contract)
	}

	// Alg confusion: HS256 keyed with the published public key, and "none".
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(e.keys.set.Load().jwks, &set); err != nil || len(set.Keys) != 1 {
		t.Fatalf("JWKS: %v", err)
	}
	pub := set.Keys[0]
	pubJSON, _ := pub.MarshalJSON()
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	hs, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: pubJSON},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), pub.KeyID))
	if err != nil {
		t.Fatal(err)
	}
	forged, err := hs.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	compact, _ := forged.CompactSerialize()
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","kid":"`+pub.KeyID+`","typ":"JWT"}`)) + "." + parts[1] + "."
	for name, bad := range map[string]string{"HS256 with the public key": compact, "alg none": none} {
		if _, err := verify(t, e.jwks.URL, bad, e.clock.Now()); err == nil {
			t.Errorf("%s verified", name)
		}
		// Even a verifier that accepts every algorithm the library knows
		// cannot check it with the published EC key.
		parsed, err := jwt.ParseSigned(bad, []jose.SignatureAlgorithm{jose.ES256, jose.HS256, jose.RS256, jose.EdDSA})
		if err != nil {
			continue
		}
		var c Claims
		if err := parsed.Claims(pub.Key, &c); err == nil {
			t.Errorf("%s verified with the published key by a lax verifier", name)
		}
	}
}
