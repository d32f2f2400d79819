package main

import (
	"strings"
	"testing"
)

// In a browser set to dark mode the sign-in pages are dark and the demo
// app was a white page: it declares both color schemes and has a dark
// style of its own.
func TestDemoPageHasADarkStyle(t *testing.T) {
	for _, want := range []string{`<meta name="color-scheme" content="light dark">`, "@media (prefers-color-scheme: dark)"} {
		if !strings.Contains(pageHTML, want) {
			t.Errorf("the demo page lacks %q", want)
		}
	}
}
