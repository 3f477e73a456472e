package lambdamain

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"strconv"

	"tilecache/internal/config"
)

// memoryHeadroom is the least of a function's memory left outside its Go
// runtime: the executable's pages (the binary is about 50 MB) and the
// sandbox's own, which the runtime's limit does not count.
const memoryHeadroom = 64 << 20

// memoryLimit returns the soft memory limit of the Go runtime for the
// function that lookup describes: 90% of its memory size
// (AWS_LAMBDA_FUNCTION_MEMORY_SIZE, in MB of 2^20 bytes), leaving at least
// memoryHeadroom out, so that the garbage collector works harder as the
// heap nears the function's memory instead of the function being killed
// past it (512 MB: 448 MiB; 1769 MB: 1,592 MiB). ok is false when
// GOMEMLIMIT is set (the runtime took it at start: it wins) or the size
// is not; a size that is not a number of MB is an error.
func memoryLimit(lookup config.Lookup) (limit int64, ok bool, err error) {
	if v, set := lookup("GOMEMLIMIT"); set && v != "" {
		return 0, false, nil
	}
	v, set := lookup("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
	if !set || v == "" {
		return 0, false, nil
	}
	mb, err := strconv.ParseInt(v, 10, 64)
	if err != nil || mb <= 0 || mb > 1<<20 {
		return 0, false, fmt.Errorf("AWS_LAMBDA_FUNCTION_MEMORY_SIZE %q is not a number of MB", v)
	}
	size := mb << 20
	limit = min(size/10*9, size-memoryHeadroom)
	return max(limit, size/2), true, nil
}

// setMemoryLimit sets the runtime's soft memory limit from the function's
// memory size (see memoryLimit) and logs it.
func setMemoryLimit(lookup config.Lookup, log *slog.Logger) {
	limit, ok, err := memoryLimit(lookup)
	switch {
	case err != nil:
		log.Warn("memory limit", "err", err)
	case ok:
		debug.SetMemoryLimit(limit)
		log.Info("memory limit", "GOMEMLIMIT", limit, "mib", limit>>20)
	}
}
