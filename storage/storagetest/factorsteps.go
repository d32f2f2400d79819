package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func stepRecord(name, userID string, ttl time.Duration) storage.SecondFactorStep {
	return storage.SecondFactorStep{
		BrowserHash: hashOf("step cookie %s", name),
		UserID:      userID, Epoch: 3, Method: "github", Groups: "github:acme,github:acme/ops",
		Redirect:  "/after/" + name + "?q=1",
		CreatedAt: at(-time.Minute), ExpiresAt: at(ttl),
	}
}

func ceremonyRecord(name, purpose, userID string, ttl time.Duration) storage.WebAuthnCeremony {
	return storage.WebAuthnCeremony{
		BrowserHash: hashOf("ceremony cookie %s", name),
		Purpose:     purpose, UserID: userID, SessionHash: hashOf("session %s", name),
		Data:      []byte(`{"challenge":"` + name + `"}`),
		CreatedAt: at(-time.Minute), ExpiresAt: at(ttl),
	}
}

func testFactorSteps(t *testing.T, o Opener) {
	t.Run("StepReadThenTakeOnce", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		wantErr(t, "CreateSecondFactorStep(unknown user)",
			s.CreateSecondFactorStep(t.Context(), stepRecord("x", "nobody", 5*time.Minute)), storage.ErrNotFound)
		st := stepRecord("a", u.ID, 5*time.Minute)
		wantErr(t, "CreateSecondFactorStep", s.CreateSecondFactorStep(t.Context(), st), nil)
		// Reading leaves it usable (a mistyped code does not end the step).
		for range 2 {
			got, err := s.SecondFactorStep(t.Context(), st.BrowserHash, epoch)
			wantErr(t, "SecondFactorStep", err, nil)
			wantEqual(t, "SecondFactorStep", got, st)
		}
		got, err := s.TakeSecondFactorStep(t.Context(), st.BrowserHash, epoch)
		wantErr(t, "TakeSecondFactorStep", err, nil)
		wantEqual(t, "TakeSecondFactorStep", got, st)
		_, err = s.TakeSecondFactorStep(t.Context(), st.BrowserHash, epoch)
		wantErr(t, "TakeSecondFactorStep(taken)", err, storage.ErrNotFound)
		_, err = s.SecondFactorStep(t.Context(), st.BrowserHash, epoch)
		wantErr(t, "SecondFactorStep(taken)", err, storage.ErrNotFound)
		_, err = s.TakeSecondFactorStep(t.Context(), hashOf("step cookie of another browser"), epoch)
		wantErr(t, "TakeSecondFactorStep(another browser)", err, storage.ErrNotFound)
	})

	t.Run("StepKeepsTheSessionTimes", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		st := stepRecord("a", u.ID, 5*time.Minute)
		st.SessionCreatedAt, st.SessionExpiresAt = at(-3*time.Hour), at(165*time.Hour)
		wantErr(t, "CreateSecondFactorStep", s.CreateSecondFactorStep(t.Context(), st), nil)
		got, err := s.TakeSecondFactorStep(t.Context(), st.BrowserHash, epoch)
		wantErr(t, "TakeSecondFactorStep", err, nil)
		wantEqual(t, "TakeSecondFactorStep", got, st)
	})

	t.Run("StepKeepsTheGrant", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		for i, g := range []*storage.Grant{
			{UserID: u.ID, Provider: "github", Subject: "4242", SID: "", Tokens: nil},
			{UserID: u.ID, Provider: "github", Subject: "4242", SID: "op-7", Tokens: []byte("sealed\x00tokens"), NextRefresh: at(50 * time.Minute)},
		} {
			st := stepRecord(fmt.Sprint("grant", i), u.ID, 5*time.Minute)
			st.Grant = g
			wantErr(t, "CreateSecondFactorStep", s.CreateSecondFactorStep(t.Context(), st), nil)
			got, err := s.SecondFactorStep(t.Context(), st.BrowserHash, epoch)
			wantErr(t, "SecondFactorStep", err, nil)
			wantEqual(t, "SecondFactorStep", got, st)
			// Replaced by a step of a password sign-in: no grant is left.
			again := stepRecord(fmt.Sprint("grant", i), u.ID, 5*time.Minute)
			again.Method = storage.MethodPassword
			wantErr(t, "CreateSecondFactorStep(replace)", s.CreateSecondFactorStep(t.Context(), again), nil)
			got, err = s.TakeSecondFactorStep(t.Context(), st.BrowserHash, epoch)
			wantErr(t, "TakeSecondFactorStep", err, nil)
			wantEqual(t, "TakeSecondFactorStep", got, again)
		}
	})

	t.Run("StepExpires", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		st := stepRecord("a", u.ID, 5*time.Minute)
		wantErr(t, "CreateSecondFactorStep", s.CreateSecondFactorStep(t.Context(), st), nil)
		_, err := s.SecondFactorStep(t.Context(), st.BrowserHash, at(5*time.Minute))
		wantErr(t, "SecondFactorStep(expired)", err, storage.ErrNotFound)
		_, err = s.TakeSecondFactorStep(t.Context(), st.BrowserHash, at(5*time.Minute))
		wantErr(t, "TakeSecondFactorStep(expired)", err, storage.ErrNotFound)
		_, err = s.TakeSecondFactorStep(t.Context(), st.BrowserHash, epoch)
		wantErr(t, "TakeSecondFactorStep(after the expired take)", err, storage.ErrNotFound)
	})

	t.Run("StepReplaced", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		st := stepRecord("a", u.ID, 5*time.Minute)
		wantErr(t, "CreateSecondFactorStep", s.CreateSecondFactorStep(t.Context(), st), nil)
		again := stepRecord("a", other.ID, 4*time.Minute)
		again.Method, again.Groups, again.Redirect, again.Epoch = storage.MethodPassword, "", "/", 9
		wantErr(t, "CreateSecondFactorStep(same browser)", s.CreateSecondFactorStep(t.Context(), again), nil)
		got, err := s.TakeSecondFactorStep(t.Context(), st.BrowserHash, epoch)
		wantErr(t, "TakeSecondFactorStep", err, nil)
		wantEqual(t, "TakeSecondFactorStep", got, again)
	})

	t.Run("StepTakeConcurrent", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		st := stepRecord("a", u.ID, 5*time.Minute)
		wantErr(t, "CreateSecondFactorStep", s.CreateSecondFactorStep(t.Context(), st), nil)
		errs := concurrently(8, func(int) error {
			_, err := s.TakeSecondFactorStep(t.Context(), st.BrowserHash, epoch)
			return err
		})
		wantOneWinner(t, "TakeSecondFactorStep", errs, storage.ErrNotFound)
	})

	t.Run("CeremonyTakeOnce", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		for _, c := range []storage.WebAuthnCeremony{
			ceremonyRecord("reg", storage.CeremonyRegister, u.ID, 5*time.Minute),
			ceremonyRecord("login", storage.CeremonyLogin, "", 5*time.Minute),
			ceremonyRecord("2fa", storage.CeremonySecondFactor, u.ID, 5*time.Minute),
		} {
			if c.Purpose != storage.CeremonyRegister {
				c.SessionHash = storage.Hash{}
			}
			wantErr(t, "CreateWebAuthnCeremony", s.CreateWebAuthnCeremony(t.Context(), c), nil)
			got, err := s.TakeWebAuthnCeremony(t.Context(), c.BrowserHash, epoch)
			wantErr(t, "TakeWebAuthnCeremony", err, nil)
			wantEqual(t, "TakeWebAuthnCeremony", got, c)
			_, err = s.TakeWebAuthnCeremony(t.Context(), c.BrowserHash, epoch)
			wantErr(t, "TakeWebAuthnCeremony(taken)", err, storage.ErrNotFound)
		}
		_, err := s.TakeWebAuthnCeremony(t.Context(), hashOf("ceremony cookie of another browser"), epoch)
		wantErr(t, "TakeWebAuthnCeremony(another browser)", err, storage.ErrNotFound)
	})

	t.Run("CeremonyExpiresAndIsReplaced", func(t *testing.T) {
		s := o.newStore(t)
		c := ceremonyRecord("a", storage.CeremonyLogin, "", 5*time.Minute)
		wantErr(t, "CreateWebAuthnCeremony", s.CreateWebAuthnCeremony(t.Context(), c), nil)
		_, err := s.TakeWebAuthnCeremony(t.Context(), c.BrowserHash, at(5*time.Minute))
		wantErr(t, "TakeWebAuthnCeremony(expired)", err, storage.ErrNotFound)
		_, err = s.TakeWebAuthnCeremony(t.Context(), c.BrowserHash, epoch)
		wantErr(t, "TakeWebAuthnCeremony(after the expired take)", err, storage.ErrNotFound)

		wantErr(t, "CreateWebAuthnCeremony", s.CreateWebAuthnCeremony(t.Context(), c), nil)
		newer := ceremonyRecord("a", storage.CeremonyRegister, "someone", 6*time.Minute)
		wantErr(t, "CreateWebAuthnCeremony(same browser)", s.CreateWebAuthnCeremony(t.Context(), newer), nil)
		got, err := s.TakeWebAuthnCeremony(t.Context(), c.BrowserHash, epoch)
		wantErr(t, "TakeWebAuthnCeremony", err, nil)
		wantEqual(t, "TakeWebAuthnCeremony", got, newer)
	})

	t.Run("CeremonyTakeConcurrent", func(t *testing.T) {
		s := o.newStore(t)
		c := ceremonyRecord("a", storage.CeremonyLogin, "", 5*time.Minute)
		wantErr(t, "CreateWebAuthnCeremony", s.CreateWebAuthnCeremony(t.Context(), c), nil)
		errs := concurrently(8, func(int) error {
			_, err := s.TakeWebAuthnCeremony(t.Context(), c.BrowserHash, epoch)
			return err
		})
		wantOneWinner(t, "TakeWebAuthnCeremony", errs, storage.ErrNotFound)
	})

	t.Run("DeleteExpiredFactorRecords", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		oldStep, liveStep := stepRecord("old", u.ID, time.Minute), stepRecord("live", u.ID, time.Hour)
		oldCeremony := ceremonyRecord("old", storage.CeremonyLogin, "", time.Minute)
		liveCeremony := ceremonyRecord("live", storage.CeremonyLogin, "", time.Hour)
		for _, st := range []storage.SecondFactorStep{oldStep, liveStep} {
			wantErr(t, "CreateSecondFactorStep", s.CreateSecondFactorStep(t.Context(), st), nil)
		}
		for _, c := range []storage.WebAuthnCeremony{oldCeremony, liveCeremony} {
			wantErr(t, "CreateWebAuthnCeremony", s.CreateWebAuthnCeremony(t.Context(), c), nil)
		}
		confirmed := confirmedTOTP(t, s, u.ID, "f1", 1000, nil)
		other := createUser(t, s, 2)
		livePending := pendingTOTP(other.ID, "g1", time.Hour)
		wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), pendingTOTP(u.ID, "f2", time.Minute)), nil)
		wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), livePending), nil)

		n, err := s.DeleteExpiredFactorRecords(t.Context(), at(time.Minute))
		wantErr(t, "DeleteExpiredFactorRecords", err, nil)
		if n != 3 {
			t.Fatalf("DeleteExpiredFactorRecords: %d, want 3 (a step, a ceremony, a pending factor)", n)
		}
		wantFactors(t, s, u.ID, storage.SecondFactors{TOTP: []storage.TOTPFactor{confirmed}})
		wantFactors(t, s, other.ID, storage.SecondFactors{TOTP: []storage.TOTPFactor{livePending}})
		_, err = s.SecondFactorStep(t.Context(), oldStep.BrowserHash, epoch)
		wantErr(t, "SecondFactorStep(swept)", err, storage.ErrNotFound)
		_, err = s.TakeWebAuthnCeremony(t.Context(), oldCeremony.BrowserHash, epoch)
		wantErr(t, "TakeWebAuthnCeremony(swept)", err, storage.ErrNotFound)
		_, err = s.TakeSecondFactorStep(t.Context(), liveStep.BrowserHash, epoch)
		wantErr(t, "TakeSecondFactorStep(live)", err, nil)
		_, err = s.TakeWebAuthnCeremony(t.Context(), liveCeremony.BrowserHash, epoch)
		wantErr(t, "TakeWebAuthnCeremony(live)", err, nil)
		if n, err := s.DeleteExpiredFactorRecords(t.Context(), at(time.Minute)); err != nil || n != 0 {
			t.Fatalf("second sweep: %d, %v; want 0, nil", n, err)
		}
	})
}
