package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
	"github.com/jackc/pgx/v5"
)

// Invalidator is what Listen reports to: a session cache (storage/cache).
type Invalidator interface {
	InvalidateSession(h storage.Hash)
	InvalidateAPIToken(h storage.Hash)
	// InvalidateUser: every session and API token of the user.
	InvalidateUser(userID string)
	// Resync: the connection listens (again); anything before may have been missed.
	Resync()
	// Down: the connection is lost; changes may go unheard until Resync.
	Down()
	// Heartbeat: a heartbeat sent through the pool at sent came back on
	// the connection; every notification committed before sent was passed
	// on before it.
	Heartbeat(sent time.Time)
}

// ListenOptions tune Listen.
type ListenOptions struct {
	// HeartbeatInterval is how often a heartbeat NOTIFY is sent (default 250ms).
	HeartbeatInterval time.Duration
	// MaxBackoff caps the wait between reconnection attempts (default 2s);
	// the first retry is immediate, so a cut connection is back at once.
	MaxBackoff time.Duration
	// OnError, if set, hears why the connection was lost (never a secret).
	OnError func(err error)
}

// ListenApplicationName is the application_name of the notification
// connection, followed by "-" and the process id, so that it can be told
// apart in pg_stat_activity.
const ListenApplicationName = "gatehouse-listen"

// Listen keeps one connection LISTENing on RevokeChannel until ctx ends,
// and tells inv about revocations, reconnections and heartbeats. It sends a
// heartbeat through the pool every HeartbeatInterval: the heartbeat coming
// back proves that notifications committed by others reach this
// connection. Listen returns when ctx ends.
func (s *Store) Listen(ctx context.Context, inv Invalidator, opts ListenOptions) {
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = 250 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 2 * time.Second
	}
	var raw [8]byte
	_, _ = rand.Read(raw[:])
	beat := "h:" + hex.EncodeToString(raw[:])

	go s.heartbeats(ctx, beat, opts.HeartbeatInterval)
	backoff := time.Duration(0)
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, inv, beat)
		inv.Down()
		if ctx.Err() != nil {
			return
		}
		if opts.OnError != nil {
			opts.OnError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(max(2*backoff, 50*time.Millisecond), opts.MaxBackoff)
		if err == nil {
			backoff = 0
		}
	}
}

// heartbeats sends the heartbeat NOTIFY every interval until ctx ends. Its
// payload is beat, ":" and the time it is sent (Unix nanoseconds), taken
// before the statement: the listener reports that time, so that a heartbeat
// that waited behind other notifications proves only what it should.
func (s *Store) heartbeats(ctx context.Context, beat string, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		sendCtx, cancel := context.WithTimeout(ctx, interval)
		payload := beat + ":" + strconv.FormatInt(time.Now().UnixNano(), 10)
		_, _ = s.pool.Exec(sendCtx, "SELECT pg_notify($1, $2)", RevokeChannel, payload)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// listenOnce connects, listens, resyncs inv and passes notifications on
// until the connection fails or ctx ends.
func (s *Store) listenOnce(ctx context.Context, inv Invalidator, beat string) error {
	cfg, err := pgx.ParseConfig(s.url)
	if err != nil {
		return err
	}
	cfg.RuntimeParams["application_name"] = fmt.Sprintf("%s-%d", ListenApplicationName, os.Getpid())
	connectCtx, cancel := context.WithTimeout(ctx, DefaultConnectTimeout)
	conn, err := pgx.ConnectConfig(connectCtx, cfg)
	cancel()
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+RevokeChannel); err != nil {
		return err
	}
	inv.Resync()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		kind, value, _ := strings.Cut(n.Payload, ":")
		switch kind {
		case "s", "t":
			var h storage.Hash
			if b, err := hex.DecodeString(value); err == nil && len(b) == len(h) {
				copy(h[:], b)
				if kind == "s" {
					inv.InvalidateSession(h)
				} else {
					inv.InvalidateAPIToken(h)
				}
			}
		case "u":
			inv.InvalidateUser(value)
		case "h":
			if sent, ok := strings.CutPrefix(n.Payload, beat+":"); ok {
				if ns, err := strconv.ParseInt(sent, 10, 64); err == nil {
					inv.Heartbeat(time.Unix(0, ns))
				}
			}
		}
	}
}
