package admin

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// Through the Service and through the socket's Client, a token is made,
// listed and revoked alike: its secret is told once, only its hash is
// stored, the list never carries a secret or a hash, and each change is an
// audit event naming the token and whom it acts for.
func TestTokensCreateListRevoke(t *testing.T) {
	for _, via := range []string{"service", "socket"} {
		t.Run(via, func(t *testing.T) {
			f := newFixture(t)
			var api API = f.svc
			if via == "socket" {
				api = viaSocket(t, f.svc)
			}
			ctx := t.Context()
			ann, err := f.svc.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"})
			if err != nil {
				t.Fatal(err)
			}
			mine, err := api.CreateToken(ctx, CreateTokenRequest{Name: " laptop script ", User: "ANN@example.com"})
			if err != nil {
				t.Fatal(err)
			}
			svc, err := api.CreateToken(ctx, CreateTokenRequest{Name: "deploys", Service: "ci.deploy", TTL: 90 * 24 * time.Hour,
				Groups: []string{"oidc:deployers", "svc:ci", "oidc:deployers"}})
			if err != nil {
				t.Fatal(err)
			}
			for _, nt := range []NewToken{mine, svc} {
				if !storage.IsAPITokenShape(nt.Secret) {
					t.Fatalf("secret %q is not ghp_ and 43 base64url characters", nt.Secret)
				}
				stored, _, err := f.store.APITokenByHash(ctx, storage.HashSecret(nt.Secret))
				if err != nil || stored.ID != nt.ID {
					t.Fatalf("the token's hash is not stored under its id: %+v %v", stored, err)
				}
			}
			wantMine := Token{ID: mine.ID, Name: "laptop script", Owner: "ann@example.com", UserID: ann.ID, Groups: []string{}, CreatedAt: now}
			wantSvc := Token{ID: svc.ID, Name: "deploys", Owner: "service:ci.deploy", Service: "ci.deploy",
				Groups: []string{"oidc:deployers", "svc:ci"}, CreatedAt: now, ExpiresAt: ptr(now.Add(90 * 24 * time.Hour))}
			if !reflect.DeepEqual(mine.Token, wantMine) || !reflect.DeepEqual(svc.Token, wantSvc) {
				t.Fatalf("created\n %+v\n %+v\nwant\n %+v\n %+v", mine.Token, svc.Token, wantMine, wantSvc)
			}

			list, err := api.ListTokens(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].ID != mine.ID && list[1].ID != mine.ID {
				t.Fatalf("list %+v, want both tokens", list)
			}
			b, _ := json.Marshal(list)
			for _, nt := range []NewToken{mine, svc} {
				h := storage.HashSecret(nt.Secret)
				if strings.Contains(string(b), nt.Secret) || strings.Contains(string(b), nt.Secret[4:]) ||
					strings.Contains(string(b), hex.EncodeToString(h[:])) {
					t.Fatalf("the list carries a secret or its hash: %s", b)
				}
			}

			revoked, err := api.RevokeToken(ctx, svc.ID)
			if err != nil || revoked.ID != svc.ID || revoked.Owner != "service:ci.deploy" {
				t.Fatalf("revoke: %+v %v", revoked, err)
			}
			if _, _, err := f.store.APITokenByHash(ctx, storage.HashSecret(svc.Secret)); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("revoked token still stored: %v", err)
			}
			var refusal *Error
			if _, err := api.RevokeToken(ctx, svc.ID); !errors.As(err, &refusal) || refusal.Code != CodeNotFound {
				t.Fatalf("revoke again: %v, want not_found", err)
			}

			var events []map[string]string
			for _, line := range strings.Split(strings.TrimSpace(f.trail.String()), "\n")[1:] { // after user_created
				var ev map[string]string
				if err := json.Unmarshal([]byte(line), &ev); err != nil {
					t.Fatal(err)
				}
				delete(ev, "time")
				events = append(events, ev)
			}
			want := []map[string]string{
				{"event": "token_created", "user_id": ann.ID, "email": "ann@example.com", "token_id": mine.ID},
				{"event": "token_created", "user_id": "service:ci.deploy", "token_id": svc.ID},
				{"event": "token_revoked", "user_id": "service:ci.deploy", "token_id": svc.ID},
			}
			if !reflect.DeepEqual(events, want) {
				t.Fatalf("audit events\n %v\nwant\n %v", events, want)
			}
			if strings.Contains(f.trail.String(), mine.Secret[4:]) || strings.Contains(f.trail.String(), svc.Secret[4:]) {
				t.Fatal("a token secret in the audit trail")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// Every bad request is refused before anything is stored, with a message
// that names the flag to fix.
func TestTokenRequestRefusals(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.svc.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.AddUser(ctx, AddUserRequest{Email: "off@example.com", Password: "a long password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.SetDisabled(ctx, "off@example.com", true); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		req  CreateTokenRequest
		code string
		says string
	}{
		{"no name", CreateTokenRequest{Service: "ci"}, CodeInvalidRequest, "--name"},
		{"blank name", CreateTokenRequest{Name: "  ", Service: "ci"}, CodeInvalidRequest, "--name"},
		{"control in name", CreateTokenRequest{Name: "a\x1b[2Jb", Service: "ci"}, CodeInvalidRequest, "--name"},
		{"long name", CreateTokenRequest{Name: strings.Repeat("n", 101), Service: "ci"}, CodeInvalidRequest, "--name"},
		{"no owner", CreateTokenRequest{Name: "n"}, CodeInvalidRequest, "--user E or --service S is required"},
		{"both owners", CreateTokenRequest{Name: "n", User: "ann@example.com", Service: "ci"}, CodeInvalidRequest, "either --user or --service"},
		{"bad email", CreateTokenRequest{Name: "n", User: "ann"}, CodeInvalidRequest, "--user"},
		{"unknown user", CreateTokenRequest{Name: "n", User: "nobody@example.com"}, CodeNotFound, "no user"},
		{"disabled user", CreateTokenRequest{Name: "n", User: "off@example.com"}, CodeInvalidRequest, "disabled"},
		{"groups on a user token", CreateTokenRequest{Name: "n", User: "ann@example.com", Groups: []string{"oidc:x"}}, CodeInvalidRequest, "--group"},
		{"service upper case", CreateTokenRequest{Name: "n", Service: "CI"}, CodeInvalidRequest, "--service"},
		{"service with colon", CreateTokenRequest{Name: "n", Service: "ci:x"}, CodeInvalidRequest, "--service"},
		{"service starting with a dot", CreateTokenRequest{Name: "n", Service: ".ci"}, CodeInvalidRequest, "--service"},
		{"service too long", CreateTokenRequest{Name: "n", Service: strings.Repeat("s", 64)}, CodeInvalidRequest, "--service"},
		{"negative ttl", CreateTokenRequest{Name: "n", Service: "ci", TTL: -time.Hour}, CodeInvalidRequest, "--ttl"},
		{"ttl beyond ten years", CreateTokenRequest{Name: "n", Service: "ci", TTL: MaxTokenTTL + time.Second}, CodeInvalidRequest, "--ttl"},
		{"group without prefix", CreateTokenRequest{Name: "n", Service: "ci", Groups: []string{"admins"}}, CodeInvalidRequest, "prefix:name"},
		{"group with comma", CreateTokenRequest{Name: "n", Service: "ci", Groups: []string{"oidc:a,b"}}, CodeInvalidRequest, "prefix:name"},
	} {
		_, err := f.svc.CreateToken(ctx, tc.req)
		var refusal *Error
		if !errors.As(err, &refusal) || refusal.Code != tc.code || !strings.Contains(refusal.Message, tc.says) {
			t.Errorf("%s: %v, want %s saying %q", tc.name, err, tc.code, tc.says)
		}
	}
	if tokens, err := f.store.APITokens(ctx); err != nil || len(tokens) != 0 {
		t.Fatalf("refused requests stored %d tokens (%v)", len(tokens), err)
	}
	if strings.Contains(f.trail.String(), "token_") {
		t.Fatalf("a refused request was audited:\n%s", f.trail)
	}
	// A service name at the edges of its syntax.
	for _, name := range []string{"a", "0", "ci.deploy_2-x", strings.Repeat("s", 63)} {
		if err := CheckService(name); err != nil {
			t.Errorf("CheckService(%q): %v", name, err)
		}
	}
}

// The token routes refuse ambiguous bodies as the user routes do: nothing
// is made from them.
func TestTokenHandlerRefusesAmbiguousBodies(t *testing.T) {
	f := newFixture(t)
	h := NewHandler(f.svc, nil)
	for _, body := range []string{
		`{"name":"n","service":"ci","service":"admin"}`,
		`{"name":"n","service":"ci","Service":"admin"}`,
		`{"name":"n","service":"ci","token":"ghp_chosen"}`,
		`{"name":"n","service":"ci"}{"name":"m","service":"ci"}`,
		`{"name":"n","service":"ci","groups":"oidc:x"}`,
	} {
		r := httptest.NewRequest(http.MethodPost, "/v1/tokens", strings.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400 (%s)", body, w.Code, strings.TrimSpace(w.Body.String()))
		}
	}
	if tokens, err := f.store.APITokens(t.Context()); err != nil || len(tokens) != 0 {
		t.Fatalf("tokens made from ambiguous bodies: %d (%v)", len(tokens), err)
	}
}

// Deleting a user through the admin API deletes the user's tokens.
func TestDeleteUserDeletesTokens(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	if _, err := f.svc.AddUser(ctx, AddUserRequest{Email: "ann@example.com", Password: "a long password"}); err != nil {
		t.Fatal(err)
	}
	nt, err := f.svc.CreateToken(ctx, CreateTokenRequest{Name: "n", User: "ann@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.DeleteUser(ctx, "ann@example.com"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.APITokenByHash(ctx, storage.HashSecret(nt.Secret)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the deleted user's token: %v, want not found", err)
	}
	if list, _ := f.svc.ListTokens(ctx); len(list) != 0 {
		t.Fatalf("list after the delete: %+v", list)
	}
}
