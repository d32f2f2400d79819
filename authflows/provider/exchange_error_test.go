package provider

import (
	"errors"
	"net/http"
	"testing"

	"golang.org/x/oauth2"
)

// The token endpoint's refusals of Gatehouse's own client credentials, in
// each provider's spelling, are told apart from other failed exchanges.
func TestExchangeErrorClientRejected(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		rejected bool
	}{
		{"Google invalid_client", &oauth2.RetrieveError{ErrorCode: "invalid_client", Response: &http.Response{StatusCode: 401}}, true},
		{"GitHub incorrect_client_credentials", &oauth2.RetrieveError{ErrorCode: "incorrect_client_credentials", Response: &http.Response{StatusCode: 200}}, true},
		{"unauthorized_client", &oauth2.RetrieveError{ErrorCode: "unauthorized_client"}, true},
		{"bare 401", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 401}}, true},
		{"invalid_grant", &oauth2.RetrieveError{ErrorCode: "invalid_grant", Response: &http.Response{StatusCode: 400}}, false},
		{"bare 500", &oauth2.RetrieveError{Response: &http.Response{StatusCode: 500}}, false},
		{"other", errors.New("connection reset"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := exchangeError(tc.err)
			if got := errors.Is(err, ErrClientRejected); got != tc.rejected {
				t.Errorf("%v: client rejected = %v, want %v", err, got, tc.rejected)
			}
			if !errors.Is(err, ErrCall) {
				t.Errorf("%v does not wrap ErrCall", err)
			}
		})
	}
}
