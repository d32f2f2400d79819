package web

import (
	"net/http"
	"strings"
)

// Help is what an error page says beyond the problem's title: a short
// heading, what to do next, and the action that fixes it.
type Help struct {
	Heading   string
	Next      string
	Action    string
	ActionURL string
	// Secondary is an optional second way out (e.g. back to sign in).
	Secondary, SecondaryURL string
}

// HelpFor returns the help of problem p answered to r. p.ActionURL, when
// set, replaces the usual action's address; for server-side trouble the
// action is to try the same GET again.
func HelpFor(r *http.Request, p Problem) Help {
	h := helpByCode(p)
	if p.ActionURL != "" {
		h.ActionURL = p.ActionURL
	}
	if h.ActionURL == "" { // try again: the same address for a GET, else the start
		h.ActionURL = "/"
		if r != nil && r.Method == http.MethodGet && strings.HasPrefix(r.URL.RequestURI(), "/") {
			h.ActionURL = r.URL.RequestURI()
		}
	}
	if h.Heading == "" {
		h.Heading = p.Title
	}
	return h
}

func helpByCode(p Problem) Help {
	const (
		login   = "/auth/login"
		account = "/auth/account"
	)
	signInAgain := Help{Action: "Sign in", ActionURL: login}
	switch p.Code {
	case "unauthenticated":
		h := signInAgain
		h.Heading, h.Next = "Please sign in", "You need to be signed in to see this page. After signing in you come back here."
		return h
	case "invalid_token":
		if p.Status == http.StatusUnauthorized { // a bearer credential on a tokens route
			return Help{Heading: "Token refused", Next: "The bearer token sent with this request is invalid, expired or revoked, or its owner may no longer sign in. Ask for a new token.",
				Action: "Go to the start", ActionURL: "/"}
		}
		return Help{Heading: "Link expired", Next: "Each link works once, for a limited time, and only the newest one you asked for. Ask for a new link.",
			Action: "Ask for a new link", ActionURL: "/auth/forgot", Secondary: "Back to sign in", SecondaryURL: login}
	case "reauthentication_required":
		h := signInAgain
		h.Heading, h.Next, h.Action = "Sign in again", "This page needs a recent sign-in or a second factor. Sign in again; after that you come back here.", "Sign in again"
		return h
	case "invalid_state", "invalid_id_token", "invalid_request":
		h := signInAgain
		h.Heading, h.Next, h.Action = "Sign-in interrupted", "The sign-in took too long, was opened in another browser or tab, or was already used. Start it again.", "Start again"
		return h
	case "access_denied":
		if p.Status == http.StatusBadRequest { // cancelled at the provider
			h := signInAgain
			h.Heading, h.Next = "Sign-in cancelled", "Nothing was changed. Sign in again, with this provider or another way."
			return h
		}
		return Help{Heading: "Not allowed", Next: "Sign in with another account, or ask the people who run it for access.",
			Action: "Use another account", ActionURL: login}
	case "account_disabled":
		return Help{Heading: "Account disabled", Next: "Ask the people who run this application to enable it again.", Action: "Back to sign in", ActionURL: login}
	case "signup_closed":
		h := signInAgain
		h.Heading, h.Next, h.Action = "No account", "Sign in with an account you already have, or ask the people who run this application for an invite.", "Sign in another way"
		return h
	case "email_not_verified":
		h := signInAgain
		h.Heading, h.Next = "Email not verified", "Verify your email address at the provider, then sign in again."
		return h
	case "account_exists":
		h := signInAgain
		h.Heading, h.Next = "Sign in, then link", "Sign in to your account the usual way, then link this provider on your account page."
		return h
	case "identity_in_use", "provider_already_linked", "last_login_method", "not_linked":
		return Help{Heading: "Not changed", Next: "Nothing was changed. Your account page shows what is linked.", Action: "Go to your account", ActionURL: account}
	case "rate_limited":
		h := signInAgain
		h.Heading, h.Next, h.Action = "Too many attempts", "Wait a few minutes, then try again. Forgot your password? Ask for a reset link.", "Back to sign in"
		h.Secondary, h.SecondaryURL = "Forgot your password?", "/auth/forgot"
		return h
	case "provider_error":
		h := signInAgain
		h.Heading, h.Next, h.Action = "Provider unavailable", "Try again in a moment, or sign in another way.", "Try again"
		return h
	case "not_found", "unknown_provider", "provider_not_configured":
		return Help{Heading: "Not found", Next: "The address may be mistyped or out of date.", Action: "Go to the start", ActionURL: "/"}
	case "cross_origin":
		h := signInAgain
		h.Heading, h.Next, h.Action = "Form refused", "The form was sent from another site. Open the page here and send it again.", "Back to sign in"
		return h
	}
	if p.Status >= 500 {
		return Help{Heading: "Please try again", Next: "Something went wrong for a moment. Try again; if it keeps happening, tell the people who run this application.", Action: "Try again"}
	}
	return Help{Next: "Go back and try again.", Action: "Go to the start", ActionURL: "/"}
}
