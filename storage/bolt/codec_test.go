package bolt

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

func TestSessionCodec(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 123456789, time.UTC)
	for _, s := range []storage.Session{
		{IDHash: storage.HashSecret("a"), UserID: "0123456789abcdef0123456789abcdef", Email: "a@example.com",
			CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now.Add(time.Minute)},
		{IDHash: storage.HashSecret("b"), UserID: "u", Email: ""}, // zero times
		{IDHash: storage.HashSecret("c"), UserID: "u", Email: string(make([]byte, 300)), CreatedAt: time.Unix(-5, 0).UTC()},
		{IDHash: storage.HashSecret("d"), UserID: "u", Email: "d@example.com", Epoch: 1<<63 + 5, Method: "oidc",
			Groups: "oidc:admins,github:acme/ops", IP: "192.0.2.1", UserAgent: "curl/8"},
		{IDHash: storage.HashSecret("e"), UserID: "u", Email: "e@example.com", Method: "pwd", SecondFactor: "otp"},
	} {
		got, err := decodeSession(s.IDHash, encodeSession(s))
		if err != nil || got != s {
			t.Fatalf("round trip: %+v, %v; want %+v", got, err, s)
		}
	}
	v := encodeSession(storage.Session{UserID: "user", Email: "a@example.com", Method: "pwd", Groups: "g"})
	for n := range len(v) {
		if _, err := decodeSession(storage.Hash{}, v[:n]); !errors.Is(err, errCorrupt) {
			t.Fatalf("truncated to %d bytes: %v, want errCorrupt", n, err)
		}
	}
	if _, err := decodeSession(storage.Hash{}, append(v, 0)); !errors.Is(err, errCorrupt) {
		t.Fatalf("trailing byte: %v, want errCorrupt", err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _, _ = decodeSession(storage.Hash{}, v) }); allocs != 1 {
		t.Fatalf("decodeSession: %v allocations, want 1", allocs)
	}
}

// Records written by v1 binaries still decode, with the new fields empty.
func TestVersion1RecordsDecode(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	// A v1 session: version 1, three times, then lengths and bytes of UserID and Email.
	v1 := []byte{1}
	for _, tm := range []time.Time{now, now.Add(time.Hour), now.Add(time.Minute)} {
		v1 = binary.BigEndian.AppendUint64(v1, uint64(timeToInt(tm)))
	}
	v1 = append(v1, 4, 13)
	v1 = append(v1, "user"+"a@example.com"...)
	got, err := decodeSession(storage.Hash{}, v1)
	want := storage.Session{UserID: "user", Email: "a@example.com", CreatedAt: now, ExpiresAt: now.Add(time.Hour), LastSeen: now.Add(time.Minute)}
	if err != nil || got != want {
		t.Fatalf("v1 session: %+v, %v; want %+v", got, err, want)
	}
	touched, err := withLastSeen(v1, now.Add(2*time.Minute))
	if err != nil {
		t.Fatalf("withLastSeen on v1: %v", err)
	}
	if got, _ := decodeSession(storage.Hash{}, touched); !got.LastSeen.Equal(now.Add(2 * time.Minute)) {
		t.Fatalf("v1 LastSeen after touch: %v", got.LastSeen)
	}

	e := newEncoder() // version 1 user
	e.str("id")
	e.str("a@example.com")
	e.str("$argon2id$x")
	e.time(now)
	u, err := decodeUser(e.b)
	wantUser := storage.User{ID: "id", Email: "a@example.com", PasswordHash: "$argon2id$x", CreatedAt: now}
	if err != nil || u != wantUser {
		t.Fatalf("v1 user: %+v, %v; want %+v", u, err, wantUser)
	}
}

func TestUserCodec(t *testing.T) {
	for _, u := range []storage.User{
		{ID: "a", Email: "a@example.com", PasswordHash: "h", CreatedAt: time.Unix(5, 0).UTC()},
		{ID: "b", Email: "b@example.com", Disabled: true, Epoch: 1 << 40},
	} {
		got, err := decodeUser(encodeUser(u))
		if err != nil || got != u {
			t.Fatalf("round trip: %+v, %v; want %+v", got, err, u)
		}
	}
	bad := encodeUser(storage.User{ID: "c", Email: "c@example.com"})
	bad[len(bad)-2] = 4 // Disabled must be 0 or 1
	if _, err := decodeUser(bad); !errors.Is(err, errCorrupt) {
		t.Fatalf("Disabled=2: %v, want errCorrupt", err)
	}
}

func TestTimeEncoding(t *testing.T) {
	for _, tc := range []struct {
		in, want time.Time
	}{
		{time.Time{}, time.Time{}},
		{time.Unix(0, 0).UTC(), time.Unix(0, 0).UTC()},
		{time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), time.Unix(0, math.MinInt64+1).UTC()},
		{time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), time.Unix(0, math.MaxInt64).UTC()},
	} {
		if got := intToTime(timeToInt(tc.in)); !got.Equal(tc.want) {
			t.Errorf("%v: decoded %v, want %v", tc.in, got, tc.want)
		}
	}
	// Sortable keys order like the times, zero time first.
	times := []time.Time{{}, time.Unix(-10, 0), time.Unix(0, 0), time.Unix(0, 1), time.Unix(1e9, 0)}
	for i := 1; i < len(times); i++ {
		a, b := make([]byte, 8), make([]byte, 8)
		putSortableTime(a, times[i-1])
		putSortableTime(b, times[i])
		if string(a) >= string(b) {
			t.Errorf("key of %v does not sort before key of %v", times[i-1], times[i])
		}
	}
}

func TestRecordCodecs(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 6, time.UTC)
	h := storage.HashSecret("x")
	u := storage.User{ID: "id", Email: "e@x", PasswordHash: "$argon2id$", CreatedAt: now}
	id := storage.Identity{Provider: "google", Subject: "s\x00ub", Email: "e", UserID: "id", CreatedAt: now}
	tok := storage.ResetToken{Hash: h, UserID: "id", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	flow := storage.OAuthFlow{StateHash: h, Provider: "github", Purpose: "link", Verifier: "v", Nonce: "n",
		Redirect: "/r", BrowserHash: storage.HashSecret("b"), SessionHash: storage.HashSecret("s"), CreatedAt: now, ExpiresAt: now}
	m := storage.Mail{ID: 7, To: "t", Subject: "s", Text: "x", HTML: "<p>", Attempts: 3, NextAttempt: now, CreatedAt: now}

	checks := []struct {
		name   string
		value  []byte
		decode func(v []byte) (any, error)
		want   any
	}{
		{"user", encodeUser(u), func(v []byte) (any, error) { return decodeUser(v) }, u},
		{"identity", encodeIdentity(id), func(v []byte) (any, error) { return decodeIdentity(v) }, id},
		{"reset token", encodeResetToken(tok), func(v []byte) (any, error) { return decodeResetToken(h, v) }, tok},
		{"oauth flow", encodeOAuthFlow(flow), func(v []byte) (any, error) { return decodeOAuthFlow(h, v) }, flow},
		{"mail", encodeMail(m), func(v []byte) (any, error) { return decodeMail(7, v) }, m},
	}
	for _, c := range checks {
		got, err := c.decode(c.value)
		if err != nil || got != c.want {
			t.Errorf("%s round trip: %+v, %v; want %+v", c.name, got, err, c.want)
		}
		for n := range len(c.value) {
			if _, err := c.decode(c.value[:n]); !errors.Is(err, errCorrupt) {
				t.Errorf("%s truncated to %d bytes: %v, want errCorrupt", c.name, n, err)
			}
		}
	}
}
