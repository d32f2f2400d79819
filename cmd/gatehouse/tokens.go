package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/gatehouse-auth/gatehouse/authflows/admin"
)

// tokenOptions are the flags of `gatehouse tokens create`.
type tokenOptions struct {
	name, user, service, ttl string
	groups                   []string
	request                  admin.CreateTokenRequest // checked, by checkTokenCreate
}

// tokensCommands is `gatehouse tokens …`: API tokens for scripts and
// services. Like users, the commands go through the running server's
// --admin-socket when one answers, and open --db directly otherwise.
var tokensCommands = []cliCommand{
	{name: "create", synopsis: "--name N (--user E | --service S) [--ttl D] [--group G]... [--json]",
		help: "make an API token and print it, this once (only its hash is kept)",
		flags: func(fs *pflag.FlagSet, o *cliOptions) {
			t := &o.tokens
			fs.StringVar(&t.name, "name", "", "what the token is for, shown in tokens list (required)")
			fs.StringVar(&t.user, "user", "", "email of the user the token acts as")
			fs.StringVar(&t.service, "service", "", "name of the service the token acts as (service:NAME, no email)")
			fs.StringVar(&t.ttl, "ttl", "", "lifetime of the token, e.g. 720h (default: it does not expire)")
			fs.StringSliceVar(&t.groups, "group", nil, "group of a service token, prefix:name, e.g. oidc:deployers (repeatable)")
			fs.BoolVar(&o.json, "json", false, "print the token with its details as a JSON object, for scripts")
		},
		check: checkTokenCreate, run: tokensCreate},
	{name: "list", synopsis: "[--json]", help: "list every API token (never the token itself)",
		flags: func(fs *pflag.FlagSet, o *cliOptions) {
			fs.BoolVar(&o.json, "json", false, "print a JSON array, for scripts")
		}, run: tokensList},
	{name: "revoke", synopsis: "ID", argName: "ID", help: "revoke an API token: refused from the next request (within 1 s on every replica)",
		run: func(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
			t, err := api.RevokeToken(ctx, o.arg)
			if err == nil {
				fmt.Fprintf(out, "revoked token %s (%s) of %s\n", t.ID, oneLine(t.Name), t.Owner)
			}
			return err
		}},
}

// runTokens dispatches `gatehouse tokens …`.
func runTokens(args []string, stdin io.Reader, stdout, stderr io.Writer, getenv environ) int {
	return runCLI("tokens", tokensCommands, args, stdin, stdout, stderr, getenv)
}

// checkTokenCreate checks the flags of tokens create with the admin API's
// own rules (admin.CheckTokenRequest), so a bad value is a usage error
// before any store is opened, and the same refusal as the server's.
func checkTokenCreate(o *cliOptions) error {
	t := &o.tokens
	req := admin.CreateTokenRequest{Name: t.name, User: t.user, Service: t.service, Groups: t.groups}
	if t.ttl != "" {
		d, err := time.ParseDuration(t.ttl)
		if err != nil || d <= 0 {
			return flagError("ttl", "%q: want a positive duration such as 720h or 30m", t.ttl)
		}
		req.TTL = d
	}
	checked, err := admin.CheckTokenRequest(req)
	var refusal *admin.Error
	if errors.As(err, &refusal) {
		return errors.New(refusal.Message)
	}
	t.request = checked
	return err
}

func tokensCreate(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
	t, err := api.CreateToken(ctx, o.tokens.request)
	if err != nil {
		return err
	}
	if o.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(t)
	}
	// The token alone on standard output, so that TOKEN=$(gatehouse tokens
	// create …) holds it; what it is on standard error.
	fmt.Fprintln(out, t.Secret)
	fmt.Fprintf(o.stderr, "created token %s (%s) for %s, %s; it is shown only this once\n",
		t.ID, oneLine(t.Name), t.Owner, expiry(t.ExpiresAt))
	return nil
}

func tokensList(ctx context.Context, api admin.API, o *cliOptions, out io.Writer) error {
	tokens, err := api.ListTokens(ctx)
	if err != nil {
		return err
	}
	if o.json {
		if tokens == nil {
			tokens = []admin.Token{}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(tokens)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tOWNER\tGROUPS\tCREATED\tEXPIRES\tLAST USED")
	for _, t := range tokens {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, dash(oneLine(t.Name)), t.Owner, dash(strings.Join(t.Groups, ",")),
			t.CreatedAt.Format(time.RFC3339), timeOr(t.ExpiresAt, "never"), timeOr(t.LastUsed, "never"))
	}
	return tw.Flush()
}

// expiry says when a token expires.
func expiry(at *time.Time) string {
	if at == nil {
		return "does not expire"
	}
	return "expires " + at.UTC().Format(time.RFC3339)
}

// timeOr formats at, or says none when it is nil.
func timeOr(at *time.Time, none string) string {
	if at == nil {
		return none
	}
	return at.UTC().Format(time.RFC3339)
}
