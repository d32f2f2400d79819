package main

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/gatehouse-auth/gatehouse/authflows/oauthtest"
)

// Three replicas on one PostgreSQL database with the OpenID Provider
// mockoidc: a back-channel logout posted to one replica ends the OP
// session's Gatehouse session on that replica at once and on the two
// others within a second, although each had it cached.
func TestThreeReplicasBackchannelLogout(t *testing.T) {
	db := pg.NewDatabase(t)
	bin := builds.Binary(t, ".")
	up, _ := echoUpstream(t)
	idp := oauthtest.RunOIDC(t, nil)
	idp.QueueUser(oauthtest.ClaimsUser{Sub: "alice", Extra: map[string]any{"email": "alice@example.com", "email_verified": true, "sid": "op-7"}})
	rs := startReplicasMail(t, bin, db, up.URL, t.TempDir(), 3, "--open-signup", "--token-key-file", writeTokenKey(t),
		"--oidc-issuer-url", idp.Issuer(), "--oidc-client-id", idp.ClientID, "--oidc-client-secret", idp.ClientSecret)

	b := newCanaryBrowser(t, rs[0].URL)
	callback, _ := b.oauth("/auth/login/oidc")
	status, _, body := b.do("GET", callback, "", "")
	b.want("oidc callback", status, http.StatusSeeOther, body)
	id := b.cookies()["gatehouse_session"]
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	serves := func(r *replicaProcess) bool {
		code, _, _ := do(t, c, "GET", r.URL+"/app", "", "", "Cookie", "gatehouse_session="+id)
		return code == http.StatusOK
	}
	for i, r := range rs {
		for range 3 { // cached on every replica
			if !serves(r) {
				t.Fatalf("replica %d refuses the new session", i)
			}
		}
	}

	now := time.Now()
	token, err := idp.Keypair.SignJWT(jwt.MapClaims{
		"iss": idp.Issuer(), "aud": idp.ClientID, "iat": now.Unix(), "exp": now.Add(2 * time.Minute).Unix(),
		"jti": "logout-1", "sid": "op-7",
		"events": map[string]any{"http://schemas.openid.net/event/backchannel-logout": map[string]any{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	code, _, answer := do(t, c, "POST", rs[1].URL+"/auth/backchannel-logout/oidc", "application/x-www-form-urlencoded",
		url.Values{"logout_token": {token}}.Encode())
	if code != http.StatusOK {
		t.Fatalf("back-channel logout: %d %s", code, answer)
	}
	if serves(rs[1]) {
		t.Fatal("the replica that took the logout still serves the session")
	}
	start := time.Now()
	for i, r := range rs {
		for serves(r) {
			if time.Since(start) > time.Second {
				t.Fatalf("replica %d still serves the session 1s after the back-channel logout", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	t.Logf("refused everywhere after %v", time.Since(start))
}
