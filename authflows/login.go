package authflows

import "net/http"

// STUB: replaced by the login flow.
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) { http.Error(w, "todo", 501) }
func (h *Handler) login(w http.ResponseWriter, r *http.Request)     { http.Error(w, "todo", 501) }
func (h *Handler) logout(w http.ResponseWriter, r *http.Request)    { http.Error(w, "todo", 501) }
func (h *Handler) me(w http.ResponseWriter, r *http.Request)        { http.Error(w, "todo", 501) }
