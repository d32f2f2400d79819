package bolt

import (
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Sessions written before the second factor (version 2) still decode, with
// no SecondFactor, and LastSeen can still be touched in place.
func TestVersion2SessionDecodes(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	v2 := []byte{2}
	for _, tm := range []time.Time{now, now.Add(time.Hour), now.Add(time.Minute)} {
		v2 = binary.BigEndian.AppendUint64(v2, uint64(timeToInt(tm)))
	}
	v2 = binary.BigEndian.AppendUint64(v2, 7) // epoch
	strs := []string{"user", "a@example.com", "pwd", "g", "192.0.2.1", "curl/8"}
	for _, s := range strs {
		v2 = binary.AppendUvarint(v2, uint64(len(s)))
	}
	for _, s := range strs {
		v2 = append(v2, s...)
	}
	want := storage.Session{UserID: "user", Email: "a@example.com", Method: "pwd", Groups: "g", IP: "192.0.2.1",
		UserAgent: "curl/8", Epoch: 7, CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now.Add(time.Minute)}
	got, err := decodeSession(storage.Hash{}, v2)
	if err != nil || got != want {
		t.Fatalf("v2 session: %+v, %v; want %+v", got, err, want)
	}
	touched, err := withLastSeen(v2, now.Add(2*time.Minute))
	if err != nil {
		t.Fatalf("withLastSeen on v2: %v", err)
	}
	if got, _ := decodeSession(storage.Hash{}, touched); !got.LastSeen.Equal(now.Add(2 * time.Minute)) {
		t.Fatalf("touched v2 session: LastSeen %v", got.LastSeen)
	}
	if _, err := decodeSession(storage.Hash{}, append([]byte{4}, v2[1:]...)); !errors.Is(err, errCorrupt) {
		t.Fatalf("unknown version 4: %v, want errCorrupt", err)
	}
}

func TestFactorCodecs(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 123456789, time.UTC)
	totp := storage.TOTPFactor{ID: "f1", UserID: "u", Name: "Phone", Secret: []byte("12345678901234567890"),
		CreatedAt: now, ExpiresAt: now.Add(10 * time.Minute)}
	gotTOTP, err := decodeTOTPFactor(encodeTOTPFactor(totp))
	if err != nil || !reflect.DeepEqual(gotTOTP, totp) {
		t.Fatalf("totp round trip: %+v, %v", gotTOTP, err)
	}
	passkey := storage.Passkey{ID: "f2", UserID: "u", Name: "Key", CredentialID: []byte{1, 2, 3}, PublicKey: []byte{4, 5},
		AttestationType: "none", AttestationFormat: "none", AAGUID: make([]byte, 16), SignCount: 1<<32 - 1,
		Transports: []string{"usb", "internal"}, UserVerified: true, BackupEligible: true, BackupState: true,
		UserHandle: []byte("u"), CreatedAt: now, LastUsedAt: now.Add(time.Hour)}
	gotPasskey, err := decodePasskey(encodePasskey(passkey))
	if err != nil || !reflect.DeepEqual(gotPasskey, passkey) {
		t.Fatalf("passkey round trip: %+v, %v", gotPasskey, err)
	}
	if _, err := decodeTOTPFactor(encodePasskey(passkey)); !errors.Is(err, errCorrupt) {
		t.Fatalf("a passkey decoded as a TOTP factor: %v, want errCorrupt", err)
	}
	for name, v := range map[string][]byte{"totp": encodeTOTPFactor(totp), "passkey": encodePasskey(passkey)} {
		for n := range len(v) {
			_, err1 := decodeTOTPFactor(v[:n])
			_, err2 := decodePasskey(v[:n])
			if !errors.Is(err1, errCorrupt) || !errors.Is(err2, errCorrupt) {
				t.Fatalf("%s truncated to %d bytes: %v, %v; want errCorrupt", name, n, err1, err2)
			}
		}
	}
	step := storage.SecondFactorStep{BrowserHash: storage.HashSecret("b"), UserID: "u", Epoch: 3, Method: "github",
		Groups: "github:acme", Redirect: "/x", CreatedAt: now, ExpiresAt: now.Add(5 * time.Minute)}
	if got, err := decodeSecondFactorStep(step.BrowserHash, encodeSecondFactorStep(step)); err != nil || got != step {
		t.Fatalf("step round trip: %+v, %v", got, err)
	}
	ceremony := storage.WebAuthnCeremony{BrowserHash: storage.HashSecret("c"), Purpose: storage.CeremonyRegister,
		UserID: "u", SessionHash: storage.HashSecret("s"), Data: []byte(`{"challenge":"x"}`), CreatedAt: now, ExpiresAt: now}
	if got, err := decodeWebAuthnCeremony(ceremony.BrowserHash, encodeWebAuthnCeremony(ceremony)); err != nil || !reflect.DeepEqual(got, ceremony) {
		t.Fatalf("ceremony round trip: %+v, %v", got, err)
	}
}
