package main

import (
	"errors"
	"os"
	"path/filepath"
)

// startPaths remembers which of the paths a start may create (the bbolt
// file, the mail folder with the folders above it, the audit log) did not
// exist before it, so that a start that fails can remove them again: a
// failed start leaves nothing behind (issue 16). The certificate folder is
// made only once every port is bound (see tlsServing.Start).
type startPaths struct {
	files []string // created as files
	dirs  []string // created by MkdirAll: the path and each missing folder above it, deepest first
}

// newStartPaths notes the paths of cfg that do not exist yet.
func newStartPaths(cfg Config) *startPaths {
	var p startPaths
	missing := func(path string) bool {
		_, err := os.Lstat(path)
		return errors.Is(err, os.ErrNotExist)
	}
	if cfg.DB != "" && !isPostgresURL(cfg.DB) && missing(cfg.DB) {
		p.files = append(p.files, cfg.DB)
	}
	if cfg.AuditLog != "" && cfg.AuditLog != "-" && missing(cfg.AuditLog) {
		p.files = append(p.files, cfg.AuditLog)
	}
	if cfg.SMTP.Addr == "" && cfg.MailDir != "" {
		for d := filepath.Clean(cfg.MailDir); missing(d); d = filepath.Dir(d) {
			p.dirs = append(p.dirs, d)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return &p
}

// remove deletes what the failed start created. A folder is removed only
// while empty: nothing that someone else put there goes with it.
func (p *startPaths) remove() {
	for _, f := range p.files {
		_ = os.Remove(f)
	}
	for _, d := range p.dirs {
		if os.Remove(d) != nil {
			return
		}
	}
}
