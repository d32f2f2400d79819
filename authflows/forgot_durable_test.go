package authflows

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/gatehouse-auth/gatehouse/storage/bolt"
)

// crashCopy is the env's database file as a kill -9 right now would leave
// it: every committed page is in the file (bbolt pwrites each commit, even
// with NoSync), nothing else. It opens the copy and returns its queued jobs.
func (e *testEnv) crashCopy(t *testing.T) []storage.Mail {
	t.Helper()
	b, err := os.ReadFile(e.DBPath)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "crashed.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatalf("open the crashed copy: %v", err)
	}
	defer s.Close()
	jobs, err := s.DueMail(t.Context(), e.Clock.Now().AddDate(10, 0, 0), 1000)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// Every 202 of /auth/forgot stands for a durable record,
// for registered and unknown addresses alike: a crash right after any answer
// finds a registered address's request queued (and an unknown one's commit
// done, the same cost, without growing the file).
func TestForgotAcceptedRequestSurvivesCrash(t *testing.T) {
	e := newTestEnv(t) // no mail queue: what is queued stays
	alice := e.CreateUser(t, "alice@example.com", oldPassword)
	bob := e.CreateUser(t, "bob@example.com", oldPassword)
	want := 0
	for _, tc := range []struct {
		email string
		user  storage.User
	}{{"alice@example.com", alice}, {"nobody@example.com", storage.User{}}, {"BOB@example.com", bob}, {"ghost@example.com", storage.User{}}} {
		txBefore := e.TxID(t)
		resp := e.PostJSON("/auth/forgot", map[string]string{"email": tc.email})
		if resp.StatusCode != http.StatusAccepted {
			t.Fatalf("%s: status %d", tc.email, resp.StatusCode)
		}
		if e.TxID(t) == txBefore {
			t.Errorf("%s: answered 202 before any commit", tc.email)
		}
		jobs := e.crashCopy(t) // "kill -9" right after the answer
		if tc.user.ID != "" {
			want++
		}
		if len(jobs) != want {
			t.Fatalf("%s: a crash after the answer leaves %d jobs queued, want %d", tc.email, len(jobs), want)
		}
		if last := jobs[len(jobs)-1]; tc.user.ID != "" && (last.Kind != storage.MailKindPasswordReset || last.UserID != tc.user.ID) {
			t.Fatalf("queued for %s: %+v", tc.email, last)
		}
	}
}

// DS1 with durable requests: unknown addresses commit a marker of a fixed
// size, so a flood of them does not grow the file.
func TestForgotUnknownAddressesDoNotGrowFile(t *testing.T) {
	e := newTestEnv(t)
	e.CreateUser(t, "alice@example.com", oldPassword)
	flood := func(n, from int) {
		for i := range n {
			r := e.JSONRequest(http.MethodPost, "/auth/forgot", map[string]string{"email": fmt.Sprintf("unknown%d@example.com", from+i)})
			r.RemoteAddr = fmt.Sprintf("198.51.%d.%d:4000", (from+i)/200, (from+i)%200) // under the per-IP limit
			if resp := e.Do(r); resp.StatusCode != http.StatusAccepted {
				t.Fatalf("request %d: %d", i, resp.StatusCode)
			}
		}
	}
	flood(50, 0) // the freelist settles
	size := fileSize(t, e.DBPath)
	flood(500, 50)
	if after := fileSize(t, e.DBPath); after != size {
		t.Errorf("500 requests for unknown addresses grew the file from %d to %d bytes", size, after)
	}
	if jobs := e.queuedJobs(t); len(jobs) != 0 {
		t.Errorf("unknown addresses queued %d jobs", len(jobs))
	}
}

// A request whose record cannot be written is not a 202: the answer says the
// service is unavailable, the same for every address.
func TestForgotStoreFailureIsNot202(t *testing.T) {
	e := newTestEnv(t, func(c *Config) { c.Store = failingResetRequests{Store: c.Store.(storage.Store)} })
	e.CreateUser(t, "alice@example.com", oldPassword)
	for _, email := range []string{"alice@example.com", "nobody@example.com"} {
		resp := e.PostJSON("/auth/forgot", map[string]string{"email": email})
		if code := e.ProblemCode(t, resp, http.StatusServiceUnavailable); code != "store_unavailable" {
			t.Errorf("%s: problem %q", email, code)
		}
	}
}

type failingResetRequests struct{ storage.Store }

func (failingResetRequests) QueueResetRequest(context.Context, string, time.Time) (storage.User, error) {
	return storage.User{}, errors.New("test: no space left on device")
}
