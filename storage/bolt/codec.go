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

// Session layout, version 3, read on every proxied request:
//
//	[0]      version (3)
//	[1:9]    CreatedAt
//	[9:17]   ExpiresAt
//	[17:25]  LastSeen
//	[25:33]  Epoch
//	uvarint  len(UserID), len(Email), len(Method), len(Groups), len(IP), len(UserAgent), len(SecondFactor)
//	the seven strings' bytes in that order (decoded with a single allocation)
//
// Version 2 has six strings (no SecondFactor); version 1 (v1 binaries) has
// no Epoch and only UserID and Email. Both decode with the missing fields
// empty.
const (
	sessionVersion1  = 1
	sessionVersion2  = 2
	sessionVersion   = 3
	sessionCreatedAt = 1
	sessionExpiresAt = 9
	sessionLastSeen  = 17
	sessionEpoch     = 25
	sessionFixedLen  = 25 // the part every version shares
	sessionStrings   = 7
)

// sessionStringCount is how many strings a session of version v holds; 0
// for an unknown version.
func sessionStringCount(v byte) int {
	switch v {
	case sessionVersion1:
		return 2
	case sessionVersion2:
		return 6
	case sessionVersion:
		return sessionStrings
	}
	return 0
}

func encodeSession(s storage.Session) []byte {
	strs := [sessionStrings]string{s.UserID, s.Email, s.Method, s.Groups, s.IP, s.UserAgent, s.SecondFactor}
	size := sessionFixedLen + 8
	for _, str := range strs {
		size += binary.MaxVarintLen32 + len(str)
	}
	b := make([]byte, sessionFixedLen+8, size)
	b[0] = sessionVersion
	binary.BigEndian.PutUint64(b[sessionCreatedAt:], uint64(timeToInt(s.CreatedAt)))
	binary.BigEndian.PutUint64(b[sessionExpiresAt:], uint64(timeToInt(s.ExpiresAt)))
	binary.BigEndian.PutUint64(b[sessionLastSeen:], uint64(timeToInt(s.LastSeen)))
	binary.BigEndian.PutUint64(b[sessionEpoch:], s.Epoch)
	for _, str := range strs {
		b = binary.AppendUvarint(b, uint64(len(str)))
	}
	for _, str := range strs {
		b = append(b, str...)
	}
	return b
}

// decodeSession decodes v, the value stored under idHash. Its one allocation
// is the string holding all the string fields.
func decodeSession(idHash storage.Hash, v []byte) (storage.Session, error) {
	if len(v) < sessionFixedLen || sessionStringCount(v[0]) == 0 {
		return storage.Session{}, fmt.Errorf("session: %w", errCorrupt)
	}
	s := storage.Session{
		IDHash:    idHash,
		CreatedAt: intToTime(int64(binary.BigEndian.Uint64(v[sessionCreatedAt:]))),
		ExpiresAt: intToTime(int64(binary.BigEndian.Uint64(v[sessionExpiresAt:]))),
		LastSeen:  intToTime(int64(binary.BigEndian.Uint64(v[sessionLastSeen:]))),
	}
	count, rest := sessionStringCount(v[0]), v[sessionFixedLen:]
	if v[0] != sessionVersion1 {
		if len(rest) < 8 {
			return storage.Session{}, fmt.Errorf("session: %w", errCorrupt)
		}
		s.Epoch = binary.BigEndian.Uint64(rest)
		rest = rest[8:]
	}
	var lens [sessionStrings]uint64
	var total uint64
	for i := range count {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > uint64(len(v)) {
			return storage.Session{}, fmt.Errorf("session: %w", errCorrupt)
		}
		lens[i], total, rest = n, total+n, rest[w:]
	}
	if uint64(len(rest)) != total {
		return storage.Session{}, fmt.Errorf("session: %w", errCorrupt)
	}
	all := string(rest)
	var fields [sessionStrings]string
	for i := range count {
		fields[i], all = all[:lens[i]], all[lens[i]:]
	}
	s.UserID, s.Email, s.Method, s.Groups, s.IP, s.UserAgent = fields[0], fields[1], fields[2], fields[3], fields[4], fields[5]
	s.SecondFactor = fields[6]
	return s, nil
}

// withLastSeen returns a copy of the encoded session v with LastSeen set.
func withLastSeen(v []byte, lastSeen time.Time) ([]byte, error) {
	if len(v) < sessionFixedLen || sessionStringCount(v[0]) == 0 {
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

// User layout, version 2: ID, Email, PasswordHash, CreatedAt, then
// Disabled (varint 0 or 1) and Epoch (varint). Version 1 ends after
// CreatedAt and decodes as enabled at epoch 0.
const userVersion = 2

func encodeUser(u storage.User) []byte {
	e := &encoder{b: []byte{userVersion}}
	e.str(u.ID)
	e.str(u.Email)
	e.str(u.PasswordHash)
	e.time(u.CreatedAt)
	disabled := int64(0)
	if u.Disabled {
		disabled = 1
	}
	e.varint(disabled)
	e.varint(int64(u.Epoch))
	return e.b
}

func decodeUser(v []byte) (storage.User, error) {
	if len(v) == 0 || (v[0] != recordVersion && v[0] != userVersion) {
		return storage.User{}, fmt.Errorf("user: %w", errCorrupt)
	}
	d := &decoder{b: v[1:]}
	u := storage.User{ID: d.str(), Email: d.str(), PasswordHash: d.str(), CreatedAt: d.time()}
	if v[0] == userVersion {
		switch d.varint() {
		case 0:
		case 1:
			u.Disabled = true
		default:
			d.bad = true
		}
		u.Epoch = uint64(d.varint())
	}
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
