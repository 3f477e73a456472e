// Command echo is a Lambda function for the tests of the emulator harness
// (rie_test.go): it answers with what Lambda told it about the
// invocation, fails or overruns its deadline on request, logs an EMF line,
// and fails its init when ECHO_INIT_FAIL is set.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Fail  string `json:"fail"`  // return an error with this message
	Sleep string `json:"sleep"` // sleep this long first (a duration)
}

type answer struct {
	RequestID   string `json:"requestId"`
	FunctionARN string `json:"functionArn"`
	Function    string `json:"function"`
	Value       string `json:"value"`
	RemainingMs int64  `json:"remainingMs"`
	PID         int    `json:"pid"`
}

func main() {
	if msg := os.Getenv("ECHO_INIT_FAIL"); msg != "" {
		fmt.Fprintln(os.Stderr, "echo: init:", msg)
		os.Exit(3)
	}
	lambda.Start(func(ctx context.Context, ev event) (answer, error) {
		if ev.Sleep != "" {
			d, err := time.ParseDuration(ev.Sleep)
			if err != nil {
				return answer{}, err
			}
			time.Sleep(d)
		}
		if ev.Fail != "" {
			return answer{}, errors.New(ev.Fail)
		}
		lc, _ := lambdacontext.FromContext(ctx)
		deadline, _ := ctx.Deadline()
		fmt.Printf(`{"_aws":{"Timestamp":%d,"CloudWatchMetrics":[{"Namespace":"echo","Dimensions":[[]],"Metrics":[{"Name":"Echoes"}]}]},"Echoes":1}`+"\n", time.Now().UnixMilli())
		return answer{RequestID: lc.AwsRequestID, FunctionARN: lc.InvokedFunctionArn, Function: lambdacontext.FunctionName,
			Value: os.Getenv("ECHO_VALUE"), RemainingMs: time.Until(deadline).Milliseconds(), PID: os.Getpid()}, nil
	})
}
