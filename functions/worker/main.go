// Command worker is the worker function: SQS lane messages are worked by
// the same engine code `tilecache serve` runs, with partial batch failures.
// Its program is the worker's assembly (package worker), which links no
// schedules (nor their cron parser and time zone database), administration
// interface, console or embedded database, and holds no maintenance.
package main

import (
	"os"

	"tilecache/internal/app/worker"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, worker.Load, worker.NewAWS, func(p *worker.Program) any { return p.HandleSQS })
}
