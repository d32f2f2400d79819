package bolt

import (
	"fmt"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Encodings of the second-factor records, in the layout of codec.go. A
// factor's value starts with its type (storage.FactorTOTP or
// storage.FactorPasskey), so one bucket holds both kinds.

func (e *encoder) bytes(b []byte) { e.str(string(b)) }

func (e *encoder) boolean(b bool) {
	if b {
		e.varint(1)
	} else {
		e.varint(0)
	}
}

func (d *decoder) bytes() []byte {
	s := d.str()
	if s == "" {
		return nil
	}
	return []byte(s)
}

func (d *decoder) boolean() bool {
	switch d.varint() {
	case 0:
		return false
	case 1:
		return true
	}
	d.bad = true
	return false
}

// factorType returns the type a factor value starts with.
func factorType(v []byte) (string, error) {
	d := newDecoder(v)
	t := d.str()
	if d.bad {
		return "", fmt.Errorf("factor: %w", errCorrupt)
	}
	return t, nil
}

func encodeTOTPFactor(f storage.TOTPFactor) []byte {
	e := newEncoder()
	e.str(storage.FactorTOTP)
	e.str(f.ID)
	e.str(f.UserID)
	e.str(f.Name)
	e.bytes(f.Secret)
	e.boolean(f.Confirmed)
	e.time(f.CreatedAt)
	e.time(f.ExpiresAt)
	return e.b
}

func decodeTOTPFactor(v []byte) (storage.TOTPFactor, error) {
	d := newDecoder(v)
	if d.str() != storage.FactorTOTP {
		return storage.TOTPFactor{}, fmt.Errorf("totp factor: %w", errCorrupt)
	}
	f := storage.TOTPFactor{ID: d.str(), UserID: d.str(), Name: d.str(), Secret: d.bytes(),
		Confirmed: d.boolean(), CreatedAt: d.time(), ExpiresAt: d.time()}
	return f, d.err("totp factor")
}

func encodePasskey(p storage.Passkey) []byte {
	e := newEncoder()
	e.str(storage.FactorPasskey)
	e.str(p.ID)
	e.str(p.UserID)
	e.str(p.Name)
	e.bytes(p.CredentialID)
	e.bytes(p.PublicKey)
	e.str(p.AttestationType)
	e.str(p.AttestationFormat)
	e.bytes(p.AAGUID)
	e.varint(int64(p.SignCount))
	e.varint(int64(len(p.Transports)))
	for _, t := range p.Transports {
		e.str(t)
	}
	e.boolean(p.UserVerified)
	e.boolean(p.BackupEligible)
	e.boolean(p.BackupState)
	e.bytes(p.UserHandle)
	e.time(p.CreatedAt)
	e.time(p.LastUsedAt)
	return e.b
}

// maxTransports bounds the transports a stored passkey may list (WebAuthn
// defines six).
const maxTransports = 16

func decodePasskey(v []byte) (storage.Passkey, error) {
	d := newDecoder(v)
	if d.str() != storage.FactorPasskey {
		return storage.Passkey{}, fmt.Errorf("passkey: %w", errCorrupt)
	}
	p := storage.Passkey{ID: d.str(), UserID: d.str(), Name: d.str(), CredentialID: d.bytes(), PublicKey: d.bytes(),
		AttestationType: d.str(), AttestationFormat: d.str(), AAGUID: d.bytes()}
	count := d.varint()
	p.SignCount = uint32(count)
	if count < 0 || count > 1<<32-1 {
		d.bad = true
	}
	n := d.varint()
	if n < 0 || n > maxTransports {
		d.bad = true
		n = 0
	}
	for range n {
		p.Transports = append(p.Transports, d.str())
	}
	p.UserVerified, p.BackupEligible, p.BackupState = d.boolean(), d.boolean(), d.boolean()
	p.UserHandle, p.CreatedAt, p.LastUsedAt = d.bytes(), d.time(), d.time()
	return p, d.err("passkey")
}

func encodeSecondFactorStep(st storage.SecondFactorStep) []byte {
	e := newEncoder()
	e.str(st.UserID)
	e.varint(int64(st.Epoch))
	e.str(st.Method)
	e.str(st.Groups)
	e.str(st.Redirect)
	e.time(st.CreatedAt)
	e.time(st.ExpiresAt)
	e.time(st.SessionCreatedAt)
	e.time(st.SessionExpiresAt)
	if g := st.Grant; g != nil {
		e.str(g.UserID)
		e.str(g.Provider)
		e.str(g.Subject)
		e.str(g.SID)
		e.bytes(g.Tokens)
		e.time(g.NextRefresh)
	}
	return e.b
}

func decodeSecondFactorStep(h storage.Hash, v []byte) (storage.SecondFactorStep, error) {
	d := newDecoder(v)
	st := storage.SecondFactorStep{BrowserHash: h, UserID: d.str(), Epoch: uint64(d.varint()),
		Method: d.str(), Groups: d.str(), Redirect: d.str(), CreatedAt: d.time(), ExpiresAt: d.time()}
	if len(d.b) > 0 { // a step stored before the session's times were kept has none
		st.SessionCreatedAt, st.SessionExpiresAt = d.time(), d.time()
	}
	if len(d.b) > 0 { // a provider sign-in's grant
		st.Grant = &storage.Grant{UserID: d.str(), Provider: d.str(), Subject: d.str(), SID: d.str(), Tokens: d.bytes(), NextRefresh: d.time()}
	}
	return st, d.err("second-factor step")
}

func encodeWebAuthnCeremony(c storage.WebAuthnCeremony) []byte {
	e := newEncoder()
	e.str(c.Purpose)
	e.str(c.UserID)
	e.hash(c.SessionHash)
	e.bytes(c.Data)
	e.time(c.CreatedAt)
	e.time(c.ExpiresAt)
	return e.b
}

func decodeWebAuthnCeremony(h storage.Hash, v []byte) (storage.WebAuthnCeremony, error) {
	d := newDecoder(v)
	c := storage.WebAuthnCeremony{BrowserHash: h, Purpose: d.str(), UserID: d.str(), SessionHash: d.hash(),
		Data: d.bytes(), CreatedAt: d.time(), ExpiresAt: d.time()}
	return c, d.err("webauthn ceremony")
}
