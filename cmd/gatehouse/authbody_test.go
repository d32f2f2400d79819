package main

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// PX6 through the whole request path: a body over the /auth/ cap gets one
// answer, 413 body_too_large, whether its length is declared (the proxy
// refuses it before the auth handler runs) or it comes chunked (the auth
// handler's read runs into the proxy's cap).
func TestAuthBodyTooLargeOneAnswer(t *testing.T) {
	up, _ := echoUpstream(t)
	g := startGatehouse(t, filepath.Join(t.TempDir(), "gatehouse.db"), "--upstream", up.URL)
	big := `{"email":"a@example.com","password":"` + strings.Repeat("x", web.MaxAuthBody) + `"}`
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big)
		if chunked {
			body = io.MultiReader(body) // no length known: sent chunked
		}
		req, err := http.NewRequest(http.MethodPost, g.URL+"/auth/login", body)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("chunked=%v: %v", chunked, err)
		}
		var p web.Problem
		err = json.NewDecoder(res.Body).Decode(&p)
		res.Body.Close()
		if res.StatusCode != http.StatusRequestEntityTooLarge || err != nil || p.Code != "body_too_large" {
			t.Errorf("chunked=%v: status %d, code %q (%v); want 413 body_too_large", chunked, res.StatusCode, p.Code, err)
		}
	}
}
