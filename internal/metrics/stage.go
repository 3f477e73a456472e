package metrics

import (
	"context"
	"runtime/pprof"
)

// The stages of seeding a metatile, as CPU profiles name them: a profile
// of a seed (make bench-peers PROFILE=dir, or any -cpuprofile) tells them
// apart with `go tool pprof -tags` (the label "stage"), or one of them with
// -tagfocus stage=encode. Work with no stage of its own (the runtime, the
// HTTP transport's connection goroutines) has no label.
const (
	StageGetMap      = "getmap"      // the request to the upstream and reading its answer
	StageDecode      = "decode"      // the upstream's image decoded
	StageEncode      = "encode"      // cut into tiles, blank checks, tiles encoded
	StageHash        = "hash"        // new tiles compared with the stored ones' digests
	StagePut         = "put"         // the tile store's writes (checksums, signing, the request)
	StageBookkeeping = "bookkeeping" // the rest of a lane: listings, checkpoints, usage, documents
)

// Stage runs fn with the profile label stage=name (goroutines fn starts
// inherit it), and returns what fn returns. It costs an allocation or two,
// so it is meant per request or per tile, not per pixel.
func Stage(ctx context.Context, name string, fn func(context.Context) error) error {
	var err error
	pprof.Do(ctx, pprof.Labels("stage", name), func(ctx context.Context) { err = fn(ctx) })
	return err
}
