package storage

// Authentication methods a session records (Session.Method and
// Session.SecondFactor), named as RFC 8176 names them. A provider sign-in
// records the provider's name ("google", "github", "oidc") as its Method.
const (
	MethodPassword     = "pwd"
	MethodTOTP         = "otp"
	MethodPasskey      = "hwk" // proof of possession of a key held by an authenticator
	MethodRecoveryCode = "rec"
	// MethodMultiFactor is not recorded: AMR adds it for two factors.
	MethodMultiFactor = "mfa"
)

// MultiFactor reports whether the session signed in with two factors: a
// first factor and a second one, or a passkey, which is two in one (a
// device the user holds, unlocked by the user's PIN or biometric, since
// user verification is required).
func (s Session) MultiFactor() bool {
	return s.Method != "" && (s.SecondFactor != "" || s.Method == MethodPasskey)
}

// AMR lists how the session signed in, for the assertion's amr claim: the
// first factor, the second factor when there is one, and "mfa" when two
// factors were given (a passkey alone counts as two). A session that
// recorded no method (made by v1) gets none rather than a guess.
func (s Session) AMR() []string {
	if s.Method == "" {
		return nil
	}
	amr := make([]string, 0, 3)
	amr = append(amr, s.Method)
	if s.SecondFactor != "" && s.SecondFactor != s.Method {
		amr = append(amr, s.SecondFactor)
	}
	if s.MultiFactor() {
		amr = append(amr, MethodMultiFactor)
	}
	return amr
}
