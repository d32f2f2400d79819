package authflows

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// accountFlow is the account page: linked identities, sessions, the
// password change (account_sessions.go).
type accountFlow struct {
	*core
	store  accountStore
	second *twoFactorFlow // the second factors section (twofactor_account.go)
}

// accountStore is what the account page needs of the store.
type accountStore interface {
	UserByID(ctx context.Context, id string) (storage.User, error)
	IdentitiesOfUser(ctx context.Context, userID string) ([]storage.Identity, error)
	UnlinkIdentity(ctx context.Context, userID, provider string) error
	SessionsOfUser(ctx context.Context, userID string) ([]storage.Session, error)
	DeleteOtherSessions(ctx context.Context, userID string, keep storage.Hash) (int, error)
	ChangePassword(ctx context.Context, userID string, epoch uint64, hash string) (storage.User, int, error)
	EnqueueMail(ctx context.Context, m storage.Mail) (uint64, error)
}

var (
	errNotLinked       = web.NewProblem(http.StatusNotFound, "not_linked", "No account of this provider is linked")
	errLastLoginMethod = web.NewProblem(http.StatusConflict, "last_login_method", "This is your only way to sign in: set a password or link another account first")
)

// accountPage is the data of pages/account.html.
type accountPage struct {
	Email       string
	HasPassword bool
	Accounts    []linkedAccount
	Sessions    []accountSession
	MinLength   int
	Notice      string // what just happened (?done=, ?notice=)
	Error       string // a refused password change
	// ErrorField is the input the error is about ("current_password" or
	// "password"), marked aria-invalid and tied to the error.
	ErrorField string
	AppURL     string // back to the app: a local ?rd=, else "/"
	Factors    factorsSection
}

// linkedAccount is one provider row of the account page.
type linkedAccount struct {
	Name, Title string
	Linked      bool
	Email       string // the provider's verified email at link time
	Subject     string
	CanLink     bool // configured, not linked: show a Link button
	OnlyMethod  bool // unlinking would be refused (OA9)
}

// account shows the signed-in user's account: GET /auth/account. Without a
// session it answers per --mode.
func (h *accountFlow) account(w http.ResponseWriter, r *http.Request) {
	s, ok := h.requireSession(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	notice := accountNotice(q.Get("done"))
	if notice == "" {
		notice = noticeOf(q)
	}
	h.renderAccount(w, r, s, http.StatusOK, notice, "", "")
}

// renderAccount renders the account page of the session's user.
func (h *accountFlow) renderAccount(w http.ResponseWriter, r *http.Request, s storage.Session, status int, notice, failure, field string) {
	u, err := h.store.UserByID(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	ids, err := h.store.IdentitiesOfUser(r.Context(), u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	sessions, err := h.accountSessions(r, s)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	factors, err := h.second.section(r.Context(), u.ID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	h.render(w, r, status, "account", accountPage{
		Factors:     factors,
		Email:       u.Email,
		HasPassword: u.PasswordHash != "",
		Accounts:    h.accountRows(u, ids),
		Sessions:    sessions,
		MinLength:   h.cfg.PasswordMinLength,
		Notice:      notice,
		Error:       failure,
		ErrorField:  field,
		AppURL:      h.redirectTarget(r.URL.Query().Get("rd")),
	})
}

// accountRows lists every configured provider, linked or not, then linked
// identities of providers no longer configured (they can still be unlinked).
func (h *accountFlow) accountRows(u storage.User, ids []storage.Identity) []linkedAccount {
	linked := map[string]storage.Identity{}
	for _, id := range ids {
		linked[id.Provider] = id
	}
	only := u.PasswordHash == "" && len(ids) == 1
	var rows []linkedAccount
	row := func(name string) linkedAccount {
		id, ok := linked[name]
		_, configured := h.providers[name]
		delete(linked, name)
		return linkedAccount{
			Name: name, Title: h.providerTitle(name), Linked: ok,
			Email: id.Email, Subject: id.Subject,
			CanLink: configured && !ok, OnlyMethod: ok && only,
		}
	}
	for _, k := range provider.Kinds() {
		name := k.Name
		_, configured := h.providers[name]
		if _, ok := linked[name]; configured || ok {
			rows = append(rows, row(name))
		}
	}
	for _, id := range ids {
		if _, ok := linked[id.Provider]; ok {
			rows = append(rows, row(id.Provider))
		}
	}
	return rows
}

// LinkURL starts linking the provider and comes back to the account page,
// which then says the account was linked.
func (a linkedAccount) LinkURL() string {
	return "/auth/link/" + url.PathEscape(a.Name) + "?rd=" + url.QueryEscape(withNotice("/auth/account", "linked"))
}

// unlinkPage asks to confirm an unlink: GET /auth/unlink/{provider}. Its
// form posts to /auth/unlink/{provider}. Without a session it answers per
// --mode, an old sign-in as recentSession does (MF3); for an identity
// that is not linked, 404 not_linked.
func (h *accountFlow) unlinkPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("provider")
	if _, ok := provider.KindOf(name); !ok {
		h.problem(w, r, errUnknownProvider)
		return
	}
	s, ok := h.recentSession(w, r)
	if !ok {
		return
	}
	ids, err := h.store.IdentitiesOfUser(r.Context(), s.UserID)
	if err != nil {
		h.answerStoreFailure(w, r, err)
		return
	}
	for _, id := range ids {
		if id.Provider == name {
			h.render(w, r, http.StatusOK, "unlink", linkedAccount{Name: name, Title: h.providerTitle(name), Linked: true, Email: id.Email})
			return
		}
	}
	h.problem(w, r, errNotLinked)
}

// unlink detaches the user's identity of a provider: DELETE
// /auth/link/{provider} answers 204, the account page's form POST
// /auth/unlink/{provider} a 303 back to the page. Refused with 409
// last_login_method when it is the user's only way to sign in (OA9), 404
// not_linked when there is none. A provider that is no longer configured can
// still be unlinked. It needs a recent sign-in (recentSession, MF3).
func (h *accountFlow) unlink(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("provider")
	if _, ok := provider.KindOf(name); !ok {
		h.problem(w, r, errUnknownProvider)
		return
	}
	s, ok := h.recentSession(w, r) // without one: 401 for DELETE and POST in both modes
	if !ok {
		return
	}
	err := h.store.UnlinkIdentity(r.Context(), s.UserID, name)
	switch {
	case errors.Is(err, storage.ErrNotLinked):
		h.problem(w, r, errNotLinked)
		return
	case errors.Is(err, storage.ErrLastLoginMethod):
		h.oauthEvent(r, name, "refused", slog.String("user_id", s.UserID), slog.String("reason", "last login method"))
		h.problem(w, r, errLastLoginMethod)
		return
	case err != nil:
		h.answerStoreFailure(w, r, err)
		return
	}
	h.oauthEvent(r, name, "unlinked", slog.String("user_id", s.UserID))
	h.recordAudit(r, audit.IdentityUnlinked, s.UserID, s.Email, name)
	if r.Method == http.MethodPost {
		seeOther(w, r, withNotice("/auth/account", "unlinked"))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
