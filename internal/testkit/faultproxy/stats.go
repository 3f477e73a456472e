package faultproxy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// FaultCounts counts injected faults by kind.
type FaultCounts struct {
	Throttle    int64
	ServerError int64
	Reset       int64
	DropAnswer  int64
}

// Total is the number of faults of all kinds.
func (c FaultCounts) Total() int64 { return c.Throttle + c.ServerError + c.Reset + c.DropAnswer }

// Get returns the count of one kind (0 for None).
func (c FaultCounts) Get(f Fault) int64 {
	switch f {
	case Throttle:
		return c.Throttle
	case ServerError:
		return c.ServerError
	case Reset:
		return c.Reset
	case DropAnswer:
		return c.DropAnswer
	}
	return 0
}

func (c *FaultCounts) add(f Fault) {
	switch f {
	case Throttle:
		c.Throttle++
	case ServerError:
		c.ServerError++
	case Reset:
		c.Reset++
	case DropAnswer:
		c.DropAnswer++
	}
}

// String renders the counts as "throttle=3 server-error=1 reset=0 drop-answer=2".
func (c FaultCounts) String() string {
	return fmt.Sprintf("%s=%d %s=%d %s=%d %s=%d", Throttle, c.Throttle, ServerError, c.ServerError,
		Reset, c.Reset, DropAnswer, c.DropAnswer)
}

// OpStats are the counts of one operation.
type OpStats struct {
	// Requests is how many requests of the operation the proxy received.
	Requests int64
	// Writes is how many of them were writes (all or none of them).
	Writes int64
	// Forwarded is how many were sent upstream (DropAnswer ones included).
	Forwarded int64
	// Faults counts the faults injected into them.
	Faults FaultCounts
}

// Stats are a Proxy's counts since New.
type Stats struct {
	// Requests is how many requests the proxy received.
	Requests int64
	// Writes is how many of them were writes.
	Writes int64
	// Forwarded is how many requests were sent upstream, those whose
	// answer was then dropped included.
	Forwarded int64
	// ForwardedWrites is how many writes were sent upstream.
	ForwardedWrites int64
	// UpstreamErrors is how many forwarded requests got no answer from the
	// upstream (answered 502) or were abandoned by their client.
	UpstreamErrors int64
	// Faults counts the faults injected, by kind.
	Faults FaultCounts
	// ByOp holds the counts per operation, keyed by its name: an S3 or
	// DynamoDB API name such as "PutObject" or "UpdateItem", the SQS action
	// such as "SendMessageBatch", or "unknown".
	ByOp map[string]OpStats
}

func (s *Stats) init() { s.ByOp = make(map[string]OpStats) }

// count records one injected fault; the caller holds the Proxy's mutex.
func (s *Stats) count(op string, f Fault) {
	s.Faults.add(f)
	o := s.ByOp[op]
	o.Faults.add(f)
	s.ByOp[op] = o
}

// String renders the stats on several lines, operations sorted by name,
// for a test's report.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "requests=%d writes=%d forwarded=%d forwarded-writes=%d upstream-errors=%d faults: %v\n",
		s.Requests, s.Writes, s.Forwarded, s.ForwardedWrites, s.UpstreamErrors, s.Faults)
	for _, name := range slices.Sorted(maps.Keys(s.ByOp)) {
		o := s.ByOp[name]
		fmt.Fprintf(&b, "  %-28s requests=%d writes=%d forwarded=%d %v\n", name, o.Requests, o.Writes, o.Forwarded, o.Faults)
	}
	return b.String()
}

// Stats returns a copy of the proxy's counts.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.ByOp = maps.Clone(p.stats.ByOp)
	return s
}
