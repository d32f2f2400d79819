package oauthtest

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"time"
)

// signingKey is the RSA key of every fake Google: generated once per test
// binary, because key generation is slow under -race.
var signingKey = sync.OnceValue(func() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
})

// Google is a Google-like OpenID Connect provider. Its token endpoint
// answers with an RS256 ID token (iss = its URL, aud = the client id, the
// authorization's nonce, exp an hour after now) and serves /userinfo.
type Google struct {
	*server
	issuer     string // iss of its ID tokens; default its URL
	editNext   func(claims map[string]any)
	omitEmails bool
}

// NewGoogle starts a fake Google for client. now is the clock of the ID
// token's iat and exp (nil: time.Now). Close it when done.
func NewGoogle(client Client, now func() time.Time) *Google {
	g := &Google{server: newServer(client, now)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /o/oauth2/v2/auth", g.handleAuthorize([]string{"openid", "email", "profile"}, true))
	mux.HandleFunc("POST /token", g.handleToken)
	mux.HandleFunc("GET /v1/userinfo", g.handleUserinfo)
	mux.HandleFunc("GET /oauth2/v3/certs", g.handleKeys)
	g.srv = httptest.NewServer(mux)
	return g
}

// AuthURL, TokenURL, UserinfoURL and Issuer are the fake's endpoints and the
// iss of its ID tokens, for Gatehouse's provider configuration.
func (g *Google) AuthURL() string     { return g.srv.URL + "/o/oauth2/v2/auth" }
func (g *Google) TokenURL() string    { return g.srv.URL + "/token" }
func (g *Google) UserinfoURL() string { return g.srv.URL + "/v1/userinfo" }
func (g *Google) Issuer() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.issuer != "" {
		return g.issuer
	}
	return g.srv.URL
}

// SetIssuer makes the ID tokens claim iss (e.g. "https://accounts.google.com",
// for a client that keeps Google's issuer while its endpoints point here).
func (g *Google) SetIssuer(iss string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.issuer = iss
}

// EditNextIDToken lets edit change the claims of the next ID token issued
// (e.g. another aud, an old exp, a wrong nonce) before it is signed.
func (g *Google) EditNextIDToken(edit func(claims map[string]any)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.editNext = edit
}

// OmitEmailClaims leaves email and email_verified out of ID tokens, so that
// a client must read them from /userinfo.
func (g *Google) OmitEmailClaims(omit bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.omitEmails = omit
}

func (g *Google) handleToken(w http.ResponseWriter, r *http.Request) {
	gr, code, err := g.redeem(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": err.Error()})
		return
	}
	access := g.issueToken(gr.account)
	now := g.now()
	a := gr.account
	claims := map[string]any{
		"iss": g.Issuer(), "azp": g.client.ID, "aud": g.client.ID,
		"sub": a.Subject, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"nonce": gr.nonce, "name": "Test User",
	}
	g.mu.Lock()
	if !g.omitEmails {
		claims["email"], claims["email_verified"] = a.Email, a.EmailVerified
	}
	edit := g.editNext
	g.editNext = nil
	g.mu.Unlock()
	if edit != nil {
		edit(claims)
	}
	idToken := signJWT(claims)
	g.addSecret(idToken)
	writeJSON(w, http.StatusOK, map[string]any{
		"access_token": access, "token_type": "Bearer", "expires_in": 3599,
		"scope": gr.scope, "id_token": idToken,
	})
}

func (g *Google) handleUserinfo(w http.ResponseWriter, r *http.Request) {
	if g.apiFailure(w, "userinfo") {
		return
	}
	a, ok := g.bearer(r)
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"sub": a.Subject, "email": a.Email, "email_verified": a.EmailVerified, "name": "Test User"})
}

// handleKeys publishes the signing key as a JWKS, as Google does.
func (g *Google) handleKeys(w http.ResponseWriter, r *http.Request) {
	pub := signingKey().PublicKey
	writeJSON(w, http.StatusOK, map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "test",
		"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
	}}})
}

// signJWT returns claims as an RS256 compact JWS.
func signJWT(claims map[string]any) string {
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": "test", "typ": "JWT"})
	payload, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, signingKey(), crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
