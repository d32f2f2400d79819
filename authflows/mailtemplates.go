package authflows

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	htmltemplate "html/template"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	texttemplate "text/template"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// The mails Gatehouse sends. Each has three templates, NAME.subject.tmpl
// and NAME.text.tmpl (text/template) and NAME.html.tmpl (html/template),
// embedded from mailtemplates/ and overridable one by one by files of the
// same name in Config.MailTemplates.
const (
	mailReset           = "reset"            // the reset link (RT3), rendered at delivery by PrepareMail
	mailPasswordChanged = "password_changed" // the notice after any password change (RS6)
	mailInvite          = "invite"           // the invitation link (AD2), rendered at delivery
	mailFactorChanged   = "factor_changed"   // the notice after a change to the second factor
)

//go:embed mailtemplates/*.tmpl
var mailTemplateFS embed.FS

// mailData is what a mail template can use. Link and Lifetime are set for
// the reset mail only, Time and ForgotURL for the notice.
type mailData struct {
	Site      string // the app name (--app-name; default the host of the base URL)
	Email     string // the recipient, the account's stored address
	Link      string // {base-url}/auth/reset?token=…
	Lifetime  string // how long the link works, e.g. "30 minutes"
	Time      string // when the password was changed, UTC
	ForgotURL string // {base-url}/auth/forgot
	// KeptDevice is set in the notice when the browser that made the change
	// stays signed in (a change on the account page): only the others were
	// signed out. A reset or an administrator's change signs out every one.
	KeptDevice bool
	// Change says what happened to the second factor (factor_changed),
	// e.g. "a second factor was added".
	Change string
}

// mailTemplates holds the parsed templates of every mail.
type mailTemplates struct {
	byName map[string]mailTemplate
}

type mailTemplate struct {
	subject, text *texttemplate.Template
	html          *htmltemplate.Template
}

var mailNames = []string{mailReset, mailPasswordChanged, mailInvite, mailFactorChanged}

// loadMailTemplates parses the embedded templates, each replaced by the file
// of the same name in dir when dir is set and holds one. A file in dir
// that is not one of those names is an error (a typo would otherwise go
// unnoticed), and so is a template that fails to render sample data, so a
// broken override stops the start rather than the first reset.
func loadMailTemplates(dir string) (*mailTemplates, error) {
	read := func(name string) (string, error) {
		if dir != "" {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				return string(b), nil
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("mail template: %w", err)
			}
		}
		b, err := mailTemplateFS.ReadFile("mailtemplates/" + name)
		return string(b), err
	}
	if dir != "" {
		if err := checkTemplateDir(dir); err != nil {
			return nil, err
		}
	}
	t := &mailTemplates{byName: map[string]mailTemplate{}}
	for _, name := range mailNames {
		var mt mailTemplate
		var src [3]string
		for i, part := range []string{"subject", "text", "html"} {
			var err error
			if src[i], err = read(name + "." + part + ".tmpl"); err != nil {
				return nil, err
			}
		}
		var err error
		if mt.subject, err = texttemplate.New(name + ".subject.tmpl").Option("missingkey=error").Parse(src[0]); err != nil {
			return nil, fmt.Errorf("mail template: %w", err)
		}
		if mt.text, err = texttemplate.New(name + ".text.tmpl").Option("missingkey=error").Parse(src[1]); err != nil {
			return nil, fmt.Errorf("mail template: %w", err)
		}
		if mt.html, err = htmltemplate.New(name + ".html.tmpl").Option("missingkey=error").Parse(src[2]); err != nil {
			return nil, fmt.Errorf("mail template: %w", err)
		}
		t.byName[name] = mt
		sample := mailData{Site: "gatehouse.example", Email: "user@example.com", Link: "https://gatehouse.example/auth/reset?token=x",
			Lifetime: "30 minutes", Time: "Mon, 02 Jan 2006 15:04 UTC", ForgotURL: "https://gatehouse.example/auth/forgot",
			Change: "a second factor was added"}
		if _, err := t.render(name, sample.Email, sample, time.Time{}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// checkTemplateDir refuses a missing directory and unknown template files.
func checkTemplateDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("mail templates: %w", err)
	}
	var known []string
	for _, name := range mailNames {
		for _, part := range []string{"subject", "text", "html"} {
			known = append(known, name+"."+part+".tmpl")
		}
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".tmpl") && !slices.Contains(known, e.Name()) {
			return fmt.Errorf("mail templates: unknown file %s in %s (known: %s)", e.Name(), dir, strings.Join(known, ", "))
		}
	}
	return nil
}

// render builds the named mail to the address to, created at now.
func (t *mailTemplates) render(name, to string, data mailData, now time.Time) (storage.Mail, error) {
	mt, ok := t.byName[name]
	if !ok {
		return storage.Mail{}, fmt.Errorf("mail template: no mail %q", name)
	}
	var subject, text, html bytes.Buffer
	if err := mt.subject.Execute(&subject, data); err != nil {
		return storage.Mail{}, fmt.Errorf("mail template %s subject: %w", name, err)
	}
	if err := mt.text.Execute(&text, data); err != nil {
		return storage.Mail{}, fmt.Errorf("mail template %s text: %w", name, err)
	}
	if err := mt.html.Execute(&html, data); err != nil {
		return storage.Mail{}, fmt.Errorf("mail template %s html: %w", name, err)
	}
	s := strings.TrimSpace(subject.String())
	if s == "" || strings.ContainsAny(s, "\r\n") {
		return storage.Mail{}, fmt.Errorf("mail template %s subject: must be one non-empty line", name)
	}
	return storage.Mail{To: to, Subject: s, Text: text.String(), HTML: html.String(), CreatedAt: now}, nil
}

// humanDuration writes d for people: "30 minutes", "1 hour", "1 hour 30 minutes".
func humanDuration(d time.Duration) string {
	unit := func(n int64, one string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %ss", n, one)
	}
	var parts []string
	if h := int64(d / time.Hour); h > 0 {
		if h%24 == 0 {
			parts = append(parts, unit(h/24, "day"))
		} else {
			parts = append(parts, unit(h, "hour"))
		}
	}
	if m := int64(d % time.Hour / time.Minute); m > 0 {
		parts = append(parts, unit(m, "minute"))
	}
	if len(parts) == 0 {
		return unit(max(int64(d/time.Second), 1), "second")
	}
	return strings.Join(parts, " ")
}
