// Command cleaner is the cleaner function: every minute an EventBridge
// schedule has it re-enqueue stale lanes and start pending tasks.
package main

import (
	"os"

	"tilecache/internal/app"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, app.NewWorker, func(p *app.Program) any { return p.HandleSchedule })
}
