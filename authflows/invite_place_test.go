package authflows

import (
	"cmp"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// rd survives an invitation as it survives a reset ("keep the user's
// place"): the page behind an invitation link opened with ?rd= keeps
// it in the form, through an error, and the accepted invitation goes there;
// an rd that a sign-in may not follow goes to "/".
func TestInviteKeepsPlace(t *testing.T) {
	for _, tc := range []struct{ rd, cookie, want string }{
		{cookie: "/from/forgot?x=1", want: "/from/forgot?x=1"}, // a forgot form's rd in this browser
		{rd: "/from/query", cookie: "/from/forgot", want: "/from/query"},
		{rd: "/reports/2026?sort=desc", want: "/reports/2026?sort=desc"},
		{rd: "https://evil.example/x", want: "/"},
		{rd: "", want: "/"},
	} {
		e := newTestEnv(t)
		u := e.CreateUser(t, "will@example.com", "")
		const token = "place-invite-token"
		if err := e.Store.IssueInviteToken(t.Context(), storage.ResetToken{Hash: storage.HashSecret(token), UserID: u.ID,
			CreatedAt: e.Clock.Now(), ExpiresAt: e.Clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		r := e.NewRequest(http.MethodGet, "/auth/invite?token="+token+"&rd="+url.QueryEscape(tc.rd), nil)
		r.Header.Set("Accept", "text/html")
		if tc.cookie != "" {
			r.AddCookie(&http.Cookie{Name: redirectCookie, Value: url.QueryEscape(tc.cookie)})
		}
		resp := e.Do(r)
		page := e.Body(t, resp)
		containsAll(t, "invite page rd="+tc.rd, page, `<input type="hidden" name="rd" value="`+tc.want+`">`)

		posted := cmp.Or(tc.rd, tc.want) // what the form holds, or what a forger sends
		refused := e.PostForm("/auth/invite", url.Values{"token": {token}, "rd": {posted}, "password": {"a fine long passphrase"}, "confirm": {"another long passphrase"}})
		containsAll(t, "invite form after a mismatch, rd="+tc.rd, e.Body(t, refused), `<input type="hidden" name="rd" value="`+tc.want+`">`)

		resp = e.PostForm("/auth/invite", url.Values{"token": {token}, "rd": {posted}, "password": {"a fine long passphrase"}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != tc.want {
			t.Errorf("accepted with rd %q: %d to %q, want 303 to %q", tc.rd, resp.StatusCode, resp.Header.Get("Location"), tc.want)
		}
	}
}
