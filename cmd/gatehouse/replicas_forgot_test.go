//go:build unix

package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestThreeReplicasShareResetMailLimit: the reset mails of one account are
// counted in the database: five requests spread over three replicas mail
// the contract's floor of 3 and no more (counted per process, each replica
// would mail up to 3 itself: 5).
func TestThreeReplicasShareResetMailLimit(t *testing.T) {
	db := pg.NewDatabase(t)
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	addUser(t, db, "alice@example.com", testPassword)
	mailDir := t.TempDir()
	rs := startReplicasMail(t, bin, db, up.URL, mailDir, 3)
	for i := range 5 {
		// POST /auth/forgot answers after its durable write: once every
		// answer is in, every mail that will be sent is queued or sent.
		if code, _, body := do(t, http.DefaultClient, "POST", rs[i%3].URL+"/auth/forgot", "application/json",
			jsonBody(map[string]string{"email": "alice@example.com"})); code != http.StatusAccepted {
			t.Fatalf("forgot %d on replica %d: %d %s", i+1, i%3, code, body)
		}
	}
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	queued := -1
	for deadline := time.Now().Add(30 * time.Second); queued != 0 && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if err := conn.QueryRow(t.Context(), "SELECT count(*) FROM mail").Scan(&queued); err != nil {
			t.Fatal(err)
		}
	}
	if queued != 0 {
		t.Fatalf("%d mails still queued after 30 s", queued)
	}
	if n := countResetMails(t, mailDir); n != 3 {
		t.Fatalf("%d reset mails for 5 requests over three replicas, want 3 (the per-account limit, shared)", n)
	}
}
