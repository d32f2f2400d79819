package mail_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// TestSharedQueuesSendEachMailOnce: three replicas' queues on one store
// deliver every message exactly once, since each claims a message with a
// lease before sending it. The same queues without Shared send duplicates,
// so the test would notice the lease missing.
func TestSharedQueuesSendEachMailOnce(t *testing.T) {
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			store := openStore(t, "")
			const messages = 30
			for i := range messages {
				enqueue(t, store, fmt.Sprintf("user%d@example.com", i))
			}
			var mu sync.Mutex
			sent := map[string]int{}
			total := 0
			// A slow relay: replicas overlap in their passes.
			sender := senderFunc(func(ctx context.Context, m storage.Mail) error {
				time.Sleep(2 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				sent[m.To]++
				total++
				return nil
			})
			for range 3 {
				q := mail.NewQueue(store, sender, mail.QueueOptions{Shared: shared, PollInterval: time.Hour})
				run(t, q)
			}
			waitFor(t, "the queue to empty", func() bool { return len(queued(t, store)) == 0 })
			mu.Lock()
			defer mu.Unlock()
			if len(sent) != messages {
				t.Fatalf("%d addresses got mail, want %d", len(sent), messages)
			}
			if shared && total != messages {
				t.Fatalf("shared queues sent %d mails for %d messages: duplicates", total, messages)
			}
			if !shared && total == messages {
				t.Skip("unshared queues happened not to overlap: the control shows nothing this time")
			}
		})
	}
}
