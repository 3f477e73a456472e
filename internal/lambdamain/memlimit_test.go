package lambdamain

import (
	"bytes"
	"log/slog"
	"runtime/debug"
	"strings"
	"testing"
)

// env is a lookup of the given variables.
func env(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestMemoryLimit(t *testing.T) {
	for _, tt := range []struct {
		name  string
		env   []string
		limit int64
		ok    bool
		err   string
	}{
		{"API function, 512 MB: 64 MiB left out", []string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512"}, 448 << 20, true, ""},
		{"worker, 1769 MB: 90%", []string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1769"}, (1769 << 20) / 10 * 9, true, ""},
		{"1 GB: 90%", []string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1024"}, (1024 << 20) / 10 * 9, true, ""},
		{"128 MB: half at least", []string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128"}, 64 << 20, true, ""},
		{"an explicit GOMEMLIMIT wins", []string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512", "GOMEMLIMIT", "300MiB"}, 0, false, ""},
		{"not a function", nil, 0, false, ""},
		{"not a size", []string{"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "lots"}, 0, false, `"lots" is not a number of MB`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			limit, ok, err := memoryLimit(env(tt.env...))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want an error naming %q", err, tt.err)
				}
				return
			}
			if err != nil || limit != tt.limit || ok != tt.ok {
				t.Fatalf("got %d (%d MiB), %v, %v; want %d, %v", limit, limit>>20, ok, err, tt.limit, tt.ok)
			}
		})
	}
}

// TestSetMemoryLimit: the runtime's limit is set and logged from the
// function's size, and left as GOMEMLIMIT made it when that is set.
func TestSetMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	var out bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&out, nil))
	setMemoryLimit(env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512"), log)
	if got := debug.SetMemoryLimit(-1); got != 448<<20 {
		t.Fatalf("limit %d, want %d", got, 448<<20)
	}
	if !strings.Contains(out.String(), `"msg":"memory limit","GOMEMLIMIT":469762048`) {
		t.Fatalf("log %q does not name the limit", out.String())
	}
	debug.SetMemoryLimit(before)
	out.Reset()
	setMemoryLimit(env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "512", "GOMEMLIMIT", "300MiB"), log)
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Fatalf("limit %d with GOMEMLIMIT set, want it left at %d", got, before)
	}
	if out.Len() != 0 {
		t.Fatalf("logged %q with GOMEMLIMIT set", out.String())
	}
}
