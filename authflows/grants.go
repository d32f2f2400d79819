package authflows

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/authflows/seal"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// A provider sign-in keeps a grant with its session (storage.Grant): who
// the provider account is, the OpenID Provider's sid, and, with
// --token-key-file, the provider's tokens sealed (authflows/seal), so that
// the refresher (refresh.go) can check the account again and a
// back-channel logout can find the session.

// grantStore is what keeping grants needs of the store.
type grantStore interface {
	PutGrant(ctx context.Context, g storage.Grant) error
	GrantOf(ctx context.Context, session storage.Hash) (storage.Grant, error)
	DeleteSession(ctx context.Context, idHash storage.Hash) error
}

// refreshJitter is the fraction of --session-refresh by which each check
// comes early, at random: the checks of sessions made together spread out
// instead of reaching the provider at once. A session is checked every
// 0.8 to 1.0 intervals, 0.9 on average.
const refreshJitter = 0.2

// grantBinding is what sealed tokens are bound to: the user, provider and
// account, so that they open only for a grant of the same sign-in (and
// still do after the session is re-issued under a new id).
func grantBinding(userID, providerName, subject string) []byte {
	return []byte(userID + "\x00" + providerName + "\x00" + subject)
}

// providerGrant is the grant of u's sign-in at p as id, its tokens sealed
// (with --token-key-file); its Session and NextRefresh are the session's.
func (h *core) providerGrant(u storage.User, p *provider.Provider, id provider.Identity) (storage.Grant, error) {
	g := storage.Grant{UserID: u.ID, Provider: p.Name, Subject: id.Subject, SID: id.SID}
	if h.cfg.TokenKey != nil && p.CanReidentify(id.Tokens) {
		var err error
		if g.Tokens, err = h.cfg.TokenKey.Seal(id.Tokens, grantBinding(u.ID, p.Name, id.Subject)); err != nil {
			return storage.Grant{}, fmt.Errorf("seal the provider tokens: %w", err)
		}
	}
	return g, nil
}

// startGrantSession starts the session of a provider sign-in (signedIn)
// and keeps g as its grant, due for a check after --session-refresh
// unless g says when. Failing to keep the grant ends the session again: a
// provider session the refresher and back-channel logout cannot find
// would escape them.
func (h *core) startGrantSession(w http.ResponseWriter, r *http.Request, u storage.User, signedIn storage.Session, g storage.Grant) error {
	s, err := h.issueSession(w, r, u, signedIn)
	if err != nil {
		return err
	}
	g.Session = s.IDHash
	if g.NextRefresh.IsZero() {
		g.NextRefresh = h.nextRefresh(s, g)
	}
	if err := h.grants.PutGrant(r.Context(), g); err != nil {
		return h.dropSession(r, s, err)
	}
	return nil
}

// dropSession deletes a session whose grant could not be kept, expires its
// cookie in the answer, and returns the cause.
func (h *core) dropSession(r *http.Request, s storage.Session, cause error) error {
	if err := h.grants.DeleteSession(context.WithoutCancel(r.Context()), s.IDHash); err != nil {
		h.log.ErrorContext(r.Context(), "delete a provider session whose grant was not kept", "user_id", s.UserID, "err", err)
	}
	return fmt.Errorf("keep the provider grant: %w", cause)
}

// grantOf returns the session's grant, nil when it has none.
func (h *core) grantOf(ctx context.Context, s storage.Session) (*storage.Grant, error) {
	g, err := h.grants.GrantOf(ctx, s.IDHash)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &g, nil
}

// keepGrant gives the re-issued session s the grant of the session it
// replaced; its refresh stays due when it was.
func (h *core) keepGrant(ctx context.Context, s storage.Session, g storage.Grant) error {
	g.Session = s.IDHash
	if err := h.grants.PutGrant(ctx, g); err != nil {
		return fmt.Errorf("carry the provider grant over: %w", err)
	}
	return nil
}

// nextRefresh is when the grant g of session s is checked next: after
// --session-refresh, less up to refreshJitter of it; never when nothing
// can be checked (no tokens, refresh off), which is the session's expiry.
func (h *core) nextRefresh(s storage.Session, g storage.Grant) time.Time {
	every := h.cfg.SessionRefresh
	if every <= 0 || g.Tokens == nil {
		return s.ExpiresAt
	}
	early := time.Duration(rand.Float64() * refreshJitter * float64(every))
	return h.now().Add(every - early)
}

// openTokens opens a grant's sealed tokens.
func (h *core) openTokens(g storage.Grant) (seal.Tokens, error) {
	if h.cfg.TokenKey == nil || g.Tokens == nil {
		return seal.Tokens{}, errors.New("no provider tokens kept")
	}
	return h.cfg.TokenKey.Open(g.Tokens, grantBinding(g.UserID, g.Provider, g.Subject))
}
