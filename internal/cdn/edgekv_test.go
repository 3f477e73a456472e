package cdn

import (
	"strings"
	"testing"
)

func TestCheckEdgeEntry(t *testing.T) {
	for _, tc := range []struct {
		key, value, want string
	}{
		{"EPSG:4326", strings.Repeat("1", EdgeValueMax), ""},
		{strings.Repeat("k", EdgeKeyMax), "1;1", ""},
		{"EPSG:4326", strings.Repeat("1", EdgeValueMax+1), "value of 1025 characters is over the edge key-value store's limit of 1,024 characters"},
		{strings.Repeat("k", EdgeKeyMax+1), "1;1", "key of 513 bytes is over the edge key-value store's limit of 512 bytes"},
	} {
		err := CheckEdgeEntry(tc.key, tc.value)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("key %d bytes, value %d: %v, want it accepted", len(tc.key), len(tc.value), err)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("key %d bytes, value %d: got %v, want %q", len(tc.key), len(tc.value), err, tc.want)
		}
	}
}
