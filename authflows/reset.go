package authflows

import "net/http"

// STUB: replaced by the reset flow.
func (h *Handler) forgotPage(w http.ResponseWriter, r *http.Request) { http.Error(w, "todo", 501) }
func (h *Handler) forgot(w http.ResponseWriter, r *http.Request)     { http.Error(w, "todo", 501) }
func (h *Handler) resetPage(w http.ResponseWriter, r *http.Request)  { http.Error(w, "todo", 501) }
func (h *Handler) reset(w http.ResponseWriter, r *http.Request)      { http.Error(w, "todo", 501) }
