package bearer

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// Key set timing. Every fetch, whatever asks for it, counts for the
// limits: an attacker's JWTs with made-up key ids cause at most one fetch
// a minute per issuer.
const (
	// KeySetMinInterval: a JWT whose key the set lacks (a new kid after the
	// provider rotated its keys) fetches the set again, at most this often.
	KeySetMinInterval = time.Minute
	// KeySetRetry: while no key set could be fetched yet, a fetch is tried
	// again this often at most.
	KeySetRetry = 10 * time.Second
	// KeySetRefresh: Run fetches a key set again once it is this old, so a
	// key the provider withdrew stops verifying new tokens then at the
	// latest, unknown kid or not.
	KeySetRefresh = 30 * time.Minute
	// MaxKeySetAge: a key set this old is fetched again before it is used
	// (when Run could not), within the limits above.
	MaxKeySetAge = time.Hour
	// maxKeys bounds the keys kept of one key set.
	maxKeys = 100
)

// issuer is one configured identity provider: its discovery document and
// its key set, fetched by discovery from the issuer URL.
type issuer struct {
	url  string // as configured: compared with iss exactly
	host string // the URL's host, with its port when it has one
	http *http.Client
	v    *Verifier

	mu        sync.Mutex
	jwksURI   string
	keys      []jose.JSONWebKey
	fetched   time.Time // of the key set held (zero: none yet)
	attempted time.Time // of the last fetch, successful or not
	lastErr   error     // of the last fetch
	inflight  chan struct{}
}

func newIssuer(raw string, client *http.Client, v *Verifier) (*issuer, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(raw, "#") || strings.HasSuffix(raw, "?") {
		return nil, fmt.Errorf("bearer: issuer %q is not an http(s) URL without user, query or fragment", raw)
	}
	return &issuer{url: raw, host: strings.ToLower(u.Host), http: client, v: v}, nil
}

// hostName is host (an issuer URL's lower-case host) without its port.
func hostName(host string) string {
	if h, _, err := net.SplitHostPort(host); err == nil {
		return h
	}
	return host
}

// candidates returns the keys that may have signed a JWT with this key id
// (any, when the JWT names none) and algorithm, fetching the key set first
// when none is held, when it is MaxKeySetAge old, or when it has no such
// key, within the limits of mayFetch. Concurrent callers share one fetch.
func (is *issuer) candidates(ctx context.Context, kid string, alg jose.SignatureAlgorithm) ([]jose.JSONWebKey, error) {
	for done := false; ; done = true {
		now := is.v.now()
		is.mu.Lock()
		keys := fitting(is.keys, kid, alg)
		fresh := !is.fetched.IsZero() && now.Sub(is.fetched) < MaxKeySetAge
		switch {
		case len(keys) > 0 && fresh:
			is.mu.Unlock()
			return keys, nil
		case is.inflight != nil && !done:
			wait := is.inflight
			is.mu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, unavailable(ReasonKeySet, ctx.Err())
			}
			continue
		case done || is.inflight != nil || !is.mayFetch(now):
			held, lastErr := !is.fetched.IsZero(), is.lastErr
			is.mu.Unlock()
			switch {
			case len(keys) > 0:
				return keys, nil // stale, but the best there is
			case !held:
				return nil, unavailable(ReasonKeySet, lastErr)
			}
			return nil, invalid(ReasonKey, fmt.Errorf("no %s key with id %q in the key set of %s", alg, kid, is.url))
		}
		wait := is.startFetch(now)
		is.mu.Unlock()
		is.fetch(context.WithoutCancel(ctx), now, wait)
	}
}

// mayFetch reports whether a fetch may start at now; the caller holds mu.
func (is *issuer) mayFetch(now time.Time) bool {
	if is.attempted.IsZero() {
		return true
	}
	since := now.Sub(is.attempted)
	if is.fetched.IsZero() {
		return since >= KeySetRetry
	}
	return since >= KeySetMinInterval
}

// startFetch marks a fetch in flight and returns its channel; the caller
// holds mu and calls fetch.
func (is *issuer) startFetch(now time.Time) chan struct{} {
	is.inflight = make(chan struct{})
	is.attempted = now
	return is.inflight
}

// refresh fetches the key set when the one held is older than age (or
// none is held) and the limits allow; Run calls it off the request path.
func (is *issuer) refresh(ctx context.Context, age time.Duration) {
	now := is.v.now()
	is.mu.Lock()
	if is.inflight != nil || !is.fetched.IsZero() && now.Sub(is.fetched) < age || !is.mayFetch(now) {
		is.mu.Unlock()
		return
	}
	wait := is.startFetch(now)
	is.mu.Unlock()
	is.fetch(ctx, now, wait)
}

// fetch downloads the key set (after discovery, the first time), keeps it
// when it is good, ends the fetch in flight and drops the cached JWTs
// signed by a key the new set no longer has.
func (is *issuer) fetch(ctx context.Context, now time.Time, done chan struct{}) {
	is.v.keySetFetches.Add(1)
	is.mu.Lock()
	jwksURI := is.jwksURI
	is.mu.Unlock()
	keys, jwksURI, err := is.download(ctx, jwksURI)
	is.mu.Lock()
	is.lastErr = err
	if err == nil {
		is.keys, is.fetched, is.jwksURI = keys, now, jwksURI
	}
	is.inflight = nil
	is.mu.Unlock()
	close(done)
	if err != nil {
		is.v.log.LogAttrs(ctx, slog.LevelWarn, "bearer JWT key set fetch failed",
			slog.String("issuer", is.url), slog.String("error", err.Error()))
		return
	}
	kept := map[string]bool{}
	for _, k := range keys {
		kept[thumbprint(k)] = true
	}
	is.v.jwts.purge(is, kept)
}

// download fetches the discovery document when jwksURI is empty, then the
// key set, and returns the keys that may verify a JWT.
func (is *issuer) download(ctx context.Context, jwksURI string) ([]jose.JSONWebKey, string, error) {
	if jwksURI == "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := is.getJSON(ctx, strings.TrimSuffix(is.url, "/")+"/.well-known/openid-configuration", &doc); err != nil {
			return nil, "", fmt.Errorf("discovery: %w", err)
		}
		if doc.Issuer != is.url {
			return nil, "", fmt.Errorf("discovery: the document names issuer %q, not %q", doc.Issuer, is.url)
		}
		u, err := url.Parse(doc.JWKSURI)
		if err != nil || u.Host == "" || u.Scheme != "https" && !(u.Scheme == "http" && strings.HasPrefix(is.url, "http:")) {
			return nil, "", fmt.Errorf("discovery: jwks_uri %q is not an https URL", doc.JWKSURI)
		}
		jwksURI = doc.JWKSURI
	}
	var set struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := is.getJSON(ctx, jwksURI, &set); err != nil {
		return nil, "", fmt.Errorf("key set: %w", err)
	}
	var keys []jose.JSONWebKey
	for _, raw := range set.Keys {
		var k jose.JSONWebKey
		if err := k.UnmarshalJSON(raw); err != nil || !usable(k) {
			continue // a key of a kind or use this verifier never takes
		}
		if keys = append(keys, k); len(keys) == maxKeys {
			break
		}
	}
	if len(keys) == 0 {
		return nil, "", errors.New("key set: no public signing key")
	}
	return keys, jwksURI, nil
}

// getJSON GETs u and decodes its JSON answer into out.
func (is *issuer) getJSON(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := is.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", u, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// usable reports whether k is a public signing key of a kind this verifier
// takes: RSA of 2048 bits or more, ECDSA on P-256, P-384 or P-521, Ed25519.
// Symmetric keys (HMAC) and private keys never are.
func usable(k jose.JSONWebKey) bool {
	if k.Use != "" && k.Use != "sig" {
		return false
	}
	switch pub := k.Key.(type) {
	case *rsa.PublicKey:
		return pub.N.BitLen() >= 2048
	case *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	}
	return false
}

// fitting returns the keys with id kid (any, when kid is empty) that sign
// with alg: the key's own alg when it names one, else the algorithm its
// type and curve imply. A JWT never chooses the algorithm a key verifies.
func fitting(keys []jose.JSONWebKey, kid string, alg jose.SignatureAlgorithm) []jose.JSONWebKey {
	var out []jose.JSONWebKey
	for _, k := range keys {
		if kid != "" && k.KeyID != kid || k.Algorithm != "" && k.Algorithm != string(alg) {
			continue
		}
		fits := false
		switch pub := k.Key.(type) {
		case *rsa.PublicKey:
			switch alg {
			case jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512:
				fits = true
			}
		case *ecdsa.PublicKey:
			fits = alg == jose.ES256 && pub.Curve == elliptic.P256() ||
				alg == jose.ES384 && pub.Curve == elliptic.P384() ||
				alg == jose.ES512 && pub.Curve == elliptic.P521()
		case ed25519.PublicKey:
			fits = alg == jose.EdDSA
		}
		if fits {
			out = append(out, k)
		}
	}
	return out
}

// thumbprint names a key by its RFC 7638 thumbprint (not by its kid, which
// a provider may reuse for another key).
func thumbprint(k jose.JSONWebKey) string {
	b, err := k.Thumbprint(crypto.SHA256)
	if err != nil {
		return ""
	}
	return string(b)
}
