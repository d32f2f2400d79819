package authflows

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
)

// PW2: a password is "counted after NFKC" and hashed in that form, and the
// sign-in form accepts it as typed. The account page's password change
// accepts the same current password the sign-in form accepts: a user whose
// password holds a character NFKC changes (a decomposed accent as pasted
// from a macOS file name, a full-width letter, a ligature) and who signs in
// with it is not told "wrong password" on the account page, each try
// spending the account's failed-login budget (DV1).
func TestPasswordChangeCurrentPasswordIsNFKC(t *testing.T) {
	e := newTestEnv(t)
	// "é" as e + COMBINING ACUTE ACCENT, a full-width Ｃ and the ﬁ ligature:
	// all three differ from their NFKC form.
	const typed = "Ｃafe\u0301 ﬁne horse staple"
	if password.Normalize(typed) == typed {
		t.Fatal("test password is already NFKC")
	}
	e.CreateUser(t, "nina@example.com", typed)
	cookie := e.Login(t, "nina@example.com", typed) // the sign-in form takes it as typed

	const next = "a brand new passphrase"
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": typed, "password": next, "confirm": next}, cookie)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("password change with the current password as the sign-in form takes it: %d %s", resp.StatusCode, e.Body(t, resp))
	}
	e.Login(t, "nina@example.com", next)
}

// DS2: "Oversized inputs (a password over 1024 code points, …) are refused
// before any hashing": at the sign-in form, and for the current_password of
// the account page's password change too.
func TestPasswordChangeOversizedCurrentPasswordNotHashed(t *testing.T) {
	e := newTestEnv(t)
	u := e.CreateUser(t, "olga@example.com", testPassword)
	cookie := e.StartSession(t, u)

	oversized := strings.Repeat("x", password.MaxLength+1)
	before := e.HashRuns()
	resp := e.PostJSON("/auth/account/password", map[string]string{"current_password": oversized, "password": "a brand new passphrase"}, cookie)
	if resp.StatusCode == http.StatusOK {
		t.Fatalf("an oversized current password was accepted: %s", e.Body(t, resp))
	}
	if runs := e.HashRuns() - before; runs != 0 {
		t.Errorf("oversized current_password (%d code points): %d argon2 runs, want 0 (DS2)", password.MaxLength+1, runs)
	}
}

// README (rate limits): "60 requests per client IP per minute to each of
// these endpoints [login, forgot, reset] pass before any throttling." The
// account page's password change (and the invite form) count in buckets of
// their own: one signed-in user behind a shared address (an office NAT, one
// IPv6 /64) who posts the account page's form 60 times in a minute does not
// spend the reset floor of that address.
func TestResetFloorNotSpentByAccountPasswordChange(t *testing.T) {
	e := newTestEnv(t)
	mallory := e.CreateUser(t, "mallory@example.com", testPassword)
	own := e.StartSession(t, mallory)
	for range 60 { // her own session, her own account: wrong current password
		e.PostJSON("/auth/account/password", map[string]string{"current_password": "not my password at all", "password": "a brand new passphrase"}, own)
	}

	victim := e.CreateUser(t, "victor@example.com", "")
	token := e.IssueResetToken(t, victim)
	resp := e.PostJSON("/auth/reset", map[string]string{"token": token, "password": "victor's fresh passphrase"}) // same client IP
	if resp.StatusCode == http.StatusTooManyRequests {
		t.Fatalf("first POST /auth/reset from the address: 429 after 60 account-page password changes (reset floor spent by another endpoint): %s", e.Body(t, resp))
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("reset: %d %s", resp.StatusCode, e.Body(t, resp))
	}
}
