package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/mail"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// usersCommand is one `gatehouse users …` subcommand.
type usersCommand struct {
	db, email     string
	passwordStdin bool
	minLength     int
}

// runUsers dispatches `gatehouse users add|list|revoke-sessions`.
func runUsers(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "gatehouse users: %v\n", err)
		return 2
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, "Usage: gatehouse users add --email E --password-stdin [--db F] | list [--db F] | revoke-sessions --email E [--db F]")
		return 0
	}
	name := args[0]
	fs := pflag.NewFlagSet("gatehouse users "+name, pflag.ContinueOnError)
	fs.SetOutput(stdout)
	var c usersCommand
	dbFlag(fs, &c.db)
	switch name {
	case "add":
		fs.StringVar(&c.email, "email", "", "email of the new user (required)")
		fs.BoolVar(&c.passwordStdin, "password-stdin", false, "read the password from the first line of standard input (required)")
		passwordFlag(fs, &c.minLength)
	case "revoke-sessions":
		fs.StringVar(&c.email, "email", "", "email of the user whose sessions end (required)")
	case "list":
	default:
		return fail(fmt.Errorf("unknown command %q (want add, list or revoke-sessions)", name))
	}
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return 0
		}
		return fail(err)
	}
	if err := applyEnv(fs, getenv); err != nil {
		return fail(err)
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	switch name {
	case "add":
		err = c.add(ctx, stdin, stdout)
	case "list":
		err = c.list(ctx, stdout)
	case "revoke-sessions":
		err = c.revoke(ctx, stdout, newLogger(stderr, "text", "info"))
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse users %s: %v\n", name, err)
		return 1
	}
	return 0
}

func (c usersCommand) checkEmail() error {
	if c.email == "" {
		return flagError("email", "is required")
	}
	if a, err := mail.ParseAddress(c.email); err != nil || a.Address != strings.TrimSpace(c.email) {
		return flagError("email", "%q is not an email address", c.email)
	}
	return nil
}

func (c usersCommand) add(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	if err := c.checkEmail(); err != nil {
		return err
	}
	if !c.passwordStdin {
		return flagError("password-stdin", "is required: pipe the password in, it is never taken as an argument")
	}
	if c.minLength < 8 || c.minLength > 1024 {
		return flagError("password-min-length", "%d: want 8 to 1024", c.minLength)
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read password: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	email := storage.NormalizeEmail(c.email)
	hash, err := authflows.NewPasswordHash(ctx, authflows.DefaultHashParams, password, email, c.minLength)
	if err != nil {
		return fmt.Errorf("password refused: %w", err)
	}
	store, err := openStore(c.db, false, nil) // the first account may create the database
	if err != nil {
		return err
	}
	defer store.Close()
	u := storage.User{ID: storage.NewUserID(), Email: email, PasswordHash: hash, CreatedAt: time.Now().UTC()}
	if err := store.CreateUser(ctx, u); err != nil {
		if errors.Is(err, storage.ErrEmailTaken) {
			return fmt.Errorf("a user with email %s already exists", email)
		}
		return err
	}
	fmt.Fprintf(stdout, "added user %s (%s)\n", u.Email, u.ID)
	return nil
}

func (c usersCommand) list(ctx context.Context, stdout io.Writer) error {
	store, err := openStore(c.db, true, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	users, err := store.ListUsers(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tPASSWORD\tIDENTITIES\tCREATED")
	for _, u := range users {
		ids, err := store.IdentitiesOfUser(ctx, u.ID)
		if err != nil {
			return err
		}
		var providers []string
		for _, id := range ids {
			providers = append(providers, id.Provider)
		}
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%s\n", u.ID, u.Email, u.PasswordHash != "", strings.Join(providers, ","), u.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

// revoke deletes every session of the user. Besides the answer on stdout,
// it writes the same event line as the server's revocations (LG2) to
// stderr, for the audit trail.
func (c usersCommand) revoke(ctx context.Context, stdout io.Writer, log *slog.Logger) error {
	if err := c.checkEmail(); err != nil {
		return err
	}
	store, err := openStore(c.db, true, nil)
	if err != nil {
		return err
	}
	defer store.Close()
	u, err := store.UserByEmail(ctx, c.email)
	if errors.Is(err, storage.ErrNotFound) {
		return fmt.Errorf("no user with email %s", storage.NormalizeEmail(c.email))
	}
	if err != nil {
		return err
	}
	n, err := store.DeleteUserSessions(ctx, u.ID)
	if err != nil {
		return err
	}
	log.LogAttrs(ctx, slog.LevelInfo, "auth event", slog.String("event", "sessions_revoked"),
		slog.String("user_id", u.ID), slog.Int("sessions_revoked", n), slog.String("source", "users revoke-sessions"))
	fmt.Fprintf(stdout, "revoked %d sessions of %s\n", n, u.Email)
	return nil
}
