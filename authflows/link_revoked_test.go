package authflows

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// revokedBeforeLink ends every session of the linking user just before the
// identity is written: a reset, "users revoke-sessions" or a disable that
// lands while the link callback talks to the provider (after the callback
// checked the session, before LinkIdentity).
type revokedBeforeLink struct {
	storage.Store
	revoke func(ctx context.Context, s storage.Store, userID string) error
}

func (s revokedBeforeLink) LinkIdentity(ctx context.Context, id storage.Identity, session storage.Hash) error {
	if err := s.revoke(ctx, s.Store, id.UserID); err != nil {
		return err
	}
	return s.Store.LinkIdentity(ctx, id, session)
}

// OA7 and CR1: a link completes only for the session that started it, and
// no session outlives a credential change. An attacker who holds a stolen
// session starts a link with their own GitHub account; the owner resets the
// password (or an admin revokes the sessions or disables the account) while
// the callback is at the provider. The callback checked the session before
// the exchange and never again: the identity is attached to the account
// after the session that asked for it was revoked, and the attacker signs
// in with GitHub afterwards, a way in that outlives the revocation.
func TestLinkCallbackRacingRevocationLinksNothing(t *testing.T) {
	revocations := map[string]func(ctx context.Context, s storage.Store, userID string) error{
		"revoke-sessions": func(ctx context.Context, s storage.Store, userID string) error {
			_, err := s.DeleteUserSessions(ctx, userID)
			return err
		},
		"reset": func(ctx context.Context, s storage.Store, userID string) error {
			now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
			tok := storage.ResetToken{Hash: storage.HashSecret("owner's reset token"), UserID: userID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := s.IssueResetToken(ctx, tok); err != nil {
				return err
			}
			_, _, err := s.CompleteReset(ctx, tok.Hash, now, "$argon2id$v=19$m=64,t=1,p=1$bmV3c2FsdG5ld3NhbHQ$bmV3aGFzaG5ld2hhc2huZXdoYXNobmV3aGFzaA", storage.Mail{})
			return err
		},
		"disable": func(ctx context.Context, s storage.Store, userID string) error {
			_, err := s.SetUserDisabled(ctx, userID, true)
			return err
		},
	}
	for name, revoke := range revocations {
		t.Run(name, func(t *testing.T) {
			e := newOAuthEnv(t, oauthEnvOptions{providers: []string{"github"}, wrapStore: func(s storage.Store) storage.Store {
				return revokedBeforeLink{Store: s, revoke: revoke}
			}})
			victim := e.newUser("victim@example.com", true)
			attacker := e.newBrowser()
			attacker.signIn(victim) // the stolen session
			e.github.SetNext(oauthtest.Account{Subject: "666", Email: "attacker@evil.example", EmailVerified: true})

			a := attacker.flow("/auth/link/github")
			if ids := e.identities(victim.ID); len(ids) != 0 {
				t.Errorf("link callback answered %d and attached %+v to the victim after their sessions were revoked", a.status, ids)
			}
			if name == "disable" {
				if _, err := e.Store.SetUserDisabled(t.Context(), victim.ID, false); err != nil { // the owner's account is restored
					t.Fatal(err)
				}
			}
			e.github.SetNext(oauthtest.Account{Subject: "666", Email: "attacker@evil.example", EmailVerified: true})
			later := e.newBrowser()
			if a := later.flow("/auth/login/github"); a.status == http.StatusSeeOther {
				if me, ok := later.me(); ok && me.ID == victim.ID {
					t.Errorf("the attacker's GitHub account signs in to the victim's account after the revocation")
				}
			}
		})
	}
}
