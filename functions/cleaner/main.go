// Command cleaner is the cleaner function: every minute an EventBridge
// schedule has it run the maintenance jobs (maintenance.Program.HandleSchedule:
// re-enqueue stale lanes, start pending tasks, fire due schedules, the
// disk-quota clean-up, the documents of the tile store, the edge's grid
// sets), each named and isolated from the others' failures. Its program is
// the maintenance's assembly (package maintenance, on the worker's engine),
// which links no administration interface, console or embedded database.
package main

import (
	"os"

	"tilecache/internal/app/maintenance"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, maintenance.Load, maintenance.NewAWS, func(p *maintenance.Program) any { return p.HandleSchedule })
}
