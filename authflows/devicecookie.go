package authflows

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"
)

// deviceStore is where the device cookie's key is kept.
type deviceStore interface {
	Secret(ctx context.Context, name string) ([]byte, error)
}

// Device cookies (DV1, OWASP "Slow brute force protection with device
// cookies"). The per-account failure bucket stops guessing, but it also
// locks the real owner out. A browser that has signed in to an account
// carries a device cookie for it: a random nonce and an HMAC over the
// account's normalized email and the nonce. With a valid device cookie for
// the account being signed in to, attempts are counted in the nonce's own
// bucket instead of the account's: a lock caused by guesses from elsewhere
// does not apply to that browser, and a stolen cookie still allows only a
// bucket's worth of guesses.
//
// The HMAC key is kept in the store (Store.Secret "device-cookie"), made on
// first use: cookies stay valid across restarts and on every replica of a
// shared store. The cookie lasts deviceCookieTTL, is HttpOnly, Secure per
// --cookie-secure and scoped to /auth/, so it never reaches the upstream.
// A browser keeps one device cookie: the account it last signed in to.
//
// A cookie made by a sign-in that gave two factors is signed in its own
// domain (deviceMAC's twoFactor): only such a cookie has a bucket of its
// own for second-factor failures (MF2). Cookies of one-factor sign-ins
// (any taken before the user enrolled, by whoever had the password) count
// in the account's bucket there, so collecting them buys no more guesses.

const (
	deviceCookieName = "gatehouse_device"
	deviceCookieTTL  = 180 * 24 * time.Hour
	deviceKeyName    = "device-cookie"
	deviceNonceLen   = 16
)

// deviceKey loads the HMAC key from the store once; a failure is retried at
// the next use.
type deviceKey struct {
	mu  sync.Mutex
	key []byte
}

func (h *core) deviceKey(ctx context.Context) ([]byte, error) {
	k := &h.device
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key == nil {
		key, err := h.secrets.Secret(ctx, deviceKeyName)
		if err != nil {
			return nil, err
		}
		k.key = key
	}
	return k.key, nil
}

// deviceMAC is the cookie's signature of the account email and the nonce,
// in the domain of sign-ins with two factors when twoFactor is set.
func deviceMAC(key []byte, email string, nonce []byte, twoFactor bool) []byte {
	m := hmac.New(sha256.New, key)
	if twoFactor {
		m.Write([]byte("gatehouse device cookie, two factors\x00"))
	} else {
		m.Write([]byte("gatehouse device cookie\x00"))
	}
	m.Write([]byte(email))
	m.Write([]byte{0})
	m.Write(nonce)
	return m.Sum(nil)
}

// deviceNonce returns the nonce of the request's device cookie when the
// cookie is valid for the account email (normalized); "" otherwise.
func (h *core) deviceNonce(r *http.Request, email string) string {
	nonce, _ := h.deviceCookie(r, email)
	return nonce
}

// deviceCookie returns the nonce of the request's device cookie when the
// cookie is valid for the account email (normalized), "" otherwise, and
// whether a sign-in with two factors made it.
func (h *core) deviceCookie(r *http.Request, email string) (nonce string, twoFactor bool) {
	c, err := r.Cookie(deviceCookieName)
	if err != nil {
		return "", false
	}
	rawNonce, rawMAC, ok := strings.Cut(c.Value, ".")
	if !ok {
		return "", false
	}
	// Strict: the spare bits of the last character must be zero, so that a
	// cookie has one spelling and one bucket (a non-strict decoder reads
	// sixteen spellings of a 16-byte nonce as the same bytes).
	b64 := base64.RawURLEncoding.Strict()
	raw, err1 := b64.DecodeString(rawNonce)
	mac, err2 := b64.DecodeString(rawMAC)
	if err1 != nil || err2 != nil || len(raw) != deviceNonceLen {
		return "", false
	}
	key, err := h.deviceKey(r.Context())
	if err != nil {
		h.log.WarnContext(r.Context(), "device cookie key unavailable", "err", err)
		return "", false
	}
	// The bytes, not the text, are the bucket's key.
	switch {
	case hmac.Equal(mac, deviceMAC(key, email, raw, true)):
		return string(raw), true
	case hmac.Equal(mac, deviceMAC(key, email, raw, false)):
		return string(raw), false
	}
	return "", false
}

// setDeviceCookie gives the browser a device cookie for the account email
// after a successful sign-in, of two factors when twoFactor is set.
// Without the key, the browser simply gets none.
func (h *core) setDeviceCookie(w http.ResponseWriter, r *http.Request, email string, twoFactor bool) {
	key, err := h.deviceKey(r.Context())
	if err != nil {
		h.log.WarnContext(r.Context(), "device cookie key unavailable", "err", err)
		return
	}
	nonce := make([]byte, deviceNonceLen)
	_, _ = rand.Read(nonce) // crypto/rand.Read never fails
	b64 := base64.RawURLEncoding
	http.SetCookie(w, &http.Cookie{
		Name:     deviceCookieName,
		Value:    b64.EncodeToString(nonce) + "." + b64.EncodeToString(deviceMAC(key, email, nonce, twoFactor)),
		Path:     "/auth/",
		MaxAge:   int(deviceCookieTTL.Seconds()),
		HttpOnly: true,
		Secure:   h.cfg.CookieSecure,
		SameSite: http.SameSiteLaxMode,
	})
}

// loginBucket is the failure bucket a sign-in to email is counted in: the
// device cookie's own when the browser has a valid one for this account,
// else the account's.
func (h *core) loginBucket(r *http.Request, email string) (*keyedLimiter, string) {
	if nonce := h.deviceNonce(r, email); nonce != "" {
		return h.limits.deviceFailures, nonce
	}
	return h.limits.loginFailures, loginAccountKey(email)
}
