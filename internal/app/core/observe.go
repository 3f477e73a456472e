package core

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"tilecache/internal/metrics"
	"tilecache/internal/tiletoken"
)

// NewLogger returns the JSON logger on stdout that every entry point uses,
// at the configured level (debug, info, warn, error).
func NewLogger(level string) *slog.Logger {
	var l slog.Level
	l.UnmarshalText([]byte(level))
	return slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{Level: l}))
}

// Each program owns a metrics registry: its exporters (Prometheus while
// `tilecache serve` runs, EMF in a function) receive what its requests,
// workers and invocations record, and nothing another program in the same
// process records. The registry travels in the context: each run's, each
// invocation's and each request's (WithMetrics).

// WithMetrics returns h with reg in each request's context; a request
// whose context carries reg already (the server's base context) is passed
// on as it is.
func WithMetrics(reg *metrics.Registry, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if metrics.FromContext(r.Context()) != reg {
			r = r.WithContext(metrics.NewContext(r.Context(), reg))
		}
		h.ServeHTTP(w, r)
	})
}

// EMF writes a function's metrics at the end of each invocation.
type EMF struct {
	emf *metrics.EMF
	out io.Writer
}

// Enable makes reg's metrics of each invocation be written to w (the
// function's log: stdout) as CloudWatch Embedded Metric Format lines when
// Flush is called, in namespace "tilecache" with the dimension Function.
func (e *EMF) Enable(reg *metrics.Registry, w io.Writer, function string) {
	e.emf = metrics.NewEMF("tilecache", map[string]string{"Function": function})
	e.out = w
	reg.Install(e.emf)
}

// Flush writes the invocation's metrics (nothing before Enable).
func (e *EMF) Flush(log *slog.Logger) {
	if e.emf == nil {
		return
	}
	if err := e.emf.Flush(e.out, time.Now()); err != nil {
		log.Warn("write metrics", "err", err)
	}
}

// TileKeys returns the keyring tile tokens are signed and checked with:
// keys (TILECACHE_TILE_TOKEN_KEYS, or the secret's, checked when read),
// or else, with none, a key made at start (its tokens do not outlive the
// process, and other processes do not take them).
func TileKeys(keys string, log *slog.Logger) (*tiletoken.Keyring, error) {
	if keys != "" {
		return tiletoken.ParseKeyring(keys)
	}
	log.Info("tile tokens signed with a key made at start: set TILECACHE_TILE_TOKEN_KEYS (or TILECACHE_TILE_TOKEN_KEYS_SECRET) for tokens that outlive the process")
	return tiletoken.NewKeyring(tiletoken.NewKey("local")) // one valid key: no error
}
