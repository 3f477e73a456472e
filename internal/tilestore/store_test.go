package tilestore_test

import (
	"testing"

	"tilecache/internal/tilestore"
)

// TestContentMD5: the form of Object.MD5, as S3 writes an ETag (without
// its quotes).
func TestContentMD5(t *testing.T) {
	tests := []struct {
		data string
		want string
	}{
		{"", "d41d8cd98f00b204e9800998ecf8427e"},
		{"The quick brown fox jumps over the lazy dog", "9e107d9d372bb6826bd81d3542a419d6"},
	}
	for _, tt := range tests {
		if got := tilestore.ContentMD5([]byte(tt.data)); got != tt.want {
			t.Errorf("ContentMD5(%q): got %q, want %q", tt.data, got, tt.want)
		}
	}
}
