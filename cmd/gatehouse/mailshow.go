package main

import (
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// runMail is `gatehouse mail show [FILE]`: a mail file of --mail-dir
// printed decoded (headers, then the text part), so a link in it can be
// read and copied whatever its transfer encoding. Without FILE it shows
// the newest .eml file in --mail-dir.
func runMail(args []string, stdout, stderr io.Writer, getenv environ) int {
	fail := func(err error) int {
		fmt.Fprintf(stderr, "gatehouse mail: %v\n", err)
		return exitCode(err)
	}
	const usageLine = "Usage: gatehouse mail show [--mail-dir DIR] [FILE]   print a mail file decoded (default: the newest in --mail-dir)"
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, usageLine)
		return exitOK
	}
	if args[0] != "show" {
		return fail(unknownCommand("gatehouse mail", args[0], []string{"show"}))
	}
	fs := pflag.NewFlagSet("gatehouse mail show", pflag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() { fmt.Fprintf(stdout, "%s\n\nFlags:\n%s", usageLine, fs.FlagUsages()) }
	dir := fs.String("mail-dir", "mail", "folder of .eml files that Gatehouse writes without --smtp-addr")
	configFlag(fs, new(string), "the server's configuration file, for --mail-dir")
	if err := parseFlags(fs, args[1:], "gatehouse mail show"); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return exitOK
		}
		return fail(err)
	}
	if err := applyEnv(fs, getenv); err != nil {
		return fail(err)
	}
	if err := applyConfigFileTo(fs); err != nil {
		return fail(err)
	}
	if fs.NArg() > 1 {
		return fail(usageErrorf("unexpected argument %q; see gatehouse mail show --help", fs.Arg(1)))
	}
	file := fs.Arg(0)
	if file == "" {
		var err error
		if file, err = newestMail(*dir); err != nil {
			return fail(err)
		}
	}
	if err := showMail(stdout, file); err != nil {
		return fail(err)
	}
	return exitOK
}

// newestMail is the last .eml file of dir by name: Gatehouse names them by
// creation time.
func newestMail(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.eml"))
	if err != nil {
		return "", err
	}
	if len(files) == 0 {
		return "", fmt.Errorf("no .eml file in %s", dir)
	}
	return slices.Max(files), nil
}

// showMail prints the headers a reader wants and the text part (else the
// HTML part) of the message in file, decoded.
func showMail(w io.Writer, file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	msg, err := mail.ReadMessage(f)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	var dec mime.WordDecoder
	fmt.Fprintf(w, "File: %s\n", file)
	for _, h := range []string{"Date", "From", "To", "Subject"} {
		v, err := dec.DecodeHeader(msg.Header.Get(h))
		if err != nil {
			v = msg.Header.Get(h)
		}
		fmt.Fprintf(w, "%s: %s\n", h, v)
	}
	fmt.Fprintln(w)
	mediaType, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || !strings.HasPrefix(mediaType, "multipart/") {
		_, err = io.Copy(w, msg.Body)
		return err
	}
	var html string
	// multipart.Reader undoes quoted-printable by itself.
	parts := multipart.NewReader(msg.Body, params["boundary"])
	for {
		p, err := parts.NextPart()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		body, err := io.ReadAll(p)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		text := strings.ReplaceAll(string(body), "\r\n", "\n")
		switch t, _, _ := mime.ParseMediaType(p.Header.Get("Content-Type")); t {
		case "text/plain":
			_, err := io.WriteString(w, text)
			return err
		case "text/html":
			html = text
		}
	}
	_, err = io.WriteString(w, html)
	return err
}
