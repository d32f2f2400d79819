package authflows

import (
	"errors"
	"net/http"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// requireSession returns the request's active session. Without one it
// answers per --mode (Config.Denier: a redirect to sign in for GET and HEAD
// in redirect mode, 401 otherwise); when the store fails it answers 503
// (fail closed). ok is false when it has answered.
func (h *core) requireSession(w http.ResponseWriter, r *http.Request) (s storage.Session, ok bool) {
	s, err := h.currentSession(r)
	switch {
	case errors.Is(err, errNoSession):
		h.cfg.Denier.Deny(w, r)
		return storage.Session{}, false
	case err != nil:
		h.answerStoreFailure(w, r, err)
		return storage.Session{}, false
	}
	return s, true
}
