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
	"strings"
	"sync"
	"time"
)

// signingKey is the RSA key of every fake Google: generated once per test
// binary, because key generation is slow under -race.
var signingKey = sync.OnceValue(newKey)

// Google is a Google-like OpenID Connect provider. Its token endpoint
// answers with an RS256 ID token (iss = its URL, aud = the client id, the
// authorization's nonce, exp an hour after now), signed by the key it
// publishes at JWKSURL, and serves /userinfo.
type Google struct {
	*server
	issuer     string // iss of its ID tokens; default its URL
	editNext   func(claims map[string]any)
	omitEmails bool
	key        signer   // signs the ID tokens
	published  []signer // the JWKS
	forgeNext  Forgery
	jwksHits   int
}

// signer is an RSA key and its kid.
type signer struct {
	kid string
	key *rsa.PrivateKey
}

// Forgery is a way the next ID token is made wrong on purpose.
type Forgery string

const (
	// ForeignKey signs with a key that is not published, under the kid
	// of the published key: the signature does not verify.
	ForeignKey Forgery = "foreign-key"
	// UnknownKid signs with a key whose kid the JWKS never lists.
	UnknownKid Forgery = "unknown-kid"
	// AlgNone sends an unsigned token with "alg": "none".
	AlgNone Forgery = "alg-none"
	// TamperedPayload changes the claims after signing (sub of another user).
	TamperedPayload Forgery = "tampered-payload"
)

// NewGoogle starts a fake Google for client. now is the clock of the ID
// token's iat and exp (nil: time.Now). Close it when done.
func NewGoogle(client Client, now func() time.Time) *Google {
	g := &Google{server: newServer(client, now)}
	g.key = signer{kid: "test", key: signingKey()}
	g.published = []signer{g.key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /o/oauth2/v2/auth", g.handleAuthorize([]string{"openid", "email", "profile"}, true))
	mux.HandleFunc("POST /token", g.handleToken)
	mux.HandleFunc("GET /v1/userinfo", g.handleUserinfo)
	mux.HandleFunc("GET /oauth2/v3/certs", g.handleKeys)
	g.srv = httptest.NewServer(g.hangable(mux))
	return g
}

// AuthURL, TokenURL, UserinfoURL and Issuer are the fake's endpoints and the
// iss of its ID tokens, for Gatehouse's provider configuration.
func (g *Google) AuthURL() string     { return g.srv.URL + "/o/oauth2/v2/auth" }
func (g *Google) TokenURL() string    { return g.srv.URL + "/token" }
func (g *Google) UserinfoURL() string { return g.srv.URL + "/v1/userinfo" }
func (g *Google) JWKSURL() string     { return g.srv.URL + "/oauth2/v3/certs" }

// RotateKey makes a new key (new kid) the signing key and publishes only
// it, as a provider does once the old key is retired.
func (g *Google) RotateKey() {
	k := signer{kid: randomString()[:8], key: newKey()}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.key = k
	g.published = []signer{k}
}

// ForgeNextIDToken makes the next ID token wrong in the way f says.
func (g *Google) ForgeNextIDToken(f Forgery) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.forgeNext = f
}

// JWKSRequests counts the requests for the key set so far.
func (g *Google) JWKSRequests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.jwksHits
}
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
	if g.tokenFailure(w) {
		return
	}
	gr, code, err := g.redeem(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": code, "error_description": err.Error()})
		return
	}
	refresh := ""
	if code == "refresh_token" { // a refresh: the account as it is now, no nonce
		a, refused := g.refreshed(r)
		if refused != "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": refused})
			return
		}
		gr = grant{account: a, scope: "openid email profile"}
	} else if gr.offline { // as Google: a refresh token only for access_type=offline
		refresh = g.issueRefresh(gr.account.Subject)
	}
	access := g.issueToken(gr.account)
	now := g.now()
	a := gr.account
	claims := map[string]any{
		"iss": g.Issuer(), "azp": g.client.ID, "aud": g.client.ID,
		"sub": a.Subject, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		"name": "Test User",
	}
	if gr.nonce != "" {
		claims["nonce"] = gr.nonce
	}
	g.mu.Lock()
	if !g.omitEmails {
		claims["email"], claims["email_verified"] = a.Email, a.EmailVerified
	}
	if a.HostedDomain != "" {
		claims["hd"] = a.HostedDomain
	}
	edit := g.editNext
	g.editNext = nil
	key, forgery := g.key, g.forgeNext
	g.forgeNext = ""
	g.mu.Unlock()
	if edit != nil {
		edit(claims)
	}
	idToken := forge(claims, key, forgery)
	g.addSecret(idToken)
	answer := map[string]any{
		"access_token": access, "token_type": "Bearer", "expires_in": 3599,
		"scope": gr.scope, "id_token": idToken,
	}
	if refresh != "" {
		answer["refresh_token"] = refresh
	}
	writeJSON(w, http.StatusOK, answer)
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
	info := map[string]any{"sub": a.Subject, "email": a.Email, "email_verified": a.EmailVerified, "name": "Test User"}
	if a.UserinfoHostedDomain != "" {
		info["hd"] = a.UserinfoHostedDomain
	}
	writeJSON(w, http.StatusOK, info)
}

// handleKeys publishes the signing keys as a JWKS, as Google does.
func (g *Google) handleKeys(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	g.jwksHits++
	published := g.published
	g.mu.Unlock()
	writeJSON(w, http.StatusOK, jwks(published...))
}

// jwks is the JSON Web Key Set publishing the public halves of keys.
func jwks(keys ...signer) map[string]any {
	var out []map[string]string
	for _, k := range keys {
		pub := k.key.PublicKey
		out = append(out, map[string]string{
			"kty": "RSA", "alg": "RS256", "use": "sig", "kid": k.kid,
			"n": base64.RawURLEncoding.EncodeToString(pub.N.Bytes()),
			"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(pub.E)).Bytes()),
		})
	}
	return map[string]any{"keys": out}
}

// forge signs claims with key, or makes the token wrong as f says.
func forge(claims map[string]any, key signer, f Forgery) string {
	switch f {
	case ForeignKey:
		return signJWT(claims, signer{kid: key.kid, key: foreignKey()})
	case UnknownKid:
		return signJWT(claims, signer{kid: "never-published", key: foreignKey()})
	case AlgNone:
		header, _ := json.Marshal(map[string]string{"alg": "none", "typ": "JWT"})
		payload, _ := json.Marshal(claims)
		return base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload) + "."
	case TamperedPayload:
		signed := strings.Split(signJWT(claims, key), ".")
		claims["sub"] = "someone-else"
		payload, _ := json.Marshal(claims)
		signed[1] = base64.RawURLEncoding.EncodeToString(payload)
		return strings.Join(signed, ".")
	}
	return signJWT(claims, key)
}

// signJWT returns claims as an RS256 compact JWS signed by k.
func signJWT(claims map[string]any, k signer) string {
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "kid": k.kid, "typ": "JWT"})
	payload, _ := json.Marshal(claims)
	input := base64.RawURLEncoding.EncodeToString(header) + "." + base64.RawURLEncoding.EncodeToString(payload)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, k.key, crypto.SHA256, sum[:])
	if err != nil {
		panic(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// foreignKey is a key no fake publishes.
var foreignKey = sync.OnceValue(newKey)

func newKey() *rsa.PrivateKey {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return k
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
