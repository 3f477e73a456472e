// Package benchenv holds what the benchmark commands share: the AWS
// resources of one run on the local stack, and the process's memory figures.
package benchenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"tilecache/internal/awsconf"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/state/dynamo"
)

// AWSResources creates a table and a queue for one run named after name
// and a timestamp, and picks a fresh key prefix in the bucket of
// TILECACHE_S3_BUCKET; it fills env with the program's settings for them
// and returns the clean-up. It needs the local AWS stack of
// `eval "$(make -s devstack)"`.
func AWSResources(name string, env map[string]string) (func(), error) {
	ctx := context.Background()
	bucket := os.Getenv("TILECACHE_S3_BUCKET")
	if bucket == "" || os.Getenv("AWS_ENDPOINT_URL_DYNAMODB") == "" {
		return nil, fmt.Errorf(`-backend aws needs the local AWS stack: eval "$(make -s devstack)"`)
	}
	cfg, err := awsconf.Load(ctx, os.LookupEnv)
	if err != nil {
		return nil, err
	}
	name = fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	ddb := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.DisableValidateResponseChecksum = true })
	if err := dynamo.CreateTable(ctx, ddb, name); err != nil {
		return nil, err
	}
	sq := sqs.NewFromConfig(cfg)
	url, err := sqsqueue.CreateQueue(ctx, sq, name)
	if err != nil {
		return nil, err
	}
	env["TILECACHE_BACKEND"], env["TILECACHE_S3_BUCKET"], env["TILECACHE_DYNAMODB_TABLE"] = "aws", bucket, name
	env["TILECACHE_SQS_QUEUE_URL"], env["TILECACHE_KEY_PREFIX"] = url, name
	return func() {
		ddb.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)})
		sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		if out, err := sq.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(name + sqsqueue.DLQSuffix)}); err == nil {
			sq.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: out.QueueUrl})
		}
	}, nil
}

// Status returns a field of /proc/self/status ("VmHWM", "VmRSS") as
// written there (e.g. "51236 kB"), or "unknown".
func Status(field string) string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// StatusMiB returns a field of /proc/self/status in MiB, -1 when unknown.
func StatusMiB(field string) float64 {
	kb, err := strconv.ParseFloat(strings.TrimSuffix(Status(field), " kB"), 64)
	if err != nil {
		return -1
	}
	return kb / 1024
}

// SelfCPU returns this process's user+system CPU seconds.
func SelfCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// ClockTick is the unit of /proc/<pid>/stat's times (USER_HZ, 100 on
// Linux for every architecture Go supports).
const ClockTick = 100

// TreeCPU returns the CPU seconds of process pid and its descendants
// (pid 0: none), from /proc.
func TreeCPU(pid int) float64 {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	var ticks float64
	if len(fields) > 12 {
		u, _ := strconv.ParseFloat(fields[11], 64)
		st, _ := strconv.ParseFloat(fields[12], 64)
		ticks = u + st
	}
	total := ticks / ClockTick
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, t := range tasks {
		kids, _ := os.ReadFile(t)
		for _, k := range strings.Fields(string(kids)) {
			if c, err := strconv.Atoi(k); err == nil {
				total += TreeCPU(c)
			}
		}
	}
	return total
}
