package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"tilecache/internal/imaging"
	"tilecache/internal/source/upstream"
)

func TestClassify(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want upstream.Failure
	}{
		{"deadline", context.DeadlineExceeded, upstream.FailureTimeout},
		{"deadline wrapped", fmt.Errorf("request https://wms.example.org/: %w", context.DeadlineExceeded), upstream.FailureTimeout},
		{"a WMS exception delivered as 200", upstream.DecodeFailure("https://wms.example.org/?k=v", "application/vnd.ogc.se_xml",
			&imaging.NotImageError{Code: "LayerNotDefined", Message: "no such layer"}), upstream.FailureNotImage},
		{"an undecodable body", fmt.Errorf("fetch: %w", upstream.DecodeFailure("https://x.org/", "image/png", errors.New("bad CRC"))), upstream.FailureNotImage},
		{"an HTTP error status", &upstream.Error{URL: "https://x.org/", Status: http.StatusInternalServerError, Msg: "boom"}, upstream.FailureError},
		{"a refused redirect", &upstream.Error{URL: "https://x.org/", Status: http.StatusFound, Msg: "elsewhere"}, upstream.FailureError},
		{"a 200 that timed out reading", fmt.Errorf("%w: %w", &upstream.Error{Status: http.StatusOK}, context.DeadlineExceeded), upstream.FailureTimeout},
		{"cancelled", context.Canceled, upstream.FailureError},
		{"anything else", errors.New("connection refused"), upstream.FailureError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := upstream.Classify(tt.err); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
