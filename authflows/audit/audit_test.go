package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestRecordWritesOneJSONLineWithContractFields(t *testing.T) {
	var buf bytes.Buffer
	at := time.Date(2026, 11, 26, 4, 5, 6, 0, time.FixedZone("x", 3600))
	l := New(&buf, func() time.Time { return at }, nil)
	l.Record(Event{Event: Login, RequestID: "r1", ClientIP: "192.0.2.1", UserID: "u1", Email: "a@example.com", Provider: "github"})
	l.Record(Event{Event: UserDeleted, UserID: "u2", Email: "b@example.com\nforged"})
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %q", len(lines), buf.String())
	}
	var first map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"time": "2026-11-26T03:05:06Z", "event": "login", "request_id": "r1",
		"client_ip": "192.0.2.1", "user_id": "u1", "email": "a@example.com", "provider": "github"}
	for k, v := range want {
		if first[k] != v {
			t.Errorf("%s = %q, want %q", k, first[k], v)
		}
	}
	if len(first) != len(want) {
		t.Errorf("fields %v, want exactly %v", first, want)
	}
	var second map[string]string
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if _, ok := second["provider"]; ok {
		t.Errorf("empty provider written: %q", lines[1])
	}
	if second["email"] != "b@example.com\nforged" {
		t.Errorf("email %q", second["email"])
	}
}

func TestNamesAreTheContractsAndNoOthers(t *testing.T) {
	want := "login login_failed logout reset_requested reset_completed invite_sent invite_accepted " +
		"password_changed identity_linked identity_unlinked user_created user_disabled user_enabled " +
		"user_deleted sessions_revoked access_denied signup_refused token_created token_revoked " +
		"factor_added factor_removed recovery_codes_regenerated second_factor_failed " +
		"session_ended_by_provider"
	if got := strings.Join(Names, " "); got != want {
		t.Fatalf("Names = %q\nwant    %q", got, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestNilLogAndWriteErrors(t *testing.T) {
	var l *Log
	l.Record(Event{Event: Login}) // must not panic
	var got error
	New(failingWriter{}, nil, func(err error) { got = err }).Record(Event{Event: Login})
	if got == nil || got.Error() != "disk full" {
		t.Fatalf("onError heard %v, want the write error", got)
	}
}
