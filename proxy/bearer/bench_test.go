package bearer

import (
	"strings"
	"testing"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage/cache"
)

// The request path's cost of a known API token (through the replica cache
// as over PostgreSQL, and through bbolt's own cache), of a cached JWT, and
// of refusing an oversized header.
func BenchmarkVerify(b *testing.B) {
	e := newTokenEnv(b)
	c := cache.New(e.counted, cache.Options{HeartbeatTimeout: time.Hour, Now: e.clock.Now})
	c.Resync()
	c.Heartbeat(e.clock.Now())
	viaCache, err := New(Config{Tokens: c, Clock: e.clock.Now})
	if err != nil {
		b.Fatal(err)
	}
	big := []string{"Bearer " + strings.Repeat("A", 64<<10)}
	j := newJWTEnv(b, testAudience)
	jwtHeader := bearer(sign(b, j.idp.Keypair, j.claims("s")))
	for _, bc := range []struct {
		name   string
		v      *Verifier
		header []string
		ok     bool
	}{
		{"api-token/cache", viaCache, bearer(e.mine), true},
		{"api-token/bolt", e.v, bearer(e.mine), true},
		{"jwt/cached", j.v, jwtHeader, true},
		{"oversized", e.v, big, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.v.Verify(b.Context(), bc.header); (err == nil) != bc.ok {
					b.Fatal(err)
				}
			}
		})
	}
}
