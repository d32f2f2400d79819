package bearer

import (
	"sync"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// maxCachedJWTs bounds the cache of verified JWTs. A JWT gets in only
// once its signature verified, so only an issuer's real tokens fill it.
const maxCachedJWTs = 10_000

// jwtCache keeps verified JWTs under their SHA-256 until their until
// (their exp, or MaxJWTCache after the check).
type jwtCache struct {
	mu      sync.Mutex
	entries map[storage.Hash]jwtEntry
}

type jwtEntry struct {
	id     Identity
	until  time.Time
	issuer *issuer
	signer string // thumbprint of the key that verified it
}

// get returns the identity of a JWT verified before, while it stands at now.
func (c *jwtCache) get(h storage.Hash, now time.Time) (Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[h]
	if !ok {
		return Identity{}, false
	}
	if !now.Before(e.until) {
		delete(c.entries, h)
		return Identity{}, false
	}
	return e.id, true
}

// put keeps e. A full cache first drops the entries past their time at
// now, then an arbitrary eighth.
func (c *jwtCache) put(h storage.Hash, e jwtEntry, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[storage.Hash]jwtEntry{}
	}
	if len(c.entries) >= maxCachedJWTs {
		for k, old := range c.entries {
			if !now.Before(old.until) {
				delete(c.entries, k)
			}
		}
		for n := len(c.entries) / 8; n > 0 && len(c.entries) >= maxCachedJWTs; n-- {
			for k := range c.entries {
				delete(c.entries, k)
				break
			}
		}
	}
	c.entries[h] = e
}

// purge drops the JWTs of the issuer signed by a key its new key set does
// not hold (kept: thumbprints of the keys it holds): a withdrawn key stops
// the tokens it signed at once, not only the new ones.
func (c *jwtCache) purge(is *issuer, kept map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.issuer == is && !kept[e.signer] {
			delete(c.entries, k)
		}
	}
}
