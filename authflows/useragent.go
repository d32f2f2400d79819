package authflows

import (
	"strings"
)

// The account page's description of a session's browser: a short label
// ("Firefox on Linux") read from the User-Agent header the browser sent at
// sign-in, and the header itself, neutralized, for a tooltip. The header is
// any text the user's browser (or anyone holding the session) chose: it is
// only matched against fixed substrings, never interpreted otherwise, and
// html/template escapes both.

// uaBrowsers are the browsers told apart, in the order they are tested:
// each token first in the User-Agent of its browser that also names the
// ones below (Edge and Opera say Chrome, Chrome says Safari).
var uaBrowsers = []struct{ token, name string }{
	{"Edg/", "Edge"}, {"EdgA/", "Edge"}, {"EdgiOS/", "Edge"},
	{"OPR/", "Opera"}, {"Opera", "Opera"},
	{"SamsungBrowser/", "Samsung Internet"},
	{"Firefox/", "Firefox"}, {"FxiOS/", "Firefox"},
	{"CriOS/", "Chrome"}, {"Chrome/", "Chrome"}, {"Chromium/", "Chromium"},
	{"Version/", "Safari"}, // Safari's own version token; Chrome's UA has none
	{"curl/", "curl"}, {"Wget/", "Wget"},
}

// uaSystems are the operating systems told apart, in test order (an
// iPhone's says "like Mac OS X", Android's says Linux).
var uaSystems = []struct{ token, name string }{
	{"Windows", "Windows"},
	{"iPhone", "iOS"}, {"iPod", "iOS"}, {"iPad", "iPadOS"},
	{"Android", "Android"},
	{"CrOS", "ChromeOS"},
	{"Macintosh", "macOS"}, {"Mac OS X", "macOS"},
	{"Linux", "Linux"},
}

// browserLabel is "Browser on System", either alone, or "Unknown browser".
func browserLabel(ua string) string {
	browser, system := "", ""
	for _, b := range uaBrowsers {
		if strings.Contains(ua, b.token) {
			browser = b.name
			break
		}
	}
	for _, s := range uaSystems {
		if strings.Contains(ua, s.token) {
			system = s.name
			break
		}
	}
	switch {
	case browser != "" && system != "":
		return browser + " on " + system
	case browser != "":
		return browser
	case system != "":
		return "Browser on " + system
	}
	return "Unknown browser"
}

// displayUserAgent is ua with its control characters (C0, DEL, C1) and
// bidirectional marks, embeddings, overrides and isolates turned into
// spaces: shown on the page, they could reorder or hide what it says.
func displayUserAgent(ua string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r < 0x20, r >= 0x7f && r <= 0x9f,
			r == 0x061c, r == 0x200e, r == 0x200f,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			return ' '
		}
		return r
	}, ua)
}
