package bearer

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Limits of the calls to identity providers (discovery, key sets).
const (
	// MaxProviderAnswer bounds the body of one answer.
	MaxProviderAnswer = 1 << 20
	// ProviderTimeout bounds one call.
	ProviderTimeout = 10 * time.Second
)

// NewHTTPClient returns the client of the calls to identity providers:
// bounded in time (ProviderTimeout) and in what it reads
// (MaxProviderAnswer a body), following a redirect only to the same origin,
// so the keys never come from a host, or over a scheme, that the
// configuration did not name. (The sign-in flows hold the same limits for
// their providers.)
func NewHTTPClient() *http.Client {
	return &http.Client{
		Timeout:   ProviderTimeout,
		Transport: cappedTransport{http.DefaultTransport},
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) >= 10 || !sameOrigin(next.URL, via[0].URL) {
				return errors.New("redirect to another origin")
			}
			return nil
		},
	}
}

func sameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// errAnswerTooLarge ends the reading of an answer longer than MaxProviderAnswer.
var errAnswerTooLarge = errors.New("provider answer larger than 1 MiB")

// cappedTransport gives every answer a body that fails past MaxProviderAnswer bytes.
type cappedTransport struct{ base http.RoundTripper }

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxProviderAnswer}
	}
	return resp, err
}

type cappedBody struct {
	io.ReadCloser
	left int64
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n = int(b.left)
		b.left = 0
		return n, errAnswerTooLarge
	}
	b.left -= int64(n)
	return n, err
}
