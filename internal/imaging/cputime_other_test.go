//go:build !unix

package imaging

import "time"

// cpuTime is not measured here: the cpu-ns/op metric is 0.
func cpuTime() time.Duration { return 0 }
