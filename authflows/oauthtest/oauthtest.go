// Package oauthtest runs fake OAuth providers for tests: a Google-like OIDC
// server and a GitHub-like server on httptest. Each checks what the real one
// checks and what Gatehouse must get right: the client id and secret, the
// redirect_uri (registered, and equal between the authorize and token
// requests), the PKCE S256 verifier, single use of codes, and the bearer
// token on the user APIs. A test chooses the account the next authorization
// returns with SetNext.
//
// For generic OIDC, RunOIDC starts a real OpenID Provider (mockoidc) and
// ClaimsUser gives its ID tokens chosen claims.
//
// Dependencies: the standard library, and mockoidc with its JWT library for
// RunOIDC and ClaimsUser. The tests of authflows and cmd/gatehouse import it.
package oauthtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// Account is the provider account an authorization returns.
type Account struct {
	Subject       string // Google "sub"; GitHub numeric "id" in decimal
	Email         string
	EmailVerified bool
	Login         string // GitHub login name (never a key: OA5)
	// Orgs and Teams ("org/team-slug") are the GitHub account's memberships.
	Orgs, Teams []string
	// HostedDomain is the Google ID token's hd claim ("" for none).
	HostedDomain string
	// UserinfoHostedDomain is an hd that only /userinfo claims (a client
	// must never take it for the ID token's).
	UserinfoHostedDomain string
}

// Client is the registered OAuth client the fake accepts.
type Client struct {
	ID, Secret  string
	RedirectURL string // the only registered redirect_uri
}

// grant is an issued authorization code.
type grant struct {
	account     Account
	redirectURI string
	challenge   string
	nonce       string
	scope       string
	offline     bool // access_type=offline: Google then issues a refresh token
}

// server is what both fakes share: authorize, token, bearer tokens.
type server struct {
	client Client
	srv    *httptest.Server
	now    func() time.Time

	mu        sync.Mutex
	next      Account
	denyNext  string         // error code the next authorization answers with
	apiFail   map[string]int // user API endpoint → status its next call answers
	codes     map[string]grant
	tokens    map[string]Account
	authorize []url.Values // every authorization request
	token     []url.Values // every token request (client secret removed)
	failures  []string     // why the fake refused something
	secrets   []string     // every code and token it issued, for log canaries

	accounts  map[string]Account // subject → the account now (accounts.go)
	deleted   map[string]bool    // subjects deleted at the provider
	refresh   map[string]string  // refresh token → subject
	tokenFail int                // status the next token request answers
	hang      <-chan struct{}    // while set and open, every request waits
	hanging   int                // requests held by hang so far
}

func newServer(c Client, now func() time.Time) *server {
	if now == nil {
		now = time.Now
	}
	return &server{client: c, now: now, codes: map[string]grant{}, tokens: map[string]Account{},
		accounts: map[string]Account{}, deleted: map[string]bool{}, refresh: map[string]string{}}
}

// SetNext chooses the account the next authorizations return.
func (s *server) SetNext(a Account) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.next = a
}

// DenyNext makes the next authorization redirect back with error=code
// (e.g. "access_denied") instead of a code.
func (s *server) DenyNext(code string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.denyNext = code
}

// FailNextAPI makes the next call to a user API endpoint (GitHub "user" or
// "emails", Google "userinfo") answer status with an error body instead of
// the account.
func (s *server) FailNextAPI(endpoint string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.apiFail == nil {
		s.apiFail = map[string]int{}
	}
	s.apiFail[endpoint] = status
}

// apiFailure answers the failure set with FailNextAPI for endpoint, once;
// false when there is none.
func (s *server) apiFailure(w http.ResponseWriter, endpoint string) bool {
	s.mu.Lock()
	status, ok := s.apiFail[endpoint]
	delete(s.apiFail, endpoint)
	s.mu.Unlock()
	if ok {
		writeJSON(w, status, map[string]string{"message": "fake failure of " + endpoint})
	}
	return ok
}

// AuthorizeRequests returns the query of every authorization request so far.
func (s *server) AuthorizeRequests() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.authorize)
}

// TokenRequests returns the form of every token request so far, without the
// client secret.
func (s *server) TokenRequests() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.token)
}

// Failures returns why the fake refused requests, in order.
func (s *server) Failures() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.failures)
}

// Secrets returns every authorization code, access token and ID token the
// fake issued: none of them may appear in Gatehouse's logs or store.
func (s *server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.secrets)
}

// URL is the base address of the fake.
func (s *server) URL() string { return s.srv.URL }

// Close shuts the fake down.
func (s *server) Close() { s.srv.Close() }

func (s *server) fail(format string, args ...any) string {
	msg := fmt.Sprintf(format, args...)
	s.failures = append(s.failures, msg)
	return msg
}

// handleAuthorize is the authorization endpoint. It acts as the user who
// consents at once: a valid request is redirected to redirect_uri with a
// fresh code and the state; an invalid one gets 400 and no redirect (as a
// real provider does for a bad client or redirect_uri).
func (s *server) handleAuthorize(wantScopes []string, needNonce bool, optional ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		s.mu.Lock()
		defer s.mu.Unlock()
		s.authorize = append(s.authorize, q)
		var problem string
		switch {
		case q.Get("response_type") != "code":
			problem = s.fail("authorize: response_type %q", q.Get("response_type"))
		case q.Get("client_id") != s.client.ID:
			problem = s.fail("authorize: unknown client_id")
		case q.Get("redirect_uri") != s.client.RedirectURL:
			problem = s.fail("authorize: redirect_uri %q is not registered", q.Get("redirect_uri"))
		case q.Get("state") == "":
			problem = s.fail("authorize: no state")
		case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
			problem = s.fail("authorize: no PKCE S256 challenge")
		case needNonce && q.Get("nonce") == "":
			problem = s.fail("authorize: no nonce")
		case !sameScopes(q.Get("scope"), wantScopes) && !sameScopes(q.Get("scope"), append(slices.Clone(wantScopes), optional...)):
			problem = s.fail("authorize: scope %q, want %q", q.Get("scope"), strings.Join(wantScopes, " "))
		}
		if problem != "" {
			http.Error(w, problem, http.StatusBadRequest)
			return
		}
		back, _ := url.Parse(q.Get("redirect_uri"))
		v := back.Query()
		if s.denyNext != "" {
			v.Set("error", s.denyNext)
			s.denyNext = ""
		} else {
			code := randomString()
			s.codes[code] = grant{
				account:     s.next,
				redirectURI: q.Get("redirect_uri"),
				challenge:   q.Get("code_challenge"),
				nonce:       q.Get("nonce"),
				scope:       q.Get("scope"),
				offline:     q.Get("access_type") == "offline",
			}
			s.secrets = append(s.secrets, code)
			v.Set("code", code)
		}
		v.Set("state", q.Get("state"))
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
}

func sameScopes(got string, want []string) bool {
	g := strings.Fields(got)
	slices.Sort(g)
	w := slices.Clone(want)
	slices.Sort(w)
	return slices.Equal(g, w)
}

// redeem checks a token request and consumes its code. It returns the grant,
// or the OAuth error code and a description of the failed check.
func (s *server) redeem(r *http.Request) (grant, string, error) {
	if err := r.ParseForm(); err != nil {
		return grant{}, "invalid_request", err
	}
	f := r.PostForm
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = f.Get("client_id"), f.Get("client_secret")
	}
	logged := url.Values{}
	for k, v := range f {
		if k != "client_secret" {
			logged[k] = v
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.token = append(s.token, logged)
	if id != s.client.ID || secret != s.client.Secret {
		return grant{}, "invalid_client", errors.New(s.fail("token: wrong client id or secret"))
	}
	if f.Get("grant_type") == "refresh_token" {
		return grant{}, "refresh_token", nil // the caller redeems it (refreshed)
	}
	if f.Get("grant_type") != "authorization_code" {
		return grant{}, "unsupported_grant_type", errors.New(s.fail("token: grant_type %q", f.Get("grant_type")))
	}
	code := f.Get("code")
	g, ok := s.codes[code]
	if !ok {
		return grant{}, "invalid_grant", errors.New(s.fail("token: unknown or used code"))
	}
	delete(s.codes, code) // single use, whatever happens next
	if f.Get("redirect_uri") != g.redirectURI {
		return grant{}, "invalid_grant", errors.New(s.fail("token: redirect_uri %q differs from the authorization request", f.Get("redirect_uri")))
	}
	sum := sha256.Sum256([]byte(f.Get("code_verifier")))
	if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
		return grant{}, "invalid_grant", errors.New(s.fail("token: PKCE verifier does not match the challenge"))
	}
	return g, "", nil
}

// issueToken stores a new access token for the account.
func (s *server) issueToken(a Account) string {
	t := randomString()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[t] = a
	s.accounts[a.Subject] = a // the account as this sign-in or refresh shows it
	delete(s.deleted, a.Subject)
	s.secrets = append(s.secrets, t)
	return t
}

// bearer returns the account of the request's access token.
func (s *server) bearer(r *http.Request) (Account, bool) {
	t, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	s.mu.Lock()
	defer s.mu.Unlock()
	a, known := s.tokens[t]
	if known {
		a, known = s.current(a)
	}
	if !ok || !known {
		s.fail("%s: missing or unknown bearer token", r.URL.Path)
	}
	return a, ok && known
}

func (s *server) addSecret(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = append(s.secrets, v)
}

func randomString() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
