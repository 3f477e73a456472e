package archive

import (
	"strings"
	"testing"
)

func TestCheckTile(t *testing.T) {
	for _, tt := range []struct {
		z    int
		x, y int64
		want string
	}{
		{0, 0, 0, ""},
		{1, 1, 1, ""},
		{31, 1<<31 - 1, 0, ""},
		{-1, 0, 0, "zoom level -1"},
		{32, 0, 0, "zoom level 32"},
		{1, 2, 0, "1/2/0 is outside the 2x2 tiles of level 1"},
		{3, 0, 8, "3/0/8 is outside"},
		{3, -1, 0, "3/-1/0 is outside"},
	} {
		err := CheckTile(tt.z, tt.x, tt.y)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("CheckTile(%d, %d, %d) = %v, want %q", tt.z, tt.x, tt.y, err, tt.want)
		}
	}
}
