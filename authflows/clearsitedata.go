package authflows

import "net/http"

// The browser's cache after sign-out (CS1). Signing out, and completing a
// password reset, answer with Clear-Site-Data: "cache", so the browser drops
// what it cached of the app, pages kept for Back included. Chromium does not
// act on the header of the sign-out answer alone (a 303), so the sign-in page
// shown after sign-out or reset also loads clearCacheAsset, whose answer
// carries the header again: after it, Back shows the sign-in page or asks
// the server afresh, never the protected page from the cache.

// clearCacheAsset is the empty stylesheet answered with Clear-Site-Data.
const clearCacheAsset = "/auth/assets/clear-cache.css"

// clearSiteCache asks the browser to drop its cache of this origin.
func clearSiteCache(w http.ResponseWriter) {
	w.Header().Set("Clear-Site-Data", `"cache"`)
}

// serveClearCache answers clearCacheAsset: an empty stylesheet with
// Clear-Site-Data: "cache" (and, as everything under /auth/, no-store).
func (h *Handler) serveClearCache(w http.ResponseWriter, r *http.Request) {
	clearSiteCache(w)
	w.Header().Set("Content-Type", "text/css; charset=utf-8")
	w.WriteHeader(http.StatusOK)
}

// signedOutCookie tells the sign-in page, for a minute, that it follows a
// sign-out, so that it loads clearCacheAsset; it keeps the sign-out's
// Location a plain /auth/login. It carries no secret.
const signedOutCookie = "gatehouse_signed_out"

// markSignedOut sets signedOutCookie on the sign-out answer.
func (h *core) markSignedOut(w http.ResponseWriter) {
	http.SetCookie(w, &http.Cookie{
		Name: signedOutCookie, Value: "1", Path: "/auth/login", MaxAge: 60,
		HttpOnly: true, Secure: h.cfg.CookieSecure, SameSite: http.SameSiteLaxMode,
	})
}

// justSignedOut reports whether the request carries signedOutCookie, and
// expires it: the sign-in page clears the cache once.
func (h *core) justSignedOut(w http.ResponseWriter, r *http.Request) bool {
	if _, err := r.Cookie(signedOutCookie); err != nil {
		return false
	}
	http.SetCookie(w, &http.Cookie{
		Name: signedOutCookie, Value: "", Path: "/auth/login", MaxAge: -1,
		HttpOnly: true, Secure: h.cfg.CookieSecure, SameSite: http.SameSiteLaxMode,
	})
	return true
}
