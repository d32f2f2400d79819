package bolt

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// A queued job keeps its Kind and UserID; a mail record of version 1,
// written before jobs existed, still decodes as a ready message.
func TestMailCodecVersions(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)
	job := storage.Mail{ID: 9, Kind: storage.MailKindPasswordReset, UserID: "0123456789abcdef0123456789abcdef",
		To: "a@example.com", Attempts: 2, NextAttempt: now, CreatedAt: now}
	v := encodeMail(job)
	if v[0] != mailVersion {
		t.Fatalf("version byte %d, want %d", v[0], mailVersion)
	}
	if got, err := decodeMail(9, v); err != nil || got != job {
		t.Fatalf("job round trip: %+v, %v; want %+v", got, err, job)
	}
	for n := range len(v) {
		if _, err := decodeMail(9, v[:n]); !errors.Is(err, errCorrupt) {
			t.Fatalf("truncated to %d bytes: %v, want errCorrupt", n, err)
		}
	}

	// Version 1, as the previous release wrote it.
	old := storage.Mail{ID: 3, To: "b@example.com", Subject: "s", Text: "t", HTML: "<p>h</p>", Attempts: 1, NextAttempt: now, CreatedAt: now}
	v1 := []byte{mailVersion1}
	for _, s := range []string{old.To, old.Subject, old.Text, old.HTML} {
		v1 = binary.AppendUvarint(v1, uint64(len(s)))
		v1 = append(v1, s...)
	}
	v1 = binary.AppendVarint(v1, int64(old.Attempts))
	v1 = binary.BigEndian.AppendUint64(v1, uint64(timeToInt(old.NextAttempt)))
	v1 = binary.BigEndian.AppendUint64(v1, uint64(timeToInt(old.CreatedAt)))
	if got, err := decodeMail(3, v1); err != nil || got != old {
		t.Fatalf("version 1 record: %+v, %v; want %+v", got, err, old)
	}
	if _, err := decodeMail(3, append([]byte{mailVersion + 1}, v1[1:]...)); !errors.Is(err, errCorrupt) {
		t.Fatalf("unknown version: %v, want errCorrupt", err)
	}
}
