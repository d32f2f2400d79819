package authflows

import (
	"github.com/gatehouse-auth/gatehouse/authflows/provider"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// methodPassword is Session.Method of a password sign-in.
const methodPassword = "pwd"

// signInRefusal is the access check of every sign-in, after the credentials
// checked out: a disabled account (403 account_disabled), or one the access
// policy refuses given its email and the groups this sign-in earned (403
// access_denied). reason is empty when the user may sign in; otherwise it
// names the refusal for the event line.
func (h *core) signInRefusal(u storage.User, email, groups string) (web.Problem, string) {
	switch {
	case u.Disabled:
		return web.AccountDisabled, "account disabled"
	case !h.cfg.Policy.Passes(email, false, groups):
		return web.AccessDenied, "refused by the access policy"
	}
	return web.Problem{}, ""
}

// signupRefusal decides whether an OAuth identity that no user has may
// become an account (AP3): with the access policy on, only when it passes
// (an unverified email never matches a domain or the emails file); without
// a policy, only with --open-signup.
func (h *core) signupRefusal(id provider.Identity, groups string) (web.Problem, string) {
	email := ""
	if id.EmailVerified {
		email = id.Email
	}
	switch {
	case h.cfg.Policy.On():
		if !h.cfg.Policy.Passes(email, false, groups) {
			return web.AccessDenied, "refused by the access policy"
		}
	case !h.cfg.OpenSignup:
		return web.SignupClosed, "sign-up closed"
	}
	return web.Problem{}, ""
}
