// Package mail delivers Gatehouse's outgoing mail. The flows never send mail
// themselves: they queue a storage.Mail in the store and wake the Queue, which
// reads due mail from the store, hands each message to a Sender and deletes it
// once delivered, or reschedules it with exponential backoff (and drops it,
// logged, after QueueOptions.GiveUpAfter of retries, 24 h by default). Pending
// mail therefore survives a restart and an SMTP outage. A queued mail holds no
// secret: a password reset is queued as a job naming the user, and the
// Queue's Prepare hook (supplied by cmd/gatehouse from authflows) mints the
// token and renders the message just before each attempt.
//
// Two Senders exist: SMTP, a relay reached with emersion/go-smtp (STARTTLS,
// implicit TLS or plain, AUTH PLAIN), and Dir, which writes each message as an
// RFC 5322 .eml file (the default, so that a first run works without a relay).
//
// Dependencies: mail → storage (the Mail record and the queue methods of the
// store, declared here as QueueStore). It imports neither authflows nor proxy;
// cmd/gatehouse builds a Sender and a Queue, gives the Queue
// authflows.Handler.PrepareMail as QueueOptions.Prepare and hands Queue.Wake
// to authflows.Config.WakeMailer.
package mail

import (
	"context"
	"errors"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Sender delivers one message. An error wrapping ErrPermanent means that
// retrying cannot help (the relay refused the recipient or the message).
type Sender interface {
	Send(ctx context.Context, m storage.Mail) error
}

// ErrPermanent marks a delivery failure that no retry will fix; the Queue
// drops such a message at once instead of retrying it for a day.
var ErrPermanent = errors.New("mail: permanent delivery failure")
