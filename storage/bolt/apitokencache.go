package bolt

import (
	"sync"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// apiTokenCache keeps the API tokens APITokenByHash read, with their
// owner's state, so that a script calling through Gatehouse costs no read
// transaction per request. It is exact in the way sessionCache is and
// shares its write generation: a record is served only while no write
// transaction has returned since it was read, so a revoked token, a
// disabled or deleted owner, is refused on the next request. Unknown hashes
// are never kept: random tokens cannot fill it.
type apiTokenCache struct {
	mu      sync.RWMutex
	records map[storage.Hash]cachedAPIToken
}

// maxCachedAPITokens bounds the memory; tokens are few next to sessions.
const maxCachedAPITokens = 1 << 14

type cachedAPIToken struct {
	token storage.APIToken
	owner storage.APITokenOwner
	gen   uint64 // the write generation it was read at
}

// get returns the record of h if it was read at generation gen, the current one.
func (c *apiTokenCache) get(h storage.Hash, gen uint64) (cachedAPIToken, bool) {
	c.mu.RLock()
	e, ok := c.records[h]
	c.mu.RUnlock()
	return e, ok && e.gen == gen
}

// put keeps e unless a write has returned since it was read (current is
// the generation now). A full cache first drops the records of older
// generations, then an arbitrary eighth.
func (c *apiTokenCache) put(h storage.Hash, e cachedAPIToken, current uint64) {
	if e.gen != current {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.records == nil {
		c.records = make(map[storage.Hash]cachedAPIToken)
	}
	if len(c.records) >= maxCachedAPITokens {
		for k, old := range c.records {
			if old.gen != current {
				delete(c.records, k)
			}
		}
		n := len(c.records) / 8
		for k := range c.records {
			if len(c.records) < maxCachedAPITokens || n <= 0 {
				break
			}
			delete(c.records, k)
			n--
		}
	}
	c.records[h] = e
}
