package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
	"github.com/gatehouse-auth/gatehouse/authflows/password"
)

// cliOptions are the flags of the users and sessions commands.
type cliOptions struct {
	db, socket, auditLog string
	email                string
	passwordStdin        bool
	invite               bool
	json                 bool
	minLength            int
	password             string // read from standard input
	arg                  string // the command's positional argument (cliCommand.argName)
	tokens               tokenOptions
	stderr               io.Writer // notes beside the output (tokens create)
}

// cliCommand is one `gatehouse users|sessions …` command. Run gets an API:
// the running server's through its socket, or a Service on the file.
type cliCommand struct {
	name, synopsis, help string
	needsEmail           bool
	argName              string // names a required positional argument other than E (o.arg)
	flags                func(fs *pflag.FlagSet, o *cliOptions)
	// check, when set, checks the command's flags before any store is
	// touched; its error is a usage error.
	check func(o *cliOptions) error
	run   func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error
}

var usersCommands = []cliCommand{
	{name: "add", synopsis: "E (--password-stdin | --invite)", help: "create a user with a password, or invite them by mail to choose one", needsEmail: true,
		flags: func(fs *pflag.FlagSet, o *cliOptions) {
			fs.BoolVar(&o.passwordStdin, "password-stdin", false, "read the password from the first line of standard input")
			fs.BoolVar(&o.invite, "invite", false, "mail an invitation link to /auth/invite instead of setting a password")
			passwordFlag(fs, &o.minLength)
		}, run: usersAdd},
	{name: "list", synopsis: "[--json]", help: "list every user",
		flags: func(fs *pflag.FlagSet, o *cliOptions) {
			fs.BoolVar(&o.json, "json", false, "print a JSON array, for scripts")
		}, run: usersList},
	{name: "show", synopsis: "E", help: "show one user", needsEmail: true, run: usersShow},
	{name: "disable", synopsis: "E", help: "refuse the user's sign-ins and end every session of it", needsEmail: true,
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			c, err := api.SetDisabled(ctx, o.email, true)
			if err == nil {
				fmt.Fprintf(out, "disabled %s; revoked %d sessions\n", c.User.Email, c.SessionsRevoked)
			}
			return err
		}},
	{name: "enable", synopsis: "E", help: "let a disabled user sign in again", needsEmail: true,
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			c, err := api.SetDisabled(ctx, o.email, false)
			if err == nil {
				fmt.Fprintf(out, "enabled %s\n", c.User.Email)
			}
			return err
		}},
	{name: "delete", synopsis: "E", help: "delete the user with its identities, sessions, tokens and queued mail", needsEmail: true,
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			u, err := api.DeleteUser(ctx, o.email)
			if err == nil {
				fmt.Fprintf(out, "deleted user %s (%s)\n", u.Email, u.ID)
			}
			return err
		}},
	{name: "set-password", synopsis: "E --password-stdin", help: "replace the user's password and end every session of it", needsEmail: true,
		flags: func(fs *pflag.FlagSet, o *cliOptions) {
			fs.BoolVar(&o.passwordStdin, "password-stdin", false, "read the password from the first line of standard input (required)")
			passwordFlag(fs, &o.minLength)
		},
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			c, err := api.SetPassword(ctx, o.email, o.password)
			if err == nil {
				fmt.Fprintf(out, "set the password of %s; revoked %d sessions\n", c.User.Email, c.SessionsRevoked)
			}
			return err
		}},
	{name: "revoke-sessions", synopsis: "E", help: "end every session of the user", needsEmail: true,
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			c, err := api.RevokeSessions(ctx, o.email)
			if err == nil {
				fmt.Fprintf(out, "revoked %d sessions of %s\n", c.SessionsRevoked, c.User.Email)
			}
			return err
		}},
	{name: "reset-second-factor", synopsis: "E", help: "remove every second factor and recovery code of the user (mails a notice)", needsEmail: true,
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			f, err := api.ResetSecondFactor(ctx, o.email)
			if err == nil {
				fmt.Fprintf(out, "removed %d second factors of %s\n", f.FactorsRemoved, f.User.Email)
			}
			return err
		}},
}

var sessionsCommands = []cliCommand{
	{name: "list", synopsis: "E", help: "list the user's sessions, newest first", needsEmail: true, run: sessionsList},
}

// runUsers dispatches `gatehouse users …`.
func runUsers(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv environ) int {
	return runCLI("users", usersCommands, args, stdin, stdout, stderr, getenv)
}

// runSessions dispatches `gatehouse sessions …`.
func runSessions(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv environ) int {
	return runCLI("sessions", sessionsCommands, args, stdin, stdout, stderr, getenv)
}

func cliUsage(out io.Writer, group string, cmds []cliCommand) {
	fmt.Fprintf(out, "Usage: gatehouse %s COMMAND [flags]\n\nCommands:\n", group)
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s %s\t%s\n", c.name, c.synopsis, c.help)
	}
	_ = tw.Flush()
	fmt.Fprintln(out)
	for _, c := range cmds {
		if c.needsEmail {
			fmt.Fprintln(out, "E is the user's email, as the argument or as --email E.")
			break
		}
	}
	fmt.Fprintf(out, `The command goes to the running server through --admin-socket when one answers there, and opens
--db directly otherwise; the result is the same. Every flag also reads
GATEHOUSE_<FLAG>. gatehouse %s COMMAND --help lists a command's flags.
`, group)
}

// runCLI parses and runs one command. Exit codes: 0 done, 1 refused or
// failed, 2 a usage error (unknown command or flag, missing argument).
func runCLI(group string, cmds []cliCommand, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv environ) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		cliUsage(stdout, group, cmds)
		return 0
	}
	usageError := func(prefix string, err error) int {
		fmt.Fprintf(stderr, "gatehouse %s: %v; see gatehouse %s --help\n", prefix, err, group)
		return 2
	}
	var cmd *cliCommand
	for i := range cmds {
		if cmds[i].name == args[0] {
			cmd = &cmds[i]
		}
	}
	if cmd == nil {
		names := make([]string, len(cmds))
		for i := range cmds {
			names[i] = cmds[i].name
		}
		fmt.Fprintf(stderr, "gatehouse %s: %v\n", group, unknownCommand("gatehouse "+group, args[0], names))
		return exitUsage
	}
	prefix := group + " " + cmd.name
	fs := pflag.NewFlagSet("gatehouse "+prefix, pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := &cliOptions{stderr: stderr}
	dbFlag(fs, &o.db)
	adminFlags(fs, &o.socket, &o.auditLog)
	configFlag(fs, new(string), "the server's configuration file, for --db, --db-file, --admin-socket and --audit-log")
	if cmd.needsEmail {
		fs.StringVar(&o.email, "email", "", "email of the user (or give it as the argument)")
	}
	if cmd.flags != nil {
		cmd.flags(fs, o)
	}
	if err := parseFlags(fs, args[1:], "gatehouse "+prefix); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			fmt.Fprintf(stdout, "Usage: %s\n  %s\n\nFlags:\n%s", strings.TrimSpace("gatehouse "+prefix+" "+cmd.synopsis), cmd.help, fs.FlagUsages())
			return exitOK
		}
		fmt.Fprintf(stderr, "gatehouse %s: %v\n", group, err)
		return exitUsage
	}
	if err := applyEnv(fs, getenv); err != nil {
		fmt.Fprintf(stderr, "gatehouse %s: %v\n", group, err)
		return exitUsage
	}
	if err := applyConfigFileTo(fs); err != nil {
		fmt.Fprintf(stderr, "gatehouse %s: %v\n", group, err)
		return exitUsage
	}
	if err := dbFromFile(fs, &o.db); err != nil {
		return usageError(prefix, err)
	}
	if err := checkDB(o.db); err != nil {
		return usageError(prefix, err)
	}
	if err := checkAdminFlags(fs, o.db, &o.socket, o.auditLog); err != nil {
		return usageError(prefix, err)
	}
	rest := fs.Args()
	if cmd.needsEmail && len(rest) > 0 {
		if o.email != "" && o.email != rest[0] {
			return usageError(prefix, fmt.Errorf("two emails given: %q and --email %q", rest[0], o.email))
		}
		o.email, rest = rest[0], rest[1:]
	}
	if cmd.argName != "" && len(rest) > 0 {
		o.arg, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "gatehouse %s: unexpected argument %q; see gatehouse %s --help\n", group, rest[0], prefix)
		return exitUsage
	}
	if err := o.check(cmd, stdin); err != nil {
		fmt.Fprintf(stderr, "gatehouse %s: %v\n", prefix, err)
		return 2
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	api, done, err := o.connect(ctx, cmd.name == "add", stderr)
	if err == nil {
		err = cmd.run(ctx, api, o, stdout)
		done()
	}
	if err != nil {
		fmt.Fprintf(stderr, "gatehouse %s: %v\n", prefix, err)
		return 1
	}
	return 0
}

// check validates what can be checked before any store is touched and
// reads the password from standard input.
func (o *cliOptions) check(cmd *cliCommand, stdin io.Reader) error {
	if cmd.needsEmail {
		if o.email == "" {
			return flagError("email", "is required: give the user's email as the argument or as --email")
		}
		if _, err := admin.CheckEmail(o.email); err != nil {
			return flagError("email", "%v", err)
		}
	}
	if cmd.argName != "" && o.arg == "" {
		return fmt.Errorf("%s is required as the argument", cmd.argName)
	}
	if cmd.check != nil {
		if err := cmd.check(o); err != nil {
			return err
		}
	}
	if o.minLength != 0 && (o.minLength < 8 || o.minLength > 1024) {
		return flagError("password-min-length", "%d: want 8 to 1024", o.minLength)
	}
	switch cmd.name {
	case "add":
		if o.invite && o.passwordStdin {
			return errors.New("give either --password-stdin or --invite, not both")
		}
		if !o.invite && !o.passwordStdin {
			return flagError("password-stdin", "or --invite is required: pipe the password in, it is never taken as an argument")
		}
	case "set-password":
		if !o.passwordStdin {
			return flagError("password-stdin", "is required: pipe the password in, it is never taken as an argument")
		}
	}
	if !o.passwordStdin {
		return nil
	}
	line, err := bufio.NewReader(stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read password: %w", err)
	}
	o.password = strings.TrimRight(line, "\r\n")
	if o.password == "" {
		return errors.New("no password on standard input")
	}
	return nil
}

// connect returns the running server's API when one answers on the socket,
// else a Service on the database file. Only add may create a missing file.
// A PostgreSQL --db is always used directly: every replica hears the
// change through the database as it hears its own.
func (o *cliOptions) connect(ctx context.Context, mayCreate bool, stderr io.Writer) (admin.API, func(), error) {
	if isPostgresURL(o.db) { // no socket: every replica works on the database
		return o.service(stderr, false)
	}
	c, err := admin.Dial(ctx, o.socket)
	switch {
	case err == nil:
		return c, c.Close, nil
	case errors.Is(err, admin.ErrUntrustedSocket): // AD1: never spoken to, never "no server"
		return nil, nil, fmt.Errorf("--admin-socket: %w", err)
	}
	if _, err := os.Stat(o.db); errors.Is(err, fs.ErrNotExist) {
		if !mayCreate {
			return nil, nil, fmt.Errorf("database %s does not exist (no server answers on %s either)", o.db, cmp.Or(o.socket, "(no --admin-socket)"))
		}
		// add creates the file, not its folder: a typo in --db must not
		// grow a directory tree.
		if st, err := os.Stat(filepath.Dir(o.db)); err != nil || !st.IsDir() {
			return nil, nil, fmt.Errorf("folder %s of the database does not exist", filepath.Dir(o.db))
		}
	}
	return o.service(stderr, !mayCreate)
}

// service opens the store of --db and returns the admin Service on it.
func (o *cliOptions) service(stderr io.Writer, mustExist bool) (admin.API, func(), error) {
	store, err := openStore(o.db, mustExist, nil)
	if err != nil {
		return nil, nil, err
	}
	// The event lines a server would log (LG2) go to stderr: on the file,
	// this process is the one that made the change. Output and exit codes
	// are the same as through the socket.
	logger := newLogger(stderr, "text", "info")
	trail, closeTrail, err := openAuditLog(o.auditLog, stderr, time.Now, func(err error) {
		logger.Error("write audit event", "err", err)
	})
	if err != nil {
		store.Close()
		return nil, nil, err
	}
	minLength := o.minLength
	if minLength == 0 {
		minLength = 12
	}
	svc := &admin.Service{
		Store: store,
		HashPassword: func(ctx context.Context, plain, email string) (string, error) {
			return password.NewHash(ctx, password.DefaultHashParams, plain, email, minLength)
		},
		Audit:  trail,
		Logger: logger,
		RotateKey: func(ctx context.Context) (admin.KeyRotation, error) {
			return rotateKeyIn(ctx, store)
		},
	}
	return svc, func() { _ = closeTrail(); _ = store.Close() }, nil
}

func usersAdd(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
	u, err := api.AddUser(ctx, admin.AddUserRequest{Email: o.email, Password: o.password, Invite: o.invite})
	if err != nil {
		return err
	}
	if o.invite {
		fmt.Fprintf(out, "added user %s (%s); invitation queued\n", u.Email, u.ID)
		return nil
	}
	fmt.Fprintf(out, "added user %s (%s)\n", u.Email, u.ID)
	return nil
}

func usersList(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
	users, err := api.ListUsers(ctx)
	if err != nil {
		return err
	}
	if o.json {
		if users == nil {
			users = []admin.User{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(users)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tEMAIL\tPASSWORD\tIDENTITIES\tDISABLED\tCREATED")
	for _, u := range users {
		fmt.Fprintf(tw, "%s\t%s\t%t\t%s\t%t\t%s\n", u.ID, u.Email, u.HasPassword, strings.Join(u.Identities, ","),
			u.Disabled, u.CreatedAt.UTC().Format(time.RFC3339))
	}
	return tw.Flush()
}

func usersShow(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
	u, err := api.ShowUser(ctx, o.email)
	if err != nil {
		return err
	}
	identities := strings.Join(u.Identities, ",")
	if identities == "" {
		identities = "none"
	}
	fmt.Fprintf(out, "id:          %s\nemail:       %s\npassword:    %t\ndisabled:    %t\nidentities:  %s\nsessions:    %d\ncreated:     %s\n",
		u.ID, u.Email, u.HasPassword, u.Disabled, identities, u.Sessions, u.CreatedAt.UTC().Format(time.RFC3339))
	return nil
}

func sessionsList(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
	sessions, err := api.Sessions(ctx, o.email)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CREATED\tLAST SEEN\tEXPIRES\tMETHOD\tIP\tBROWSER")
	for _, s := range sessions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.CreatedAt.Format(time.RFC3339), s.LastSeen.Format(time.RFC3339),
			s.ExpiresAt.Format(time.RFC3339), dash(s.Method), dash(s.IP), dash(oneLine(s.UserAgent)))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// oneLine keeps a user agent from breaking the table or driving the
// operator's terminal: every rune that is not printable (C0 and C1
// controls, CSI and OSC among them; bidi overrides and other format
// characters; line and paragraph separators) becomes a space (LG3).
func oneLine(s string) string {
	return strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return ' '
		}
		return r
	}, s)
}
