package authflows

import (
	"net/http"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
)

// recordAudit writes one audit event of the request (AD1, LG2): its id,
// the client IP and whom it concerns. Callers never pass secrets; the
// event type has no field for one.
func (h *core) recordAudit(r *http.Request, event, userID, email, provider string) {
	if h.cfg.Audit == nil {
		return
	}
	h.cfg.Audit.Record(audit.Event{
		Event:     event,
		RequestID: r.Header.Get("X-Request-Id"),
		ClientIP:  clientIPString(h.cfg.ClientIP(r)),
		UserID:    userID,
		Email:     email,
		Provider:  provider,
	})
}
