package metrics

import (
	"context"
	"errors"
	"runtime/pprof"
	"testing"
)

func TestStageLabelsAndReturns(t *testing.T) {
	want := errors.New("boom")
	err := Stage(context.Background(), StageBookkeeping, func(ctx context.Context) error {
		return Stage(ctx, StageEncode, func(ctx context.Context) error {
			if v, ok := pprof.Label(ctx, "stage"); !ok || v != StageEncode {
				t.Errorf("inner stage label = %q, %v; want %q", v, ok, StageEncode)
			}
			return want
		})
	})
	if !errors.Is(err, want) {
		t.Fatalf("Stage returned %v, want fn's error", err)
	}
}
