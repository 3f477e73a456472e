// Command cleaner is the cleaner function: every minute an EventBridge
// schedule has it re-enqueue stale lanes and start pending tasks.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"tilecache/internal/app"
	"tilecache/internal/config"
)

func main() {
	cfg, err := config.Load(os.LookupEnv)
	if err != nil {
		slog.Error("configuration", "err", err)
		os.Exit(1)
	}
	log := app.NewLogger(cfg.LogLevel)
	p, err := app.NewWorker(context.Background(), cfg, log)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	p.EnableEMF(os.Stdout, os.Getenv("AWS_LAMBDA_FUNCTION_NAME")) // metrics in the log, at the end of each invocation
	lambda.Start(p.HandleSchedule)
}
