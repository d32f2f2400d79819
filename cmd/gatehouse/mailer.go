package main

import (
	"context"
	"log/slog"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// mailer delivers queued mail in the background.
type mailer interface {
	Run(ctx context.Context) error
	Wake()
}

// TEMPORARY until authflows/mail lands: queued mail stays queued.
type pendingMailer struct{}

func (pendingMailer) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (pendingMailer) Wake()                         {}

func newMailer(cfg Config, store storage.Store, log *slog.Logger) (mailer, error) {
	return pendingMailer{}, nil
}
