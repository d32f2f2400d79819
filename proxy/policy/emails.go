package policy

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/gatehouse-auth/gatehouse/storage"
)

// emailSet is one loaded emails file: normalized addresses.
type emailSet = map[string]struct{}

// maxEmailsFile caps the size of an emails file (about 200,000 addresses).
const maxEmailsFile = 16 << 20

// LoadEmailsFile reads an emails file: one address per line; blank lines and
// lines starting with # are skipped, and " # ..." after an address is a
// comment; a leading byte-order mark is ignored. A line that is not a plain
// address (storage.PlainAddress) is an error naming the file and the line.
// Addresses are compared trimmed and lower-cased.
func LoadEmailsFile(path string) (map[string]struct{}, error) {
	data, err := readCapped(path)
	if err != nil {
		return nil, err
	}
	return parseEmails(path, data)
}

func parseEmails(path string, data []byte) (emailSet, error) {
	set := emailSet{}
	data = bytes.TrimPrefix(data, []byte("\ufeff")) // a byte-order mark of Windows editors
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 4096)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.IndexAny(line, " \t"); i >= 0 {
			rest := strings.TrimSpace(line[i:])
			if !strings.HasPrefix(rest, "#") {
				return nil, fmt.Errorf("%s:%d: %q is not one email address", path, n, clipLine(line))
			}
			line = line[:i]
		}
		if !storage.PlainAddress(line) {
			return nil, fmt.Errorf("%s:%d: %q is not an email address", path, n, clipLine(line))
		}
		set[strings.ToLower(line)] = struct{}{}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return set, nil
}

func readCapped(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEmailsFile+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(data) > maxEmailsFile {
		return nil, fmt.Errorf("%s: larger than %d bytes", path, maxEmailsFile)
	}
	return data, nil
}

func clipLine(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// RefreshInterval is how often Run looks at the emails file; a change
// applies within this time plus the read (the contract allows 5 s).
const RefreshInterval = time.Second

// Refresh re-reads the emails file when it changed since the last look
// (another file at the path, another modification time or size, or other
// contents while it was modified moments ago). A file that cannot be read
// or has a bad line leaves the last good list in force, logs one error per
// change (not one per look) and shows in EmailsFileStatus (AP1). A file
// that changed while it was read is left for the next look, so a torn list
// is never in force.
func (p *Policy) Refresh() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	rs := p.rules.Load()
	if p.watch == nil || rs == nil {
		return
	}
	data, err := p.watch.Look()
	defer func() { p.emailsBad.Store(p.watch.Failing() || p.emailsBroken) }()
	if err != nil {
		p.log.Error("emails file unreadable; keeping the last good list", "file", rs.emailsFile, "err", err)
		return
	}
	if data == nil {
		return // unchanged (or still unreadable, already said)
	}
	set, err := parseEmails(rs.emailsFile, data)
	if p.emailsBroken = err != nil; err != nil {
		p.log.Error("emails file not reloaded; keeping the last good list", "file", rs.emailsFile, "err", err)
		return
	}
	rs.emails.Store(&set)
	p.log.Info("emails file reloaded", "file", rs.emailsFile, "addresses", len(set))
}

// EmailsFileStatus names the emails file in force ("" for none) and
// reports whether its last change was put in force: false while a change
// that cannot be read or parsed keeps the last good list in force.
func (p *Policy) EmailsFileStatus() (file string, ok bool) {
	rs := p.current()
	if rs == nil {
		return "", true
	}
	return rs.emailsFile, !p.emailsBad.Load()
}

// Run calls Refresh every RefreshInterval until ctx ends.
func (p *Policy) Run(ctx context.Context) error {
	if p == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			p.Refresh()
		}
	}
}
