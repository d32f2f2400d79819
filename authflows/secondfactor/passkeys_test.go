package secondfactor

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/secondfactor/passkeytest"
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

const (
	testOrigin = "https://app.example.com"
	testRPID   = "app.example.com"
)

type passkeyEnv struct {
	store    *bolt.Store
	clock    *clock
	passkeys *Passkeys
	session  storage.Hash // the signed-in session registering
}

func newPasskeyEnv(t *testing.T) *passkeyEnv {
	t.Helper()
	e := &passkeyEnv{store: newStore(t), clock: newClock(), session: storage.HashSecret("session of the registering browser")}
	p, err := NewPasskeys(e.store, PasskeyConfig{BaseURL: testOrigin + "/", RPName: "Acme", Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.passkeys = p
	return e
}

// register runs a registration ceremony of a with u and returns its result.
func (e *passkeyEnv) register(t *testing.T, u storage.User, a *passkeytest.Authenticator) (Registered, error) {
	t.Helper()
	begun, err := e.passkeys.BeginRegistration(t.Context(), u, e.session)
	if err != nil {
		t.Fatalf("BeginRegistration: %v", err)
	}
	return e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(a.Create(t, begun.Options)), "  Laptop ")
}

// login runs a discoverable sign-in with a.
func (e *passkeyEnv) login(t *testing.T, a *passkeytest.Authenticator) (storage.Passkey, error) {
	t.Helper()
	begun, err := e.passkeys.BeginLogin(t.Context())
	if err != nil {
		t.Fatalf("BeginLogin: %v", err)
	}
	return e.passkeys.FinishLogin(t.Context(), begun.Binding, bytes.NewReader(a.Get(t, begun.Options)))
}

func (e *passkeyEnv) passkeysOf(t *testing.T, userID string) []storage.Passkey {
	t.Helper()
	have, err := e.store.SecondFactors(t.Context(), userID)
	if err != nil {
		t.Fatal(err)
	}
	return have.Passkeys
}

func TestPasskeyRegisterAndSignIn(t *testing.T) {
	e := newPasskeyEnv(t)
	u := newUser(t, e.store, "ada")
	a := passkeytest.New(t, testOrigin, testRPID)
	a.BackupEligible, a.BackedUp = true, true

	begun, err := e.passkeys.BeginRegistration(t.Context(), u, e.session)
	if err != nil {
		t.Fatal(err)
	}
	o := passkeytest.ParseOptions(t, begun.Options)
	sel := o.PublicKey.AuthenticatorSelection
	if o.PublicKey.RP.ID != testRPID || sel.ResidentKey != "required" || sel.UserVerification != "required" || o.PublicKey.Attestation != "none" {
		t.Fatalf("creation options %s: want rp %s, resident key and user verification required, attestation none", begun.Options, testRPID)
	}
	if got, _ := passkeytest.B64.DecodeString(o.PublicKey.User.ID); string(got) != u.ID {
		t.Fatalf("user.id %q, want the user id", o.PublicKey.User.ID)
	}
	reg, err := e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(a.Create(t, begun.Options)), "  Laptop ")
	if err != nil {
		t.Fatalf("FinishRegistration: %v", err)
	}
	if len(reg.RecoveryCodes) != RecoveryCodeCount {
		t.Fatalf("first factor: %d recovery codes, want %d", len(reg.RecoveryCodes), RecoveryCodeCount)
	}
	stored := e.passkeysOf(t, u.ID)
	if len(stored) != 1 {
		t.Fatalf("%d passkeys stored, want 1", len(stored))
	}
	p := stored[0]
	if !bytes.Equal(p.CredentialID, a.Credential) || p.Name != "Laptop" || string(p.UserHandle) != u.ID ||
		!p.UserVerified || !p.BackupEligible || !p.BackupState || p.AttestationFormat != "none" ||
		strings.Join(p.Transports, ",") != "internal,hybrid" || !p.CreatedAt.Equal(e.clock.Now()) {
		t.Fatalf("stored passkey %+v", p)
	}
	if _, err := RecoveryCodeHash(reg.RecoveryCodes[0]); err != nil {
		t.Fatalf("recovery code %q: %v", reg.RecoveryCodes[0], err)
	}

	// Sign in: discoverable, no allow list, user verification required.
	begun, err = e.passkeys.BeginLogin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	o = passkeytest.ParseOptions(t, begun.Options)
	if len(o.PublicKey.AllowCredentials) != 0 || o.PublicKey.UserVerification != "required" || o.PublicKey.RPID != testRPID {
		t.Fatalf("request options %s: want no allow list, user verification required, rpId %s", begun.Options, testRPID)
	}
	e.clock.Add(time.Minute)
	got, err := e.passkeys.FinishLogin(t.Context(), begun.Binding, bytes.NewReader(a.Get(t, begun.Options)))
	if err != nil {
		t.Fatalf("FinishLogin: %v", err)
	}
	if got.UserID != u.ID || got.SignCount != 1 || !got.LastUsedAt.Equal(e.clock.Now()) {
		t.Fatalf("signed in with %+v", got)
	}
	if got, err := e.login(t, a); err != nil || got.SignCount != 2 {
		t.Fatalf("second sign-in: %+v, %v", got, err)
	}

	// A second passkey is not the first factor: no new codes.
	second := passkeytest.New(t, testOrigin, testRPID)
	begun, _ = e.passkeys.BeginRegistration(t.Context(), u, e.session)
	if ex := passkeytest.ParseOptions(t, begun.Options).PublicKey.ExcludeCredentials; len(ex) != 1 || ex[0].ID != passkeytest.B64.EncodeToString(a.Credential) {
		t.Fatalf("excludeCredentials %+v: want the registered passkey", ex)
	}
	reg, err = e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(second.Create(t, begun.Options)), "")
	if err != nil || reg.RecoveryCodes != nil || reg.Passkey.Name != "Passkey" {
		t.Fatalf("second passkey: %+v, %v", reg, err)
	}
}

// An authenticator without a signature counter (0 every time) signs in;
// one whose counter stops growing is refused as possibly cloned.
func TestPasskeySignCount(t *testing.T) {
	e := newPasskeyEnv(t)
	u := newUser(t, e.store, "ada")
	counterless := passkeytest.New(t, testOrigin, testRPID)
	if _, err := e.register(t, u, counterless); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		counterless.Counter = ^uint32(0) // get() adds one: zero again
		if _, err := e.login(t, counterless); err != nil {
			t.Fatalf("a counterless authenticator: %v", err)
		}
	}

	a := passkeytest.New(t, testOrigin, testRPID)
	if _, err := e.register(t, u, a); err != nil {
		t.Fatal(err)
	}
	a.Counter = 9
	if got, err := e.login(t, a); err != nil || got.SignCount != 10 {
		t.Fatalf("sign-in at 10: %+v, %v", got, err)
	}
	clone := *a
	clone.Counter = 8 // a copy of the key, behind the original
	if _, err := e.login(t, &clone); !errors.Is(err, ErrPossibleClone) || !errors.Is(err, ErrInvalidCredential) {
		t.Fatalf("counter 9 after 10: %v, want ErrPossibleClone", err)
	}
	clone.Counter = 9
	if _, err := e.login(t, &clone); !errors.Is(err, ErrPossibleClone) {
		t.Fatalf("counter 10 again: %v, want ErrPossibleClone", err)
	}
	for _, p := range e.passkeysOf(t, u.ID) {
		if bytes.Equal(p.CredentialID, a.Credential) && p.SignCount != 10 {
			t.Fatalf("a refused sign-in moved the counter to %d", p.SignCount)
		}
	}
}

// Responses that must be refused at registration: each leaves nothing stored.
func TestPasskeyRegistrationRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(a *passkeytest.Authenticator)
		body   func(t *testing.T, a *passkeytest.Authenticator, options json.RawMessage) []byte
		want   error
	}{
		{name: "wrong origin", tamper: func(a *passkeytest.Authenticator) { a.Origin = "https://evil.example" }, want: ErrInvalidCredential},
		{name: "sibling origin", tamper: func(a *passkeytest.Authenticator) { a.Origin = "https://other.app.example.com" }, want: ErrInvalidCredential},
		{name: "http origin", tamper: func(a *passkeytest.Authenticator) { a.Origin = "http://app.example.com" }, want: ErrInvalidCredential},
		{name: "wrong RP id", tamper: func(a *passkeytest.Authenticator) { a.RPID = "evil.example" }, want: ErrInvalidCredential},
		{name: "parent RP id", tamper: func(a *passkeytest.Authenticator) { a.RPID = "example.com" }, want: ErrInvalidCredential},
		{name: "another challenge", tamper: func(a *passkeytest.Authenticator) { a.Challenge = passkeytest.B64.EncodeToString(make([]byte, 32)) }, want: errChallengeNotShown},
		{name: "a get, not a create", tamper: func(a *passkeytest.Authenticator) { a.CeremonyType = "webauthn.get" }, want: ErrInvalidCredential},
		{name: "no user verification", tamper: func(a *passkeytest.Authenticator) { a.NoUV = true }, want: ErrInvalidCredential},
		{name: "backed up but not eligible", tamper: func(a *passkeytest.Authenticator) { a.BackedUp = true }, want: ErrInvalidCredential},
		{name: "not JSON", body: func(*testing.T, *passkeytest.Authenticator, json.RawMessage) []byte { return []byte("{") }, want: ErrInvalidCredential},
		{name: "empty", body: func(*testing.T, *passkeytest.Authenticator, json.RawMessage) []byte { return nil }, want: ErrInvalidCredential},
		{name: "trailing data", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			return append(a.Create(t, o), "{}"...)
		}, want: ErrInvalidCredential},
		{name: "garbled attestation object", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			return replaceField(t, a.Create(t, o), "attestationObject", passkeytest.B64.EncodeToString([]byte("not cbor at all")))
		}, want: ErrInvalidCredential},
		{name: "attestation object not base64url", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			return replaceField(t, a.Create(t, o), "attestationObject", "%%%")
		}, want: ErrInvalidCredential},
		{name: "id and rawId differ", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			var m map[string]any
			_ = json.Unmarshal(a.Create(t, o), &m)
			m["id"] = passkeytest.B64.EncodeToString([]byte("another credential"))
			return passkeytest.MustJSON(t, m)
		}, want: ErrInvalidCredential},
		{name: "too large", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			return append(a.Create(t, o), bytes.Repeat([]byte(" "), MaxCredentialJSON)...)
		}, want: ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newPasskeyEnv(t)
			u := newUser(t, e.store, "ada")
			a := passkeytest.New(t, testOrigin, testRPID)
			if c.tamper != nil {
				c.tamper(a)
			}
			begun, err := e.passkeys.BeginRegistration(t.Context(), u, e.session)
			if err != nil {
				t.Fatal(err)
			}
			body := c.body
			if body == nil {
				body = func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte { return a.Create(t, o) }
			}
			_, err = e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(body(t, a, begun.Options)), "x")
			if c.want == errChallengeNotShown {
				wantChallengeNotShown(t, err, begun.Options)
				c.want = ErrInvalidCredential
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("FinishRegistration: %v, want %v", err, c.want)
			}
			t.Logf("refused: %v", err)
			if have, _ := e.store.SecondFactors(t.Context(), u.ID); len(have.Passkeys) != 0 || have.RecoveryCodesLeft != 0 {
				t.Fatalf("a refused registration stored %+v", have)
			}
			// The ceremony is used up: a correct answer now is too late.
			fixed := passkeytest.New(t, testOrigin, testRPID)
			_, err = e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(fixed.Create(t, begun.Options)), "x")
			if !errors.Is(err, ErrCeremonyNotFound) {
				t.Fatalf("the ceremony after a refusal: %v, want ErrCeremonyNotFound", err)
			}
		})
	}
}

// A challenge is used once, by the browser and session that asked for it,
// within its lifetime.
func TestPasskeyCeremonyBinding(t *testing.T) {
	e := newPasskeyEnv(t)
	u := newUser(t, e.store, "ada")
	other := newUser(t, e.store, "bob")
	a := passkeytest.New(t, testOrigin, testRPID)
	begun, err := e.passkeys.BeginRegistration(t.Context(), u, e.session)
	if err != nil {
		t.Fatal(err)
	}
	answer := a.Create(t, begun.Options)
	for _, c := range []struct {
		name    string
		user    storage.User
		session storage.Hash
		binding string
	}{
		{"another browser", u, e.session, "another-browsers-cookie"},
		{"no cookie", u, e.session, ""},
	} {
		_, err := e.passkeys.FinishRegistration(t.Context(), c.user, c.session, c.binding, bytes.NewReader(answer), "x")
		if !errors.Is(err, ErrCeremonyNotFound) {
			t.Fatalf("FinishRegistration from %s: %v, want ErrCeremonyNotFound", c.name, err)
		}
	}
	if _, err := e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(answer), "x"); err != nil {
		t.Fatalf("FinishRegistration: %v", err)
	}
	if _, err := e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(answer), "x"); !errors.Is(err, ErrCeremonyNotFound) {
		t.Fatalf("the same answer twice: %v, want ErrCeremonyNotFound", err)
	}
	if n := len(e.passkeysOf(t, u.ID)); n != 1 {
		t.Fatalf("%d passkeys, want 1", n)
	}

	// Begun by one session or user, finished by another: refused and used up.
	for _, c := range []struct {
		name    string
		user    storage.User
		session storage.Hash
	}{
		{"another session", u, storage.HashSecret("another session")},
		{"another user", other, e.session},
	} {
		b := passkeytest.New(t, testOrigin, testRPID)
		begun, _ := e.passkeys.BeginRegistration(t.Context(), u, e.session)
		_, err := e.passkeys.FinishRegistration(t.Context(), c.user, c.session, begun.Binding, bytes.NewReader(b.Create(t, begun.Options)), "x")
		if !errors.Is(err, ErrCeremonyNotFound) {
			t.Fatalf("finished by %s: %v, want ErrCeremonyNotFound", c.name, err)
		}
		if _, err := e.passkeys.FinishRegistration(t.Context(), u, e.session, begun.Binding, bytes.NewReader(b.Create(t, begun.Options)), "x"); !errors.Is(err, ErrCeremonyNotFound) {
			t.Fatalf("after %s tried: %v, want ErrCeremonyNotFound", c.name, err)
		}
	}

	// Sign-in: a challenge twice, a registration's binding, an expired one.
	begun, _ = e.passkeys.BeginLogin(t.Context())
	assertion := a.Get(t, begun.Options)
	if _, err := e.passkeys.FinishLogin(t.Context(), begun.Binding, bytes.NewReader(assertion)); err != nil {
		t.Fatalf("FinishLogin: %v", err)
	}
	if _, err := e.passkeys.FinishLogin(t.Context(), begun.Binding, bytes.NewReader(assertion)); !errors.Is(err, ErrCeremonyNotFound) {
		t.Fatalf("the same assertion twice: %v, want ErrCeremonyNotFound", err)
	}
	reg, _ := e.passkeys.BeginRegistration(t.Context(), u, e.session)
	if _, err := e.passkeys.FinishLogin(t.Context(), reg.Binding, bytes.NewReader(a.Get(t, reg.Options))); !errors.Is(err, ErrCeremonyNotFound) {
		t.Fatalf("a registration's ceremony used to sign in: %v, want ErrCeremonyNotFound", err)
	}
	begun, _ = e.passkeys.BeginLogin(t.Context())
	e.clock.Add(DefaultCeremonyTTL)
	if _, err := e.passkeys.FinishLogin(t.Context(), begun.Binding, bytes.NewReader(a.Get(t, begun.Options))); !errors.Is(err, ErrCeremonyNotFound) {
		t.Fatalf("after %s: %v, want ErrCeremonyNotFound", DefaultCeremonyTTL, err)
	}
}

// Assertions that must be refused at sign-in: no sign-in, counter unchanged.
func TestPasskeySignInRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(a *passkeytest.Authenticator)
		body   func(t *testing.T, a *passkeytest.Authenticator, options json.RawMessage) []byte
	}{
		{name: "wrong origin", tamper: func(a *passkeytest.Authenticator) { a.Origin = "https://evil.example" }},
		{name: "wrong RP id", tamper: func(a *passkeytest.Authenticator) { a.RPID = "evil.example" }},
		{name: "another challenge", tamper: func(a *passkeytest.Authenticator) { a.Challenge = passkeytest.B64.EncodeToString(make([]byte, 32)) }},
		{name: "a create, not a get", tamper: func(a *passkeytest.Authenticator) { a.CeremonyType = "webauthn.create" }},
		{name: "no user verification", tamper: func(a *passkeytest.Authenticator) { a.NoUV = true }},
		{name: "another user's handle", tamper: func(a *passkeytest.Authenticator) { a.UserHandle = []byte(storage.NewUserID()) }},
		{name: "unknown credential", tamper: func(a *passkeytest.Authenticator) { a.Credential = []byte("never registered") }},
		{name: "signed by another key", tamper: func(a *passkeytest.Authenticator) {
			a.Key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		}},
		{name: "garbled authenticator data", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			return replaceField(t, a.Get(t, o), "authenticatorData", passkeytest.B64.EncodeToString([]byte("short")))
		}},
		{name: "no signature", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			return replaceField(t, a.Get(t, o), "signature", "")
		}},
		{name: "not JSON", body: func(*testing.T, *passkeytest.Authenticator, json.RawMessage) []byte { return []byte(`{"id":`) }},
		{name: "too large", body: func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte {
			return bytes.Repeat([]byte("x"), MaxCredentialJSON+1)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newPasskeyEnv(t)
			u := newUser(t, e.store, "ada")
			a := passkeytest.New(t, testOrigin, testRPID)
			if _, err := e.register(t, u, a); err != nil {
				t.Fatal(err)
			}
			if c.tamper != nil {
				c.tamper(a)
			}
			begun, _ := e.passkeys.BeginLogin(t.Context())
			body := c.body
			if body == nil {
				body = func(t *testing.T, a *passkeytest.Authenticator, o json.RawMessage) []byte { return a.Get(t, o) }
			}
			_, err := e.passkeys.FinishLogin(t.Context(), begun.Binding, bytes.NewReader(body(t, a, begun.Options)))
			if !errors.Is(err, ErrInvalidCredential) {
				t.Fatalf("FinishLogin: %v, want ErrInvalidCredential", err)
			}
			t.Logf("refused: %v", err)
			if p := e.passkeysOf(t, u.ID)[0]; p.SignCount != 0 || !p.LastUsedAt.IsZero() {
				t.Fatalf("a refused sign-in was recorded: %+v", p)
			}
		})
	}
}

// As the second factor, only the stepping user's passkeys count.
func TestPasskeySecondFactor(t *testing.T) {
	e := newPasskeyEnv(t)
	u, other := newUser(t, e.store, "ada"), newUser(t, e.store, "bob")
	mine, theirs := passkeytest.New(t, testOrigin, testRPID), passkeytest.New(t, testOrigin, testRPID)
	if _, err := e.register(t, u, mine); err != nil {
		t.Fatal(err)
	}
	if _, err := e.register(t, other, theirs); err != nil {
		t.Fatal(err)
	}
	begun, err := e.passkeys.BeginSecondFactor(t.Context(), u.ID)
	if err != nil {
		t.Fatal(err)
	}
	if allow := passkeytest.ParseOptions(t, begun.Options).PublicKey.AllowCredentials; len(allow) != 1 || allow[0].ID != passkeytest.B64.EncodeToString(mine.Credential) {
		t.Fatalf("allowCredentials %+v: want only the user's passkey", allow)
	}
	_, err = e.passkeys.FinishSecondFactor(t.Context(), u.ID, begun.Binding, bytes.NewReader(theirs.Get(t, begun.Options)))
	if !errors.Is(err, ErrInvalidCredential) {
		t.Fatalf("another user's passkey as the second factor: %v, want ErrInvalidCredential", err)
	}
	begun, _ = e.passkeys.BeginSecondFactor(t.Context(), u.ID)
	if _, err := e.passkeys.FinishSecondFactor(t.Context(), other.ID, begun.Binding, bytes.NewReader(theirs.Get(t, begun.Options))); !errors.Is(err, ErrCeremonyNotFound) {
		t.Fatalf("a step begun for one user finished for another: %v, want ErrCeremonyNotFound", err)
	}
	begun, _ = e.passkeys.BeginSecondFactor(t.Context(), u.ID)
	got, err := e.passkeys.FinishSecondFactor(t.Context(), u.ID, begun.Binding, bytes.NewReader(mine.Get(t, begun.Options)))
	if err != nil || got.UserID != u.ID || got.SignCount == 0 {
		t.Fatalf("FinishSecondFactor: %+v, %v", got, err)
	}
	// A discoverable sign-in's ceremony is not a second factor's.
	login, _ := e.passkeys.BeginLogin(t.Context())
	if _, err := e.passkeys.FinishSecondFactor(t.Context(), u.ID, login.Binding, bytes.NewReader(mine.Get(t, login.Options))); !errors.Is(err, ErrCeremonyNotFound) {
		t.Fatalf("a sign-in ceremony finished as a second factor: %v, want ErrCeremonyNotFound", err)
	}
	if _, err := e.passkeys.BeginSecondFactor(t.Context(), newUser(t, e.store, "carol").ID); !errors.Is(err, ErrNoPasskey) {
		t.Fatalf("BeginSecondFactor without a passkey: %v, want ErrNoPasskey", err)
	}
}

func TestPasskeyRegisteredOnce(t *testing.T) {
	e := newPasskeyEnv(t)
	u, other := newUser(t, e.store, "ada"), newUser(t, e.store, "bob")
	a := passkeytest.New(t, testOrigin, testRPID)
	if _, err := e.register(t, u, a); err != nil {
		t.Fatal(err)
	}
	if _, err := e.register(t, other, a); !errors.Is(err, ErrPasskeyRegistered) {
		t.Fatalf("the same credential for another user: %v, want ErrPasskeyRegistered", err)
	}
	if n := len(e.passkeysOf(t, other.ID)); n != 0 {
		t.Fatalf("the other user has %d passkeys", n)
	}
}

func TestNewPasskeysRelyingParty(t *testing.T) {
	s := newStore(t)
	for _, c := range []struct {
		base, rpID string
		ok         bool
	}{
		{"https://app.example.com", "", true},
		{"https://app.example.com", "example.com", true},
		{"https://App.Example.com:8443/x", "app.example.com", true},
		{"http://localhost:8080", "", true},
		{"https://app.example.com", "other.example.com", false},
		{"https://app.example.com", "pp.example.com", false},
		{"https://app.example.com", "com", false},
		{"http://127.0.0.1:8080", "", false},
		{"http://[::1]:8080", "", false},
		{"ftp://app.example.com", "", false},
		{"app.example.com", "", false},
	} {
		_, err := NewPasskeys(s, PasskeyConfig{BaseURL: c.base, RPID: c.rpID})
		if (err == nil) != c.ok {
			t.Errorf("NewPasskeys(%s, rp id %q): %v, want ok %v", c.base, c.rpID, err, c.ok)
		}
	}
}

// errChallengeNotShown marks a case whose error must not carry the challenge.
var errChallengeNotShown = errors.New("an error without the challenge")

// wantChallengeNotShown fails unless err is ErrInvalidCredential without
// the expected challenge in its text (errors are logged).
func wantChallengeNotShown(t *testing.T, err error, options json.RawMessage) {
	t.Helper()
	challenge := passkeytest.ParseOptions(t, options).PublicKey.Challenge
	if !errors.Is(err, ErrInvalidCredential) || strings.Contains(err.Error(), challenge) {
		t.Fatalf("wrong challenge: %v; want ErrInvalidCredential without the challenge %q", err, challenge)
	}
}

// replaceField sets response.<field> of a WebAuthn JSON response.
func replaceField(t *testing.T, body []byte, field, value string) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	m["response"].(map[string]any)[field] = value
	return passkeytest.MustJSON(t, m)
}
