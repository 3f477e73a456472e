// Command cleaner is the cleaner function: every minute an EventBridge
// schedule has it re-enqueue stale lanes and start pending tasks.
package main

import (
	"os"

	"tilecache/internal/app"
	"tilecache/internal/config"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, config.Load, app.NewWorker, func(p *app.Program) any { return p.HandleSchedule })
}
