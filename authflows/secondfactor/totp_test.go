package secondfactor

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	"image/png"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/boombuler/barcode/qr"
	"github.com/gatehouse-auth/gatehouse/storage"
)

func TestParseCode(t *testing.T) {
	for _, c := range []struct {
		in string
		ok bool
	}{
		{"123456", true},
		{"000000", true},
		{"12345", false},
		{"1234567", false},
		{"123 456", false},
		{" 123456", false},
		{"123456 ", false},
		{"12345a", false},
		{"abcdef", false},
		{"12-456", false},
		{"１２３４５６", false}, // full-width digits
		{"", false},
	} {
		got, err := ParseCode(c.in)
		if c.ok && (err != nil || got != c.in) {
			t.Errorf("ParseCode(%q) = %q, %v; want it back", c.in, got, err)
		}
		if !c.ok && !errors.Is(err, ErrCodeFormat) {
			t.Errorf("ParseCode(%q): %v, want ErrCodeFormat", c.in, err)
		}
	}
}

// The SHA-1 test vectors of RFC 6238 appendix B, cut to 6 digits.
func TestCodeAtRFC6238(t *testing.T) {
	secret := []byte("12345678901234567890")
	for _, c := range []struct {
		unix int64
		want string
	}{
		{59, "287082"},
		{1111111109, "081804"},
		{1111111111, "050471"},
		{1234567890, "005924"},
		{2000000000, "279037"},
		{20000000000, "353130"},
	} {
		got, err := CodeAt(secret, TimeStep(time.Unix(c.unix, 0)))
		if err != nil || got != c.want {
			t.Errorf("code at %d: %q, %v; want %q", c.unix, got, err, c.want)
		}
	}
}

func TestMatchCodeWindow(t *testing.T) {
	secret := newTOTPSecret()
	now := time.Date(2031, 3, 4, 5, 6, 7, 0, time.UTC)
	current := TimeStep(now)
	for _, c := range []struct {
		offset int64
		ok     bool
	}{{-2, false}, {-1, true}, {0, true}, {1, true}, {2, false}} {
		code, err := CodeAt(secret, current+c.offset)
		if err != nil {
			t.Fatal(err)
		}
		step, ok := matchCode(secret, code, now)
		if ok != c.ok || (ok && step != current+c.offset) {
			t.Errorf("code of step %+d: matched %v at %d, want %v at %d", c.offset, ok, step, c.ok, current+c.offset)
		}
	}
}

func TestEnrolment(t *testing.T) {
	s := newStore(t)
	u := newUser(t, s, "ada")
	f := New(s, Config{Issuer: "Acme: Intranet", Now: newClock().Now})
	e, err := f.BeginTOTP(t.Context(), u, "  My\tphone  ")
	if err != nil {
		t.Fatal(err)
	}
	link, err := url.Parse(e.URL)
	if err != nil || link.Scheme != "otpauth" || link.Host != "totp" {
		t.Fatalf("URL %q: %v", e.URL, err)
	}
	if want := "/Acme  Intranet:" + u.Email; link.Path != want {
		t.Errorf("label %q, want %q (no second colon)", link.Path, want)
	}
	q := link.Query()
	if q.Get("secret") != e.Secret || q.Get("issuer") != "Acme  Intranet" || q.Get("digits") != "6" ||
		q.Get("period") != "30" || q.Get("algorithm") != "SHA1" {
		t.Errorf("URL parameters %v", q)
	}
	raw, err := base32NoPadding.DecodeString(e.Secret)
	if err != nil || len(raw) != totpSecretSize {
		t.Fatalf("secret %q: %d bytes, %v", e.Secret, len(raw), err)
	}
	have, err := s.SecondFactors(t.Context(), u.ID)
	if err != nil || len(have.TOTP) != 1 {
		t.Fatalf("stored: %+v, %v", have, err)
	}
	stored := have.TOTP[0]
	if stored.ID != e.FactorID || stored.Confirmed || !bytes.Equal(stored.Secret, raw) || stored.Name != "My phone" {
		t.Fatalf("stored factor %+v", stored)
	}
	wantQRCode(t, e.QRCode, e.URL)
}

// wantQRCode fails unless uri is a PNG data URI whose modules are text's QR code.
func wantQRCode(t *testing.T, uri, text string) {
	t.Helper()
	data, ok := strings.CutPrefix(uri, "data:image/png;base64,")
	if !ok {
		t.Fatalf("QR code %.40q… is not a PNG data URI", uri)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("QR code PNG: %v", err)
	}
	want, err := qr.Encode(text, qr.M, qr.Auto)
	if err != nil {
		t.Fatal(err)
	}
	modules := want.Bounds().Dx()
	if side := (modules + 2*qrQuietModules) * qrModulePixels; img.Bounds() != image.Rect(0, 0, side, side) {
		t.Fatalf("QR code image %v, want %d×%d", img.Bounds(), side, side)
	}
	dark := func(x, y int) bool { r, _, _, _ := img.At(x, y).RGBA(); return r == 0 }
	for y := -qrQuietModules; y < modules+qrQuietModules; y++ {
		for x := -qrQuietModules; x < modules+qrQuietModules; x++ {
			wantDark := false
			if x >= 0 && y >= 0 && x < modules && y < modules {
				r, _, _, _ := want.At(x, y).RGBA()
				wantDark = r == 0
			}
			px, py := (x+qrQuietModules)*qrModulePixels+qrModulePixels/2, (y+qrQuietModules)*qrModulePixels+qrModulePixels/2
			if dark(px, py) != wantDark {
				t.Fatalf("QR module (%d,%d): dark %v, want %v", x, y, dark(px, py), wantDark)
			}
		}
	}
}

// enrolled returns a user with a confirmed TOTP factor, its secret and the
// recovery codes of the confirmation.
func enrolled(t *testing.T, s storage.Store, f *Factors, c *clock, name string) (storage.User, []byte, []string) {
	t.Helper()
	u := newUser(t, s, name)
	e, err := f.BeginTOTP(t.Context(), u, "Phone")
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := base32NoPadding.DecodeString(e.Secret)
	code, _ := CodeAt(secret, TimeStep(c.Now()))
	codes, err := f.ConfirmTOTP(t.Context(), u.ID, e.FactorID, code)
	if err != nil {
		t.Fatalf("ConfirmTOTP: %v", err)
	}
	c.Add(2 * totpPeriod * time.Second) // past the confirming step, spent, and its neighbour
	return u, secret, codes
}

func TestConfirmTOTP(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u := newUser(t, s, "ada")
	e, err := f.BeginTOTP(t.Context(), u, "")
	if err != nil {
		t.Fatal(err)
	}
	secret, _ := base32NoPadding.DecodeString(e.Secret)
	good, _ := CodeAt(secret, TimeStep(c.Now()))
	wrong, _ := CodeAt(secret, TimeStep(c.Now())+5)
	for _, bad := range []struct {
		name, factor, code string
		want               error
	}{
		{"letters", e.FactorID, "12a456", ErrCodeFormat},
		{"spaces", e.FactorID, good[:3] + " " + good[3:], ErrCodeFormat},
		{"wrong code", e.FactorID, wrong, ErrInvalidCode},
		{"unknown enrolment", "nope", good, ErrNoPendingFactor},
	} {
		codes, err := f.ConfirmTOTP(t.Context(), u.ID, bad.factor, bad.code)
		if !errors.Is(err, bad.want) || codes != nil {
			t.Errorf("ConfirmTOTP(%s): %v, %v; want %v", bad.name, codes, err, bad.want)
		}
	}
	if have, _ := s.SecondFactors(t.Context(), u.ID); have.Enrolled() || have.RecoveryCodesLeft != 0 {
		t.Fatalf("refused confirmations stored something: %+v", have)
	}
	codes, err := f.ConfirmTOTP(t.Context(), u.ID, e.FactorID, good)
	if err != nil || len(codes) != RecoveryCodeCount {
		t.Fatalf("ConfirmTOTP: %d codes, %v; want %d", len(codes), err, RecoveryCodeCount)
	}
	have, _ := s.SecondFactors(t.Context(), u.ID)
	if !have.Enrolled() || have.RecoveryCodesLeft != RecoveryCodeCount {
		t.Fatalf("after confirming: %+v", have)
	}
	// The confirming code cannot sign in.
	if err := f.VerifyTOTP(t.Context(), u.ID, good); !errors.Is(err, ErrCodeReused) {
		t.Fatalf("VerifyTOTP(the confirming code): %v, want ErrCodeReused", err)
	}

	// A second app is not the first factor: no new recovery codes.
	e2, _ := f.BeginTOTP(t.Context(), u, "Tablet")
	secret2, _ := base32NoPadding.DecodeString(e2.Secret)
	next, _ := CodeAt(secret2, TimeStep(c.Now())+1)
	codes, err = f.ConfirmTOTP(t.Context(), u.ID, e2.FactorID, next)
	if err != nil || codes != nil {
		t.Fatalf("ConfirmTOTP(second app): %v, %v; want no codes", codes, err)
	}
}

func TestConfirmTOTPLapses(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u := newUser(t, s, "ada")
	e, _ := f.BeginTOTP(t.Context(), u, "")
	secret, _ := base32NoPadding.DecodeString(e.Secret)
	c.Add(DefaultPendingTOTPTTL)
	code, _ := CodeAt(secret, TimeStep(c.Now()))
	if _, err := f.ConfirmTOTP(t.Context(), u.ID, e.FactorID, code); !errors.Is(err, ErrNoPendingFactor) {
		t.Fatalf("ConfirmTOTP after %s: %v, want ErrNoPendingFactor", DefaultPendingTOTPTTL, err)
	}
}

func TestVerifyTOTP(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u, secret, _ := enrolled(t, s, f, c, "ada")
	step := TimeStep(c.Now())
	code := func(offset int64) string {
		code, _ := CodeAt(secret, step+offset)
		return code
	}
	for _, try := range []struct {
		name, code string
		want       error
	}{
		{"two steps back", code(-2), ErrInvalidCode},
		{"two steps ahead", code(2), ErrInvalidCode},
		{"letters", "abcdef", ErrCodeFormat},
		{"spaces", " " + code(0)[:5], ErrCodeFormat},
		{"one step back", code(-1), nil},
		{"one step back again", code(-1), ErrCodeReused},
		{"current", code(0), nil},
		{"current again", code(0), ErrCodeReused},
		{"one step back after the current", code(-1), ErrCodeReused},
		{"one step ahead", code(1), nil},
		{"current after the next", code(0), ErrCodeReused},
	} {
		err := f.VerifyTOTP(t.Context(), u.ID, try.code)
		if (try.want == nil && err != nil) || (try.want != nil && !errors.Is(err, try.want)) {
			t.Fatalf("VerifyTOTP(%s): %v, want %v", try.name, err, try.want)
		}
	}
	if !errors.Is(ErrCodeReused, ErrInvalidCode) {
		t.Fatal("ErrCodeReused does not match ErrInvalidCode")
	}
	other := newUser(t, s, "bob")
	if err := f.VerifyTOTP(t.Context(), other.ID, code(3)); !errors.Is(err, ErrInvalidCode) {
		t.Fatalf("VerifyTOTP of a user without TOTP: %v, want ErrInvalidCode", err)
	}
}

// Two sign-ins racing with the same code: exactly one gets in.
func TestVerifyTOTPConcurrent(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u, secret, _ := enrolled(t, s, f, c, "ada")
	for range 3 {
		c.Add(totpPeriod * time.Second)
		code, _ := CodeAt(secret, TimeStep(c.Now()))
		won := 0
		for _, err := range concurrently(2, func() error { return f.VerifyTOTP(t.Context(), u.ID, code) }) {
			switch {
			case err == nil:
				won++
			case !errors.Is(err, ErrCodeReused):
				t.Fatalf("the loser: %v, want ErrCodeReused", err)
			}
		}
		if won != 1 {
			t.Fatalf("%d of 2 concurrent sign-ins with one code succeeded, want 1", won)
		}
	}
}

func TestRemovedFactorStopsCodes(t *testing.T) {
	s := newStore(t)
	c := newClock()
	f := New(s, Config{Issuer: "Acme", Now: c.Now})
	u, secret, _ := enrolled(t, s, f, c, "ada")
	have, _ := s.SecondFactors(t.Context(), u.ID)
	if err := s.RemoveFactor(t.Context(), u.ID, have.TOTP[0].ID); err != nil {
		t.Fatal(err)
	}
	code, _ := CodeAt(secret, TimeStep(c.Now()))
	if err := f.VerifyTOTP(t.Context(), u.ID, code); !errors.Is(err, ErrInvalidCode) {
		t.Fatalf("VerifyTOTP after removal: %v, want ErrInvalidCode", err)
	}
	if have, _ := s.SecondFactors(t.Context(), u.ID); have.RecoveryCodesLeft != 0 {
		t.Fatalf("recovery codes outlived the last factor: %d", have.RecoveryCodesLeft)
	}
}
