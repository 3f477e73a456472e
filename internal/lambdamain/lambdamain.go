// Package lambdamain starts a Lambda function's program, the same way for
// every function: the configuration read through the process's lookup,
// the Go runtime's memory limit set from the function's memory size, the
// program built, its metrics written to the log at the end of each
// invocation, and its handler served by the Lambda runtime.
package lambdamain

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"tilecache/internal/app/core"
	"tilecache/internal/config"
)

// Program is what every function's program does besides handling events.
type Program interface {
	// EnableEMF writes the program's metrics to w at the end of each
	// invocation, in CloudWatch's embedded metric format.
	EnableEMF(w io.Writer, function string)
}

// Run loads the function's configuration with load through lookup
// (os.LookupEnv in a main), sets the runtime's memory limit unless
// GOMEMLIMIT is set (see memoryLimit), builds the program and serves
// handler(program) with the Lambda runtime; it never returns. A
// configuration or a program that cannot be built is logged and ends the
// process with status 1, so Lambda reports an init error. Each function
// hands its own assembly's load and build (config.Load and app.New for the
// API, tileorigin.Load and tileorigin.New for the tile origin, …), so it
// reads and links only what it uses.
func Run[C any, P Program](lookup config.Lookup, load func(config.Lookup) (C, error), build func(context.Context, C, *slog.Logger) (P, error), handler func(P) any) {
	level, err := config.Read[config.Log](lookup)
	if err != nil {
		slog.Error("configuration", "err", err)
		os.Exit(1)
	}
	cfg, err := load(lookup)
	if err != nil {
		slog.Error("configuration", "err", err)
		os.Exit(1)
	}
	log := core.NewLogger(level.LogLevel)
	setMemoryLimit(lookup, log)
	p, err := build(context.Background(), cfg, log)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	function, _ := lookup("AWS_LAMBDA_FUNCTION_NAME")
	p.EnableEMF(os.Stdout, function)
	lambda.Start(handler(p))
}
