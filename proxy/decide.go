package proxy

import (
	"net/http"
	"strings"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
	"github.com/gatehouse-auth/gatehouse/storage"
)

// The decision (RM1, AP2, PX5, FA1). decide says what a request may do, in
// one place for the proxy (serve) and for the forward-auth check endpoints
// (serveCheck); each answers the decision in its own way.

// access is what a route asks of a request: a route rule's "allow".
type access uint8

const (
	accessAuthenticated access = iota // a valid session that the access policy lets in
	accessPublic                      // forwarded with or without a session
	accessDeny                        // refused to everyone
)

// route is the rule that applies to a request. The zero route is that of a
// request no rule names: authenticated, nothing more.
type route struct {
	access access
}

// routes says which route applies to a request: the first rule whose host,
// method and path all match it. host is lower case, without port or
// trailing dot; method is upper case; path is the cleaned path the upstream
// gets, never the query, the fragment or a header. --public-path is
// publicPaths; a list of route rules, with each --public-path as a public
// rule placed first, takes its place.
type routes interface {
	route(host, method, path string) route
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
	verdictDenied                     // refused: 403 with decision.problem
	verdictUnavailable                // the store failed: fail closed (SS9)
)

// decision is what decide found.
type decision struct {
	verdict verdict
	// public: the route needs no session.
	public bool
	// session is the valid session the request carries, if any; signedIn
	// says whether it counts: its identity goes to the upstream. It does
	// not for a user the access policy refuses on a public route.
	session  storage.Session
	signedIn bool
	problem  web.Problem // verdictDenied: the answer
	err      error       // verdictUnavailable: the store's error
}

var routeDenied = web.NewProblem(http.StatusForbidden, "route_denied", "This address is not available")

// decide judges t for the request r, whose cookies are the credentials: the
// route of t, then the session (one store read, SS3), then the access
// policy, from memory and the session record (AP2). The same request gets
// the same decision whatever --mode says (RM1); only the answer differs.
func (p *Proxy) decide(r *http.Request, t target) decision {
	rt := routeOf(p.routes, t)
	if rt.access == accessDeny {
		return decision{verdict: verdictDenied, problem: routeDenied}
	}
	public := rt.access == accessPublic
	s, signedIn, err := p.gate.Check(r)
	if err != nil {
		return decision{verdict: verdictUnavailable, err: err}
	}
	if signedIn && p.policy != nil && !p.policy.Passes(s.Email, false, s.Groups) {
		if !public {
			return decision{verdict: verdictDenied, problem: web.AccessDenied, session: s}
		}
		signedIn = false // served as to nobody
	}
	if !signedIn && !public {
		return decision{verdict: verdictSignIn}
	}
	return decision{verdict: verdictForward, public: public, session: s, signedIn: signedIn}
}

// routeOf is the route of t. A public route whose path some upstream could
// read as another path, one step up or more (ambiguous), is not public: such
// a request needs a session like any other (PX5).
func routeOf(rs routes, t target) route {
	rt := rs.route(routeHost(t.host), strings.ToUpper(t.method), t.path)
	if rt.access == accessPublic && (t.rawAmbiguous || ambiguous(t.path)) {
		rt.access = accessAuthenticated
	}
	return rt
}

// routeHost is host as routes compare it: without port and trailing dot,
// lower case. It allocates only for a host with an upper-case letter.
func routeHost(host string) string {
	if strings.HasPrefix(host, "[") {
		if end := strings.IndexByte(host, ']'); end > 0 {
			host = host[1:end]
		}
	} else if i := strings.LastIndexByte(host, ':'); i >= 0 && strings.IndexByte(host[:i], ':') < 0 {
		host = host[:i]
	}
	return strings.ToLower(strings.TrimSuffix(host, "."))
}

// refuse answers a denied request: for a user the access policy refuses,
// the page with a sign-out button (so that they can sign in as someone
// else), else the problem.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, problem web.Problem) {
	if problem.Code == web.AccessDenied.Code {
		p.denier.AccessDenied(w, r)
		return
	}
	web.WriteProblem(w, r, problem)
}
