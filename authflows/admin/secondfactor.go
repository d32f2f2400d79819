package admin

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// SecondFactorAPI is the administration of second factors: a user who
// lost every factor and every recovery code gets them removed, and then
// signs in with the password alone (or enrols again where one is required).
type SecondFactorAPI interface {
	ResetSecondFactor(ctx context.Context, email string) (FactorReset, error)
}

// FactorReset is the outcome of ResetSecondFactor.
type FactorReset struct {
	User           User `json:"user"`
	FactorsRemoved int  `json:"factors_removed"`
}

// FactorStore is what ResetSecondFactor needs of the store.
type FactorStore interface {
	ResetSecondFactor(ctx context.Context, userID string) (int, error)
}

// ResetSecondFactor removes every second factor of the user (authenticator
// apps, passkeys, recovery codes), writes the audit event factor_removed
// and mails the user a notice.
func (s *Service) ResetSecondFactor(ctx context.Context, email string) (FactorReset, error) {
	u, err := s.user(ctx, email)
	if err != nil {
		return FactorReset{}, err
	}
	n, err := s.Store.ResetSecondFactor(ctx, u.ID)
	if err != nil {
		return FactorReset{}, err
	}
	s.record(ctx, audit.FactorRemoved, u, slog.Int("factors_removed", n))
	if _, err := s.Store.EnqueueMail(ctx, storage.FactorChangedJob(u, s.now(), storage.FactorNoticeReset)); err != nil {
		if s.Logger != nil {
			s.Logger.ErrorContext(ctx, "reset second factor: queue notice mail", "user_id", u.ID, "err", err)
		}
	} else if s.WakeMailer != nil {
		s.WakeMailer()
	}
	d, err := s.describe(ctx, u, false)
	return FactorReset{User: d, FactorsRemoved: n}, err
}

// secondFactorRoutes registers POST /v1/users/{email}/reset-second-factor.
func (h *Handler) secondFactorRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /v1/users/{email}/reset-second-factor", func(w http.ResponseWriter, r *http.Request) {
		f, err := h.api.ResetSecondFactor(r.Context(), r.PathValue("email"))
		h.answer(w, r, http.StatusOK, f, err)
	})
}

// ResetSecondFactor asks the server to remove every second factor of the user.
func (c *Client) ResetSecondFactor(ctx context.Context, email string) (FactorReset, error) {
	var f FactorReset
	return f, c.do(ctx, http.MethodPost, userPath(email, "/reset-second-factor"), nil, &f)
}
