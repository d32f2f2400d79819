package authflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"slices"

	"github.com/gatehouse-auth/gatehouse/proxy/web"
)

// Problems shared by several flows; each flow file declares its own others.
var (
	errInvalidRequest   = web.NewProblem(http.StatusBadRequest, "invalid_request", "Malformed request")
	errRateLimited      = web.NewProblem(http.StatusTooManyRequests, "rate_limited", "Too many attempts, try again later")
	errBusy             = web.NewProblem(http.StatusServiceUnavailable, "busy", "Too many sign-ins at once, try again shortly")
	errInternal         = web.NewProblem(http.StatusInternalServerError, "internal_error", "Something went wrong on our side")
	errStoreUnavailable = web.NewProblem(http.StatusServiceUnavailable, "store_unavailable", "Service temporarily unavailable")
)

// inputError is a request body that cannot be read; it maps to a problem.
type inputError struct{ problem web.Problem }

func (e inputError) Error() string { return e.problem.Code }

// readInput reads the named string fields from a JSON object or a form body.
// Each field must be absent or exactly one string (FG3: arrays, objects,
// numbers, null, and a field given twice, in a form or in JSON, are
// refused); absent fields are "". Other fields are ignored.
func readInput(r *http.Request, fields ...string) (map[string]string, error) {
	out := make(map[string]string, len(fields))
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/x-www-form-urlencoded", "multipart/form-data":
		// ParseMultipartForm would swallow ParseForm's errors (body too
		// large, bad escapes) for a urlencoded body: call each on its own.
		var err error
		if ct == "multipart/form-data" {
			err = r.ParseMultipartForm(web.MaxAuthBody)
		} else {
			err = r.ParseForm()
		}
		if err != nil {
			return nil, bodyError(err)
		}
		for _, f := range fields {
			switch v := r.PostForm[f]; len(v) {
			case 0:
			case 1:
				out[f] = v[0]
			default:
				return nil, inputError{errInvalidRequest}
			}
		}
		return out, nil
	case "application/json", "":
		dec := json.NewDecoder(r.Body)
		if t, err := dec.Token(); err != nil {
			return nil, bodyError(err)
		} else if t != json.Delim('{') {
			return nil, inputError{errInvalidRequest}
		}
		for dec.More() {
			t, err := dec.Token()
			if err != nil {
				return nil, bodyError(err)
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				return nil, bodyError(err)
			}
			key, _ := t.(string) // object keys are strings
			if !slices.Contains(fields, key) {
				continue
			}
			if _, twice := out[key]; twice {
				return nil, inputError{errInvalidRequest}
			}
			// null would unmarshal into "" without error: not a string either.
			var s string
			if bytes.Equal(v, []byte("null")) || json.Unmarshal(v, &s) != nil {
				return nil, inputError{errInvalidRequest}
			}
			out[key] = s
		}
		if _, err := dec.Token(); err != nil { // the closing brace
			return nil, bodyError(err)
		}
		if dec.More() {
			return nil, inputError{errInvalidRequest}
		}
		return out, nil
	default:
		return nil, inputError{web.NewProblem(http.StatusUnsupportedMediaType, "unsupported_media_type", "Send JSON or a form")}
	}
}

func bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return inputError{web.BodyTooLarge}
	}
	return inputError{errInvalidRequest}
}

// problemFor maps an error to the answer: input errors to their problem,
// anything else to 500 (logged by the caller).
func problemFor(err error) web.Problem {
	var in inputError
	if errors.As(err, &in) {
		return in.problem
	}
	return errInternal
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// seeOther ends a form flow with a 303 to a local path.
func seeOther(w http.ResponseWriter, r *http.Request, path string) {
	http.Redirect(w, r, path, http.StatusSeeOther)
}

// fail answers err: input problems as such, anything else as a logged 500.
func (h *core) fail(w http.ResponseWriter, r *http.Request, err error) {
	p := problemFor(err)
	if p.Status >= 500 {
		h.log.ErrorContext(r.Context(), "auth request failed", "path", r.URL.Path, "err", err)
	}
	h.problem(w, r, p)
}
