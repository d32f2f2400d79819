package bolt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"go.etcd.io/bbolt"
)

// Key layouts.
//
//	user prefix   len(userID) as 1 byte + userID, so "ab" never prefixes "abc"
//	identity      provider 0x00 subject (providers contain no 0x00)
//	expiry key    8-byte sortable time + 32-byte hash
//	mail key      8-byte big-endian sequence
const (
	maxUserIDLen = math.MaxUint8
	timeKeySize  = 8
	expiryKeyLen = timeKeySize + storage.HashSize
)

// validUserID reports whether id can be stored: 1 to 255 bytes.
func validUserID(id string) bool { return id != "" && len(id) <= maxUserIDLen }

// userPrefix is the key prefix of the user's rows in the per-user index
// buckets. The caller has checked validUserID.
func userPrefix(userID string) []byte {
	k := make([]byte, 0, 1+len(userID)+storage.HashSize)
	k = append(k, byte(len(userID)))
	return append(k, userID...)
}

// userHashKey is the per-user index key of a session or reset token.
func userHashKey(userID string, h storage.Hash) []byte {
	return append(userPrefix(userID), h[:]...)
}

// identityKey is the key of a provider account in the identities bucket.
func identityKey(provider, subject string) []byte {
	k := make([]byte, 0, len(provider)+1+len(subject))
	k = append(k, provider...)
	k = append(k, 0)
	return append(k, subject...)
}

// validProvider reports whether provider can be used in identityKey.
func validProvider(provider string) bool {
	return provider != "" && !strings.ContainsRune(provider, 0)
}

// timeToInt encodes t as unix nanoseconds, clamped to what an int64 holds
// (years 1678 to 2262). The zero time is math.MinInt64, so it sorts first.
func timeToInt(t time.Time) int64 {
	switch {
	case t.IsZero():
		return math.MinInt64
	case t.Before(minTime):
		return math.MinInt64 + 1
	case t.After(maxTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// intToTime inverts timeToInt; times come back in UTC.
func intToTime(n int64) time.Time {
	if n == math.MinInt64 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// putSortableTime writes t so that byte order is time order (sign bit flipped).
func putSortableTime(b []byte, t time.Time) {
	binary.BigEndian.PutUint64(b, uint64(timeToInt(t))^(1<<63))
}

// expiryKey is the key of a record in an expiry index.
func expiryKey(t time.Time, h storage.Hash) []byte {
	k := make([]byte, expiryKeyLen)
	putSortableTime(k, t)
	copy(k[timeKeySize:], h[:])
	return k
}

// mailKey is the key of a queued mail.
func mailKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }

// hashKeysWithPrefix returns copies of the hashes that follow prefix in
// bucket b, for keys of exactly len(prefix)+HashSize bytes.
func hashKeysWithPrefix(b *bbolt.Bucket, prefix []byte) []storage.Hash {
	var hashes []storage.Hash
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		if len(k) != len(prefix)+storage.HashSize {
			continue
		}
		var h storage.Hash
		copy(h[:], k[len(prefix):])
		hashes = append(hashes, h)
	}
	return hashes
}

// errInvalid reports a record that cannot be stored.
func errInvalid(format string, args ...any) error {
	return fmt.Errorf("storage/bolt: invalid record: "+format, args...)
}

// errCorrupt reports a stored value that does not decode.
var errCorrupt = errors.New("storage/bolt: corrupt record")
