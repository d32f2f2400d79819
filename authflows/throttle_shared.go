package authflows

import (
	"context"
	"time"
)

// RateStore counts throttles in a store that several replicas share
// (storage/postgres), so that the floors hold across replicas rather than
// per process. Buckets are named; keys are the same client and account
// keys as in memory.
type RateStore interface {
	TakeToken(ctx context.Context, bucket, key string, now time.Time, burst int, period time.Duration) (bool, error)
	RefundToken(ctx context.Context, bucket, key string, now time.Time, burst int, period time.Duration) error
}

// sharedTimeout bounds one round trip of a shared limiter. When the store
// does not answer in time, the limiter decides from this process's own
// count, which still holds the floor per replica.
const sharedTimeout = 2 * time.Second

// share makes k count in rs under bucket; onError hears the store's failures.
func (k *keyedLimiter) share(rs RateStore, bucket string, period time.Duration, onError func(bucket string, err error)) {
	k.shared, k.bucket, k.period, k.onError = rs, bucket, period, onError
}

// allowShared takes a token in the shared store; ok is false when the
// store could not answer.
func (k *keyedLimiter) allowShared(key string) (allowed, ok bool) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	allowed, err := k.shared.TakeToken(ctx, k.bucket, key, k.now(), k.burst, k.period)
	if err != nil {
		k.onError(k.bucket, err)
	}
	return allowed, err == nil
}

func (k *keyedLimiter) refundShared(key string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	if err := k.shared.RefundToken(ctx, k.bucket, key, k.now(), k.burst, k.period); err != nil {
		k.onError(k.bucket, err)
	}
}

// share makes every throttle of the flows count in rs.
func (l *limits) share(rs RateStore, onError func(bucket string, err error)) {
	l.loginIP.share(rs, "login_ip", time.Minute, onError)
	l.loginFailures.share(rs, "login_failures", 15*time.Minute, onError)
	l.deviceFailures.share(rs, "login_device", 15*time.Minute, onError)
	l.forgotIP.share(rs, "forgot_ip", time.Minute, onError)
	l.forgotAccount.share(rs, "forgot_account", 15*time.Minute, onError)
	l.resetIP.share(rs, "reset_ip", time.Minute, onError)
	l.passwordIP.share(rs, "password_ip", time.Minute, onError)
	l.inviteIP.share(rs, "invite_ip", time.Minute, onError)
	l.secondFactorFailures.share(rs, "second_factor_failures", 15*time.Minute, onError)
	l.secondFactorDevice.share(rs, "second_factor_device", 15*time.Minute, onError)
}
