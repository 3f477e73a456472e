package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"tilecache/internal/app"
	"tilecache/internal/app/backends"
	"tilecache/internal/queue/sqsqueue"
	"tilecache/internal/tilestore/s3store"
)

// counts are the adapters' request counters at one moment.
type counts struct {
	s3     s3store.RequestCounts
	writes int64
	sent   int64
}

func snapshot(p *app.Program) counts {
	s3, ok1 := p.Tiles.(*s3store.Store)
	ddb, ok2 := p.Writes, p.Writes != nil
	q, ok3 := p.Queue.(*sqsqueue.Queue)
	if !ok1 || !ok2 || !ok3 {
		return counts{}
	}
	return counts{s3.Requests(), ddb.Writes(), q.Sent()}
}

// since formats the requests made since before, per 1,000 tiles.
func since(p *app.Program, before counts, tiles int64) string {
	now := snapshot(p)
	if now == (counts{}) || tiles == 0 {
		return ""
	}
	per := func(n int64) float64 { return float64(n) * 1000 / float64(tiles) }
	d := now.s3
	d.Put -= before.s3.Put
	d.Get -= before.s3.Get
	d.Head -= before.s3.Head
	d.Delete -= before.s3.Delete
	d.List -= before.s3.List
	d.Other -= before.s3.Other
	return fmt.Sprintf("; per 1,000 tiles: S3 requests %.1f (PUT %.1f, HEAD %.1f, LIST %.1f, DELETE %.1f), DynamoDB writes %.2f, SQS messages %.2f",
		per(d.Total()), per(d.Put), per(d.Head), per(d.List), per(d.Delete), per(now.writes-before.writes), per(now.sent-before.sent))
}

// costs formats the adapters' request counts per 1,000 tiles.
func costs(p *app.Program, tiles int64) string {
	s3, ok1 := p.Tiles.(*s3store.Store)
	ddb, ok2 := p.Writes, p.Writes != nil
	q, ok3 := p.Queue.(*sqsqueue.Queue)
	if !ok1 || !ok2 || !ok3 || tiles == 0 {
		return ""
	}
	per := func(n int64) float64 { return float64(n) * 1000 / float64(tiles) }
	r := s3.Requests()
	return fmt.Sprintf("; per 1,000 tiles: S3 requests %.1f (PUT %.1f, HEAD %.1f, LIST %.1f), DynamoDB writes %.2f (%s), SQS messages %.2f",
		per(r.Total()), per(r.Put), per(r.Head), per(r.List), per(ddb.Writes()), writesByOp(ddb, per), per(q.Sent()))
}

// writesByOp formats the DynamoDB writes per operation, most first.
func writesByOp(ddb backends.WriteCounter, per func(int64) float64) string {
	ops := ddb.WritesByOp()
	names := slices.Collect(maps.Keys(ops))
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(ops[b], ops[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s %.2f", n, per(ops[n]))
	}
	return strings.Join(parts, ", ")
}
