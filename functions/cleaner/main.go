// Command cleaner is the cleaner function: every minute an EventBridge
// schedule has it run the maintenance jobs (worker.Program.HandleSchedule:
// re-enqueue stale lanes, start pending tasks, fire due schedules, the
// disk-quota clean-up, the documents of the tile store, the edge's grid
// sets), each named and isolated from the others' failures. Its program is
// the engine's assembly (package worker), which links no administration
// interface, console or embedded database.
package main

import (
	"os"

	"tilecache/internal/app/worker"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, worker.Load, worker.NewAWS, func(p *worker.Program) any { return p.HandleSchedule })
}
