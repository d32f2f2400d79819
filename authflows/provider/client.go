package provider

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/gatehouse-auth/gatehouse/proxy/idpclient"
)

// newProviderClient is the HTTP client of one provider's calls (discovery,
// key set, token exchange, user API): proxy/idpclient's, bounded in time
// and size and following redirects only within the same origin (ID1).
func newProviderClient() *http.Client { return idpclient.New() }

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
