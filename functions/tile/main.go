// Command tile is the tile function: CloudFront's failover origin when a
// tile is missing from the bucket. Lambda function URL events (payload
// 2.0) for key paths are answered from the bucket or rendered on miss
// (layers with renderOnMiss), through the same code as `tilecache serve`.
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
	p, err := app.NewTile(context.Background(), cfg, log)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	p.EnableEMF(os.Stdout, os.Getenv("AWS_LAMBDA_FUNCTION_NAME")) // metrics in the log, at the end of each invocation
	lambda.Start(p.HandleTile)
}
