package secondfactor

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base32"
	"fmt"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

// The TOTP parameters (RFC 6238), which every authenticator app supports.
const (
	totpPeriod     = 30 // seconds per time step
	totpDigits     = otp.DigitsSix
	totpSkew       = 1  // steps accepted either side of the current one
	totpSecretSize = 20 // bytes: 160 bits, the HMAC-SHA-1 block's worth (RFC 4226 §4)
)

var totpOptions = totp.ValidateOpts{Period: totpPeriod, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1}

// base32NoPadding is how secrets are written for authenticator apps.
var base32NoPadding = base32.StdEncoding.WithPadding(base32.NoPadding)

// ParseCode returns input if it is a TOTP code: exactly six ASCII digits.
// Anything else (spaces, letters, another length) is ErrCodeFormat, so a
// typo is told apart from a wrong code and never reaches the store.
func ParseCode(input string) (string, error) {
	if len(input) != int(totpDigits) {
		return "", ErrCodeFormat
	}
	for i := range len(input) {
		if input[i] < '0' || input[i] > '9' {
			return "", ErrCodeFormat
		}
	}
	return input, nil
}

// TimeStep is the RFC 6238 time step of t.
func TimeStep(t time.Time) int64 {
	s := t.Unix()
	if s < 0 {
		return (s - totpPeriod + 1) / totpPeriod
	}
	return s / totpPeriod
}

// newTOTPSecret returns a new random secret.
func newTOTPSecret() []byte {
	secret := make([]byte, totpSecretSize)
	_, _ = rand.Read(secret) // crypto/rand.Read never fails
	return secret
}

// CodeAt returns the code of secret for time step step.
func CodeAt(secret []byte, step int64) (string, error) {
	return totp.GenerateCodeCustom(base32NoPadding.EncodeToString(secret), time.Unix(step*totpPeriod, 0), totpOptions)
}

// matchCode returns the time step, within one step of now's, whose code of
// secret is code. All three candidates are computed and compared in
// constant time, so the time taken does not tell which one matched; when
// two match (a one-in-a-million coincidence) the later step wins, so that
// accepting it spends both.
func matchCode(secret []byte, code string, now time.Time) (step int64, ok bool) {
	current := TimeStep(now)
	for s := current - totpSkew; s <= current+totpSkew; s++ {
		want, err := CodeAt(secret, s)
		if err != nil {
			continue
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			step, ok = s, true
		}
	}
	return step, ok
}

// Enrolment is what a user needs to add a TOTP factor to an authenticator
// app: scan QRCode, or open URL on the phone, or type Secret by hand.
type Enrolment struct {
	FactorID string // confirm with ConfirmTOTP(FactorID, code)
	Secret   string // base32, no padding, for manual entry
	URL      string // otpauth://totp/…
	QRCode   string // the URL as a QR code: a data:image/png;base64 URI for an <img src>
}

// enrolment renders secret for issuer (the app's name) and account (the
// user's email).
func enrolment(factorID string, secret []byte, issuer, account string) (Enrolment, error) {
	key, err := totp.Generate(totp.GenerateOpts{
		Issuer: labelPart(issuer), AccountName: labelPart(account),
		Period: totpPeriod, Digits: totpDigits, Algorithm: otp.AlgorithmSHA1, Secret: secret,
	})
	if err != nil {
		return Enrolment{}, fmt.Errorf("secondfactor: otpauth URL: %w", err)
	}
	qr, err := qrDataURI(key.URL())
	if err != nil {
		return Enrolment{}, err
	}
	return Enrolment{FactorID: factorID, Secret: key.Secret(), URL: key.URL(), QRCode: qr}, nil
}

// labelPart makes s usable on either side of the otpauth label's
// "issuer:account" colon: no colon of its own, and never empty.
func labelPart(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, ":", " "))
	if s == "" {
		return "Gatehouse"
	}
	return s
}
