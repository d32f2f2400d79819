package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// pendingTOTP returns a pending TOTP factor of the user that lapses after ttl.
func pendingTOTP(userID, id string, ttl time.Duration) storage.TOTPFactor {
	return storage.TOTPFactor{
		ID: id, UserID: userID, Name: "Phone " + id,
		Secret:    []byte("secret of " + id + " 12345"),
		CreatedAt: at(-time.Minute), ExpiresAt: at(ttl),
	}
}

// recoverySet returns n recovery code hashes named after set.
func recoverySet(set string, n int) []storage.Hash {
	codes := make([]storage.Hash, n)
	for i := range codes {
		codes[i] = hashOf("recovery %s %d", set, i)
	}
	return codes
}

// passkeyRecord returns a passkey of the user with credential id cred.
func passkeyRecord(userID, id, cred string) storage.Passkey {
	return storage.Passkey{
		ID: id, UserID: userID, Name: "Key " + id,
		CredentialID: []byte("credential " + cred), PublicKey: []byte("cose key " + cred),
		AttestationType: "none", AttestationFormat: "none",
		AAGUID: make([]byte, 16), SignCount: 0, Transports: []string{"internal", "hybrid"},
		UserVerified: true, BackupEligible: true, BackupState: true,
		UserHandle: []byte(userID), CreatedAt: at(-time.Hour),
	}
}

// confirmedTOTP adds and confirms a TOTP factor at step, returning it as stored.
func confirmedTOTP(t *testing.T, s storage.Store, userID, id string, step int64, recovery []storage.Hash) storage.TOTPFactor {
	t.Helper()
	f := pendingTOTP(userID, id, 10*time.Minute)
	wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), f), nil)
	_, err := s.ConfirmTOTP(t.Context(), userID, id, step, epoch, recovery)
	wantErr(t, "ConfirmTOTP", err, nil)
	f.Confirmed, f.ExpiresAt = true, time.Time{}
	return f
}

func wantFactors(t *testing.T, s storage.Store, userID string, want storage.SecondFactors) {
	t.Helper()
	got, err := s.SecondFactors(t.Context(), userID)
	wantErr(t, "SecondFactors", err, nil)
	wantEqual(t, "SecondFactors", got, want)
}

func testFactors(t *testing.T, o Opener) {
	t.Run("NoneForNewOrUnknownUser", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		wantFactors(t, s, u.ID, storage.SecondFactors{})
		wantFactors(t, s, "nobody", storage.SecondFactors{})
		got, _ := s.SecondFactors(t.Context(), u.ID)
		if got.Enrolled() {
			t.Fatal("a user without factors is Enrolled")
		}
	})

	t.Run("PendingTOTP", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		wantErr(t, "AddPendingTOTP(unknown user)", s.AddPendingTOTP(t.Context(), pendingTOTP("nobody", "f0", time.Minute)), storage.ErrNotFound)
		first := pendingTOTP(u.ID, "f1", 10*time.Minute)
		wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), first), nil)
		wantFactors(t, s, u.ID, storage.SecondFactors{TOTP: []storage.TOTPFactor{first}})
		got, _ := s.SecondFactors(t.Context(), u.ID)
		if got.Enrolled() {
			t.Fatal("a pending TOTP factor counts as a second factor")
		}
		// A second enrolment replaces the first: at most one pending factor.
		second := pendingTOTP(u.ID, "f2", 10*time.Minute)
		wantErr(t, "AddPendingTOTP again", s.AddPendingTOTP(t.Context(), second), nil)
		wantFactors(t, s, u.ID, storage.SecondFactors{TOTP: []storage.TOTPFactor{second}})
		_, err := s.ConfirmTOTP(t.Context(), u.ID, first.ID, 100, epoch, nil)
		wantErr(t, "ConfirmTOTP(replaced)", err, storage.ErrNotFound)
	})

	t.Run("ConfirmTOTP", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		f := pendingTOTP(u.ID, "f1", 10*time.Minute)
		wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), f), nil)
		codes := recoverySet("first", 10)
		for _, c := range []struct {
			name         string
			user, factor string
			now          time.Time
			want         error
		}{
			{"another user's factor", other.ID, f.ID, epoch, storage.ErrNotFound},
			{"unknown factor", u.ID, "nope", epoch, storage.ErrNotFound},
			{"expired", u.ID, f.ID, at(10 * time.Minute), storage.ErrNotFound},
		} {
			_, err := s.ConfirmTOTP(t.Context(), c.user, c.factor, 100, c.now, codes)
			wantErr(t, "ConfirmTOTP("+c.name+")", err, c.want)
		}
		wantFactors(t, s, u.ID, storage.SecondFactors{TOTP: []storage.TOTPFactor{f}}) // nothing written
		first, err := s.ConfirmTOTP(t.Context(), u.ID, f.ID, 100, at(10*time.Minute-time.Microsecond), codes)
		wantErr(t, "ConfirmTOTP", err, nil)
		if !first {
			t.Fatal("ConfirmTOTP of the user's first factor: first = false")
		}
		f.Confirmed, f.ExpiresAt = true, time.Time{}
		wantFactors(t, s, u.ID, storage.SecondFactors{TOTP: []storage.TOTPFactor{f}, RecoveryCodesLeft: 10})
		_, err = s.ConfirmTOTP(t.Context(), u.ID, f.ID, 101, epoch, codes)
		wantErr(t, "ConfirmTOTP(already confirmed)", err, storage.ErrNotFound)
		// The confirming code's step is spent: the same code cannot sign in.
		wantErr(t, "AcceptTOTPStep(confirming step)", s.AcceptTOTPStep(t.Context(), u.ID, f.ID, 100), storage.ErrTOTPStepUsed)

		// A second factor is not the first: the recovery codes stay.
		g := pendingTOTP(u.ID, "f2", 10*time.Minute)
		wantErr(t, "AddPendingTOTP(second)", s.AddPendingTOTP(t.Context(), g), nil)
		_, err = s.ConfirmTOTP(t.Context(), u.ID, g.ID, 100, epoch, recoverySet("second", 10))
		wantErr(t, "ConfirmTOTP(second, spent step)", err, storage.ErrTOTPStepUsed)
		first, err = s.ConfirmTOTP(t.Context(), u.ID, g.ID, 101, epoch, recoverySet("second", 10))
		wantErr(t, "ConfirmTOTP(second)", err, nil)
		if first {
			t.Fatal("ConfirmTOTP of a second factor: first = true")
		}
		_, err = s.UseRecoveryCode(t.Context(), u.ID, recoverySet("second", 1)[0])
		wantErr(t, "UseRecoveryCode(code offered with the second factor)", err, storage.ErrNotFound)
		_, err = s.UseRecoveryCode(t.Context(), u.ID, codes[0])
		wantErr(t, "UseRecoveryCode(first set)", err, nil)
	})

	t.Run("AcceptTOTPStep", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		f := confirmedTOTP(t, s, u.ID, "f1", 1000, nil)
		pending := pendingTOTP(u.ID, "f2", 10*time.Minute)
		wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), pending), nil)
		for _, c := range []struct {
			name         string
			user, factor string
			step         int64
			want         error
		}{
			{"earlier step", u.ID, f.ID, 999, storage.ErrTOTPStepUsed},
			{"same step", u.ID, f.ID, 1000, storage.ErrTOTPStepUsed},
			{"next step", u.ID, f.ID, 1001, nil},
			{"next step again", u.ID, f.ID, 1001, storage.ErrTOTPStepUsed},
			{"a step skipped", u.ID, f.ID, 1003, nil},
			{"the skipped step", u.ID, f.ID, 1002, storage.ErrTOTPStepUsed},
			{"pending factor", u.ID, pending.ID, 1010, storage.ErrNotFound},
			{"another user's factor", other.ID, f.ID, 1010, storage.ErrNotFound},
			{"unknown factor", u.ID, "nope", 1010, storage.ErrNotFound},
		} {
			wantErr(t, "AcceptTOTPStep("+c.name+")", s.AcceptTOTPStep(t.Context(), c.user, c.factor, c.step), c.want)
		}
		// Steps are per user: another user's step is independent.
		g := confirmedTOTP(t, s, other.ID, "g1", 1001, nil)
		wantErr(t, "AcceptTOTPStep(other user)", s.AcceptTOTPStep(t.Context(), other.ID, g.ID, 1002), nil)
	})

	t.Run("AcceptTOTPStepConcurrent", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		f := confirmedTOTP(t, s, u.ID, "f1", 1000, nil)
		for step := int64(1001); step <= 1005; step++ {
			errs := concurrently(8, func(int) error { return s.AcceptTOTPStep(t.Context(), u.ID, f.ID, step) })
			wantOneWinner(t, fmt.Sprintf("AcceptTOTPStep(%d)", step), errs, storage.ErrTOTPStepUsed)
		}
	})

	t.Run("RecoveryCodes", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		wantErr(t, "ReplaceRecoveryCodes(no factor)", s.ReplaceRecoveryCodes(t.Context(), u.ID, recoverySet("a", 10)), storage.ErrNoSecondFactor)
		wantErr(t, "ReplaceRecoveryCodes(unknown user)", s.ReplaceRecoveryCodes(t.Context(), "nobody", recoverySet("a", 10)), storage.ErrNotFound)
		first := recoverySet("first", 10)
		confirmedTOTP(t, s, u.ID, "f1", 1000, first)
		confirmedTOTP(t, s, other.ID, "g1", 1000, recoverySet("theirs", 10))

		left, err := s.UseRecoveryCode(t.Context(), u.ID, first[3])
		wantErr(t, "UseRecoveryCode", err, nil)
		if left != 9 {
			t.Fatalf("UseRecoveryCode: %d left, want 9", left)
		}
		_, err = s.UseRecoveryCode(t.Context(), u.ID, first[3])
		wantErr(t, "UseRecoveryCode(used)", err, storage.ErrNotFound)
		_, err = s.UseRecoveryCode(t.Context(), u.ID, recoverySet("theirs", 1)[0])
		wantErr(t, "UseRecoveryCode(another user's code)", err, storage.ErrNotFound)
		_, err = s.UseRecoveryCode(t.Context(), "nobody", first[4])
		wantErr(t, "UseRecoveryCode(unknown user)", err, storage.ErrNotFound)

		// Regenerating voids the old set at once.
		second := recoverySet("second", 10)
		wantErr(t, "ReplaceRecoveryCodes", s.ReplaceRecoveryCodes(t.Context(), u.ID, second), nil)
		_, err = s.UseRecoveryCode(t.Context(), u.ID, first[4])
		wantErr(t, "UseRecoveryCode(old set)", err, storage.ErrNotFound)
		got, _ := s.SecondFactors(t.Context(), u.ID)
		if got.RecoveryCodesLeft != 10 {
			t.Fatalf("after regenerating: %d codes left, want 10", got.RecoveryCodesLeft)
		}
		for i, code := range second {
			left, err := s.UseRecoveryCode(t.Context(), u.ID, code)
			wantErr(t, "UseRecoveryCode(new set)", err, nil)
			if left != 9-i {
				t.Fatalf("code %d of the new set: %d left, want %d", i, left, 9-i)
			}
		}
		got, _ = s.SecondFactors(t.Context(), other.ID)
		if got.RecoveryCodesLeft != 10 {
			t.Fatalf("the other user's codes: %d left, want 10", got.RecoveryCodesLeft)
		}
	})

	t.Run("RecoveryCodeConcurrent", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		codes := recoverySet("a", 10)
		confirmedTOTP(t, s, u.ID, "f1", 1000, codes)
		for _, code := range codes[:4] {
			errs := concurrently(8, func(int) error {
				_, err := s.UseRecoveryCode(t.Context(), u.ID, code)
				return err
			})
			wantOneWinner(t, "UseRecoveryCode", errs, storage.ErrNotFound)
		}
	})

	t.Run("Passkeys", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		p := passkeyRecord(u.ID, "p1", "a")
		_, err := s.AddPasskey(t.Context(), passkeyRecord("nobody", "p0", "z"), nil)
		wantErr(t, "AddPasskey(unknown user)", err, storage.ErrNotFound)
		codes := recoverySet("first", 10)
		first, err := s.AddPasskey(t.Context(), p, codes)
		wantErr(t, "AddPasskey", err, nil)
		if !first {
			t.Fatal("AddPasskey of the user's first factor: first = false")
		}
		wantFactors(t, s, u.ID, storage.SecondFactors{Passkeys: []storage.Passkey{p}, RecoveryCodesLeft: 10})
		got, err := s.PasskeyByCredentialID(t.Context(), p.CredentialID)
		wantErr(t, "PasskeyByCredentialID", err, nil)
		wantEqual(t, "PasskeyByCredentialID", got, p)
		_, err = s.PasskeyByCredentialID(t.Context(), []byte("credential unknown"))
		wantErr(t, "PasskeyByCredentialID(unknown)", err, storage.ErrNotFound)

		// A credential id is registered once, across users.
		_, err = s.AddPasskey(t.Context(), passkeyRecord(other.ID, "q1", "a"), nil)
		wantErr(t, "AddPasskey(credential of another user)", err, storage.ErrPasskeyInUse)
		_, err = s.AddPasskey(t.Context(), passkeyRecord(u.ID, "p2", "a"), nil)
		wantErr(t, "AddPasskey(same credential again)", err, storage.ErrPasskeyInUse)
		wantFactors(t, s, other.ID, storage.SecondFactors{})

		second := passkeyRecord(u.ID, "p2", "b")
		second.CreatedAt = at(-time.Minute)
		first, err = s.AddPasskey(t.Context(), second, recoverySet("second", 10))
		wantErr(t, "AddPasskey(second)", err, nil)
		if first {
			t.Fatal("AddPasskey of a second factor: first = true")
		}
		wantFactors(t, s, u.ID, storage.SecondFactors{Passkeys: []storage.Passkey{p, second}, RecoveryCodesLeft: 10})
	})

	t.Run("PasskeyUse", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		p := passkeyRecord(u.ID, "p1", "a")
		p.UserVerified, p.BackupState = false, false
		_, err := s.AddPasskey(t.Context(), p, nil)
		wantErr(t, "AddPasskey", err, nil)
		steps := []struct {
			name  string
			user  string
			use   storage.PasskeyUse
			want  error
			after func(p *storage.Passkey)
		}{
			{"no counter (0 after 0)", u.ID, storage.PasskeyUse{SignCount: 0, BackupState: true, At: at(time.Minute)}, nil,
				func(p *storage.Passkey) { p.BackupState, p.LastUsedAt = true, at(time.Minute) }},
			{"counter starts", u.ID, storage.PasskeyUse{SignCount: 5, UserVerified: true, At: at(2 * time.Minute)}, nil,
				func(p *storage.Passkey) {
					p.SignCount, p.UserVerified, p.BackupState, p.LastUsedAt = 5, true, false, at(2*time.Minute)
				}},
			{"counter repeated", u.ID, storage.PasskeyUse{SignCount: 5, At: at(3 * time.Minute)}, storage.ErrPasskeySignCount, nil},
			{"counter back", u.ID, storage.PasskeyUse{SignCount: 4, At: at(3 * time.Minute)}, storage.ErrPasskeySignCount, nil},
			{"counter to zero", u.ID, storage.PasskeyUse{SignCount: 0, At: at(3 * time.Minute)}, storage.ErrPasskeySignCount, nil},
			{"another user", other.ID, storage.PasskeyUse{SignCount: 9, At: at(3 * time.Minute)}, storage.ErrNotFound, nil},
			// UserVerified, once true, stays true.
			{"counter grows", u.ID, storage.PasskeyUse{SignCount: 6, At: at(4 * time.Minute)}, nil,
				func(p *storage.Passkey) { p.SignCount, p.LastUsedAt = 6, at(4*time.Minute) }},
		}
		for _, step := range steps {
			err := s.RecordPasskeyUse(t.Context(), step.user, p.CredentialID, step.use)
			wantErr(t, "RecordPasskeyUse("+step.name+")", err, step.want)
			if step.after != nil {
				step.after(&p)
			}
			got, err := s.PasskeyByCredentialID(t.Context(), p.CredentialID)
			wantErr(t, "PasskeyByCredentialID", err, nil)
			wantEqual(t, "passkey after "+step.name, got, p)
		}
		err = s.RecordPasskeyUse(t.Context(), u.ID, []byte("credential unknown"), storage.PasskeyUse{SignCount: 9})
		wantErr(t, "RecordPasskeyUse(unknown credential)", err, storage.ErrNotFound)
	})

	t.Run("PasskeyUseConcurrent", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		p := passkeyRecord(u.ID, "p1", "a")
		_, err := s.AddPasskey(t.Context(), p, nil)
		wantErr(t, "AddPasskey", err, nil)
		for count := uint32(1); count <= 3; count++ {
			errs := concurrently(8, func(int) error {
				return s.RecordPasskeyUse(t.Context(), u.ID, p.CredentialID, storage.PasskeyUse{SignCount: count, At: epoch})
			})
			wantOneWinner(t, fmt.Sprintf("RecordPasskeyUse(%d)", count), errs, storage.ErrPasskeySignCount)
		}
	})

	t.Run("RemoveFactor", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		totp := confirmedTOTP(t, s, u.ID, "f1", 1000, recoverySet("a", 10))
		p := passkeyRecord(u.ID, "p1", "a")
		_, err := s.AddPasskey(t.Context(), p, nil)
		wantErr(t, "AddPasskey", err, nil)
		wantErr(t, "RemoveFactor(another user's)", s.RemoveFactor(t.Context(), other.ID, totp.ID), storage.ErrNotFound)
		wantErr(t, "RemoveFactor(unknown)", s.RemoveFactor(t.Context(), u.ID, "nope"), storage.ErrNotFound)
		wantErr(t, "RemoveFactor(totp)", s.RemoveFactor(t.Context(), u.ID, totp.ID), nil)
		wantErr(t, "RemoveFactor(totp again)", s.RemoveFactor(t.Context(), u.ID, totp.ID), storage.ErrNotFound)
		wantErr(t, "AcceptTOTPStep(removed)", s.AcceptTOTPStep(t.Context(), u.ID, totp.ID, 2000), storage.ErrNotFound)
		// The passkey is still a second factor: the codes stay.
		wantFactors(t, s, u.ID, storage.SecondFactors{Passkeys: []storage.Passkey{p}, RecoveryCodesLeft: 10})
		wantErr(t, "RemoveFactor(passkey)", s.RemoveFactor(t.Context(), u.ID, p.ID), nil)
		// No second factor left: the recovery codes go too, and the
		// credential id may be registered again.
		wantFactors(t, s, u.ID, storage.SecondFactors{})
		_, err = s.PasskeyByCredentialID(t.Context(), p.CredentialID)
		wantErr(t, "PasskeyByCredentialID(removed)", err, storage.ErrNotFound)
		_, err = s.AddPasskey(t.Context(), passkeyRecord(other.ID, "q1", "a"), nil)
		wantErr(t, "AddPasskey(credential of a removed passkey)", err, nil)

		// A pending factor can be removed (an enrolment abandoned).
		pending := pendingTOTP(u.ID, "f2", 10*time.Minute)
		wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), pending), nil)
		wantErr(t, "RemoveFactor(pending)", s.RemoveFactor(t.Context(), u.ID, pending.ID), nil)
		wantFactors(t, s, u.ID, storage.SecondFactors{})
	})

	t.Run("ResetSecondFactor", func(t *testing.T) {
		s := o.newStore(t)
		u, other := createUser(t, s, 1), createUser(t, s, 2)
		confirmedTOTP(t, s, u.ID, "f1", 1000, recoverySet("a", 10))
		p := passkeyRecord(u.ID, "p1", "a")
		_, err := s.AddPasskey(t.Context(), p, nil)
		wantErr(t, "AddPasskey", err, nil)
		wantErr(t, "AddPendingTOTP", s.AddPendingTOTP(t.Context(), pendingTOTP(u.ID, "f2", 10*time.Minute)), nil)
		theirs := confirmedTOTP(t, s, other.ID, "g1", 1000, recoverySet("b", 10))

		n, err := s.ResetSecondFactor(t.Context(), u.ID)
		wantErr(t, "ResetSecondFactor", err, nil)
		if n != 2 {
			t.Fatalf("ResetSecondFactor removed %d factors, want 2 (the pending one is not a factor)", n)
		}
		wantFactors(t, s, u.ID, storage.SecondFactors{})
		_, err = s.PasskeyByCredentialID(t.Context(), p.CredentialID)
		wantErr(t, "PasskeyByCredentialID(after reset)", err, storage.ErrNotFound)
		wantFactors(t, s, other.ID, storage.SecondFactors{TOTP: []storage.TOTPFactor{theirs}, RecoveryCodesLeft: 10})
		n, err = s.ResetSecondFactor(t.Context(), u.ID)
		if err != nil || n != 0 {
			t.Fatalf("ResetSecondFactor of a user without factors: %d, %v; want 0, nil", n, err)
		}
		_, err = s.ResetSecondFactor(t.Context(), "nobody")
		wantErr(t, "ResetSecondFactor(unknown user)", err, storage.ErrNotFound)
	})

	t.Run("DeleteUserDeletesFactors", func(t *testing.T) {
		s := o.newStore(t)
		u := createUser(t, s, 1)
		confirmedTOTP(t, s, u.ID, "f1", 1000, recoverySet("a", 10))
		p := passkeyRecord(u.ID, "p1", "a")
		_, err := s.AddPasskey(t.Context(), p, nil)
		wantErr(t, "AddPasskey", err, nil)
		wantErr(t, "DeleteUser", s.DeleteUser(t.Context(), u.ID), nil)
		_, err = s.PasskeyByCredentialID(t.Context(), p.CredentialID)
		wantErr(t, "PasskeyByCredentialID(deleted user)", err, storage.ErrNotFound)
		// A user made again under the same id starts with nothing.
		createUser(t, s, 1)
		wantFactors(t, s, u.ID, storage.SecondFactors{})
		_, err = s.UseRecoveryCode(t.Context(), u.ID, recoverySet("a", 1)[0])
		wantErr(t, "UseRecoveryCode(deleted user's code)", err, storage.ErrNotFound)
		again := confirmedTOTP(t, s, u.ID, "f9", 5, nil) // the old last step went with the user
		wantErr(t, "AcceptTOTPStep", s.AcceptTOTPStep(t.Context(), u.ID, again.ID, 6), nil)
	})

	t.Run("SessionSecondFactor", func(t *testing.T) {
		s := o.newStore(t)
		sess := sessionRecord("2fa", userRecord(1).ID, time.Hour, epoch)
		sess.Method, sess.SecondFactor = storage.MethodPassword, storage.MethodTOTP
		createSessions(t, s, []storage.Session{sess})
		wantSession(t, s, sess.IDHash, &sess)
		list, err := s.SessionsOfUser(t.Context(), sess.UserID)
		wantErr(t, "SessionsOfUser", err, nil)
		wantEqual(t, "SessionsOfUser", list, []storage.Session{sess})
	})
}

// concurrently runs fn n times at once and returns the errors.
func concurrently(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	done := make(chan struct{})
	for i := range n {
		go func() {
			defer func() { done <- struct{}{} }()
			<-start
			errs[i] = fn(i)
		}()
	}
	close(start)
	for range n {
		<-done
	}
	return errs
}

// wantOneWinner fails unless exactly one of errs is nil and every other is lost.
func wantOneWinner(t *testing.T, what string, errs []error, lost error) {
	t.Helper()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
			continue
		}
		wantErr(t, what+" (a loser)", err, lost)
	}
	if won != 1 {
		t.Fatalf("%s: %d of %d concurrent calls succeeded, want exactly 1", what, won, len(errs))
	}
}
