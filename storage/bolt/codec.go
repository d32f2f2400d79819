package bolt

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Records are stored in a hand-written binary layout: a version byte, then
// fields in a fixed order. Times are 8-byte big-endian unix nanoseconds
// (timeToInt), strings are a uvarint length and the bytes, hashes are 32
// raw bytes. The key of a record (hash, mail id) is not repeated in the value.
//
// Decoders copy every byte they keep, so the result outlives the transaction.

const recordVersion = 1

// Session layout, version 1, read on every proxied request:
//
//	[0]      version
//	[1:9]    CreatedAt
//	[9:17]   ExpiresAt
//	[17:25]  LastSeen
//	uvarint  len(UserID)
//	uvarint  len(Email)
//	UserID bytes, then Email bytes (decoded with a single allocation)
const (
	sessionCreatedAt = 1
	sessionExpiresAt = 9
	sessionLastSeen  = 17
	sessionFixedLen  = 25
)

func encodeSession(s storage.Session) []byte {
	b := make([]byte, sessionFixedLen, sessionFixedLen+2*binary.MaxVarintLen16+len(s.UserID)+len(s.Email))
	b[0] = recordVersion
	binary.BigEndian.PutUint64(b[sessionCreatedAt:], uint64(timeToInt(s.CreatedAt)))
	binary.BigEndian.PutUint64(b[sessionExpiresAt:], uint64(timeToInt(s.ExpiresAt)))
	binary.BigEndian.PutUint64(b[sessionLastSeen:], uint64(timeToInt(s.LastSeen)))
	b = binary.AppendUvarint(b, uint64(len(s.UserID)))
	b = binary.AppendUvarint(b, uint64(len(s.Email)))
	b = append(b, s.UserID...)
	return append(b, s.Email...)
}

// decodeSession decodes v, the value stored under idHash. Its one allocation
// is the string holding UserID and Email.
func decodeSession(idHash storage.Hash, v []byte) (storage.Session, error) {
	if len(v) < sessionFixedLen || v[0] != recordVersion {
		return storage.Session{}, fmt.Errorf("session: %w", errCorrupt)
	}
	rest := v[sessionFixedLen:]
	userLen, n1 := binary.Uvarint(rest)
	if n1 <= 0 {
		return storage.Session{}, fmt.Errorf("session: %w", errCorrupt)
	}
	emailLen, n2 := binary.Uvarint(rest[n1:])
	if n2 <= 0 || uint64(len(rest)-n1-n2) != userLen+emailLen {
		return storage.Session{}, fmt.Errorf("session: %w", errCorrupt)
	}
	both := string(rest[n1+n2:])
	return storage.Session{
		IDHash:    idHash,
		UserID:    both[:userLen],
		Email:     both[userLen:],
		CreatedAt: intToTime(int64(binary.BigEndian.Uint64(v[sessionCreatedAt:]))),
		ExpiresAt: intToTime(int64(binary.BigEndian.Uint64(v[sessionExpiresAt:]))),
		LastSeen:  intToTime(int64(binary.BigEndian.Uint64(v[sessionLastSeen:]))),
	}, nil
}

// withLastSeen returns a copy of the encoded session v with LastSeen set.
func withLastSeen(v []byte, lastSeen time.Time) ([]byte, error) {
	if len(v) < sessionFixedLen || v[0] != recordVersion {
		return nil, fmt.Errorf("session: %w", errCorrupt)
	}
	out := append([]byte(nil), v...)
	binary.BigEndian.PutUint64(out[sessionLastSeen:], uint64(timeToInt(lastSeen)))
	return out, nil
}

// encoder appends fields; decoder reads them back in the same order and
// remembers the first error, which err reports (with trailing bytes).
type encoder struct{ b []byte }

func newEncoder() *encoder { return &encoder{b: []byte{recordVersion}} }

func (e *encoder) str(s string) {
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}
func (e *encoder) time(t time.Time)    { e.b = binary.BigEndian.AppendUint64(e.b, uint64(timeToInt(t))) }
func (e *encoder) hash(h storage.Hash) { e.b = append(e.b, h[:]...) }
func (e *encoder) varint(n int64)      { e.b = binary.AppendVarint(e.b, n) }

type decoder struct {
	b   []byte
	bad bool
}

func newDecoder(v []byte) *decoder {
	if len(v) == 0 || v[0] != recordVersion {
		return &decoder{bad: true}
	}
	return &decoder{b: v[1:]}
}

func (d *decoder) str() string {
	n, w := binary.Uvarint(d.b)
	if d.bad || w <= 0 || uint64(len(d.b)-w) < n {
		d.bad = true
		return ""
	}
	s := string(d.b[w : w+int(n)])
	d.b = d.b[w+int(n):]
	return s
}

func (d *decoder) time() time.Time {
	if d.bad || len(d.b) < 8 {
		d.bad = true
		return time.Time{}
	}
	t := intToTime(int64(binary.BigEndian.Uint64(d.b)))
	d.b = d.b[8:]
	return t
}

func (d *decoder) hash() (h storage.Hash) {
	if d.bad || len(d.b) < storage.HashSize {
		d.bad = true
		return h
	}
	copy(h[:], d.b)
	d.b = d.b[storage.HashSize:]
	return h
}

func (d *decoder) varint() int64 {
	n, w := binary.Varint(d.b)
	if d.bad || w <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[w:]
	return n
}

func (d *decoder) err(what string) error {
	if d.bad || len(d.b) != 0 {
		return fmt.Errorf("%s: %w", what, errCorrupt)
	}
	return nil
}

func encodeUser(u storage.User) []byte {
	e := newEncoder()
	e.str(u.ID)
	e.str(u.Email)
	e.str(u.PasswordHash)
	e.time(u.CreatedAt)
	return e.b
}

func decodeUser(v []byte) (storage.User, error) {
	d := newDecoder(v)
	u := storage.User{ID: d.str(), Email: d.str(), PasswordHash: d.str(), CreatedAt: d.time()}
	return u, d.err("user")
}

func encodeIdentity(id storage.Identity) []byte {
	e := newEncoder()
	e.str(id.Provider)
	e.str(id.Subject)
	e.str(id.Email)
	e.str(id.UserID)
	e.time(id.CreatedAt)
	return e.b
}

func decodeIdentity(v []byte) (storage.Identity, error) {
	d := newDecoder(v)
	id := storage.Identity{Provider: d.str(), Subject: d.str(), Email: d.str(), UserID: d.str(), CreatedAt: d.time()}
	return id, d.err("identity")
}

func encodeResetToken(t storage.ResetToken) []byte {
	e := newEncoder()
	e.str(t.UserID)
	e.time(t.CreatedAt)
	e.time(t.ExpiresAt)
	return e.b
}

func decodeResetToken(h storage.Hash, v []byte) (storage.ResetToken, error) {
	d := newDecoder(v)
	t := storage.ResetToken{Hash: h, UserID: d.str(), CreatedAt: d.time(), ExpiresAt: d.time()}
	return t, d.err("reset token")
}

func encodeOAuthFlow(f storage.OAuthFlow) []byte {
	e := newEncoder()
	e.str(f.Provider)
	e.str(f.Purpose)
	e.str(f.Verifier)
	e.str(f.Nonce)
	e.str(f.Redirect)
	e.hash(f.BrowserHash)
	e.hash(f.SessionHash)
	e.time(f.CreatedAt)
	e.time(f.ExpiresAt)
	return e.b
}

func decodeOAuthFlow(h storage.Hash, v []byte) (storage.OAuthFlow, error) {
	d := newDecoder(v)
	f := storage.OAuthFlow{
		StateHash: h,
		Provider:  d.str(), Purpose: d.str(), Verifier: d.str(), Nonce: d.str(), Redirect: d.str(),
		BrowserHash: d.hash(), SessionHash: d.hash(),
		CreatedAt: d.time(), ExpiresAt: d.time(),
	}
	return f, d.err("oauth flow")
}

// Mail layout, version 2: To, Subject, Text, HTML, Attempts (varint),
// NextAttempt, CreatedAt, then Kind and UserID. Version 1, written before
// queued jobs existed, ends after CreatedAt and decodes as a ready message
// (empty Kind and UserID).
const (
	mailVersion1 = 1
	mailVersion  = 2
)

func encodeMail(m storage.Mail) []byte {
	e := &encoder{b: []byte{mailVersion}}
	e.str(m.To)
	e.str(m.Subject)
	e.str(m.Text)
	e.str(m.HTML)
	e.varint(int64(m.Attempts))
	e.time(m.NextAttempt)
	e.time(m.CreatedAt)
	e.str(m.Kind)
	e.str(m.UserID)
	return e.b
}

func decodeMail(id uint64, v []byte) (storage.Mail, error) {
	if len(v) == 0 || (v[0] != mailVersion1 && v[0] != mailVersion) {
		return storage.Mail{}, fmt.Errorf("mail: %w", errCorrupt)
	}
	d := &decoder{b: v[1:]}
	m := storage.Mail{
		ID: id, To: d.str(), Subject: d.str(), Text: d.str(), HTML: d.str(),
		Attempts: int(d.varint()), NextAttempt: d.time(), CreatedAt: d.time(),
	}
	if v[0] == mailVersion {
		m.Kind, m.UserID = d.str(), d.str()
	}
	return m, d.err("mail")
}
