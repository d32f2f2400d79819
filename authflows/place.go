package authflows

import (
	"net/http"
	"net/url"
	"time"
)

// Keeping the user's place across a journey: the page they wanted (rd)
// through forgot and reset, the email after a reset, and the notice that says
// what just happened. None of these is a secret; the cookies are HttpOnly,
// scoped to /auth/ and short-lived, and rd is checked again where it is used
// (OA10).

const (
	// redirectCookie carries rd from the forgot form to the reset page in
	// the same browser (the mailed link holds only the token).
	redirectCookie = "gatehouse_rd"
	// emailHintCookie fills in the sign-in form after a reset.
	emailHintCookie = "gatehouse_email_hint"
	emailHintTTL    = 10 * time.Minute
	// The sign-in page after sign-out says so from signedOutCookie
	// (clearsitedata.go): the contract fixes that address as /auth/login.
)

// notices are the fixed messages a ?notice= may show; anything else shows
// nothing, so no text of the query reaches the page.
var notices = map[string]string{
	"signed_out":       "You are signed out.",
	"password_reset":   "Your password was changed, sign in.",
	"password_changed": "Your password was changed.",
	"linked":           "The account was linked. You can now sign in with it.",
	"unlinked":         "The account was unlinked.",
}

// noticeOf returns the notice of a page address's query.
func noticeOf(q url.Values) string {
	if q.Get("reset") == "1" { // v1's address after a reset
		return notices["password_reset"]
	}
	return notices[q.Get("notice")]
}

// withNotice adds ?notice=key (or &notice=key) to a local path.
func withNotice(path, key string) string {
	u, err := url.Parse(path)
	if err != nil {
		return path
	}
	q := u.Query()
	q.Set("notice", key)
	u.RawQuery = q.Encode()
	return u.String()
}

// withRedirect is path?rd=… for an rd that a finished sign-in may follow
// (redirectTarget: a local path, or an absolute URL of an allowed host)
// other than "/", else path.
func (h *core) withRedirect(path, rd string) string {
	if rd = h.redirectTarget(rd); rd == "/" {
		return path
	}
	return path + "?rd=" + url.QueryEscape(rd)
}

// placeCookie is one of the short-lived helper cookies of this file.
func (h *core) placeCookie(name, value, path string, maxAge time.Duration) *http.Cookie {
	c := &http.Cookie{Name: name, Value: url.QueryEscape(value), Path: path, MaxAge: int(maxAge.Seconds()),
		HttpOnly: true, Secure: h.cfg.CookieSecure, SameSite: http.SameSiteLaxMode}
	if maxAge < 0 {
		c.MaxAge, c.Value = -1, ""
	}
	return c
}

// placeCookieValue reads a helper cookie, "" when absent.
func placeCookieValue(r *http.Request, name string) string {
	c, err := r.Cookie(name)
	if err != nil {
		return ""
	}
	v, err := url.QueryUnescape(c.Value)
	if err != nil {
		return ""
	}
	return v
}
