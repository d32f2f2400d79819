// Package provider owns the OAuth/OIDC sign-in providers: one Kind per
// provider (google.go, github.go, oidc.go: flags, defaults, setup), one
// identifier interface they implement (who the account behind a token
// response is), ID token verification, the bounded HTTP client of every
// provider call (client.go: timeouts, 1 MiB answers, same-origin redirects)
// and the rule for an email a provider vouches for (email.go); reading an
// account again from a sign-in's kept tokens (refresh.go) and verifying an
// OpenID Provider's logout tokens and its end-session address (logout.go).
// The flows never ask a provider's name; they hold *Provider values.
//
// Dependencies: provider → storage (the email syntax), authflows/seal (the
// form of kept tokens), proxy/idpclient (the bounded HTTP client). authflows (the OAuth flows) and cmd/gatehouse (the
// provider flags) import it.
package provider
