// Command gatehouse is an authenticating reverse proxy: it answers /auth/
// itself, checks the session cookie on every other request and forwards
// signed-in requests to one upstream app with the user's identity in headers.
//
// This package only parses flags (the command line, the environment and
// the --config file) and wires the packages together. It may import every
// package of the module (ARCHITECTURE.md has the map); nothing imports it.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	tuneGC(os.Getenv)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, osEnviron()))
}

// commands are the words `gatehouse WORD` understands besides the server's
// flags; an unknown word is suggested from them.
var commands = []string{"users", "sessions", "tokens", "keys", "mail", "config", "version", "help"}

// run is main without the process: it returns the exit code (see exitCode).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv environ) int {
	if len(args) > 0 {
		switch args[0] {
		case "version", "--version":
			return runVersion(args[1:], stdout, stderr)
		case "help":
			args = []string{"--help"}
		case "users":
			return runUsers(args[1:], stdin, stdout, stderr, getenv)
		case "keys":
			return runKeys(args[1:], stdin, stdout, stderr, getenv)
		case "sessions":
			return runSessions(args[1:], stdin, stdout, stderr, getenv)
		case "tokens":
			return runTokens(args[1:], stdin, stdout, stderr, getenv)
		case "mail":
			return runMail(args[1:], stdout, stderr, getenv)
		case "config":
			return runConfig(args[1:], stdout, stderr, getenv)
		}
	}
	cfg, err := parseServe(args, getenv, stdout)
	if errors.Is(err, errHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse: %v\n", err)
		return exitUsage
	}
	cfg.LogOutput = stderr
	logger := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	reloadOnHangup := cfg.ConfigFile != ""
	ctx, stop := signal.NotifyContext(context.Background(), stopSignals(reloadOnHangup)...)
	defer stop()
	hangups := make(chan os.Signal, 1)
	if reloadOnHangup {
		signal.Notify(hangups, syscall.SIGHUP) // from now on, not to stop the start
		defer signal.Stop(hangups)
	}
	created := newStartPaths(cfg) // removed again if the start fails
	srv, err := newServer(ctx, cfg, logger)
	if err != nil {
		created.remove()
		fmt.Fprintf(stderr, "gatehouse: %v\n", err)
		return exitCode(err)
	}
	ls, err := srv.listen()
	if err != nil {
		srv.close()
		created.remove()
		fmt.Fprintf(stderr, "gatehouse: %v\n", err)
		return 1
	}
	go func() {
		for {
			select {
			case <-hangups:
				srv.reload()
			case <-ctx.Done():
				return
			}
		}
	}()
	if err := srv.serve(ctx, ls); err != nil {
		fmt.Fprintf(stderr, "gatehouse: %v\n", err)
		return 1
	}
	return 0
}

// runVersion prints the version; it takes no argument but --help.
func runVersion(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if args[0] == "-h" || args[0] == "--help" {
			fmt.Fprintln(stdout, "Usage: gatehouse version   print the version (the same as gatehouse --version)")
			return exitOK
		}
		what := fmt.Sprintf("unexpected argument %q", args[0])
		if strings.HasPrefix(args[0], "-") {
			what = "unknown flag " + args[0]
		}
		fmt.Fprintf(stderr, "gatehouse version: %s; see gatehouse version --help\n", what)
		return exitUsage
	}
	fmt.Fprintln(stdout, "gatehouse", version)
	return exitOK
}

// newLogger returns the slog logger of --log-format and --log-level. Both
// handlers escape CR and LF in values, so user input cannot forge lines (LG3).
func newLogger(w io.Writer, format, level string) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// stopSignals end the server with a drain: SIGINT, SIGTERM, and SIGHUP (a
// closed terminal, the end of a login session), unless SIGHUP reloads the
// configuration file (reloadOnHangup, with --config) or the process was
// started with SIGHUP ignored (nohup), which asking for it would undo.
func stopSignals(reloadOnHangup bool) []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !reloadOnHangup && !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}
