// Package config reads tilecache's configuration from the environment.
// Every variable is documented in docs/operators.md. The configuration comes in
// parts (Server, Auth, Storage, Queue, Layers, Lanes, Miss, Upstream, CDN, Edge, AWS,
// AccessLogs, CrossSite), each read through a lookup function: Load reads them all,
// Read one; both apply the defaults, validate, and report every problem at
// once.
package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Lookup returns the value of an environment variable and whether it is
// set: os.LookupEnv in programs, a map in tests.
type Lookup func(key string) (string, bool)

// Config is the configuration of `tilecache serve` and of the functions:
// every part, embedded so that each field is reached by its own name
// (cfg.Bucket, cfg.MissWait).
type Config struct {
	Server
	Auth
	Storage
	Queue
	Layers
	Lanes
	Miss
	Upstream
	CDN
	Edge
	AWS
	AccessLogs
	CrossSite
}

// Load reads every part of the configuration through lookup.
func Load(lookup Lookup) (Config, error) {
	r := &reader{lookup: lookup}
	var c Config
	for _, p := range []part{&c.Server, &c.Auth, &c.Storage, &c.Queue, &c.Layers, &c.Lanes, &c.Miss, &c.Upstream, &c.CDN, &c.Edge, &c.AWS, &c.AccessLogs, &c.CrossSite} {
		p.read(r)
	}
	if err := r.err(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// Read reads one part of the configuration (config.Read[config.Miss],
// say) through lookup.
func Read[P any, PP interface {
	*P
	part
}](lookup Lookup) (P, error) {
	r := &reader{lookup: lookup}
	var p P
	PP(&p).read(r)
	if err := r.err(); err != nil {
		var zero P
		return zero, err
	}
	return p, nil
}

// part is one part of the configuration: read fills it through r, which
// collects the problems.
type part interface{ read(r *reader) }

// reader reads variables through lookup and collects every problem.
type reader struct {
	lookup Lookup
	errs   []error
}

// err joins the problems found, if any.
func (r *reader) err() error {
	if err := errors.Join(r.errs...); err != nil {
		return fmt.Errorf("configuration: %w", err)
	}
	return nil
}

func (r *reader) fail(err error) { r.errs = append(r.errs, err) }

// str returns the variable's value without surrounding space, or def if it
// is unset or blank.
func (r *reader) str(name, def string) string {
	if v, ok := r.lookup(name); ok && strings.TrimSpace(v) != "" {
		return strings.TrimSpace(v)
	}
	return def
}

// duration returns a positive duration.
func (r *reader) duration(name, def string) time.Duration {
	v := r.str(name, def)
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		r.fail(fmt.Errorf("%s must be a positive duration such as 1s or 250ms, got %q", name, v))
	}
	return d
}

// days returns a positive duration given as a duration (2160h) or a
// whole number of days (90d).
func (r *reader) days(name, def string) time.Duration {
	v := r.str(name, def)
	if n, ok := strings.CutSuffix(v, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d > 0 && d <= 100*365 {
			return time.Duration(d) * 24 * time.Hour
		}
	} else if d, err := time.ParseDuration(v); err == nil && d > 0 {
		return d
	}
	r.fail(fmt.Errorf("%s must be a positive number of days such as 90d, or a duration such as 720h, got %q", name, v))
	return 0
}
