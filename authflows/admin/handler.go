package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// maxRequestBody caps an admin request body.
const maxRequestBody = 16 << 10

// Handler serves an API as HTTP+JSON under /v1/. It is meant for the Unix
// socket only: it checks no credentials, the socket's file mode does (AD1).
type Handler struct {
	api API
	log *slog.Logger
	mux *http.ServeMux
}

// NewHandler returns the HTTP face of api; failures are logged on logger.
func NewHandler(api API, logger *slog.Logger) *Handler {
	h := &Handler{api: api, log: logger}
	h.mux = h.routes()
	return h
}

// routes of the admin API; users are named by email in the path.
func (h *Handler) routes() *http.ServeMux {
	m := http.NewServeMux()
	m.HandleFunc("POST /v1/users", func(w http.ResponseWriter, r *http.Request) {
		var req AddUserRequest
		if !decode(w, r, &req) {
			return
		}
		u, err := h.api.AddUser(r.Context(), req)
		h.answer(w, r, http.StatusCreated, u, err)
	})
	m.HandleFunc("GET /v1/users", func(w http.ResponseWriter, r *http.Request) {
		users, err := h.api.ListUsers(r.Context())
		h.answer(w, r, http.StatusOK, users, err)
	})
	m.HandleFunc("GET /v1/users/{email}", func(w http.ResponseWriter, r *http.Request) {
		u, err := h.api.ShowUser(r.Context(), r.PathValue("email"))
		h.answer(w, r, http.StatusOK, u, err)
	})
	m.HandleFunc("DELETE /v1/users/{email}", func(w http.ResponseWriter, r *http.Request) {
		u, err := h.api.DeleteUser(r.Context(), r.PathValue("email"))
		h.answer(w, r, http.StatusOK, u, err)
	})
	m.HandleFunc("POST /v1/users/{email}/disable", func(w http.ResponseWriter, r *http.Request) {
		c, err := h.api.SetDisabled(r.Context(), r.PathValue("email"), true)
		h.answer(w, r, http.StatusOK, c, err)
	})
	m.HandleFunc("POST /v1/users/{email}/enable", func(w http.ResponseWriter, r *http.Request) {
		c, err := h.api.SetDisabled(r.Context(), r.PathValue("email"), false)
		h.answer(w, r, http.StatusOK, c, err)
	})
	m.HandleFunc("POST /v1/users/{email}/password", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Password string `json:"password"`
		}
		if !decode(w, r, &req) {
			return
		}
		c, err := h.api.SetPassword(r.Context(), r.PathValue("email"), req.Password)
		h.answer(w, r, http.StatusOK, c, err)
	})
	m.HandleFunc("POST /v1/users/{email}/revoke-sessions", func(w http.ResponseWriter, r *http.Request) {
		c, err := h.api.RevokeSessions(r.Context(), r.PathValue("email"))
		h.answer(w, r, http.StatusOK, c, err)
	})
	m.HandleFunc("GET /v1/users/{email}/sessions", func(w http.ResponseWriter, r *http.Request) {
		s, err := h.api.Sessions(r.Context(), r.PathValue("email"))
		h.answer(w, r, http.StatusOK, s, err)
	})
	m.HandleFunc("POST /v1/keys/rotate", func(w http.ResponseWriter, r *http.Request) {
		k, err := h.api.RotateSigningKey(r.Context())
		h.answer(w, r, http.StatusOK, k, err)
	})
	h.tokenRoutes(m)
	h.secondFactorRoutes(m)
	return m
}

// ServeHTTP answers one admin request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// decode reads the body, one JSON object, into v (a pointer to a struct
// with json tags); anything ambiguous is 400 and v is not used.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err == nil {
		err = checkMembers(body, v)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err == nil {
		err = dec.Decode(v)
	}
	if err == nil {
		// Nothing may follow the one object: "{...}{...}" is ambiguous.
		var extra json.RawMessage
		if dec.Decode(&extra) != io.EOF {
			err = errors.New("one JSON object expected, more follows")
		}
	}
	if err != nil {
		writeJSON(w, http.StatusBadRequest, &Error{Code: CodeInvalidRequest, Message: "malformed request: " + err.Error()})
		return false
	}
	return true
}

// checkMembers refuses an object that names a member twice, or in another
// spelling than its field's json name: encoding/json would keep the last
// one and match names whatever their case, so that a reader of the first
// "email" (a log, an approval step) would see another user than the one
// made, and `"invite":true,"Invite":false` would flip the request. The
// same rule as the /auth/ forms (FG3).
func checkMembers(body []byte, v any) error {
	names := map[string]bool{}
	t := reflect.TypeOf(v).Elem()
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		names[name] = true
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil {
		return err
	} else if tok != json.Delim('{') {
		return errors.New("a JSON object expected")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		switch {
		case !names[key]:
			return fmt.Errorf("unknown member %q", key)
		case seen[key]:
			return fmt.Errorf("member %q given twice", key)
		}
		seen[key] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return err
		}
	}
	return nil
}

// answer writes v, or err as a problem object: an *Error with its code and
// message, anything else as 500 saying what failed (the disk is full, the
// database is unavailable) but not how (paths, SQL: they are logged).
func (h *Handler) answer(w http.ResponseWriter, r *http.Request, status int, v any, err error) {
	var refusal *Error
	switch {
	case err == nil:
		writeJSON(w, status, v)
	case errors.As(err, &refusal):
		writeJSON(w, statusOf(refusal.Code), refusal)
	default:
		if h.log != nil {
			h.log.ErrorContext(r.Context(), "admin request failed", "path", r.URL.Path, "err", err)
		}
		writeJSON(w, http.StatusInternalServerError, &Error{Code: "internal", Message: failureMessage(err) + " (see the server log)"})
	}
}

// failureMessage says what failed, in the terms of storage.FailureClass.
func failureMessage(err error) string {
	switch storage.FailureClass(err) {
	case storage.FailureDiskFull:
		return "the database could not be written: no space left on device"
	case storage.FailureReadOnly:
		return "the database could not be written: read-only, or not writable by the server"
	case storage.FailureIO:
		return "the database could not be read or written: I/O error"
	case storage.FailureUnavailable:
		return "the database is unavailable"
	}
	return "internal error"
}

func statusOf(code string) int {
	switch code {
	case CodeNotFound:
		return http.StatusNotFound
	case CodeEmailTaken:
		return http.StatusConflict
	case CodeWeakPassword, CodeInvalidRequest:
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	if _, ok := v.(*Error); ok {
		w.Header().Set("Content-Type", "application/problem+json")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
