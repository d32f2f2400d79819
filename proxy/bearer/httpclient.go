package bearer

import (
	"net/http"

	"github.com/gatehouse-auth/gatehouse/proxy/idpclient"
)

// NewHTTPClient returns the client of the calls to identity providers
// (discovery, key sets): proxy/idpclient's, which the sign-in flows use
// too, bounded in time and size and following redirects only within the
// same origin, so the keys never come from a host, or over a scheme, that
// the configuration did not name.
func NewHTTPClient() *http.Client { return idpclient.New() }
