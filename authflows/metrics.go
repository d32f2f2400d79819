package authflows

import "github.com/prometheus/client_golang/prometheus"

// metrics are the counters of the flows, registered on Config.Registerer.
type metrics struct {
	logins      *prometheus.CounterVec // result: ok, failed, throttled, busy, error
	forgot      *prometheus.CounterVec // result: accepted (mailed, unknown or account throttled: one outcome), throttled (client IP), dropped
	resets      *prometheus.CounterVec // result: ok, invalid_token, weak_password, password_mismatch, busy, invalid_request, throttled
	oauth       *prometheus.CounterVec // provider, result: login, user_created, linked, unlinked, state_failed, refused, error, throttled
	revocations prometheus.Counter     // sessions revoked by resets
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		logins: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_logins_total", Help: "Password sign-in attempts by result.",
		}, []string{"result"}),
		forgot: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_forgot_requests_total", Help: "Password reset requests by result: accepted (whether or not the address has an account), throttled (per client IP), dropped (too many in flight).",
		}, []string{"result"}),
		resets: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_password_resets_total", Help: "Password reset completions by result.",
		}, []string{"result"}),
		oauth: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_oauth_events_total", Help: "OAuth sign-in and linking events by provider and result.",
		}, []string{"provider", "result"}),
		revocations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_sessions_revoked_total", Help: "Sessions deleted by password resets.",
		}),
	}
	for _, c := range []prometheus.Collector{m.logins, m.forgot, m.resets, m.oauth, m.revocations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	// Start every known series at zero so dashboards see them before the first event.
	for _, r := range []string{"ok", "failed", "throttled", "busy"} {
		m.logins.WithLabelValues(r)
	}
	for _, r := range []string{"accepted", "throttled"} {
		m.forgot.WithLabelValues(r)
	}
	for _, r := range []string{"ok", "invalid_token", "weak_password", "throttled"} {
		m.resets.WithLabelValues(r)
	}
	return m, nil
}
