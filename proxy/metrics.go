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
	// duration is resolved for every outcome and status class up front.
	duration [numOutcomes][len(statusClasses)]prometheus.Observer
	inFlight prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	requests := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_proxy_requests_total",
		Help: "Requests outside /auth/ by outcome: forwarded, public, unauthenticated (401), redirected (to sign-in), refused (403: the access policy or the route), error (store or upstream failure).",
	}, []string{"outcome"})
	lookup := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "gatehouse_session_lookup_seconds",
		Help:    "Time to read a session from the store.",
		Buckets: prometheus.ExponentialBuckets(10e-6, 4, 9), // 9 buckets from 10e-6 s, each 4 times the last
	})
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "gatehouse_http_request_duration_seconds",
		Help:    "Time to answer a request (proxied or under /auth/), by outcome (forwarded, public, unauthenticated, redirected, error, auth) and status class.",
		Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"outcome", "code"})
	inFlight := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gatehouse_http_requests_in_flight",
		Help: "Requests being answered right now.",
	})
	if reg != nil {
		for _, c := range []prometheus.Collector{requests, lookup, duration, inFlight} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("proxy: registering metrics: %w", err)
			}
		}
	}
	m := &metrics{
		forwarded:       requests.WithLabelValues("forwarded"),
		public:          requests.WithLabelValues("public"),
		unauthenticated: requests.WithLabelValues("unauthenticated"),
		redirected:      requests.WithLabelValues("redirected"),
		refused:         requests.WithLabelValues("refused"),
		failed:          requests.WithLabelValues("error"),
		lookup:          lookup,
		inFlight:        inFlight,
	}
	for o := range numOutcomes {
		for c, class := range statusClasses {
			m.duration[o][c] = duration.WithLabelValues(outcomeNames[o], class)
		}
	}
	return m, nil
}
