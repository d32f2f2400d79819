package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	"github.com/gatehouse-auth/gatehouse/proxy/assertion"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// keysCommands is `gatehouse keys …`: like users and sessions, it goes
// through the running server's --admin-socket when one answers (the
// server holds the bbolt file), and opens --db directly otherwise.
var keysCommands = []cliCommand{
	{name: "rotate", help: "add an assertion signing key that signs from now; the previous one stays published for 7 days",
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			k, err := api.RotateSigningKey(ctx)
			if err == nil {
				fmt.Fprintf(out, "new signing key %s signs from now; the previous key stays published for %s\n", k.KeyID, days(k.RetiredKept))
			}
			return err
		}},
}

// runKeys dispatches `gatehouse keys rotate`: a new assertion signing key
// that signs from now on; the previous one stays published for 7 days so its
// tokens keep verifying. A running server reached through its socket signs
// with it from the next request; another one sharing the store picks it up
// within a minute.
func runKeys(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv environ) int {
	return runCLI("keys", keysCommands, args, stdin, stdout, stderr, getenv)
}

// rotateKeyIn rotates the signing key in a store no server of this process uses.
func rotateKeyIn(ctx context.Context, store storage.Store) (admin.KeyRotation, error) {
	kid, err := assertion.Rotate(ctx, store, time.Now())
	if err != nil {
		return admin.KeyRotation{}, err
	}
	return admin.KeyRotation{KeyID: kid, RetiredKept: assertion.RetiredKept}, nil
}

// days writes a whole number of days as "7 days", anything else as a duration.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}
