package oauthtest

import "net/http"

// What happens to an account after it signed in, for the tests of a
// session's later checks with the provider: its state changes at the
// provider (UpdateAccount), it is deleted (DeleteAccount), its grants are
// revoked (RevokeGrants), or the provider fails (FailNextToken, Hang).
// Every access token and refresh token answers for the account as it is
// now, not as it was when the token was issued.

// UpdateAccount changes the account of subject as edit says: what its
// tokens read from now on (email, verification, groups, memberships).
func (s *server) UpdateAccount(subject string, edit func(a *Account)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.accounts[subject]
	if !ok {
		a = Account{Subject: subject}
	}
	edit(&a)
	s.accounts[subject] = a
}

// DeleteAccount deletes the account of subject: its tokens are refused
// (401 at the user APIs, invalid_grant at a refresh).
func (s *server) DeleteAccount(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.accounts, subject)
	s.deleted[subject] = true
}

// RevokeGrants revokes every access and refresh token of subject, as a
// user who removes the app's access at the provider does.
func (s *server) RevokeGrants(subject string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t, a := range s.tokens {
		if a.Subject == subject {
			delete(s.tokens, t)
		}
	}
	for t, sub := range s.refresh {
		if sub == subject {
			delete(s.refresh, t)
		}
	}
}

// FailNextToken makes the next token request answer status (a 500: the
// provider is down) with an OAuth error body.
func (s *server) FailNextToken(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenFail = status
}

// Hang makes every request to the provider wait until release is closed
// (or the client gives up): a provider that does not answer.
func (s *server) Hang(release <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hang = release
}

// Hanging counts the requests Hang held so far.
func (s *server) Hanging() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hanging
}

// hangable is the fake's handler behind Hang.
func (s *server) hangable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		release := s.hang
		if release != nil {
			s.hanging++
		}
		s.mu.Unlock()
		if release != nil {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// tokenFailure answers the failure set with FailNextToken, once.
func (s *server) tokenFailure(w http.ResponseWriter) bool {
	s.mu.Lock()
	status := s.tokenFail
	s.tokenFail = 0
	s.mu.Unlock()
	if status != 0 {
		writeJSON(w, status, map[string]string{"error": "server_error"})
	}
	return status != 0
}

// current is the account of subject as it is now; false when deleted.
// Callers hold s.mu.
func (s *server) current(a Account) (Account, bool) {
	if s.deleted[a.Subject] {
		return Account{}, false
	}
	if now, ok := s.accounts[a.Subject]; ok {
		return now, true
	}
	return a, true
}

// issueRefresh stores a new refresh token for subject.
func (s *server) issueRefresh(subject string) string {
	t := randomString()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refresh[t] = subject
	s.secrets = append(s.secrets, t)
	return t
}

// refreshed redeems a refresh token: the account as it is now, or the
// OAuth error code.
func (s *server) refreshed(r *http.Request) (Account, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sub, ok := s.refresh[r.PostForm.Get("refresh_token")]
	if !ok {
		s.fail("token: unknown or revoked refresh token")
		return Account{}, "invalid_grant"
	}
	a, ok := s.current(Account{Subject: sub})
	if !ok {
		s.fail("token: refresh token of a deleted account")
		return Account{}, "invalid_grant"
	}
	return a, ""
}
