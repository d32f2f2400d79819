package admin

import (
	"context"
	"net/http"
	"net/url"
)

// tokenRoutes adds the API token operations to m. The answer to a create
// is the one place a token's secret travels: on the admin socket only.
func (h *Handler) tokenRoutes(m *http.ServeMux) {
	m.HandleFunc("POST /v1/tokens", func(w http.ResponseWriter, r *http.Request) {
		var req CreateTokenRequest
		if !decode(w, r, &req) {
			return
		}
		t, err := h.api.CreateToken(r.Context(), req)
		h.answer(w, r, http.StatusCreated, t, err)
	})
	m.HandleFunc("GET /v1/tokens", func(w http.ResponseWriter, r *http.Request) {
		tokens, err := h.api.ListTokens(r.Context())
		h.answer(w, r, http.StatusOK, tokens, err)
	})
	m.HandleFunc("DELETE /v1/tokens/{id}", func(w http.ResponseWriter, r *http.Request) {
		t, err := h.api.RevokeToken(r.Context(), r.PathValue("id"))
		h.answer(w, r, http.StatusOK, t, err)
	})
}

func (c *Client) CreateToken(ctx context.Context, req CreateTokenRequest) (NewToken, error) {
	var t NewToken
	return t, c.do(ctx, http.MethodPost, "/v1/tokens", req, &t)
}

func (c *Client) ListTokens(ctx context.Context) ([]Token, error) {
	var tokens []Token
	return tokens, c.do(ctx, http.MethodGet, "/v1/tokens", nil, &tokens)
}

func (c *Client) RevokeToken(ctx context.Context, id string) (Token, error) {
	var t Token
	return t, c.do(ctx, http.MethodDelete, "/v1/tokens/"+url.PathEscape(id), nil, &t)
}
