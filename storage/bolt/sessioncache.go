package bolt

import (
	"sync"
	"sync/atomic"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// sessionCache keeps the session records Session decoded, so that the
// per-request check reads memory instead of opening a read transaction
// (issue 17: the transaction, the B+tree walk and the decode cost about
// 2 µs of a proxied request's CPU).
//
// It is exact, not eventually consistent (SS3): every record is tagged with
// the write generation it was read at, and update and batch bump the
// generation after every write transaction that may have changed something
// (committed or failed; not one rolled back by errNoWrite, which changed
// nothing, so that lookups of unknown OAuth states cannot empty it), before
// they return; Close bumps it too. A record is served only while the generation it was read at is
// still the current one, so once any write has returned, no Session call
// serves a record read before it. The generation is read before the read
// transaction begins: a record read across a concurrent commit is tagged
// with the older generation and dropped by the bump that follows the commit.
// Any write invalidates every record, which keeps the rule simple to
// check; writes are rare next to reads (sign-ins, sign-outs, the last-seen
// batch, sweeps), and a miss costs only the read it replaced.
//
// Only this process writes the file while it holds it (bbolt's file lock:
// a second opener gets ErrLocked), so no change can bypass the generation.
// Unknown ids are never cached: random cookies cannot fill it.
type sessionCache struct {
	gen    atomic.Uint64
	shards [sessionCacheShards]sessionCacheShard
}

const (
	sessionCacheShards = 16
	// maxCachedSessions bounds the memory: about 400 bytes a record, so
	// some 26 MB at most. A full shard evicts its stale records, or an
	// eighth of them when none is stale.
	maxCachedSessions = 1 << 16
)

type sessionCacheShard struct {
	mu      sync.RWMutex
	records map[storage.Hash]cachedSession
	_       [cacheLinePad]byte // one shard per cache line: no false sharing between cores
}

// cacheLinePad fills a shard (24 bytes of lock, 8 of map) to 64 bytes.
const cacheLinePad = 64 - 32

type cachedSession struct {
	session storage.Session
	gen     uint64
}

// generation is the tag to give a record about to be read.
func (c *sessionCache) generation() uint64 { return c.gen.Load() }

// invalidate is called after every write transaction.
func (c *sessionCache) invalidate() { c.gen.Add(1) }

func (c *sessionCache) shard(h storage.Hash) *sessionCacheShard {
	return &c.shards[h[0]%sessionCacheShards]
}

// get returns the record of h if it was read at the current generation.
func (c *sessionCache) get(h storage.Hash) (storage.Session, bool) {
	sh := c.shard(h)
	sh.mu.RLock()
	e, ok := sh.records[h]
	sh.mu.RUnlock()
	if !ok || e.gen != c.gen.Load() {
		return storage.Session{}, false
	}
	return e.session, true
}

// put keeps s, read at generation gen, unless a write has returned since.
func (c *sessionCache) put(s storage.Session, gen uint64) {
	if gen != c.gen.Load() {
		return
	}
	sh := c.shard(s.IDHash)
	sh.mu.Lock()
	if sh.records == nil {
		sh.records = make(map[storage.Hash]cachedSession)
	}
	if len(sh.records) >= maxCachedSessions/sessionCacheShards {
		sh.evict(gen)
	}
	sh.records[s.IDHash] = cachedSession{session: s, gen: gen}
	sh.mu.Unlock()
}

// evict makes room in a full shard. Records read before generation gen go
// first, all of them: no read will serve them, and those of deleted
// sessions would never be read again to be replaced. Only a shard that
// holds nothing stale loses an eighth of its records, arbitrary ones (map
// order). The caller holds mu.
func (sh *sessionCacheShard) evict(gen uint64) {
	for h, e := range sh.records {
		if e.gen != gen {
			delete(sh.records, h)
		}
	}
	if len(sh.records) < maxCachedSessions/sessionCacheShards {
		return
	}
	n := len(sh.records) / 8
	for h := range sh.records {
		if n--; n < 0 {
			break
		}
		delete(sh.records, h)
	}
}

// len reports how many records are held, current or not (tests).
func (c *sessionCache) len() int {
	n := 0
	for i := range c.shards {
		sh := &c.shards[i]
		sh.mu.RLock()
		n += len(sh.records)
		sh.mu.RUnlock()
	}
	return n
}
