package password

import (
	"net/url"
	"strings"

	"github.com/trustelem/zxcvbn"
	"github.com/trustelem/zxcvbn/match"
)

// Password strength (PW1): zxcvbn (Dropbox's estimator, trustelem's Go port)
// estimates how many guesses a cracker needs, knowing the common passwords,
// words and names of its frequency lists, keyboard walks, repeats,
// sequences, dates, l33t spellings, and the user's own context: the email
// address and its parts, and the app's name.

// minGuesses is the fewest guesses zxcvbn may estimate for an accepted
// password: 10^9, between its scores 3 ("safely unguessable", 10^8) and 4
// (10^10). At 10^8 sharp, passwords made of the email's pieces and a year
// still pass; at 10^10 a long lower-case phrase would not.
const minGuesses = 1e9

// strengthPrefix is how many code points zxcvbn looks at. Its matching is
// superlinear in the length; a password whose first 100 code points are
// strong is strong, and Dropbox's own library cuts at 100 likewise.
const strengthPrefix = 100

// userInputs is the context zxcvbn matches the password against: the email,
// its local part and the labels of its domain, and each app name given with
// its labels. Short pieces are left out: they would match anything.
func userInputs(email string, appNames []string) []string {
	var inputs []string
	add := func(s string) {
		s = strings.ToLower(strings.TrimSpace(s))
		if len([]rune(s)) >= 3 {
			inputs = append(inputs, s)
		}
	}
	email = strings.TrimSpace(email)
	add(email)
	local, domain, _ := strings.Cut(email, "@")
	add(local)
	add(strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r == '+' {
			return -1
		}
		return r
	}, local))
	for _, part := range strings.FieldsFunc(local, func(r rune) bool { return r == '.' || r == '_' || r == '-' || r == '+' }) {
		add(part)
	}
	add(domain)
	for _, label := range strings.Split(domain, ".") {
		add(label)
	}
	for _, name := range appNames {
		add(name)
		for _, part := range strings.FieldsFunc(name, func(r rune) bool { return r == '.' || r == ' ' || r == '-' }) {
			add(part)
		}
	}
	return inputs
}

// weakReason returns why password is too easy to guess, or "" when it is
// strong enough. password is NFKC-normalized.
func weakReason(password, email string, appNames []string) string {
	if strings.TrimSpace(password) == "" {
		return "A password made only of spaces is easy to guess; choose another."
	}
	if oneCharacter(password) {
		return "This password is easy to guess: it repeats one character. Choose a longer or less predictable one, such as a few unrelated words."
	}
	if r := []rune(password); len(r) > strengthPrefix {
		password = string(r[:strengthPrefix])
	}
	result := zxcvbn.PasswordStrength(password, userInputs(email, appNames))
	if result.Guesses >= minGuesses {
		return ""
	}
	return "This password is easy to guess: " + weakPart(result.Sequence) + " Choose a longer or less predictable one, such as a few unrelated words."
}

// oneCharacter reports whether password repeats a single code point
// (zxcvbn sees repeats of ASCII only).
func oneCharacter(password string) bool {
	var first rune = -1
	for _, r := range password {
		if first == -1 {
			first = r
		} else if r != first {
			return false
		}
	}
	return true
}

// weakPart names the pattern that covers most of the password.
func weakPart(sequence []*match.Match) string {
	var widest *match.Match
	for _, m := range sequence {
		if m.Pattern == "bruteforce" {
			continue
		}
		if widest == nil || m.J-m.I > widest.J-widest.I {
			widest = m
		}
	}
	if widest == nil {
		return "it is too short for its kind of characters."
	}
	switch widest.Pattern {
	case "dictionary":
		switch widest.DictionaryName {
		case "user_inputs":
			return "it is built from your email address or the name of this site."
		case "passwords":
			return "it is built from a commonly used password."
		case "english_wikipedia", "us_tv_and_film":
			return "it is built from a common word."
		default:
			return "it is built from a common name."
		}
	case "repeat":
		return "it repeats the same characters."
	case "sequence":
		return "it is a sequence such as abcd or 1234."
	case "spatial":
		return "it is a pattern of neighbouring keys."
	case "date":
		return "it is a date."
	case "regex":
		return "it is a recent year."
	}
	return "it follows a common pattern."
}

// AppNames are the app's names a new password is judged against (PW1):
// --app-name and the host of --base-url, for every place that sets a
// password (the pages, and the admin API's users add and set-password).
func AppNames(appName string, baseURL *url.URL) []string {
	host := baseURL.Hostname()
	if name := strings.TrimSpace(appName); name != "" && !strings.EqualFold(name, host) && !strings.EqualFold(name, baseURL.Host) {
		return []string{name, host}
	}
	return []string{host}
}
