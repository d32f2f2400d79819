package proxy

import (
	"net/http"
	"time"

	"github.com/gatehouse-auth/gatehouse/proxy/route"
	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The decision (RM1, AP2, PX5, FA1). decide says what a request may do, in
// one place for the proxy (serve) and for the forward-auth check endpoints
// (serveCheck); each answers the decision in its own way.

// RouteRules holds the route table in force: the rules of the
// configuration file after a public rule for each --public-path
// (route.Live, which a reload replaces). decide reads it once per request.
type RouteRules interface {
	Rules() *route.Table
}

// target is what a decision is about: the request as the upstream gets it.
type target struct {
	method string
	host   string // as the client named it: Host, or the forwarded host
	path   string // cleaned (cleanPath)
	// rawAmbiguous: the upstream gets the path as sent, before cleaning,
	// and that path could be read as another (see ambiguous). The check
	// endpoints' upstream does; the proxy forwards the cleaned path.
	rawAmbiguous bool
}

// verdict is the kind of a decision.
type verdict uint8

const (
	verdictForward     verdict = iota // on to the upstream; a check answers 200
	verdictSignIn                     // a session is needed and there is none
	verdictDenied                     // refused: decision.problem
	verdictReauth                     // a session that the route finds too weak or too old
	verdictUnavailable                // the store (or a key set) failed: fail closed (SS9)
)

// Reasons of verdictReauth, as the sign-in address's reauth parameter
// names them.
const (
	reauthSecondFactor = "second-factor"
	reauthMaxAge       = "max-age"
)

// decision is what decide found.
type decision struct {
	verdict verdict
	// public: the route needs no session.
	public bool
	// tokens: the route accepts bearer credentials; the upstream gets no
	// Authorization header.
	tokens bool
	// session is the valid session the request carries, if any, or the
	// stand-in of a bearer identity (bearer.go); signedIn says whether it
	// counts: its identity goes to the upstream. It does not for a user
	// the access policy refuses on a public route.
	session  storage.Session
	signedIn bool
	bearer   bool        // judged by a bearer credential
	reauth   string      // verdictReauth: reauthSecondFactor or reauthMaxAge
	problem  web.Problem // verdictDenied: the answer
	err      error       // verdictUnavailable: the cause
}

var (
	routeDenied = web.NewProblem(http.StatusForbidden, "route_denied", "This address is not available")
	// reauthRequired answers a session a route finds too weak (no second
	// factor) or too old (max-age) when no redirect is made.
	reauthRequired = web.NewProblem(http.StatusUnauthorized, "reauthentication_required", "Sign in again to open this page")
)

// decide judges t for the request r, whose cookies (or, on a route with
// tokens: true, bearer credential) are the credentials: the route of t,
// then the session (one store read, SS3), then the access policy, from
// memory and the session record (AP2), then the route's groups, second
// factor and max-age. The same request gets the same decision whatever
// --mode says (RM1); only the answer differs.
func (p *Proxy) decide(r *http.Request, t target) decision {
	rule := p.ruleOf(t)
	switch rule.Allow {
	case route.Deny:
		return decision{verdict: verdictDenied, problem: routeDenied}
	case route.Public:
		return p.decidePublic(r)
	}
	if rule.Tokens && p.bearer != nil {
		if d, judged := p.decideBearer(r, rule); judged {
			return d
		}
	}
	s, signedIn, err := p.gate.Check(r)
	switch {
	case err != nil:
		return decision{verdict: verdictUnavailable, err: err}
	case !signedIn:
		return decision{verdict: verdictSignIn}
	case p.policy != nil && !p.policy.Passes(s.Email, false, s.Groups),
		!rule.GroupsPass(s.Groups):
		return decision{verdict: verdictDenied, problem: web.AccessDenied, session: s}
	case rule.SecondFactor && !s.MultiFactor():
		return decision{verdict: verdictReauth, reauth: reauthSecondFactor, session: s}
	case rule.MaxAge > 0 && p.now().Sub(s.CreatedAt) > rule.MaxAge:
		return decision{verdict: verdictReauth, reauth: reauthMaxAge, session: s}
	}
	return decision{verdict: verdictForward, tokens: rule.Tokens, session: s, signedIn: true}
}

// decidePublic is the decision of a public route: forwarded, with the
// identity of a valid session that the access policy lets in.
func (p *Proxy) decidePublic(r *http.Request) decision {
	s, signedIn, err := p.gate.Check(r)
	if err != nil {
		return decision{verdict: verdictUnavailable, err: err}
	}
	if signedIn && p.policy != nil && !p.policy.Passes(s.Email, false, s.Groups) {
		signedIn = false // served as to nobody
	}
	return decision{verdict: verdictForward, public: true, session: s, signedIn: signedIn}
}

// ruleOf is the route rule of t, from the table in force. A path some
// upstream could read as another path (ambiguous, or rawAmbiguous on the
// check endpoints) gets no rule of its own: MatchAmbiguous denies it where
// a rule of its host and method restricts, and otherwise gives it the
// default rule, never a public one (PX5).
func (p *Proxy) ruleOf(t target) route.Rule {
	var table *route.Table
	if p.routes != nil {
		table = p.routes.Rules()
	}
	if t.rawAmbiguous || ambiguous(t.path) {
		return table.MatchAmbiguous(t.host, t.method)
	}
	return table.Match(t.host, t.method, t.path)
}

// now is the proxy's clock.
func (p *Proxy) now() time.Time {
	if p.clock != nil {
		return p.clock()
	}
	return time.Now()
}

// refuse answers a denied request: for a user of a session the access
// policy or a route's groups refuse, the page with a sign-out button (so
// that they can sign in as someone else); for an invalid bearer
// credential, the problem with WWW-Authenticate; else the problem.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, d decision) {
	switch {
	case d.problem.Code == web.AccessDenied.Code && !d.bearer:
		p.denier.AccessDenied(w, r)
		return
	case d.problem.Code == invalidToken.Code:
		w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
	case d.problem.Code == rateLimited.Code:
		w.Header().Set("Retry-After", "60")
	}
	web.WriteProblem(w, r, d.problem)
}

// reauthURL is the sign-in address that asks for a new sign-in (or the
// second-factor step) and returns to rd: LoginURL with reauth.
func (p *Proxy) reauthURL(rd, reason string) string {
	return web.Denier{BaseURL: p.baseURL}.LoginURL(rd) + "&reauth=" + reason
}

// reauthenticate answers verdictReauth on the proxy: in redirect mode a
// navigation goes to sign in again; anything else gets 401
// reauthentication_required naming that address in X-Gatehouse-Login.
func (p *Proxy) reauthenticate(w http.ResponseWriter, r *http.Request, reason string) outcome {
	if p.baseURL == nil { // --mode=401 without a base URL: nowhere to send
		w.Header().Set("WWW-Authenticate", `Cookie realm="gatehouse", form="/auth/login"`)
		web.WriteProblem(w, r, reauthRequired)
		p.metrics.unauthenticated.Inc()
		return outcomeUnauthenticated
	}
	login := p.reauthURL(r.URL.RequestURI(), reason)
	if p.denier.Mode == web.ModeRedirect && (r.Method == http.MethodGet || r.Method == http.MethodHead) && web.IsNavigation(r) {
		web.NoStore(w.Header())
		http.Redirect(w, r, login, http.StatusFound)
		p.metrics.redirected.Inc()
		return outcomeRedirected
	}
	writeReauth(w, r, login)
	p.metrics.unauthenticated.Inc()
	return outcomeUnauthenticated
}

// writeReauth answers 401 reauthentication_required with the address that
// signs in again.
func writeReauth(w http.ResponseWriter, r *http.Request, login string) {
	w.Header().Set(web.LoginHeader, login)
	w.Header().Set("WWW-Authenticate", `Cookie realm="gatehouse", form="/auth/login"`)
	problem := reauthRequired
	problem.ActionURL = login
	web.WriteProblem(w, r, problem)
}

// unavailableMessage is the log line of verdictUnavailable.
func unavailableMessage(d decision) string {
	if d.bearer {
		return "bearer credential cannot be checked now"
	}
	return "session store unavailable"
}
