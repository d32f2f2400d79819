package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/proxy/assertion"
)

// runKeys dispatches `gatehouse keys rotate`: a new assertion signing key
// that signs from now on; the previous one stays published for 7 days so its
// tokens keep verifying. A running server sharing the store picks the new
// key up within a minute.
func runKeys(args []string, stdout, stderr io.Writer, getenv environ) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "gatehouse keys: %v\n", err)
		return 2
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, "Usage: gatehouse keys rotate [--db F]")
		return 0
	}
	if args[0] != "rotate" {
		return fail(unknownCommand("gatehouse keys", args[0], []string{"rotate"}))
	}
	fs := pflag.NewFlagSet("gatehouse keys rotate", pflag.ContinueOnError)
	fs.SetOutput(stdout)
	var db string
	dbFlag(fs, &db)
	if err := parseFlags(fs, args[1:], "gatehouse keys rotate"); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
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
	store, err := openStore(db, true, nil)
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse keys rotate: %v\n", err)
		return 1
	}
	defer store.Close()
	kid, err := assertion.Rotate(ctx, store, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse keys rotate: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "new signing key %s signs from now; the previous key stays published for %s\n", kid, assertion.RetiredKept)
	return 0
}
