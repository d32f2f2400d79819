package admin

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gatehouse-auth/gatehouse/authflows/audit"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// TokenAPI is the administration of API tokens: the credentials that
// scripts and services send as "Authorization: Bearer ghp_…".
type TokenAPI interface {
	// CreateToken makes a token and returns it with its secret, the only
	// time the secret is ever told.
	CreateToken(ctx context.Context, req CreateTokenRequest) (NewToken, error)
	// ListTokens lists every token, oldest first; never a secret or a hash.
	ListTokens(ctx context.Context) ([]Token, error)
	// RevokeToken deletes the token with that id.
	RevokeToken(ctx context.Context, id string) (Token, error)
}

// TokenStore is what the token operations need of the storage backend.
type TokenStore interface {
	CreateAPIToken(ctx context.Context, t storage.APIToken) error
	APITokens(ctx context.Context) ([]storage.APIToken, error)
	RevokeAPIToken(ctx context.Context, id string) (storage.APIToken, error)
	UserByID(ctx context.Context, id string) (storage.User, error)
}

// CreateTokenRequest asks for a token of a user (User, an email: the token
// acts as that user) or of a service (Service: the token acts as
// "service:NAME" with Groups). TTL 0 is a token that does not expire.
type CreateTokenRequest struct {
	Name    string        `json:"name"`
	User    string        `json:"user,omitempty"`
	Service string        `json:"service,omitempty"`
	TTL     time.Duration `json:"ttl,omitempty"`
	Groups  []string      `json:"groups,omitempty"`
}

// Token is what the API tells about a token: never the token or its hash.
type Token struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	Owner     string     `json:"owner"` // the user's email, or "service:NAME"
	UserID    string     `json:"user_id,omitempty"`
	Service   string     `json:"service,omitempty"`
	Groups    []string   `json:"groups"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at"` // null: does not expire
	LastUsed  *time.Time `json:"last_used"`  // null: never used
}

// NewToken is a token just made, with its secret.
type NewToken struct {
	Token
	Secret string `json:"token"`
}

// Limits of a token request.
const (
	maxTokenName   = 100
	maxTokenGroups = 64
	// MaxTokenTTL bounds a token's lifetime.
	MaxTokenTTL = 10 * 365 * 24 * time.Hour
)

// ServicePrefix starts the user id a service token acts as.
const ServicePrefix = "service:"

// CheckService accepts a service name: a lower-case letter or digit, then
// up to 62 lower-case letters, digits, ".", "_" or "-". The token acts as
// "service:NAME", so the name is safe in a header and a log line.
func CheckService(name string) error {
	ok := name != "" && len(name) <= 63
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		ok = alnum || i > 0 && (c == '.' || c == '_' || c == '-')
	}
	if !ok {
		return refuse(CodeInvalidRequest, "%q is not a service name (a lower-case letter or digit, then up to 62 of a-z 0-9 . _ -)", name)
	}
	return nil
}

// CheckTokenRequest checks a request before anything is stored and returns
// it normalized (trimmed name, normalized email, groups without
// duplicates). Every refusal is an *Error with CodeInvalidRequest that
// names the field; the CLI shows it as a usage error.
func CheckTokenRequest(req CreateTokenRequest) (CreateTokenRequest, error) {
	req.Name = strings.TrimSpace(req.Name)
	n := utf8.RuneCountInString(req.Name)
	if n == 0 || n > maxTokenName || !utf8.ValidString(req.Name) || strings.IndexFunc(req.Name, notPrintable) >= 0 {
		return req, refuse(CodeInvalidRequest, "--name: give what the token is for, 1 to %d printable characters", maxTokenName)
	}
	switch {
	case req.User != "" && req.Service != "":
		return req, refuse(CodeInvalidRequest, "give either --user or --service, not both")
	case req.User == "" && req.Service == "":
		return req, refuse(CodeInvalidRequest, "--user E or --service S is required: whom the token acts for")
	case req.User != "":
		email, err := CheckEmail(req.User)
		if err != nil {
			return req, refuse(CodeInvalidRequest, "--user: %v", err)
		}
		req.User = email
		if len(req.Groups) > 0 {
			return req, refuse(CodeInvalidRequest, "--group is for service tokens: a user's token acts as that user")
		}
	default:
		if err := CheckService(req.Service); err != nil {
			return req, refuse(CodeInvalidRequest, "--service: %v", err)
		}
	}
	if req.TTL < 0 || req.TTL > MaxTokenTTL {
		return req, refuse(CodeInvalidRequest, "--ttl: %s: want a positive duration up to %s (or none: the token does not expire)", req.TTL, MaxTokenTTL)
	}
	if len(req.Groups) > maxTokenGroups {
		return req, refuse(CodeInvalidRequest, "--group: at most %d groups", maxTokenGroups)
	}
	var groups []string
	for _, g := range req.Groups {
		if _, err := policy.ParseQualifiedGroup(g); err != nil {
			return req, refuse(CodeInvalidRequest, "--group: %v", err)
		}
		if !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	req.Groups = groups
	return req, nil
}

func notPrintable(r rune) bool { return !unicode.IsPrint(r) }

// CreateToken checks the request, makes a token of 256 random bits, stores
// only its hash and returns it once.
func (s *Service) CreateToken(ctx context.Context, req CreateTokenRequest) (NewToken, error) {
	req, err := CheckTokenRequest(req)
	if err != nil {
		return NewToken{}, err
	}
	now := s.now().UTC().Truncate(time.Microsecond) // as PostgreSQL keeps it
	secret, hash := storage.NewAPIToken()
	t := storage.APIToken{ID: storage.NewAPITokenID(), Hash: hash, Name: req.Name, Service: req.Service,
		Groups: req.Groups, CreatedAt: now}
	if req.TTL > 0 {
		t.ExpiresAt = now.Add(req.TTL)
	}
	var owner storage.User
	if req.User != "" {
		if owner, err = s.user(ctx, req.User); err != nil {
			return NewToken{}, err
		}
		if owner.Disabled {
			return NewToken{}, refuse(CodeInvalidRequest, "user %s is disabled: enable it first", owner.Email)
		}
		t.UserID = owner.ID
	}
	if err := s.Store.CreateAPIToken(ctx, t); err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return NewToken{}, refuse(CodeNotFound, "no user with email %s", req.User)
		}
		return NewToken{}, err
	}
	s.recordToken(ctx, audit.TokenCreated, t, owner.Email)
	return NewToken{Token: describeToken(t, owner.Email), Secret: secret}, nil
}

// ListTokens lists every token, oldest first, with its owner's email.
func (s *Service) ListTokens(ctx context.Context) ([]Token, error) {
	tokens, err := s.Store.APITokens(ctx)
	if err != nil {
		return nil, err
	}
	emails := map[string]string{}
	out := make([]Token, 0, len(tokens))
	for _, t := range tokens {
		if t.UserID != "" {
			if _, ok := emails[t.UserID]; !ok {
				u, err := s.Store.UserByID(ctx, t.UserID)
				if err != nil && !errors.Is(err, storage.ErrNotFound) {
					return nil, err
				}
				emails[t.UserID] = u.Email
			}
		}
		out = append(out, describeToken(t, emails[t.UserID]))
	}
	return out, nil
}

// RevokeToken deletes the token with that id. The running server refuses
// it from the next request; the other replicas of a shared store within a
// second.
func (s *Service) RevokeToken(ctx context.Context, id string) (Token, error) {
	if id == "" || len(id) > 64 || strings.IndexFunc(id, notPrintable) >= 0 {
		return Token{}, refuse(CodeInvalidRequest, "%q is not a token id (see gatehouse tokens list)", id)
	}
	t, err := s.Store.RevokeAPIToken(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return Token{}, refuse(CodeNotFound, "no API token with id %s", id)
	}
	if err != nil {
		return Token{}, err
	}
	var email string
	if t.UserID != "" {
		if u, err := s.Store.UserByID(ctx, t.UserID); err == nil {
			email = u.Email
		}
	}
	s.recordToken(ctx, audit.TokenRevoked, t, email)
	return describeToken(t, email), nil
}

// recordToken writes the audit event and the event line of a token change:
// the token's id and whom it acts for, never the token.
func (s *Service) recordToken(ctx context.Context, event string, t storage.APIToken, email string) {
	userID := t.UserID
	if t.Service != "" {
		userID = ServicePrefix + t.Service
	}
	s.Audit.Record(audit.Event{Event: event, UserID: userID, Email: email, TokenID: t.ID})
	if s.Logger != nil {
		s.Logger.LogAttrs(ctx, slog.LevelInfo, "auth event", slog.String("event", event), slog.String("user_id", userID),
			slog.String("token_id", t.ID), slog.String("source", "admin"))
	}
}

// describeToken is the API's view of t; email is its user's, if any.
func describeToken(t storage.APIToken, email string) Token {
	d := Token{ID: t.ID, Name: t.Name, UserID: t.UserID, Service: t.Service, Groups: slices.Clip(t.Groups),
		CreatedAt: t.CreatedAt.UTC()}
	if d.Groups == nil {
		d.Groups = []string{}
	}
	switch {
	case t.Service != "":
		d.Owner = ServicePrefix + t.Service
	case email != "":
		d.Owner = email
	default:
		d.Owner = t.UserID
	}
	if !t.ExpiresAt.IsZero() {
		e := t.ExpiresAt.UTC()
		d.ExpiresAt = &e
	}
	if !t.LastUsed.IsZero() {
		l := t.LastUsed.UTC()
		d.LastUsed = &l
	}
	return d
}
