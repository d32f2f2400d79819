// Package password owns the password rules and their hashing, with no HTTP:
// argon2id PHC hashes behind a bounded number of slots (Hasher), the rules
// a new password must pass (Check: NFKC, length, not the email, not a
// common password, zxcvbn's strength estimate) and the one form in which
// passwords are measured and hashed (Normalize).
//
// Dependencies: password → none of this module (the standard library,
// x/crypto/argon2, x/text/unicode/norm and zxcvbn only). The sign-in and
// password flows of authflows, authflows/admin and cmd/gatehouse call it.
package password
