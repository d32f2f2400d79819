package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"
)

// Client is the API of a running server, reached over its Unix socket.
type Client struct {
	http *http.Client
}

var _ API = (*Client)(nil)

// ErrNoServer: nothing answers on the socket (no file, or a stale one).
var ErrNoServer = errors.New("admin: no server answers on the socket")

// Dial returns a Client for the server listening on socketPath, or an
// error wrapping ErrNoServer when none answers there, or ErrUntrustedSocket
// when the socket that answers is not private to the caller (checkSocket).
func Dial(ctx context.Context, socketPath string) (*Client, error) {
	if socketPath == "" {
		return nil, ErrNoServer
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoServer, err)
	}
	_ = conn.Close()
	if err := checkSocket(socketPath, os.Geteuid()); err != nil {
		return nil, err
	}
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return d.DialContext(ctx, "unix", socketPath)
		},
		DisableCompression: true,
	}
	return &Client{http: &http.Client{Transport: transport}}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

func userPath(email, suffix string) string {
	return "/v1/users/" + url.PathEscape(email) + suffix
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://gatehouse"+path, r)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("admin socket: %w", err)
	}
	defer resp.Body.Close()
	dec := json.NewDecoder(io.LimitReader(resp.Body, 64<<20))
	if resp.StatusCode >= 300 {
		var e Error
		if err := dec.Decode(&e); err != nil || e.Code == "" {
			return fmt.Errorf("admin socket: %s", resp.Status)
		}
		if e.Code == "internal" {
			return errors.New(e.Message)
		}
		return &e
	}
	return dec.Decode(out)
}

func (c *Client) AddUser(ctx context.Context, req AddUserRequest) (User, error) {
	var u User
	return u, c.do(ctx, http.MethodPost, "/v1/users", req, &u)
}

func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	var users []User
	return users, c.do(ctx, http.MethodGet, "/v1/users", nil, &users)
}

func (c *Client) ShowUser(ctx context.Context, email string) (User, error) {
	var u User
	return u, c.do(ctx, http.MethodGet, userPath(email, ""), nil, &u)
}

func (c *Client) SetDisabled(ctx context.Context, email string, disabled bool) (Change, error) {
	action := "/enable"
	if disabled {
		action = "/disable"
	}
	var ch Change
	return ch, c.do(ctx, http.MethodPost, userPath(email, action), nil, &ch)
}

func (c *Client) DeleteUser(ctx context.Context, email string) (User, error) {
	var u User
	return u, c.do(ctx, http.MethodDelete, userPath(email, ""), nil, &u)
}

func (c *Client) SetPassword(ctx context.Context, email, password string) (Change, error) {
	var ch Change
	body := struct {
		Password string `json:"password"`
	}{password}
	return ch, c.do(ctx, http.MethodPost, userPath(email, "/password"), body, &ch)
}

func (c *Client) RevokeSessions(ctx context.Context, email string) (Change, error) {
	var ch Change
	return ch, c.do(ctx, http.MethodPost, userPath(email, "/revoke-sessions"), nil, &ch)
}

func (c *Client) Sessions(ctx context.Context, email string) ([]Session, error) {
	var s []Session
	return s, c.do(ctx, http.MethodGet, userPath(email, "/sessions"), nil, &s)
}

func (c *Client) RotateSigningKey(ctx context.Context) (KeyRotation, error) {
	var k KeyRotation
	return k, c.do(ctx, http.MethodPost, "/v1/keys/rotate", nil, &k)
}
