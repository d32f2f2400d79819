package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// fetchJWKS gets a key set over HTTP and checks its caching header.
func fetchJWKS(t *testing.T, url string) jose.JSONWebKeySet {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Header.Get("Cache-Control"), "max-age=300") {
		t.Fatalf("GET %s: %d, Cache-Control %q", url, res.StatusCode, res.Header.Get("Cache-Control"))
	}
	var set jose.JSONWebKeySet
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	return set
}

// upstreamAssertion signs in through c and returns the assertion the
// upstream received on GET /app.
func upstreamAssertion(t *testing.T, c *http.Client, g *gatehouse) string {
	t.Helper()
	code, body := get(t, c, g.URL+"/app")
	if code != http.StatusOK {
		t.Fatalf("GET /app: %d", code)
	}
	var seen struct{ Header http.Header }
	if err := json.Unmarshal([]byte(body), &seen); err != nil {
		t.Fatal(err)
	}
	tokens := seen.Header.Values("X-Gatehouse-Jwt-Assertion")
	if len(tokens) != 1 {
		t.Fatalf("upstream got %d assertions", len(tokens))
	}
	return tokens[0]
}

func verifyWith(t *testing.T, set jose.JSONWebKeySet, token, iss, aud string) (kid string, claims map[string]any) {
	t.Helper()
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256})
	if err != nil {
		t.Fatal(err)
	}
	kid = parsed.Headers[0].KeyID
	keys := set.Key(kid)
	if len(keys) != 1 {
		t.Fatalf("kid %s not published", kid)
	}
	var std jwt.Claims
	if err := parsed.Claims(keys[0].Key, &std, &claims); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if err := std.Validate(jwt.Expected{Issuer: iss, AnyAudience: jwt.Audience{aud}, Time: time.Now()}); err != nil {
		t.Fatalf("claims: %v", err)
	}
	return kid, claims
}

func TestAssertionEndToEnd(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL, "--assertion-audience", "https://app.example.com")
	c := newClient()
	login(t, c, g.URL, "alice@example.com", testPassword)

	public := fetchJWKS(t, g.URL+"/auth/.well-known/jwks.json")
	admin := fetchJWKS(t, g.AdminURL+"/jwks.json")
	if a, b := mustMarshal(t, public), mustMarshal(t, admin); a != b {
		t.Fatalf("the two listeners publish different key sets:\n%s\n%s", a, b)
	}
	// A forged header from the client is replaced by the real one.
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/app", nil)
	req.Header.Set("X-Gatehouse-Jwt-Assertion", "forged")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	token := upstreamAssertion(t, c, g)
	oldKid, claims := verifyWith(t, public, token, g.URL, "https://app.example.com")
	if claims["email"] != "alice@example.com" || claims["sid"] == "" {
		t.Fatalf("claims %v", claims)
	}

	// `gatehouse keys rotate` on the stopped server's store: after the
	// restart the new key signs, and the old token still verifies.
	firstURL := g.URL
	g.Stop()
	var out, errOut bytes.Buffer
	if code := run([]string{"keys", "rotate", "--db", db}, nil, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("keys rotate: exit %d: %s", code, errOut.String())
	}
	g = startGatehouse(t, db, "--upstream", up.URL, "--assertion-audience", "https://app.example.com")
	set := fetchJWKS(t, g.URL+"/auth/.well-known/jwks.json")
	if len(set.Keys) != 2 {
		t.Fatalf("%d keys published after rotate, want 2", len(set.Keys))
	}
	newKid, _ := verifyWith(t, set, upstreamAssertion(t, c, g), g.URL, "https://app.example.com")
	if newKid == oldKid || !strings.Contains(out.String(), newKid) {
		t.Fatalf("after rotate signed by %s (old %s); rotate said %q", newKid, oldKid, out.String())
	}
	verifyWith(t, set, token, firstURL, "https://app.example.com")
}

func TestAssertionOff(t *testing.T) {
	up, _ := echoUpstream(t)
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	addUser(t, db, "alice@example.com", testPassword)
	g := startGatehouse(t, db, "--upstream", up.URL, "--identity-assertion=false")
	c := newClient()
	login(t, c, g.URL, "alice@example.com", testPassword)
	req, _ := http.NewRequest(http.MethodGet, g.URL+"/app", nil)
	req.Header.Set("X-Gatehouse-Jwt-Assertion", "forged")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var seen struct{ Header http.Header }
	_ = json.NewDecoder(res.Body).Decode(&seen)
	res.Body.Close()
	if v, ok := seen.Header["X-Gatehouse-Jwt-Assertion"]; ok {
		t.Fatalf("assertion off, upstream got %q", v)
	}
	if code, _ := get(t, c, g.URL+"/auth/.well-known/jwks.json"); code != http.StatusNotFound {
		t.Fatalf("JWKS with assertions off: %d, want 404", code)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
