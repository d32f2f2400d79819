package secondfactor

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

// softAuthenticator is a minimal WebAuthn authenticator in software: one
// ES256 credential, attestation "none", assertions signed as a security key
// or platform authenticator signs them. The browser's part (clientDataJSON
// with the page's origin) is played by it too. Its fields are the knobs the
// tests turn to make a response go wrong in one way.
type softAuthenticator struct {
	origin     string // the page's origin the "browser" reports
	rpID       string // the RP id whose hash the authenticator signs
	key        *ecdsa.PrivateKey
	credential []byte
	userHandle []byte
	counter    uint32
	// Flags: user verified (UV), backup eligible and backed up (BE, BS).
	noUV, backupEligible, backedUp bool
	// challenge, when set, is signed instead of the options' challenge.
	challenge string
	// ceremonyType, when set, replaces "webauthn.create"/"webauthn.get".
	ceremonyType string
}

func newSoftAuthenticator(t *testing.T, origin, rpID string) *softAuthenticator {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	credential := make([]byte, 32)
	_, _ = rand.Read(credential)
	return &softAuthenticator{origin: origin, rpID: rpID, key: key, credential: credential}
}

var b64 = base64.RawURLEncoding

// options is the part of the creation or request options the authenticator reads.
type options struct {
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

func parseOptions(t *testing.T, raw json.RawMessage) options {
	t.Helper()
	var o options
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("options %s: %v", raw, err)
	}
	return o
}

func (a *softAuthenticator) clientData(t *testing.T, typ, challenge string) []byte {
	t.Helper()
	if a.ceremonyType != "" {
		typ = a.ceremonyType
	}
	if a.challenge != "" {
		challenge = a.challenge
	}
	data, err := json.Marshal(map[string]any{"type": typ, "challenge": challenge, "origin": a.origin, "crossOrigin": false})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// authData is the authenticator data: RP id hash, flags, counter, then
// attested (credential data, for a registration) when given.
func (a *softAuthenticator) authData(attested []byte) []byte {
	rpHash := sha256.Sum256([]byte(a.rpID))
	flags := byte(0x01) // UP
	if !a.noUV {
		flags |= 0x04
	}
	if a.backupEligible {
		flags |= 0x08
	}
	if a.backedUp {
		flags |= 0x10
	}
	if attested != nil {
		flags |= 0x40 // AT
	}
	data := append(rpHash[:], flags)
	data = binary.BigEndian.AppendUint32(data, a.counter)
	return append(data, attested...)
}

// create answers navigator.credentials.create(options): the registration
// response in the WebAuthn JSON form.
func (a *softAuthenticator) create(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	o := parseOptions(t, raw)
	userHandle, err := b64.DecodeString(o.PublicKey.User.ID)
	if err != nil {
		t.Fatalf("user.id %q: %v", o.PublicKey.User.ID, err)
	}
	a.userHandle = userHandle
	point, err := a.key.PublicKey.Bytes() // 0x04 || X || Y
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
	attested = binary.BigEndian.AppendUint16(attested, uint16(len(a.credential)))
	attested = append(attested, a.credential...)
	attested = append(attested, cose...)
	object, err := webauthncbor.Marshal(map[string]any{"fmt": "none", "attStmt": map[string]any{}, "authData": a.authData(attested)})
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, map[string]any{
		"id": b64.EncodeToString(a.credential), "rawId": b64.EncodeToString(a.credential), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(a.clientData(t, "webauthn.create", o.PublicKey.Challenge)),
			"attestationObject": b64.EncodeToString(object),
			"transports":        []string{"internal", "hybrid"},
		},
		"clientExtensionResults": map[string]any{},
	})
}

// get answers navigator.credentials.get(options) with the next counter value.
func (a *softAuthenticator) get(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	o := parseOptions(t, raw)
	a.counter++
	clientData := a.clientData(t, "webauthn.get", o.PublicKey.Challenge)
	authData := a.authData(nil)
	clientHash := sha256.Sum256(clientData)
	digest := sha256.Sum256(append(append([]byte(nil), authData...), clientHash[:]...))
	signature, err := ecdsa.SignASN1(rand.Reader, a.key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, map[string]any{
		"id": b64.EncodeToString(a.credential), "rawId": b64.EncodeToString(a.credential), "type": "public-key",
		"response": map[string]any{
			"clientDataJSON":    b64.EncodeToString(clientData),
			"authenticatorData": b64.EncodeToString(authData),
			"signature":         b64.EncodeToString(signature),
			"userHandle":        b64.EncodeToString(a.userHandle),
		},
		"clientExtensionResults": map[string]any{},
	})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
