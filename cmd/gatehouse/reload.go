package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/gatehouse-auth/gatehouse/proxy/filewatch"
	"github.com/gatehouse-auth/gatehouse/proxy/policy"
	"github.com/gatehouse-auth/gatehouse/proxy/route"
)

// reloadableKeys are the configuration file's keys a reload puts in force:
// the route rules and the access policy's own rules. Every other key is
// read at start only (a listener, a provider, a secret: changing them
// safely means starting again); a reload that finds one changed logs that
// it needs a restart. --github-org, --github-team and
// --google-hosted-domain are among those: they decide what a sign-in asks
// the provider for.
var reloadableKeys = []string{"routes", "public-path", "allow-email-domain", "allow-emails-file", "allow-group"}

// configRefreshInterval is how often the configuration file is looked at;
// a change applies within three looks (seen, read again the same to be
// sure it is not a write under way, and a look that fell in the write
// itself), well within the 5 s the README promises.
const configRefreshInterval = time.Second

// reloader puts a changed configuration file in force while running: on
// SIGHUP (Kick) and when the file changes (Run looks every
// configRefreshInterval). It parses the new file with the start's command
// line and environment, as a start would, and then publishes the new route
// table and access policy; a file that fails changes nothing.
type reloader struct {
	path string
	// parse makes a Config from the file's contents with the start's
	// command line and environment.
	parse func(data []byte) (Config, error)
	watch *filewatch.Watch
	start []setting // the settings in force since the start
	// startPolicy are the access rules of the start: their provider keys
	// (github-org, github-team, google-hosted-domain) stay in force.
	startPolicy policy.Rules
	routes      *route.Live
	policy      *policy.Policy
	log         *slog.Logger
	now         func() time.Time
	kick        chan struct{}

	mu     sync.Mutex // serializes look; guards broken
	broken bool       // the contents last read failed

	failing  atomic.Bool           // the last change is not in force
	failure  atomic.Pointer[error] // why, for /readyz
	loadedAt atomic.Int64          // Unix time the configuration in force was read
}

// newReloader watches the file of cfg (made by parseServe) from where the
// start read it.
func newReloader(cfg Config, routes *route.Live, pol *policy.Policy, log *slog.Logger, now func() time.Time) *reloader {
	src := cfg.source
	r := &reloader{
		path: cfg.ConfigFile,
		parse: func(data []byte) (Config, error) {
			p := serveParse{command: "gatehouse", help: usage, read: func(string) ([]byte, os.FileInfo, error) { return data, nil, nil }}
			return p.parse(src.args, src.env, io.Discard)
		},
		watch:       filewatch.New(cfg.ConfigFile, func(path string) ([]byte, error) { data, _, err := readConfigFile(path); return data, err }, now),
		start:       src.settings,
		startPolicy: cfg.Policy,
		routes:      routes,
		policy:      pol,
		log:         log,
		now:         now,
		kick:        make(chan struct{}, 1),
	}
	r.watch.Prime(src.info, src.data)
	r.watch.Settle() // a file caught mid-write is never put in force
	r.loadedAt.Store(now().Unix())
	return r
}

// Kick asks for a reload now, as SIGHUP does: the file is read and applied
// even when it looks unchanged.
func (r *reloader) Kick() {
	select {
	case r.kick <- struct{}{}:
	default: // one is pending already
	}
}

// Run looks at the file every configRefreshInterval, and at once when
// kicked, until ctx ends.
func (r *reloader) Run(ctx context.Context) error {
	t := time.NewTicker(configRefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.look(false)
		case <-r.kick:
			r.look(true)
		}
	}
}

// look reads the file when it changed (or when forced) and applies it.
func (r *reloader) look(force bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if force {
		r.watch.Force()
	}
	data, err := r.watch.Look()
	switch {
	case err != nil:
		r.fail(err)
	case data != nil:
		if err := r.apply(data); err != nil {
			r.broken = true
			r.fail(err)
		} else {
			r.broken = false
		}
	}
	if !r.watch.Failing() && !r.broken {
		r.failing.Store(false)
	}
}

// apply parses data as a start would and publishes the routes and the
// access policy; it changes nothing when it fails.
func (r *reloader) apply(data []byte) error {
	if len(bytes.TrimSpace(data)) == 0 {
		// Valid YAML, but it would drop every rule and the access policy:
		// far more likely a write under way or a failed template than
		// what was meant. "routes: []" says it.
		return fmt.Errorf("%s: the file is empty; the last good configuration stays (write \"routes: []\" to clear the rules)", r.path)
	}
	cfg, err := r.parse(data)
	if err != nil {
		return err
	}
	table, err := route.NewTable(cfg.PublicPaths, cfg.Routes)
	if err != nil {
		return err
	}
	rules := cfg.Policy // the reloadable keys; the providers' as at the start
	rules.GitHubOrgs, rules.GitHubTeams, rules.GoogleHostedDomains = r.startPolicy.GitHubOrgs, r.startPolicy.GitHubTeams, r.startPolicy.GoogleHostedDomains
	if err := r.policy.Update(rules); err != nil {
		return fmt.Errorf("%s: access policy: %w", r.path, err)
	}
	r.routes.Store(table)
	r.loadedAt.Store(r.now().Unix())
	r.failing.Store(false)
	r.failure.Store(nil)
	r.log.Info("configuration file reloaded", "file", r.path, "routes", len(table.Rules()))
	if changed := restartKeys(r.start, cfg.source.settings); len(changed) > 0 {
		r.log.Warn("configuration file: changed keys need a restart; not applied", "file", r.path, "keys", changed)
	}
	return nil
}

// fail logs a reload that changed nothing and shows it in /readyz and the
// gauge until a good one.
func (r *reloader) fail(err error) {
	r.failing.Store(true)
	r.failure.Store(&err)
	r.log.Error("configuration file not reloaded; the last good configuration stays in force", "err", err)
}

// status is the /readyz note about the configuration file, "" while the
// last change is in force.
func (r *reloader) status() string {
	if r == nil || !r.failing.Load() {
		return ""
	}
	why := "see the log"
	if err := r.failure.Load(); err != nil {
		why = (*err).Error()
	}
	return fmt.Sprintf("configuration file not reloaded (%s); the last good configuration is in force", why)
}

// register adds the reload gauges to reg.
func (r *reloader) register(reg prometheus.Registerer) error {
	success := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_config_reload_success",
		Help: "1 when the configuration file's last change is in force, 0 while a change that failed validation leaves the last good one in force.",
	}, func() float64 {
		if r.failing.Load() {
			return 0
		}
		return 1
	})
	loaded := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "gatehouse_config_last_reload_timestamp_seconds",
		Help: "Unix time at which the configuration in force was read from the file (the start, or the last successful reload).",
	}, func() float64 { return float64(r.loadedAt.Load()) })
	return errors.Join(reg.Register(success), reg.Register(loaded))
}

// restartKeys names the settings that differ between was and now, the
// reloadable keys aside.
func restartKeys(was, now []setting) []string {
	before := map[string]string{}
	for _, s := range was {
		before[s.name] = s.value
	}
	var changed []string
	for _, s := range now {
		if !slices.Contains(reloadableKeys, s.name) && before[s.name] != s.value {
			changed = append(changed, s.name)
		}
	}
	return changed
}
