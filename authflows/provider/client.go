package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
)

// newProviderClient is the HTTP client of one provider's calls (discovery,
// key set, token exchange, user API). It is bounded in time
// (providerTimeout) and in what it reads (maxProviderResponse per answer,
// go-oidc's reads of the discovery document and the key set included), and
// it follows a redirect only to the same origin: the client secret, a code,
// a PKCE verifier or the keys never travel to a host, or over a scheme,
// that the configuration did not name (ID1).
func newProviderClient() *http.Client {
	return &http.Client{
		Timeout:   providerTimeout,
		Transport: cappedTransport{http.DefaultTransport},
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) >= 10 || !sameOrigin(next.URL.String(), via[0].URL.String()) {
				return errors.New("redirect to another origin")
			}
			return nil
		},
	}
}

// errProviderAnswerTooLarge ends the reading of an answer longer than
// maxProviderResponse.
var errProviderAnswerTooLarge = errors.New("provider answer larger than 1 MiB")

// cappedTransport gives every answer a body that fails past
// maxProviderResponse bytes, so that no reader (go-oidc reads whole) takes
// more.
type cappedTransport struct{ base http.RoundTripper }

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxProviderResponse}
	}
	return resp, err
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		return n, errProviderAnswerTooLarge
	}
	b.left -= int64(n)
	return n, err
}

// maxKeySetAge is how long a provider's key set is trusted before it is
// fetched again.
const maxKeySetAge = time.Hour

// agingKeySet is go-oidc's remote key set, made anew (and so fetched again
// at its first use) once the one in hand is maxKeySetAge old by the
// handler's clock. go-oidc fetches again only for an unknown key id: a key
// the provider withdrew would otherwise verify tokens for as long as the
// process runs (ID1).
type agingKeySet struct {
	ctx context.Context // carries the provider client (oidc.ClientContext)
	url string
	now func() time.Time

	mu   sync.Mutex
	keys *oidc.RemoteKeySet
	made time.Time
}

func newAgingKeySet(ctx context.Context, url string, now func() time.Time) *agingKeySet {
	return &agingKeySet{ctx: ctx, url: url, now: now}
}

// VerifySignature is oidc.KeySet's.
func (k *agingKeySet) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	k.mu.Lock()
	if now := k.now(); k.keys == nil || now.Sub(k.made) >= maxKeySetAge || now.Before(k.made) {
		k.keys, k.made = oidc.NewRemoteKeySet(k.ctx, k.url), now
	}
	keys := k.keys
	k.mu.Unlock()
	return keys.VerifySignature(ctx, jwt)
}
