package authflows

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"golang.org/x/oauth2"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// oauthFlow is OAuth sign-in and linking: the start (here) and the
// callback (oauth_callback.go).
type oauthFlow struct {
	*core
	store oauthStore
	// starts limits the flows a client IP may start with each provider, so
	// that unauthenticated requests cannot fill the store with pending
	// flows (DS1): at most flowStartBurst per flowStartPeriod.
	starts map[string]*keyedLimiter
	// second steps a sign-in through /auth/2fa under --second-factor=required-all.
	second *twoFactorFlow
}

// oauthStore is what the OAuth flows need of the store.
type oauthStore interface {
	CreateOAuthFlow(ctx context.Context, f storage.OAuthFlow) error
	TakeOAuthFlow(ctx context.Context, stateHash storage.Hash, now time.Time) (storage.OAuthFlow, error)
	UserByID(ctx context.Context, id string) (storage.User, error)
	UserByIdentity(ctx context.Context, provider, subject string) (storage.User, error)
	UserByEmail(ctx context.Context, email string) (storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
	CreateUserWithIdentity(ctx context.Context, u storage.User, id storage.Identity) error
	LinkIdentity(ctx context.Context, id storage.Identity, session storage.Hash) error
}

// newOAuthFlow is the OAuth flow over c's providers, with a start limit
// for each.
func newOAuthFlow(c *core, store oauthStore) *oauthFlow {
	h := &oauthFlow{core: c, store: store, starts: map[string]*keyedLimiter{}}
	for name := range c.providers {
		h.starts[name] = newKeyedLimiter(flowStartBurst, flowStartPeriod, c.now)
	}
	return h
}

// shareLimits counts the start limits in rs, shared by several replicas.
func (h *oauthFlow) shareLimits(rs RateStore, onError func(bucket string, err error)) {
	for name, starts := range h.starts {
		starts.share(rs, "oauth_start_"+name, flowStartPeriod, onError)
	}
}

// transactionCookie binds a pending OAuth flow to the browser that started
// it (OA1). It lives as long as the flow and holds a random value whose
// hash the flow stores. With Secure cookies it is secureTransactionCookie,
// a __Host- cookie (Path=/, no Domain) that neither a sibling host nor a
// plain-http answer can plant, so that nobody can hand a victim's browser
// the binding of a flow the attacker started (login CSRF; CK1); the proxy
// keeps it from the upstream (SS8). Without, it is sent to the callback only.
const (
	transactionCookie       = "gatehouse_oauth"
	secureTransactionCookie = "__Host-" + transactionCookie
	transactionPath         = "/auth/callback/"
)

// TransactionCookieName is the OAuth transaction cookie's name, for the
// proxy to strip: secure says whether cookies are Secure.
func TransactionCookieName(secure bool) string {
	if secure {
		return secureTransactionCookie
	}
	return transactionCookie
}

// oauthFlowTTL is how long the user has at the provider (OA1: at most 10 min).
const oauthFlowTTL = 10 * time.Minute

// OAuthFlowTTL is oauthFlowTTL for cmd/gatehouse, which sweeps expired flows
// in step with it.
const OAuthFlowTTL = oauthFlowTTL

// oauthLogin starts signing in with a provider: GET /auth/login/{provider}.
func (h *oauthFlow) oauthLogin(w http.ResponseWriter, r *http.Request) {
	p, ok := h.configuredProvider(w, r)
	if !ok {
		return
	}
	h.startFlow(w, r, p, storage.PurposeLogin, storage.Hash{})
}

// oauthLink starts attaching a provider account to the signed-in user:
// GET /auth/link/{provider}. Without a session it answers per --mode; a
// session older than the recent sign-in window must sign in again first
// (MF3: a stolen session cannot add a way in of its holder's).
func (h *oauthFlow) oauthLink(w http.ResponseWriter, r *http.Request) {
	p, ok := h.configuredProvider(w, r)
	if !ok {
		return
	}
	s, ok := h.recentSession(w, r)
	if !ok {
		return
	}
	h.startFlow(w, r, p, storage.PurposeLink, s.IDHash)
}

// startFlow stores a pending flow under the hash of a fresh state, sets the
// transaction cookie and sends the browser to the provider with the state,
// the PKCE S256 challenge (OA2), the configured redirect_uri (OA3), the
// minimal scopes (OA11) and, for an OpenID provider, a nonce. A client IP past its
// limit of flow starts with this provider gets 429 and nothing is stored
// (DS1).
func (h *oauthFlow) startFlow(w http.ResponseWriter, r *http.Request, p *provider.Provider, purpose string, sessionHash storage.Hash) {
	if !h.starts[p.Name].allow(clientKey(h.cfg.ClientIP(r))) {
		h.oauthEvent(r, p.Name, "throttled", slog.String("purpose", purpose))
		web.WriteProblem(w, r, errRateLimited)
		return
	}
	state := newSecret() // 256 bits
	browser := newSecret()
	now := h.now()
	flow := storage.OAuthFlow{
		StateHash:   storage.HashSecret(state),
		Provider:    p.Name,
		Purpose:     purpose,
		Verifier:    oauth2.GenerateVerifier(),
		Redirect:    h.redirectTarget(r.URL.Query().Get("rd")),
		BrowserHash: storage.HashSecret(browser),
		SessionHash: sessionHash,
		CreatedAt:   now,
		ExpiresAt:   now.Add(oauthFlowTTL),
	}
	if p.UsesNonce() {
		flow.Nonce = newSecret()
	}
	if err := h.store.CreateOAuthFlow(r.Context(), flow); err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	http.SetCookie(w, h.transactionCookie(browser, int(oauthFlowTTL.Seconds())))
	h.event(r, "oauth_started", slog.String("provider", p.Name), slog.String("purpose", purpose))
	http.Redirect(w, r, p.AuthCodeURL(state, flow.Verifier, flow.Nonce), http.StatusFound)
}

// transactionCookie is HttpOnly, SameSite=Lax (the provider's redirect back
// is a top-level GET, which Lax lets through), limited to the callback path
// unless it is the __Host- one; maxAge < 0 expires it.
func (h *oauthFlow) transactionCookie(value string, maxAge int) *http.Cookie {
	c := &http.Cookie{
		Name:     transactionCookie,
		Value:    value,
		Path:     transactionPath,
		MaxAge:   maxAge,
		HttpOnly: true,
		Secure:   h.cfg.CookieSecure,
		SameSite: http.SameSiteLaxMode,
	}
	if h.cfg.CookieSecure {
		c.Name, c.Path = secureTransactionCookie, "/"
	}
	return c
}
