// Command worker is the worker function: SQS lane messages are worked by
// the same engine code `tilecache serve` runs, with partial batch failures.
package main

import (
	"os"

	"tilecache/internal/app"
	"tilecache/internal/config"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, config.Load, app.NewWorker, func(p *app.Program) any { return p.HandleSQS })
}
