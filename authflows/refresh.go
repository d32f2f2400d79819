package authflows

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// refreshFlow checks provider sessions again with their provider, off the
// request path: each due grant's account is read again from its kept
// tokens (provider.Reidentify); the session's groups follow, or the
// session ends (audit session_ended_by_provider) when the provider
// refuses the grant, the account is gone or changed, its email is no
// longer verified, or the user no longer passes the access policy. A
// provider that cannot be asked changes nothing: the grant is taken again
// when its claim lapses.
type refreshFlow struct {
	*core
	store   refreshStore
	results *prometheus.CounterVec // gatehouse_session_refresh_total{result}
}

// refreshStore is what the refresher needs of the store.
type refreshStore interface {
	ClaimDueGrants(ctx context.Context, now, until time.Time, limit int) ([]storage.Grant, error)
	RefreshSession(ctx context.Context, session storage.Hash, groups string, tokens []byte, next time.Time) error
	Session(ctx context.Context, idHash storage.Hash) (storage.Session, error)
	DeleteSession(ctx context.Context, idHash storage.Hash) error
	UserByID(ctx context.Context, id string) (storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
}

const (
	// refreshBatch is how many grants one claim takes, and
	// refreshWorkers how many of them are checked at once.
	refreshBatch   = 50
	refreshWorkers = 10
	// refreshLease is the shortest time a claimed grant stays this
	// replica's: long enough for a batch against a provider that hangs
	// (each call gives up after 20 s: five rounds of ten). After the claim
	// (see claimFor) another pass, here or on another replica, takes it
	// again, as it does after a provider that could not be asked.
	refreshLease = 5 * time.Minute
)

// Refresh results, the label of gatehouse_session_refresh_total.
const (
	refreshKept        = "kept"        // checked, nothing changed
	refreshChanged     = "changed"     // checked, groups changed
	refreshEnded       = "ended"       // the session ended
	refreshUnreachable = "unreachable" // the provider could not be asked: nothing changed
	refreshError       = "error"       // the store failed: nothing changed
)

func newRefreshFlow(c *core, store refreshStore, reg prometheus.Registerer) (*refreshFlow, error) {
	results := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_session_refresh_total",
		Help: "Checks of provider sessions with their provider, by result: kept, changed (groups), ended, unreachable (nothing changed), error (store).",
	}, []string{"result"})
	if err := reg.Register(results); err != nil {
		return nil, err
	}
	for _, r := range []string{refreshKept, refreshChanged, refreshEnded, refreshUnreachable, refreshError} {
		results.WithLabelValues(r)
	}
	return &refreshFlow{core: c, store: store, results: results}, nil
}

// RefreshSessions checks the due provider sessions every tick until ctx
// ends. It does nothing without --token-key-file or with --session-refresh
// 0. cmd/gatehouse runs it beside the server, on every replica; the store's
// claim makes one replica at a time check a given session.
func (h *Handler) RefreshSessions(ctx context.Context) {
	every := h.cfg.SessionRefresh
	if every <= 0 || h.cfg.TokenKey == nil {
		return
	}
	t := time.NewTicker(refreshTick(every))
	defer t.Stop()
	for {
		h.RefreshDue(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refreshTick is how often the refresher looks for due sessions: a tenth
// of the interval, from 1 s to 30 s.
func refreshTick(every time.Duration) time.Duration {
	return min(max(every/10, time.Second), 30*time.Second)
}

// claimFor is how long a claim holds a grant: a quarter of the interval,
// at least refreshLease. A check that could not reach the provider is thus
// tried again four times an interval, not every few minutes: an outage
// does not multiply the calls to the provider.
func claimFor(every time.Duration) time.Duration { return max(every/4, refreshLease) }

// RefreshDue checks every provider session due now, batch by batch, and
// reports how many it took.
func (h *Handler) RefreshDue(ctx context.Context) int {
	f := h.refresh
	n := 0
	for ctx.Err() == nil {
		now := f.now()
		grants, err := f.store.ClaimDueGrants(ctx, now, now.Add(claimFor(f.cfg.SessionRefresh)), refreshBatch)
		if err != nil {
			f.log.ErrorContext(ctx, "session refresh: claim due sessions", "err", err)
			f.results.WithLabelValues(refreshError).Inc()
			return n
		}
		var wg sync.WaitGroup
		work := make(chan storage.Grant)
		for range min(refreshWorkers, len(grants)) {
			wg.Go(func() {
				for g := range work {
					f.results.WithLabelValues(f.check(ctx, g)).Inc()
				}
			})
		}
		for _, g := range grants {
			work <- g
		}
		close(work)
		wg.Wait()
		n += len(grants)
		if len(grants) < refreshBatch {
			return n
		}
	}
	return n
}

// check reads the account of g again and records the outcome; it returns
// the result label.
func (f *refreshFlow) check(ctx context.Context, g storage.Grant) string {
	log := f.log.With("user_id", g.UserID, "provider", g.Provider)
	s, err := f.store.Session(ctx, g.Session)
	if errors.Is(err, storage.ErrNotFound) {
		return refreshKept // ended meanwhile; its grant went with it
	}
	if err != nil {
		log.ErrorContext(ctx, "session refresh: read the session", "err", err)
		return refreshError
	}
	if !f.now().Before(s.ExpiresAt) {
		return refreshKept // expired: the sweep takes it with its grant
	}
	p, ok := f.providers[g.Provider]
	if !ok {
		log.WarnContext(ctx, "session refresh: provider no longer configured; session left as it is")
		return refreshUnreachable
	}
	tokens, err := f.openTokens(g)
	if err != nil {
		return f.end(ctx, s, g, "kept tokens do not open (token key rotated?)")
	}
	id, fresh, err := p.Reidentify(ctx, tokens)
	switch {
	case errors.Is(err, provider.ErrRefused):
		return f.end(ctx, s, g, "provider refused the grant: "+err.Error())
	case err != nil:
		log.WarnContext(ctx, "session refresh: provider not reached; session left as it is", "err", err)
		return refreshUnreachable
	case id.Subject != g.Subject:
		return f.end(ctx, s, g, "provider answered for another account")
	}
	u, err := f.store.UserByID(ctx, g.UserID)
	if errors.Is(err, storage.ErrNotFound) {
		return f.end(ctx, s, g, "user deleted")
	}
	if err != nil {
		log.ErrorContext(ctx, "session refresh: read the user", "err", err)
		return refreshError
	}
	ids, err := f.store.IdentitiesOfUser(ctx, u.ID)
	if err != nil {
		log.ErrorContext(ctx, "session refresh: read the identities", "err", err)
		return refreshError
	}
	i := slices.IndexFunc(ids, func(l storage.Identity) bool { return l.Provider == g.Provider && l.Subject == g.Subject })
	switch {
	case i < 0:
		return f.end(ctx, s, g, "identity unlinked")
	case ids[i].Email != "" && !id.EmailVerified:
		// Linked with a verified email, which the provider no longer vouches for.
		return f.end(ctx, s, g, "email no longer verified")
	}
	groups := f.cfg.Policy.Earned(id.Groups)
	if _, reason := f.signInRefusal(u, u.Email, groups); reason != "" {
		return f.end(ctx, s, g, reason)
	}
	sealed, err := f.cfg.TokenKey.Seal(fresh, grantBinding(g.UserID, g.Provider, g.Subject))
	if err != nil {
		log.ErrorContext(ctx, "session refresh: seal the tokens", "err", err)
		return refreshError
	}
	err = f.store.RefreshSession(ctx, g.Session, groups, sealed, f.nextRefresh(s, g))
	if errors.Is(err, storage.ErrNotFound) {
		return refreshKept // ended meanwhile
	}
	if err != nil {
		log.ErrorContext(ctx, "session refresh: record", "err", err)
		return refreshError
	}
	if groups != s.Groups {
		log.InfoContext(ctx, "session refresh: groups changed", "event", "session_groups_changed", "groups", groups)
		return refreshChanged
	}
	return refreshKept
}

// end deletes the session the provider check refused, with an event line
// and the audit event session_ended_by_provider.
func (f *refreshFlow) end(ctx context.Context, s storage.Session, g storage.Grant, reason string) string {
	if err := f.store.DeleteSession(ctx, s.IDHash); err != nil {
		f.log.ErrorContext(ctx, "session refresh: end the session", "user_id", g.UserID, "err", err)
		return refreshError
	}
	f.endedByProvider(ctx, s, g.Provider, reason)
	return refreshEnded
}

// endedByProvider writes the event line and the audit event of a session
// its provider ended (a refresh or a back-channel logout).
func (h *core) endedByProvider(ctx context.Context, s storage.Session, providerName, reason string) {
	h.log.LogAttrs(ctx, slog.LevelInfo, "auth event", slog.String("event", audit.SessionEndedByProvider),
		slog.String("user_id", s.UserID), slog.String("provider", providerName), slog.String("reason", reason))
	if h.cfg.Audit != nil {
		h.cfg.Audit.Record(audit.Event{Event: audit.SessionEndedByProvider, UserID: s.UserID, Email: s.Email, Provider: providerName})
	}
}
