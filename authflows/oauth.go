package authflows

import "net/http"

// STUB: replaced by the OAuth flows.

// ProviderConfig is one configured OAuth provider (seed: OAuthConfig).
type ProviderConfig struct {
	Name         string // "google" or "github"
	ClientID     string
	ClientSecret string
	RedirectURL  string // must be {base-url}/auth/callback/{Name}
	AuthURL      string
	TokenURL     string
	UserinfoURL  string // google
	APIURL       string // github
}

type provider struct{ cfg ProviderConfig }

func newProviders(cfgs []ProviderConfig) (map[string]*provider, error) {
	m := map[string]*provider{}
	for _, c := range cfgs {
		m[c.Name] = &provider{cfg: c}
	}
	return m, nil
}

func (h *Handler) oauthLogin(w http.ResponseWriter, r *http.Request) { http.Error(w, "todo", 501) }
func (h *Handler) oauthLink(w http.ResponseWriter, r *http.Request)  { http.Error(w, "todo", 501) }
func (h *Handler) unlink(w http.ResponseWriter, r *http.Request)     { http.Error(w, "todo", 501) }
func (h *Handler) callback(w http.ResponseWriter, r *http.Request)   { http.Error(w, "todo", 501) }
func (h *Handler) account(w http.ResponseWriter, r *http.Request)    { http.Error(w, "todo", 501) }
