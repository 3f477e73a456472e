//go:build unix

package imaging

import (
	"syscall"
	"time"
)

// cpuTime is the CPU time (user and system, all threads: the garbage
// collector's too) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
