package secondfactor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// PasskeyStore is what Passkeys needs of the store (storage.Store has it).
type PasskeyStore interface {
	SecondFactors(ctx context.Context, userID string) (storage.SecondFactors, error)
	AddPasskey(ctx context.Context, p storage.Passkey, firstRecovery []storage.Hash) (bool, error)
	PasskeyByCredentialID(ctx context.Context, credentialID []byte) (storage.Passkey, error)
	RecordPasskeyUse(ctx context.Context, userID string, credentialID []byte, use storage.PasskeyUse) error
	CreateWebAuthnCeremony(ctx context.Context, c storage.WebAuthnCeremony) error
	TakeWebAuthnCeremony(ctx context.Context, browserHash storage.Hash, now time.Time) (storage.WebAuthnCeremony, error)
}

// MaxCredentialJSON bounds a WebAuthn response read by a finish step,
// before any parsing: a real one is a few kilobytes.
const MaxCredentialJSON = 64 << 10

// DefaultCeremonyTTL is how long a begun ceremony may be finished.
const DefaultCeremonyTTL = 5 * time.Minute

// PasskeyConfig tunes NewPasskeys.
type PasskeyConfig struct {
	// BaseURL is --base-url: its origin is the only one a ceremony accepts.
	BaseURL string
	// RPID is --webauthn-rp-id; empty means the host of BaseURL. It must
	// be that host or a domain it belongs to.
	RPID string
	// RPName is shown by the browser while it asks for the passkey (--app-name).
	RPName string
	// CeremonyTTL bounds a ceremony (default DefaultCeremonyTTL).
	CeremonyTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Passkeys registers passkeys and signs in with them: WebAuthn ceremonies
// whose challenge is kept in the store, bound to the browser that began
// them and used once. Resident keys and user verification are required,
// attestation is not asked for (format "none" is accepted, and so is any
// attestation an authenticator sends that verifies). Safe for concurrent use.
type Passkeys struct {
	store PasskeyStore
	wa    *webauthn.WebAuthn
	ttl   time.Duration
	now   func() time.Time
}

// NewPasskeys checks the relying party and returns Passkeys. A base URL
// whose host cannot be a WebAuthn relying party (an IP address), or an
// RPID the base URL's host does not belong to, is an error naming it.
func NewPasskeys(store PasskeyStore, cfg PasskeyConfig) (*Passkeys, error) {
	base, err := url.Parse(cfg.BaseURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Hostname() == "" {
		return nil, fmt.Errorf("secondfactor: passkeys: base URL %q is not an http(s) URL", cfg.BaseURL)
	}
	host := strings.ToLower(base.Hostname())
	rpID := strings.ToLower(cfg.RPID)
	if rpID == "" {
		rpID = host
	}
	if host != rpID && !strings.HasSuffix(host, "."+rpID) {
		return nil, fmt.Errorf("secondfactor: passkeys: relying party id %q: the base URL's host %q is not it nor within it", rpID, host)
	}
	if cfg.CeremonyTTL <= 0 {
		cfg.CeremonyTTL = DefaultCeremonyTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	name := cfg.RPName
	if name == "" {
		name = host
	}
	wa, err := webauthn.New(&webauthn.Config{
		RPID:                  rpID,
		RPDisplayName:         name,
		RPOrigins:             []string{base.Scheme + "://" + strings.ToLower(base.Host)},
		AttestationPreference: protocol.PreferNoAttestation,
		AuthenticatorSelection: protocol.AuthenticatorSelection{
			ResidentKey:        protocol.ResidentKeyRequirementRequired,
			RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification:   protocol.VerificationRequired,
		},
		// Expiry is the stored ceremony's, on the injected clock; the
		// browser is told the same bound.
		Timeouts: webauthn.TimeoutsConfig{
			Login:        webauthn.TimeoutConfig{Timeout: cfg.CeremonyTTL, TimeoutUVD: cfg.CeremonyTTL},
			Registration: webauthn.TimeoutConfig{Timeout: cfg.CeremonyTTL, TimeoutUVD: cfg.CeremonyTTL},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("secondfactor: passkeys: relying party id %q: %w", rpID, err)
	}
	return &Passkeys{store: store, wa: wa, ttl: cfg.CeremonyTTL, now: cfg.Now}, nil
}

// Begun is a ceremony begun: Options for navigator.credentials.create() or
// .get() as JSON ({"publicKey":{…}}), and Binding, the value of the cookie
// that binds the ceremony to this browser; the finish step needs both back.
type Begun struct {
	Options json.RawMessage
	Binding string
}

// Registered is a passkey just registered. RecoveryCodes, to be shown
// once, are the user's new recovery codes when it is the user's first
// second factor; otherwise nil.
type Registered struct {
	Passkey       storage.Passkey
	RecoveryCodes []string
}

// BeginRegistration begins adding a passkey to u, for the signed-in
// session whose hash is session. The user's existing passkeys are
// excluded, so an authenticator is not registered twice.
func (p *Passkeys) BeginRegistration(ctx context.Context, u storage.User, session storage.Hash) (Begun, error) {
	have, err := p.store.SecondFactors(ctx, u.ID)
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: begin registration: %w", err)
	}
	user := newWebAuthnUser(u, have.Passkeys)
	creation, data, err := p.wa.BeginRegistration(user,
		webauthn.WithExclusions(webauthn.Credentials(user.credentials).CredentialDescriptors()))
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: begin registration: %w", err)
	}
	return p.begin(ctx, creation, data, storage.CeremonyRegister, u.ID, session)
}

// FinishRegistration verifies the browser's answer to BeginRegistration
// (body: the credential in the WebAuthn JSON form, read up to
// MaxCredentialJSON) and stores the passkey under name. The ceremony is
// used up whatever the outcome. ErrCeremonyNotFound, ErrTooLarge,
// ErrPasskeyRegistered or ErrInvalidCredential (a wrong origin or RP id, a
// challenge of another ceremony, no user verification, a malformed
// response…), and nothing is stored.
func (p *Passkeys) FinishRegistration(ctx context.Context, u storage.User, session storage.Hash, binding string, body io.Reader, name string) (Registered, error) {
	data, err := p.take(ctx, binding, storage.CeremonyRegister, u.ID)
	if err != nil {
		return Registered{}, err
	}
	if data.session != session {
		return Registered{}, fmt.Errorf("%w: begun by another session", ErrCeremonyNotFound)
	}
	raw, err := readBounded(body)
	if err != nil {
		return Registered{}, err
	}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(raw)
	if err != nil {
		return Registered{}, credentialError(err)
	}
	have, err := p.store.SecondFactors(ctx, u.ID)
	if err != nil {
		return Registered{}, fmt.Errorf("secondfactor: finish registration: %w", err)
	}
	user := newWebAuthnUser(u, have.Passkeys)
	credential, err := p.wa.CreateCredential(user, data.webauthn, parsed)
	if err != nil {
		return Registered{}, credentialError(err)
	}
	now := p.now()
	passkey := storage.Passkey{
		ID: storage.NewFactorID(), UserID: u.ID, Name: FactorName(name, "Passkey"),
		CredentialID: credential.ID, PublicKey: credential.PublicKey,
		AttestationType: credential.AttestationType, AttestationFormat: credential.AttestationFormat,
		AAGUID: credential.Authenticator.AAGUID, SignCount: credential.Authenticator.SignCount,
		Transports:   transportNames(credential.Transport),
		UserVerified: credential.Flags.UserVerified, BackupEligible: credential.Flags.BackupEligible,
		BackupState: credential.Flags.BackupState, UserHandle: user.WebAuthnID(), CreatedAt: now,
	}
	codes, hashes := NewRecoveryCodes()
	first, err := p.store.AddPasskey(ctx, passkey, hashes)
	switch {
	case errors.Is(err, storage.ErrPasskeyInUse):
		return Registered{}, ErrPasskeyRegistered
	case err != nil:
		return Registered{}, fmt.Errorf("secondfactor: finish registration: %w", err)
	case !first:
		codes = nil
	}
	return Registered{Passkey: passkey, RecoveryCodes: codes}, nil
}

// BeginLogin begins a passkey sign-in: discoverable, with no list of
// allowed credentials, so the browser offers whatever passkey it holds for
// this relying party and the user is known only from the answer.
func (p *Passkeys) BeginLogin(ctx context.Context) (Begun, error) {
	assertion, data, err := p.wa.BeginDiscoverableLogin()
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: begin login: %w", err)
	}
	return p.begin(ctx, assertion, data, storage.CeremonyLogin, "", storage.Hash{})
}

// FinishLogin verifies the browser's answer to BeginLogin and returns the
// passkey that signed in, as updated; its UserID is the user. A passkey
// with user verification counts as two factors (storage.MethodPasskey).
// The caller still checks the user (disabled, policy). Errors as
// FinishRegistration, plus ErrPossibleClone.
func (p *Passkeys) FinishLogin(ctx context.Context, binding string, body io.Reader) (storage.Passkey, error) {
	data, err := p.take(ctx, binding, storage.CeremonyLogin, "")
	if err != nil {
		return storage.Passkey{}, err
	}
	parsed, err := parseAssertion(body)
	if err != nil {
		return storage.Passkey{}, err
	}
	var owner *webAuthnUser
	lookup := func(rawID, userHandle []byte) (webauthn.User, error) {
		passkey, err := p.store.PasskeyByCredentialID(ctx, rawID)
		if err != nil {
			return nil, err
		}
		if string(userHandle) != string(passkey.UserHandle) {
			return nil, errors.New("user handle of another user")
		}
		owner, err = p.userOf(ctx, passkey.UserID)
		return owner, err
	}
	_, credential, err := p.wa.ValidatePasskeyLogin(lookup, data.webauthn, parsed)
	if err != nil {
		return storage.Passkey{}, credentialError(err)
	}
	return p.recordUse(ctx, owner.id, credential, parsed)
}

// BeginSecondFactor begins a passkey ceremony as the second factor of the
// user: only the user's own passkeys are allowed. ErrNoPasskey when the
// user has none.
func (p *Passkeys) BeginSecondFactor(ctx context.Context, userID string) (Begun, error) {
	user, err := p.userOf(ctx, userID)
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: begin second factor: %w", err)
	}
	if len(user.credentials) == 0 {
		return Begun{}, ErrNoPasskey
	}
	assertion, data, err := p.wa.BeginLogin(user)
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: begin second factor: %w", err)
	}
	return p.begin(ctx, assertion, data, storage.CeremonySecondFactor, userID, storage.Hash{})
}

// FinishSecondFactor verifies the browser's answer to BeginSecondFactor for
// the same user and returns the passkey, as updated. Errors as FinishLogin.
func (p *Passkeys) FinishSecondFactor(ctx context.Context, userID, binding string, body io.Reader) (storage.Passkey, error) {
	data, err := p.take(ctx, binding, storage.CeremonySecondFactor, userID)
	if err != nil {
		return storage.Passkey{}, err
	}
	parsed, err := parseAssertion(body)
	if err != nil {
		return storage.Passkey{}, err
	}
	user, err := p.userOf(ctx, userID)
	if err != nil {
		return storage.Passkey{}, fmt.Errorf("secondfactor: finish second factor: %w", err)
	}
	credential, err := p.wa.ValidateLogin(user, data.webauthn, parsed)
	if err != nil {
		return storage.Passkey{}, credentialError(err)
	}
	return p.recordUse(ctx, userID, credential, parsed)
}

// recordUse stores what a verified assertion says of the passkey: the
// counter (refused when it did not grow, ErrPossibleClone), flags, time.
func (p *Passkeys) recordUse(ctx context.Context, userID string, credential *webauthn.Credential,
	parsed *protocol.ParsedCredentialAssertionData) (storage.Passkey, error) {
	if credential.Authenticator.CloneWarning {
		return storage.Passkey{}, ErrPossibleClone
	}
	flags := parsed.Response.AuthenticatorData.Flags
	use := storage.PasskeyUse{
		SignCount:    parsed.Response.AuthenticatorData.Counter,
		UserVerified: flags.HasUserVerified(),
		BackupState:  flags.HasBackupState(),
		At:           p.now(),
	}
	err := p.store.RecordPasskeyUse(ctx, userID, credential.ID, use)
	switch {
	case errors.Is(err, storage.ErrPasskeySignCount):
		return storage.Passkey{}, ErrPossibleClone
	case errors.Is(err, storage.ErrNotFound): // removed meanwhile
		return storage.Passkey{}, fmt.Errorf("%w: the passkey was removed", ErrInvalidCredential)
	case err != nil:
		return storage.Passkey{}, fmt.Errorf("secondfactor: record passkey use: %w", err)
	}
	passkey, err := p.store.PasskeyByCredentialID(ctx, credential.ID)
	if err != nil {
		return storage.Passkey{}, fmt.Errorf("secondfactor: record passkey use: %w", err)
	}
	return passkey, nil
}

// ceremonyData is a taken ceremony, decoded.
type ceremonyData struct {
	webauthn webauthn.SessionData
	session  storage.Hash
}

// begin stores the ceremony under a new binding and renders the options.
func (p *Passkeys) begin(ctx context.Context, options any, data *webauthn.SessionData,
	purpose, userID string, session storage.Hash) (Begun, error) {
	opts, err := json.Marshal(options)
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: ceremony options: %w", err)
	}
	stored, err := json.Marshal(data)
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: ceremony data: %w", err)
	}
	binding, hash := newBinding()
	now := p.now()
	err = p.store.CreateWebAuthnCeremony(ctx, storage.WebAuthnCeremony{
		BrowserHash: hash, Purpose: purpose, UserID: userID, SessionHash: session, Data: stored,
		CreatedAt: now, ExpiresAt: now.Add(p.ttl),
	})
	if err != nil {
		return Begun{}, fmt.Errorf("secondfactor: store ceremony: %w", err)
	}
	return Begun{Options: opts, Binding: binding}, nil
}

// take takes the ceremony of binding (used up whatever follows) and checks
// it was begun for purpose and userID.
func (p *Passkeys) take(ctx context.Context, binding, purpose, userID string) (ceremonyData, error) {
	hash, ok := bindingHash(binding)
	if !ok {
		return ceremonyData{}, ErrCeremonyNotFound
	}
	c, err := p.store.TakeWebAuthnCeremony(ctx, hash, p.now())
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return ceremonyData{}, ErrCeremonyNotFound
	case err != nil:
		return ceremonyData{}, fmt.Errorf("secondfactor: take ceremony: %w", err)
	case c.Purpose != purpose || c.UserID != userID:
		return ceremonyData{}, fmt.Errorf("%w: begun for another purpose or user", ErrCeremonyNotFound)
	}
	var data ceremonyData
	if err := json.Unmarshal(c.Data, &data.webauthn); err != nil {
		return ceremonyData{}, fmt.Errorf("secondfactor: stored ceremony: %w", err)
	}
	data.session = c.SessionHash
	return data, nil
}

// userOf returns the user's WebAuthn view: id and passkeys.
func (p *Passkeys) userOf(ctx context.Context, userID string) (*webAuthnUser, error) {
	have, err := p.store.SecondFactors(ctx, userID)
	if err != nil {
		return nil, err
	}
	return newWebAuthnUser(storage.User{ID: userID}, have.Passkeys), nil
}

// readBounded reads body up to MaxCredentialJSON: ErrTooLarge past it.
func readBounded(body io.Reader) ([]byte, error) {
	raw, err := io.ReadAll(io.LimitReader(body, MaxCredentialJSON+1))
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: reading the response: %w", ErrInvalidCredential, err)
	case len(raw) > MaxCredentialJSON:
		return nil, ErrTooLarge
	}
	return raw, nil
}

// parseAssertion reads and parses an assertion in the WebAuthn JSON form.
func parseAssertion(body io.Reader) (*protocol.ParsedCredentialAssertionData, error) {
	raw, err := readBounded(body)
	if err != nil {
		return nil, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(raw)
	if err != nil {
		return nil, credentialError(err)
	}
	return parsed, nil
}

// credentialError wraps a refusal of the WebAuthn library as
// ErrInvalidCredential, with the check that failed and what it saw (an
// origin, an RP id hash), except a challenge's value: like an OAuth state,
// it never goes to a log.
func credentialError(err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		if pe.DevInfo == "" || strings.Contains(strings.ToLower(pe.Details+pe.DevInfo), "challenge") {
			return fmt.Errorf("%w: %s", ErrInvalidCredential, pe.Details)
		}
		return fmt.Errorf("%w: %s (%s)", ErrInvalidCredential, pe.Details, pe.DevInfo)
	}
	return fmt.Errorf("%w: %w", ErrInvalidCredential, err)
}

func transportNames(ts []protocol.AuthenticatorTransport) []string {
	var names []string
	for _, t := range ts {
		names = append(names, string(t))
	}
	return names
}
