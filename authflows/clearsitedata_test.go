package authflows

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// CS1: sign-out (JSON and form) and a completed reset answer with
// Clear-Site-Data: "cache"; the sign-in page shown after a form sign-out or
// a reset loads a resource that answers the same, once; a plain visit to
// the sign-in page does not.
func TestClearSiteDataAfterSignOutAndReset(t *testing.T) {
	e := newMailEnv(t, mailEnvConfig{})
	e.CreateUser(t, "alice@example.com", oldPassword)
	const header = `"cache"`
	link := `href="` + clearCacheAsset + `"`

	cookie := e.Login(t, "alice@example.com", oldPassword)
	if resp := e.PostJSON("/auth/logout", map[string]string{}, cookie); resp.Header.Get("Clear-Site-Data") != header {
		t.Errorf("JSON sign-out: Clear-Site-Data %q", resp.Header.Get("Clear-Site-Data"))
	}

	cookie = e.Login(t, "alice@example.com", oldPassword)
	resp := e.PostForm("/auth/logout", url.Values{}, cookie)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/auth/login" || resp.Header.Get("Clear-Site-Data") != header {
		t.Fatalf("form sign-out: %d to %q, Clear-Site-Data %q", resp.StatusCode, resp.Header.Get("Location"), resp.Header.Get("Clear-Site-Data"))
	}
	var marker *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == signedOutCookie {
			marker = c
		}
	}
	if marker == nil {
		t.Fatal("form sign-out leaves the sign-in page no sign that it follows a sign-out")
	}
	page := e.Get("/auth/login", marker)
	if body := e.Body(t, page); !strings.Contains(body, link) {
		t.Errorf("sign-in page after sign-out does not load %s", clearCacheAsset)
	}
	expired := false
	for _, c := range page.Cookies() {
		expired = expired || c.Name == signedOutCookie && c.MaxAge < 0
	}
	if !expired {
		t.Error("the sign-out marker is not expired by the sign-in page: every later visit would clear the cache")
	}
	if body := e.Body(t, e.Get("/auth/login")); strings.Contains(body, link) {
		t.Error("a plain visit to the sign-in page clears the cache")
	}

	asset := e.Get(clearCacheAsset)
	if asset.StatusCode != http.StatusOK || asset.Header.Get("Clear-Site-Data") != header ||
		!strings.HasPrefix(asset.Header.Get("Content-Type"), "text/css") || !strings.Contains(asset.Header.Get("Cache-Control"), "no-store") {
		t.Errorf("%s: %d, headers %v", clearCacheAsset, asset.StatusCode, asset.Header)
	}

	token := e.resetToken(t, "alice@example.com")
	if resp := e.postReset(token, freshPassword); resp.StatusCode != http.StatusOK || resp.Header.Get("Clear-Site-Data") != header {
		t.Errorf("completed reset: %d, Clear-Site-Data %q", resp.StatusCode, resp.Header.Get("Clear-Site-Data"))
	}
	if body := e.Body(t, e.Get("/auth/login?reset=1")); !strings.Contains(body, link) {
		t.Errorf("sign-in page after a reset does not load %s", clearCacheAsset)
	}
	// A refused reset clears nothing.
	if resp := e.postReset("not-a-token", freshPassword); resp.Header.Get("Clear-Site-Data") != "" {
		t.Error("a refused reset sends Clear-Site-Data")
	}
}
