package main

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/assertion"
	"github.com/gatehouse-auth/gatehouse/proxy/web/webtest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

const (
	issuer   = "https://gate.example.com"
	audience = "https://app.example.com"
)

// fixture is a Gatehouse issuer (the real minting code) with its JWKS over
// HTTP, plus tokens a verifier must refuse.
type fixture struct {
	jwksURL string
	good    string
	bad     map[string]string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	open := func(name string) *bolt.Store {
		s, err := bolt.Open(filepath.Join(t.TempDir(), name), bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	log := slog.New(slog.DiscardHandler)
	// The key was made two hours ago, so a token minted an hour ago exists.
	twoHoursAgo := func() time.Time { return time.Now().Add(-2 * time.Hour) }
	keys, err := assertion.NewKeys(t.Context(), open("a.db"), twoHoursAgo, log)
	if err != nil {
		t.Fatal(err)
	}
	foreignKeys, err := assertion.NewKeys(t.Context(), open("b.db"), nil, log)
	if err != nil {
		t.Fatal(err)
	}
	jwks := httptest.NewServer(keys)
	t.Cleanup(jwks.Close)
	session := storage.Session{
		IDHash: storage.HashSecret("sid"), UserID: "0123456789abcdef0123456789abcdef", Email: "ada@example.com",
		CreatedAt: time.Now().Add(-90 * time.Minute), ExpiresAt: time.Now().Add(time.Hour), Method: "pwd", Groups: "ops",
	}
	mint := func(k *assertion.Keys, iss, aud string, clock func() time.Time) string {
		is, err := assertion.New(assertion.Config{Keys: k, Issuer: iss, Audience: aud, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		tok, err := is.Token(session)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	good := mint(keys, issuer, audience, nil)
	_, payload, _ := strings.Cut(good, ".")
	payload, _, _ = strings.Cut(payload, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + payload + "."
	return fixture{
		jwksURL: jwks.URL,
		good:    good,
		bad: map[string]string{
			"foreign key":   mint(foreignKeys, issuer, audience, nil),
			"wrong issuer":  mint(keys, "https://evil.example", audience, nil),
			"wrong aud":     mint(keys, issuer, "https://other.example", nil),
			"expired":       mint(keys, issuer, audience, func() time.Time { return time.Now().Add(-time.Hour) }),
			"alg none":      none,
			"garbage":       "not.a.token",
			"tampered body": tamper(good),
		},
	}
}

// tamper changes the payload's sub, keeping the signature.
func tamper(token string) string {
	parts := strings.Split(token, ".")
	raw, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims map[string]any
	_ = json.Unmarshal(raw, &claims)
	claims["sub"] = "admin"
	raw, _ = json.Marshal(claims)
	parts[1] = base64.RawURLEncoding.EncodeToString(raw)
	return strings.Join(parts, ".")
}

func TestGoVerifier(t *testing.T) {
	f := newFixture(t)
	v := &Verifier{JWKSURL: f.jwksURL, Issuer: issuer, Audience: audience}
	id, err := v.Verify(f.good)
	if err != nil {
		t.Fatalf("good token: %v", err)
	}
	if id.Email != "ada@example.com" || id.Subject != "0123456789abcdef0123456789abcdef" || len(id.Groups) != 1 || id.Session == "" {
		t.Fatalf("identity %+v", id)
	}
	for name, tok := range f.bad {
		if _, err := v.Verify(tok); err == nil {
			t.Errorf("%s: verified", name)
		}
	}

	app := httptest.NewServer(v.Middleware(func(w http.ResponseWriter, r *http.Request, id Identity) {
		io.WriteString(w, "hello "+id.Email)
	}))
	defer app.Close()
	for _, tc := range []struct {
		token  string
		status int
	}{{f.good, 200}, {"", 401}, {f.bad["foreign key"], 401}} {
		req, _ := http.NewRequest(http.MethodGet, app.URL, nil)
		if tc.token != "" {
			req.Header.Set("X-Gatehouse-Jwt-Assertion", tc.token)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != tc.status || (tc.status == 200 && string(body) != "hello ada@example.com") {
			t.Errorf("app answered %d %q, want %d", res.StatusCode, body, tc.status)
		}
	}
}

// pythonWithJWT finds a python3 that can import PyJWT with its crypto
// backend (Debian's python3-jwt is in /usr/bin/python3's path).
func pythonWithJWT() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if err := exec.Command(py, "-c", "import jwt, cryptography; jwt.PyJWKClient").Run(); err == nil {
			return py
		}
	}
	return ""
}

func TestPythonVerifier(t *testing.T) {
	py := pythonWithJWT()
	if py == "" {
		webtest.Missing(t, "no python3 with PyJWT and cryptography installed (apt-get install python3-jwt python3-cryptography); verify.py untested")
	}
	f := newFixture(t)
	run := func(token string) (string, error) {
		out, err := exec.Command(py, "verify.py", token, f.jwksURL, issuer, audience).CombinedOutput()
		return string(out), err
	}
	out, err := run(f.good)
	if err != nil {
		t.Fatalf("good token: %v: %s", err, out)
	}
	var claims map[string]any
	if err := json.Unmarshal([]byte(out), &claims); err != nil || claims["email"] != "ada@example.com" {
		t.Fatalf("claims %s (%v)", out, err)
	}
	for name, tok := range f.bad {
		if out, err := run(tok); err == nil {
			t.Errorf("%s: verified by verify.py: %s", name, out)
		}
	}
}
