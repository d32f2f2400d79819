package authflows

import (
	"cmp"
	"crypto/subtle"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

var (
	errInvalidState      = web.NewProblem(http.StatusBadRequest, "invalid_state", "This sign-in link is invalid or has expired. Please start again")
	errInvalidIDToken    = web.NewProblem(http.StatusBadRequest, "invalid_id_token", "The provider's ID token was not valid for this sign-in")
	errProviderFailed    = web.NewProblem(http.StatusBadGateway, "provider_error", "The sign-in provider could not be reached or refused the request")
	errAccessDenied      = web.NewProblem(http.StatusBadRequest, "access_denied", "Sign-in was cancelled at the provider")
	errNoCode            = web.NewProblem(http.StatusBadRequest, "invalid_request", "The provider sent no authorization code")
	errEmailNotVerified  = web.NewProblem(http.StatusForbidden, "email_not_verified", "Your email address at the provider is not verified")
	errIdentityInUse     = web.NewProblem(http.StatusConflict, "identity_in_use", "This account is already linked to another user")
	errAlreadyLinked     = web.NewProblem(http.StatusConflict, "provider_already_linked", "You already linked another account of this provider; unlink it first")
	errAccountExists     = web.NewProblem(http.StatusConflict, "account_exists", "An account with this email already exists: sign in, then link")
	errInsufficientScope = web.NewProblem(http.StatusForbidden, "insufficient_scope", "The provider did not grant the access needed to check your memberships")
	errCallbackMethod    = web.NewProblem(http.StatusMethodNotAllowed, "method_not_allowed", "The sign-in callback answers GET only")
)

// callback completes a flow: GET /auth/callback/{provider}. The state is
// checked before anything else (exists, unexpired, single use, same browser,
// same provider, and for a link the same session: OA1, OA4, OA7); only then
// is the code redeemed and the account fetched. Every answer to a GET
// expires the transaction cookie.
//
// Only GET completes a flow: the mux hands HEAD to GET handlers, and a HEAD
// (a link checker, a prefetch) must not spend the state or the code, so it
// gets 405 and touches nothing.
func (h *oauthFlow) callback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		web.WriteProblem(w, r, errCallbackMethod)
		return
	}
	p, ok := h.configuredProvider(w, r)
	if !ok {
		return
	}
	http.SetCookie(w, h.transactionCookie("", -1))
	flow, session, reason, err := h.takeFlow(r, p)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	if reason != "" {
		h.oauthEvent(r, p.Name, "state_failed", slog.String("reason", reason))
		web.WriteProblem(w, r, errInvalidState)
		return
	}
	q := r.URL.Query()
	if e := q.Get("error"); e != "" {
		h.oauthEvent(r, p.Name, "error", slog.String("purpose", flow.Purpose), slog.String("reason", "provider answered "+e[:min(len(e), 64)]))
		if e == "access_denied" {
			web.WriteProblem(w, r, h.retryFrom(errAccessDenied, flow))
		} else {
			web.WriteProblem(w, r, h.retryFrom(errProviderFailed, flow))
		}
		return
	}
	code := q.Get("code")
	if code == "" {
		h.oauthEvent(r, p.Name, "error", slog.String("purpose", flow.Purpose), slog.String("reason", "no code"))
		web.WriteProblem(w, r, h.retryFrom(errNoCode, flow))
		return
	}
	id, err := p.Identify(r.Context(), code, flow.Verifier, flow.Nonce)
	if err != nil {
		var tokenErr provider.IDTokenError
		var scopeErr provider.ScopeError
		h.oauthEvent(r, p.Name, "error", slog.String("purpose", flow.Purpose), slog.String("reason", err.Error()))
		if errors.Is(err, provider.ErrClientRejected) {
			// The operator's mistake: every sign-in with p fails until fixed.
			h.log.ErrorContext(r.Context(), "the provider refused Gatehouse's client credentials: check --"+p.Name+"-client-secret (or --"+p.Name+"-client-secret-file) and --"+p.Name+"-client-id",
				"provider", p.Name, "reason", err.Error())
		}
		switch {
		case errors.As(err, &tokenErr):
			web.WriteProblem(w, r, h.retryFrom(errInvalidIDToken, flow))
		case errors.As(err, &scopeErr):
			web.WriteProblem(w, r, h.retryFrom(errInsufficientScope, flow))
		default:
			web.WriteProblem(w, r, h.retryFrom(errProviderFailed, flow))
		}
		return
	}
	if flow.Purpose == storage.PurposeLink {
		h.completeLink(w, r, p, flow, session, id)
		return
	}
	h.completeLogin(w, r, p, flow, id)
}

// takeFlow consumes the flow named by the state parameter and checks that it
// belongs here. A non-empty reason (for the event line, never the state
// itself) means invalid_state; err is a store failure. For a link it also
// returns the session, which must be the one that started the flow.
func (h *oauthFlow) takeFlow(r *http.Request, p *provider.Provider) (storage.OAuthFlow, storage.Session, string, error) {
	var none storage.OAuthFlow
	state := r.URL.Query().Get("state")
	if state == "" {
		return none, storage.Session{}, "missing state", nil
	}
	flow, err := h.store.TakeOAuthFlow(r.Context(), storage.HashSecret(state), h.now())
	if errors.Is(err, storage.ErrNotFound) {
		return none, storage.Session{}, "unknown, used or expired state", nil
	}
	if err != nil {
		return none, storage.Session{}, "", err
	}
	if c, err := r.Cookie(TransactionCookieName(h.cfg.CookieSecure)); err != nil || !sameHash(storage.HashSecret(c.Value), flow.BrowserHash) {
		return none, storage.Session{}, "other browser", nil
	}
	if flow.Provider != p.Name {
		return none, storage.Session{}, "state of another provider", nil
	}
	switch flow.Purpose {
	case storage.PurposeLogin:
		return flow, storage.Session{}, "", nil
	case storage.PurposeLink:
		s, err := h.currentSession(r)
		if errors.Is(err, errNoSession) {
			return none, storage.Session{}, "link without the session that started it", nil
		}
		if err != nil {
			return none, storage.Session{}, "", err
		}
		if !sameHash(s.IDHash, flow.SessionHash) {
			return none, storage.Session{}, "link from another session", nil
		}
		return flow, s, "", nil
	}
	return none, storage.Session{}, "unknown purpose", nil
}

// retryFrom points the error page's action of a failed flow where the user
// tries again: the sign-in page with the flow's rd, or the account page for
// a link.
func (h *oauthFlow) retryFrom(p web.Problem, flow storage.OAuthFlow) web.Problem {
	p.ActionURL = h.withRedirect("/auth/login", flow.Redirect)
	if flow.Purpose == storage.PurposeLink {
		p.ActionURL = "/auth/account"
	}
	return p
}

func sameHash(a, b storage.Hash) bool { return subtle.ConstantTimeCompare(a[:], b[:]) == 1 }

// completeLogin signs in the user of the identity. A new identity becomes a
// new password-less user only when sign-up is open to it (the access policy
// passes, or --open-signup without a policy: AP3), with a verified email
// (OA6) that no account has yet: an existing account is never merged into
// silently. Every sign-in, new account or not, must pass the policy.
func (h *oauthFlow) completeLogin(w http.ResponseWriter, r *http.Request, p *provider.Provider, flow storage.OAuthFlow, id provider.Identity) {
	groups := h.cfg.Policy.Earned(id.Groups)
	u, err := h.store.UserByIdentity(r.Context(), p.Name, id.Subject)
	if errors.Is(err, storage.ErrNotFound) {
		if problem, reason := h.signupRefusal(id, groups); reason != "" {
			if problem.Code == web.SignupClosed.Code && h.emailHasAccount(r, id) {
				// Sign-up is closed, but the person has an account: say
				// how to link, as with sign-up open (OA6).
				h.oauthEvent(r, p.Name, "refused", slog.String("reason", "email belongs to an existing account"))
				h.recordAudit(r, audit.SignupRefused, "", id.Email, p.Name)
				h.answerAccountExists(w, r, p, id.Email)
				return
			}
			h.oauthEvent(r, p.Name, "signup_refused", slog.String("reason", reason))
			h.recordAudit(r, audit.SignupRefused, "", id.Email, p.Name)
			h.refusedAt(w, r, problem, p.Title, cmp.Or(id.Email, id.Login))
			return
		}
		if !id.EmailVerified {
			h.oauthEvent(r, p.Name, "refused", slog.String("reason", "email not verified"))
			h.recordAudit(r, audit.SignupRefused, "", "", p.Name)
			web.WriteProblem(w, r, errEmailNotVerified)
			return
		}
		u, err = h.createOAuthUser(r, p, id)
		if errors.Is(err, storage.ErrEmailTaken) {
			h.oauthEvent(r, p.Name, "refused", slog.String("reason", "email belongs to an existing account"))
			h.recordAudit(r, audit.SignupRefused, "", id.Email, p.Name)
			h.answerAccountExists(w, r, p, id.Email)
			return
		}
	}
	if err == nil {
		if problem, reason := h.signInRefusal(u, u.Email, groups); reason != "" {
			h.oauthEvent(r, p.Name, "refused", slog.String("user_id", u.ID), slog.String("reason", reason))
			h.recordAudit(r, audit.AccessDenied, u.ID, u.Email, p.Name)
			h.refusedAt(w, r, problem, p.Title, cmp.Or(id.Email, id.Login))
			return
		}
		var g storage.Grant
		if g, err = h.providerGrant(u, p, id); err != nil {
			h.answerStoreFailure(w, r, err)
			return
		}
		if h.second.afterFirstFactor(w, r, u, p.Name, groups, flow.Redirect, &g) {
			return
		}
		err = h.startGrantSession(w, r, u, h.newSignIn(p.Name, groups), g)
	}
	if errors.Is(err, storage.ErrCredentialsChanged) {
		// Disabled (AP2), reset or revoked (CR1) while this sign-in was in
		// flight: no session.
		if now, lookupErr := h.store.UserByID(r.Context(), u.ID); lookupErr == nil && now.Disabled {
			h.oauthEvent(r, p.Name, "refused", slog.String("user_id", u.ID), slog.String("reason", "account disabled"))
			web.WriteProblem(w, r, web.AccountDisabled)
			return
		}
		h.oauthEvent(r, p.Name, "refused", slog.String("user_id", u.ID), slog.String("reason", "credentials changed"))
		web.WriteProblem(w, r, errCredentialsChanged)
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.oauthEvent(r, p.Name, "login", slog.String("user_id", u.ID), slog.String("groups", strings.Join(id.Groups, ",")))
	h.recordAudit(r, audit.Login, u.ID, u.Email, p.Name)
	seeOther(w, r, flow.Redirect)
}

// emailHasAccount reports whether the identity's verified email is an
// account's. A store failure counts as no: the answer stays "no account".
func (h *oauthFlow) emailHasAccount(r *http.Request, id provider.Identity) bool {
	if !id.EmailVerified || id.Email == "" {
		return false
	}
	_, err := h.store.UserByEmail(r.Context(), id.Email)
	return err == nil
}

// createOAuthUser creates a password-less user with the identity linked, in
// one store call; storage.ErrEmailTaken when the email has an account.
func (h *oauthFlow) createOAuthUser(r *http.Request, p *provider.Provider, id provider.Identity) (storage.User, error) {
	now := h.now()
	u := storage.User{ID: storage.NewUserID(), Email: id.Email, CreatedAt: now}
	err := h.store.CreateUserWithIdentity(r.Context(), u, storage.Identity{
		Provider: p.Name, Subject: id.Subject, Email: id.Email, UserID: u.ID, CreatedAt: now,
	})
	if errors.Is(err, storage.ErrIdentityInUse) {
		// A concurrent callback for the same account created it first.
		return h.store.UserByIdentity(r.Context(), p.Name, id.Subject)
	}
	if err != nil {
		return storage.User{}, err
	}
	h.oauthEvent(r, p.Name, "user_created", slog.String("user_id", u.ID))
	h.recordAudit(r, audit.UserCreated, u.ID, u.Email, p.Name)
	return u, nil
}

// answerAccountExists explains OA6 to the user: the address belongs to an
// account; sign in to it and link the provider from the account page.
func (h *oauthFlow) answerAccountExists(w http.ResponseWriter, r *http.Request, p *provider.Provider, email string) {
	if !web.WantsHTML(r) {
		web.WriteProblem(w, r, errAccountExists)
		return
	}
	h.render(w, r, errAccountExists.Status, "account_exists", struct {
		Provider, Email, LoginURL string
	}{p.Title, email, "/auth/login?rd=" + url.QueryEscape("/auth/account")})
}

// completeLink attaches the identity to the session's user. The session is
// kept as it is: no session cookie is set (the contract's "no new session").
// The store links only while that session still stands: a reset, a
// revocation or a disable that landed while the provider answered leaves
// nothing linked (OA7, CR1).
func (h *oauthFlow) completeLink(w http.ResponseWriter, r *http.Request, p *provider.Provider, flow storage.OAuthFlow, s storage.Session, id provider.Identity) {
	identity := storage.Identity{Provider: p.Name, Subject: id.Subject, Email: id.Email, UserID: s.UserID, CreatedAt: h.now()}
	err := h.store.LinkIdentity(r.Context(), identity, s.IDHash)
	// The session ended meanwhile: revoked, or its user deleted.
	if errors.Is(err, storage.ErrCredentialsChanged) || errors.Is(err, storage.ErrNotFound) {
		h.oauthEvent(r, p.Name, "refused", slog.String("user_id", s.UserID), slog.String("reason", "session ended"))
		h.expireCookie(w)
		web.WriteProblem(w, r, errCredentialsChanged)
		return
	}
	if errors.Is(err, storage.ErrIdentityInUse) {
		h.oauthEvent(r, p.Name, "refused", slog.String("user_id", s.UserID), slog.String("reason", "identity in use"))
		web.WriteProblem(w, r, h.linkConflict(r, p, s.UserID))
		return
	}
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.oauthEvent(r, p.Name, "linked", slog.String("user_id", s.UserID))
	h.recordAudit(r, audit.IdentityLinked, s.UserID, s.Email, p.Name)
	seeOther(w, r, flow.Redirect)
}

// linkConflict tells the two refusals of LinkIdentity apart: the user already
// has another account of this provider, or the account belongs to someone
// else (OA8: nothing more is said about that user).
func (h *oauthFlow) linkConflict(r *http.Request, p *provider.Provider, userID string) web.Problem {
	ids, err := h.store.IdentitiesOfUser(r.Context(), userID)
	if err == nil {
		for _, id := range ids {
			if id.Provider == p.Name {
				return errAlreadyLinked
			}
		}
	}
	return errIdentityInUse
}
