package authflows

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/authflows/password"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// Review (password sign-in and rules): failing tests first, no fix here.

// PW2: a password is "counted after NFKC" and hashed in that form, and the
// sign-in form accepts it as typed. The account page's password change must
// accept the same current password the sign-in form accepts: today it
// verifies current_password as sent, without NFKC, so a user whose password
// holds a character NFKC changes (a decomposed accent as pasted from a
// macOS file name, a full-width letter, a ligature) signs in with it but is
// told "wrong password" on the account page, and every try spends the
// account's failed-login budget (DV1) until the sign-in form locks too.
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
// before any hashing." The sign-in form does so; the account page's password
// change runs argon2 on a current_password of any length up to the body cap.
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

// PW1: "a stored hash with weaker parameters is upgraded at the next
// sign-in"; README: "stronger ones are kept"; the brief of the upgrade is
// that it never goes down. weakerThan calls a hash weaker when either its
// memory or its passes are lower, so a hash with four times the memory and
// one pass fewer (twice the total work, and OWASP's own m=47104,t=1 versus
// m=19456,t=2 trade) is rewritten at the next sign-in with a quarter of the
// memory: the stored hash gets cheaper to crack on GPUs.
func TestLoginUpgradeNeverLowersMemoryCost(t *testing.T) {
	current := password.HashParams{Memory: 64, Time: 2, Threads: 1}
	e := newTestEnv(t, func(c *Config) { c.Hash = current })
	memoryHard := password.HashParams{Memory: 4 * current.Memory, Time: current.Time - 1, Threads: 1} // 256 KiB × 1 = 2× the work of 64 KiB × 2
	stored, err := password.NewHasher(memoryHard).Hash(t.Context(), alicePassword)
	if err != nil {
		t.Fatal(err)
	}
	u := storage.User{ID: randomUserID(), Email: aliceEmail, PasswordHash: stored}
	if err := e.Store.CreateUser(t.Context(), u); err != nil {
		t.Fatal(err)
	}
	e.Login(t, aliceEmail, alicePassword)
	got, err := e.Store.UserByID(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	var p password.HashParams
	if _, err := fmt.Sscanf(strings.Split(got.PasswordHash, "$")[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		t.Fatalf("stored hash %q: %v", got.PasswordHash, err)
	}
	if p.Memory < memoryHard.Memory || uint64(p.Memory)*uint64(p.Time) < uint64(memoryHard.Memory)*uint64(memoryHard.Time) {
		t.Errorf("sign-in rewrote m=%d,t=%d (work %d) as m=%d,t=%d (work %d): the upgrade lowered the hash's cost",
			memoryHard.Memory, memoryHard.Time, memoryHard.Memory*memoryHard.Time, p.Memory, p.Time, p.Memory*p.Time)
	}
}

// CONTRACT (rate limits): "60 requests per client IP per minute to each of
// these endpoints [login, forgot, reset] pass before any throttling." The
// account page's password change (and the invite form) take their per-IP
// token from the reset endpoint's bucket, so one signed-in user behind a
// shared address (an office NAT, one IPv6 /64) who posts the account page's
// form 60 times in a minute makes the next POST /auth/reset from that address
// a 429 before any reset request was made: the reset floor is spent by
// another endpoint.
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
