// Package secondfactor owns the rules of the second factor: TOTP codes
// (RFC 6238: SHA-1, 6 digits, 30-second steps, one step either side, each
// step accepted once per user), recovery codes, passkeys (WebAuthn
// ceremonies with resident keys and user verification required), and the
// second-factor step between a first factor and the session. It has no
// HTTP handlers: the flows under /auth/ call it and map its errors to
// answers, so that each rule has one home and the handlers stay thin.
//
// Dependencies: secondfactor imports storage (records and the atomic
// store calls it declares in small interfaces), github.com/pquerna/otp
// (TOTP codes and otpauth URLs), github.com/boombuler/barcode (the QR
// code) and github.com/go-webauthn/webauthn (ceremony verification). It
// imports neither proxy nor authflows.
//
// Every secret the browser holds (the step's and a ceremony's binding
// value) is stored only by its SHA-256; recovery codes are stored only as
// SHA-256 digests too. Time comes from an injected clock.
package secondfactor
