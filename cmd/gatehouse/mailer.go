package main

import (
	"context"
	"log/slog"

	"github.com/gatehouse-auth/gatehouse/authflows/mail"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// mailer delivers queued mail in the background.
type mailer interface {
	Run(ctx context.Context) error
	Wake()
}

// newMailer builds the delivery queue: an SMTP relay with --smtp-addr, .eml
// files in --mail-dir otherwise. prepare turns a queued job into its message
// at delivery (authflows.Handler.PrepareMail: reset tokens are minted there).
func newMailer(cfg Config, store storage.Store, prepare func(context.Context, storage.Mail) (storage.Mail, error),
	log *slog.Logger) (mailer, error) {
	var sender mail.Sender
	if cfg.SMTP.Addr != "" {
		smtp, err := mail.NewSMTP(mail.SMTPConfig{
			Addr: cfg.SMTP.Addr, Username: cfg.SMTP.Username, Password: cfg.SMTP.Password,
			TLS: cfg.SMTP.TLS, From: cfg.SMTP.From,
		})
		if err != nil {
			return nil, flagError("smtp-addr", "%v", err)
		}
		sender = smtp
	} else {
		dir, err := mail.NewDir(cfg.MailDir, cfg.SMTP.From)
		if err != nil {
			return nil, flagError("mail-dir", "%v", err)
		}
		sender = dir
	}
	return mail.NewQueue(store, sender, mail.QueueOptions{Logger: log, Prepare: prepare, Shared: isPostgresURL(cfg.DB)}), nil
}
