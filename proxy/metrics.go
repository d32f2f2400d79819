package proxy

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the proxy's Prometheus series. Outcomes are resolved once,
// so counting a request does not look up labels.
type metrics struct {
	forwarded, public, unauthenticated, redirected, refused, failed prometheus.Counter
	lookup                                                          prometheus.Observer
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_proxy_requests_total",
		Help: "Requests outside /auth/ by outcome: forwarded, public, unauthenticated (401), redirected (to sign-in), refused (403 by the access policy), error (store or upstream failure).",
	}, []string{"outcome"})
	lookup := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gatehouse_session_lookup_seconds",
		Help:    "Time to read a session from the store.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 4, 9), // 10µs … 0.66s
	})
	if reg != nil {
		for _, c := range []prometheus.Collector{requests, lookup} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("proxy: registering metrics: %w", err)
			}
		}
	}
	return &metrics{
		forwarded:       requests.WithLabelValues("forwarded"),
		public:          requests.WithLabelValues("public"),
		unauthenticated: requests.WithLabelValues("unauthenticated"),
		redirected:      requests.WithLabelValues("redirected"),
		refused:         requests.WithLabelValues("refused"),
		failed:          requests.WithLabelValues("error"),
		lookup:          lookup,
	}, nil
}
