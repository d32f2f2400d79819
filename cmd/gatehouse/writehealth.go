package main

import (
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// writeHealth watches the store's commits (bolt.Options.OnWrite) so that
// operators see write failures: one log line per failure class until writes
// work again, a counter by class, a gauge, and a line in /readyz's body.
//
// Readiness does not flip on write failures (see README, "Failures"): the
// process keeps serving every signed-in user from the readable store, and
// only requests that need a write get a 503. Taking a single replica out of
// the load balancer would turn a partial outage into a full one.
type writeHealth struct {
	log      *slog.Logger
	clock    func() time.Time
	failures *prometheus.CounterVec
	anyFail  atomic.Bool // fast path for the common nil report

	mu      sync.Mutex
	failing map[string]time.Time // class → first failure since writes last worked
}

func newWriteHealth(log *slog.Logger, clock func() time.Time) *writeHealth {
	return &writeHealth{
		log:   log,
		clock: clock,
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_store_write_failures_total",
			Help: "Store writes the disk refused, by class (disk_full, read_only, io_error, other).",
		}, []string{"class"}),
		failing: map[string]time.Time{},
	}
}

// register adds the counter and the gatehouse_store_writes_failing gauge to reg.
func (h *writeHealth) register(reg prometheus.Registerer) error {
	failing := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_store_writes_failing",
		Help: "1 while store writes fail (since the last successful write), else 0.",
	}, func() float64 {
		if h.anyFail.Load() {
			return 1
		}
		return 0
	})
	return errors.Join(reg.Register(h.failures), reg.Register(failing))
}

// observe is bolt.Options.OnWrite: nil for a commit, the error for a write
// the disk refused.
func (h *writeHealth) observe(err error) {
	if err == nil && !h.anyFail.Load() {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		h.log.Info("store writes work again", "failed_classes", strings.Join(h.classes(), ","))
		clear(h.failing)
		h.anyFail.Store(false)
		return
	}
	class := storage.FailureClass(err)
	h.failures.WithLabelValues(class).Inc()
	if _, seen := h.failing[class]; !seen {
		h.failing[class] = h.clock()
		h.anyFail.Store(true)
		h.log.Error("store write failed; requests that need a write get 503 until writes work again",
			"class", class, "err", err)
	}
}

// status is the /readyz line about writes, "" while they work.
func (h *writeHealth) status() string {
	if !h.anyFail.Load() {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	var parts []string
	for _, class := range h.classes() {
		parts = append(parts, fmt.Sprintf("%s since %s", class, h.failing[class].UTC().Format(time.RFC3339)))
	}
	return "store writes failing: " + strings.Join(parts, ", ")
}

// classes are the failing classes, sorted; h.mu held.
func (h *writeHealth) classes() []string {
	out := make([]string, 0, len(h.failing))
	for class := range h.failing {
		out = append(out, class)
	}
	sort.Strings(out)
	return out
}
