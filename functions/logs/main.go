// Command logs is the log function: access logs delivered to the log
// bucket (the CDN's standard logs, or the tile bucket's server access
// logs) are read into the disk quota's pages, so that its LRU and LFU
// clean-ups see the reads the CDN served.
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
	li, err := app.NewLogs(context.Background(), cfg, log)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	li.EnableEMF(os.Stdout, os.Getenv("AWS_LAMBDA_FUNCTION_NAME")) // metrics in the log, at the end of each invocation
	lambda.Start(li.HandleS3)
}
