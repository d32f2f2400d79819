package secondfactor

import (
	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// webAuthnUser is a user as the WebAuthn library sees one. The user handle
// (user.id, kept by each passkey and returned by discoverable sign-ins) is
// the user id: 128 random bits, no personal data, the same on every replica.
type webAuthnUser struct {
	id          string
	email       string
	credentials []webauthn.Credential
}

var _ webauthn.User = (*webAuthnUser)(nil)

func newWebAuthnUser(u storage.User, passkeys []storage.Passkey) *webAuthnUser {
	user := &webAuthnUser{id: u.ID, email: u.Email}
	for _, p := range passkeys {
		user.credentials = append(user.credentials, credentialOf(p))
	}
	return user
}

func (u *webAuthnUser) WebAuthnID() []byte { return []byte(u.id) }

func (u *webAuthnUser) WebAuthnName() string { return u.email }

func (u *webAuthnUser) WebAuthnDisplayName() string { return u.email }

func (u *webAuthnUser) WebAuthnCredentials() []webauthn.Credential { return u.credentials }

// credentialOf is a stored passkey as the WebAuthn library's record.
func credentialOf(p storage.Passkey) webauthn.Credential {
	flags := protocol.FlagUserPresent
	if p.UserVerified {
		flags |= protocol.FlagUserVerified
	}
	if p.BackupEligible {
		flags |= protocol.FlagBackupEligible
	}
	if p.BackupState {
		flags |= protocol.FlagBackupState
	}
	transports := make([]protocol.AuthenticatorTransport, len(p.Transports))
	for i, t := range p.Transports {
		transports[i] = protocol.AuthenticatorTransport(t)
	}
	return webauthn.Credential{
		ID: p.CredentialID, PublicKey: p.PublicKey,
		AttestationType: p.AttestationType, AttestationFormat: p.AttestationFormat,
		Transport:     transports,
		Flags:         webauthn.NewCredentialFlags(flags),
		Authenticator: webauthn.Authenticator{AAGUID: p.AAGUID, SignCount: p.SignCount},
	}
}
