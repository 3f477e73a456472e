// Command api is the API function: API Gateway HTTP API (payload 2.0)
// events are turned into requests for the same http.Handler that
// `tilecache serve` runs.
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
	p, err := app.New(context.Background(), cfg, log)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	p.EnableEMF(os.Stdout, os.Getenv("AWS_LAMBDA_FUNCTION_NAME")) // metrics in the log, at the end of each invocation
	lambda.Start(p.HandleAPI)
}
