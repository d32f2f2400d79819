package authflows

import (
	"net/http"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// The steps the forms behind a mailed link (reset, invite) share.

// newPassword checks the posted password against the optional confirm field
// and the password rules (PW2, PW3, with the account's email and the app's
// names as context) and returns it normalized; otherwise ok is false and p
// says why (errPasswordMismatch, or errWeakPassword with the reason as
// Detail). p.Code doubles as the reason to log.
func (h *core) newPassword(in map[string]string, email string) (chosen string, p web.Problem, ok bool) {
	chosen = in["password"]
	if c, sent := in["confirm"]; sent && c != chosen {
		return "", errPasswordMismatch, false
	}
	chosen = password.Normalize(chosen)
	if err := password.Check(chosen, email, h.cfg.PasswordMinLength, h.appNames()...); err != nil {
		p = errWeakPassword
		p.Detail = err.Error()
		return "", p, false
	}
	return chosen, web.Problem{}, true
}

// tokenFormFailed answers p to a post of the form behind a mailed link of
// kind ("reset" or "invite", the name of both its page and its linkKinds
// entry). A browser gets the page again with the error above the form or,
// for a used, expired or unknown token, the 410 "link expired" page of the
// kind; other answers are problems (a JSON POST with a bad token keeps 400
// invalid_token, the code of errInvalidToken and errInvalidInvite alike).
func (h *core) tokenFormFailed(w http.ResponseWriter, r *http.Request, kind string, p web.Problem, form resetForm) {
	if !web.WantsHTML(r) || (form.Token == "" && p.Code != errInvalidToken.Code) {
		web.WriteProblem(w, r, p)
		return
	}
	w.Header().Set("Referrer-Policy", "no-referrer")
	switch {
	case p.Code == errInvalidToken.Code:
		h.renderLinkExpired(w, r, kind, form.Redirect)
		return
	case p.Detail != "":
		form.Error = p.Detail
	default:
		form.Error = p.Title + "."
	}
	h.render(w, r, p.Status, kind, form)
}

// appNames is the app's name as password context: --app-name and the host
// of --base-url (--app-name's default, then named once).
func (h *core) appNames() []string { return password.AppNames(h.cfg.AppName, h.cfg.BaseURL) }
