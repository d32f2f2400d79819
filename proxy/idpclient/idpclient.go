// Package idpclient owns the HTTP client of every call Gatehouse makes to
// an identity provider: the sign-in flows' discovery, key sets, token
// exchanges and user APIs (authflows/provider), and the bearer JWTs'
// discovery and key sets (proxy/bearer). A call is bounded in time
// (Timeout) and in what it reads (MaxAnswer a body, whatever reads it:
// go-oidc reads whole), and follows a redirect only to the same origin, so
// that a client secret, a code, a PKCE verifier or the keys never travel to
// a host, or over a scheme, that the configuration did not name (ID1).
//
// Dependencies: idpclient imports no package of Gatehouse. authflows/provider
// and proxy/bearer call it.
package idpclient

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	// MaxAnswer bounds the body of one answer.
	MaxAnswer = 1 << 20
	// Timeout bounds one call.
	Timeout = 10 * time.Second
)

// ErrAnswerTooLarge ends the reading of an answer longer than MaxAnswer.
var ErrAnswerTooLarge = errors.New("provider answer larger than 1 MiB")

// New returns a client of the calls to identity providers.
func New() *http.Client {
	return &http.Client{
		Timeout:   Timeout,
		Transport: cappedTransport{http.DefaultTransport},
		CheckRedirect: func(next *http.Request, via []*http.Request) error {
			if len(via) >= 10 || !SameOrigin(next.URL, via[0].URL) {
				return errors.New("redirect to another origin")
			}
			return nil
		},
	}
}

// SameOrigin reports whether a and b have the same scheme and host (with
// its port), compared without case.
func SameOrigin(a, b *url.URL) bool {
	return strings.EqualFold(a.Scheme, b.Scheme) && strings.EqualFold(a.Host, b.Host)
}

// cappedTransport gives every answer a body that fails past MaxAnswer bytes.
type cappedTransport struct{ base http.RoundTripper }

func (t cappedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if err == nil {
		resp.Body = &cappedBody{ReadCloser: resp.Body, left: MaxAnswer}
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
		return n, ErrAnswerTooLarge
	}
	b.left -= int64(n)
	return n, err
}
