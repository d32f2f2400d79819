package authflows

import (
	"bytes"
	"testing"

	"github.com/prometheus/common/expfmt"
)

// Account existence through metrics: the same POST /auth/forgot traffic for
// a registered address (mailed, then throttled per account) and for an
// unknown one leaves byte-identical metrics.
func TestForgotMetricsDoNotTellAccounts(t *testing.T) {
	dump := func(registered bool) string {
		e := newMailEnv(t, mailEnvConfig{})
		e.CreateUser(t, "alice@example.com", oldPassword)
		email := "nobody@example.com"
		if registered {
			email = "alice@example.com"
		}
		for range 5 { // 3 mails per account per 15 minutes, then throttled
			e.forgot(t, email)
		}
		families, err := e.Metrics.Gather()
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, mf := range families {
			if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
				t.Fatal(err)
			}
		}
		return b.String()
	}
	known, unknown := dump(true), dump(false)
	if known != unknown {
		t.Errorf("metrics differ for a registered and an unknown address:\nregistered:\n%s\nunknown:\n%s", known, unknown)
	}
}
