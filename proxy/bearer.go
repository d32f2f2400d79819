package proxy

import (
	"context"
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"

	"github.com/gatehouse-auth/gatehouse/proxy/bearer"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// Machine access. On a route with tokens: true a request that carries
// "Authorization: Bearer …" is judged by that credential alone, never by a
// cookie; on every other route a bearer credential is ignored (and the
// Authorization header forwarded unchanged: it may be the app's own).

// BearerVerifier checks bearer credentials (bearer.Verifier).
type BearerVerifier interface {
	Verify(ctx context.Context, authorization []string) (bearer.Identity, error)
}

// BearerThrottle counts a client's bad bearer credentials (bearer.Throttle).
type BearerThrottle interface {
	Blocked(client netip.Addr) bool
	Failed(ctx context.Context, client netip.Addr) bool
}

var (
	invalidToken = web.NewProblem(http.StatusUnauthorized, "invalid_token", "Invalid, expired or revoked bearer token")
	rateLimited  = web.NewProblem(http.StatusTooManyRequests, "rate_limited", "Too many invalid bearer tokens; wait a minute")
	// bearerTooWeak: a route that needs a second factor or a recent
	// sign-in, which no bearer credential proves.
	bearerTooWeak = web.Problem{
		Type: "about:blank", Status: http.StatusForbidden, Code: web.AccessDenied.Code, Title: "Access denied",
		Detail: "This route needs a second factor or a recent sign-in, which a bearer token does not prove",
	}
	bearerPolicyDenied = web.Problem{
		Type: "about:blank", Status: http.StatusForbidden, Code: web.AccessDenied.Code, Title: "Access denied",
		Detail: "The identity of this bearer token may not use this application",
	}
)

// decideBearer judges r by its bearer credential on a route with tokens:
// true; judged is false when r carries none (judge it by its cookie).
//
// A valid credential's identity then meets the access policy (user tokens
// and JWTs; a service token has no email to judge: only route groups
// apply to it, and a JWT without a verified email passes the policy only
// through the route's groups), the route's groups, and never a route's
// second-factor or max-age: a bearer credential proves neither a second
// factor nor the time of a sign-in, so such a route refuses it with 403.
func (p *Proxy) decideBearer(r *http.Request, rule route.Rule) (d decision, judged bool) {
	authorization := r.Header.Values("Authorization")
	if len(authorization) == 0 {
		return decision{}, false
	}
	client := p.trusted.ClientIP(r)
	if p.throttle != nil && p.throttle.Blocked(client) {
		return decision{verdict: verdictDenied, bearer: true, problem: rateLimited}, true
	}
	id, err := p.bearer.Verify(r.Context(), authorization)
	switch {
	case errors.Is(err, bearer.ErrNoCredential):
		return decision{}, false
	case errors.Is(err, bearer.ErrUnavailable):
		return decision{verdict: verdictUnavailable, bearer: true, err: err}, true
	case err != nil:
		p.logger.LogAttrs(r.Context(), slog.LevelInfo, "bearer credential refused",
			slog.String("client_ip", client.String()), slog.String("reason", bearerReason(err)))
		if p.throttle != nil && !p.throttle.Failed(r.Context(), client) {
			return decision{verdict: verdictDenied, bearer: true, problem: rateLimited}, true
		}
		return decision{verdict: verdictDenied, bearer: true, problem: invalidToken}, true
	}
	s := bearerSession(authorization[0], id)
	s.CreatedAt = p.now() // the assertion's auth_time: the credential was checked now
	d = decision{verdict: verdictForward, tokens: true, bearer: true, session: s}
	service := strings.HasPrefix(id.UserID, bearer.ServicePrefix)
	passes := service || p.policy == nil || p.policy.Passes(s.Email, false, s.Groups) ||
		id.AMR == bearer.AMRJWT && s.Email == "" && len(rule.Groups) > 0 && rule.GroupsPass(s.Groups)
	switch {
	case !passes, !rule.GroupsPass(s.Groups):
		d.verdict, d.problem = verdictDenied, bearerPolicyDenied
	case rule.SecondFactor || rule.MaxAge > 0:
		d.verdict, d.problem = verdictDenied, bearerTooWeak
	default:
		d.signedIn = true
	}
	return d, true
}

// bearerSession is the stand-in session of a bearer identity: what the
// identity headers and the assertion are made of. Its IDHash keys the
// assertion cache by credential (a hash under its own label, never a
// session's), so that an assertion is signed once per credential and half
// lifetime, not per request; its Method gives the assertion's amr
// (["token"] or ["jwt"]); it never outlives the credential.
func bearerSession(authorization string, id bearer.Identity) storage.Session {
	h := sha256.New()
	h.Write([]byte("gatehouse bearer assertion\x00"))
	h.Write([]byte(authorization))
	var key storage.Hash
	h.Sum(key[:0])
	return storage.Session{
		IDHash: key, UserID: id.UserID, Email: id.Email, Groups: strings.Join(id.Groups, ","),
		Method: id.AMR, ExpiresAt: id.ExpiresAt,
	}
}

// bearerReason is the logged reason of a refused credential (never the
// credential itself).
func bearerReason(err error) string {
	var e *bearer.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "invalid"
}
