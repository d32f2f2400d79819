// Package passkeytest is a WebAuthn authenticator in software for tests:
// one ES256 credential, attestation "none", assertions signed as a
// security key or platform authenticator signs them, and the browser's
// part (clientDataJSON) too. Its fields are the knobs a test turns to make
// a response go wrong in one way.
//
// Dependencies: passkeytest imports github.com/go-webauthn/webauthn's CBOR
// and COSE encoders only.
package passkeytest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/go-webauthn/webauthn/protocol/webauthncbor"
	"github.com/go-webauthn/webauthn/protocol/webauthncose"
)

// Authenticator is a minimal WebAuthn authenticator in software: one
// ES256 credential, attestation "none", assertions signed as a security key
// or platform authenticator signs them. The browser's part (clientDataJSON
// with the page's origin) is played by it too. Its fields are the knobs the
// tests turn to make a response go wrong in one way.
type Authenticator struct {
	Origin     string // the page's origin the "browser" reports
	RPID       string // the RP id whose hash the authenticator signs
	Key        *ecdsa.PrivateKey
	Credential []byte
	UserHandle []byte
	Counter    uint32
	// Flags: user verified (UV), backup eligible and backed up (BE, BS).
	NoUV, BackupEligible, BackedUp bool
	// Challenge, when set, is signed instead of the options' challenge.
	Challenge string
	// CeremonyType, when set, replaces "webauthn.create"/"webauthn.get".
	CeremonyType string
}

// New is an authenticator whose browser reports origin, for the RP rpID.
func New(t testing.TB, origin, rpID string) *Authenticator {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	credential := make([]byte, 32)
	_, _ = rand.Read(credential)
	return &Authenticator{Origin: origin, RPID: rpID, Key: key, Credential: credential}
}

// B64 is the base64url encoding of WebAuthn's JSON form.
var B64 = base64.RawURLEncoding

// Options is the part of the creation or request options the authenticator reads.
type Options struct {
	PublicKey struct {
		Challenge string `json:"challenge"`
		RP        struct {
			ID string `json:"id"`
		} `json:"rp"`
		RPID string `json:"rpId"`
		User struct {
			ID string `json:"id"`
		} `json:"user"`
		UserVerification       string `json:"userVerification"`
		AuthenticatorSelection struct {
			ResidentKey      string `json:"residentKey"`
			UserVerification string `json:"userVerification"`
		} `json:"authenticatorSelection"`
		AllowCredentials []struct {
			ID string `json:"id"`
		} `json:"allowCredentials"`
		ExcludeCredentials []struct {
			ID string `json:"id"`
		} `json:"excludeCredentials"`
		Attestation string `json:"attestation"`
	} `json:"publicKey"`
}

// ParseOptions reads creation or request options.
func ParseOptions(t testing.TB, raw json.RawMessage) Options {
	t.Helper()
	var o Options
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("options %s: %v", raw, err)
	}
	return o
}

// clientData is the browser's clientDataJSON.
func (a *Authenticator) clientData(t testing.TB, typ, challenge string) []byte {
	t.Helper()
	if a.CeremonyType != "" {
		typ = a.CeremonyType
	}
	if a.Challenge != "" {
		challenge = a.Challenge
	}
	data, err := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.Origin, "crossOrigin": false})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// authData is the authenticator data: RP id hash, flags, counter, then
// attested (credential data, for a registration) when given.
func (a *Authenticator) authData(attested []byte) []byte {
	rpHash := sha256.Sum256([]byte(a.RPID))
	flags := byte(0x01) // UP
	if !a.NoUV {
		flags |= 0x04
	}
	if a.BackupEligible {
		flags |= 0x08
	}
	if a.BackedUp {
		flags |= 0x10
	}
	if attested != nil {
		flags |= 0x40 // AT
	}
	data := append(rpHash[:], flags)
	data = binary.BigEndian.AppendUint32(data, a.Counter)
	return append(data, attested...)
}

// Create answers navigator.credentials.create(options): the registration
// response in the WebAuthn JSON form.
func (a *Authenticator) Create(t testing.TB, raw json.RawMessage) []byte {
	t.Helper()
	o := ParseOptions(t, raw)
	userHandle, err := B64.DecodeString(o.PublicKey.User.ID)
	if err != nil {
		t.Fatalf("user.id %q: %v", o.PublicKey.User.ID, err)
	}
	a.UserHandle = userHandle
	point, err := a.Key.PublicKey.Bytes() // 0x04 || X || Y
	if err != nil {
		t.Fatal(err)
	}
	x, y := point[1:33], point[33:65]
	cose, err := webauthncbor.Marshal(webauthncose.EC2PublicKeyData{
		PublicKeyData: webauthncose.PublicKeyData{KeyType: int64(webauthncose.EllipticKey), Algorithm: int64(webauthncose.AlgES256)},
		Curve:         1, // P-256
		XCoord:        x, YCoord: y,
	})
	if err != nil {
		t.Fatal(err)
	}
	attested := make([]byte, 16) // AAGUID: zero, as with attestation "none"
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(a.Credential)))
	attested = append(attested, a.Credential...)
	attested = append(attested, cose...)
	object, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(attested)})
	if err != nil {
		t.Fatal(err)
	}
	return MustJSON(t, map[string]any{
		"id": B64.EncodeToString(a.Credential), "rawId": B64.EncodeToString(a.Credential), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    B64.EncodeToString(a.clientData(t, "webauthn.create", o.PublicKey.Challenge)),
			"attestationObject": B64.EncodeToString(object),
			"transports":        []string{"internal", "hybrid"},
		},
		"clientExtensionResults": map[string]any{},
	})
}

// Get answers navigator.credentials.get(options) with the next counter value.
func (a *Authenticator) Get(t testing.TB, raw json.RawMessage) []byte {
	t.Helper()
	o := ParseOptions(t, raw)
	a.Counter++
	clientData := a.clientData(t, "webauthn.get", o.PublicKey.Challenge)
	authData := a.authData(nil)
	clientHash := sha256.Sum256(clientData)
	digest := sha256.Sum256(append(append([]byte(nil), authData...), clientHash[:]...))
	signature, err := ecdsa.SignASN1(rand.Reader, a.Key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return MustJSON(t, map[string]any{
		"id": B64.EncodeToString(a.Credential), "rawId": B64.EncodeToString(a.Credential), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    B64.EncodeToString(clientData),
			"authenticatorData": B64.EncodeToString(authData),
			"signature":         B64.EncodeToString(signature),
			"userHandle":        B64.EncodeToString(a.UserHandle),
		},
		"clientExtensionResults": map[string]any{},
	})
}

// MustJSON is json.Marshal that fails the test on an error.
func MustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
