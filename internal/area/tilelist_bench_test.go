package area

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkReadTileListChildren reads 5 tiles of z10 with their children
// to z22: 7 million metatiles of 4×4, each new.
func BenchmarkReadTileListChildren(b *testing.B) {
	g := builtin(b, "EPSG:900913")
	var text strings.Builder
	for x := range 5 {
		fmt.Fprintf(&text, "10/%d/0\n", x)
	}
	for b.Loop() {
		l, err := ReadTileList(strings.NewReader(text.String()), g, ListOptions{ParentsTo: -1, ChildrenTo: 22, MetaW: 4, MetaH: 4})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(l.Metatiles()), "metatiles")
	}
}

// BenchmarkReadTileListNearLimit reads the 5 tiles of
// BenchmarkReadTileListChildren 9 times over: near the limit of 8
// million metatiles, each line's new metatiles are counted (none) before
// its 1.4 million are checked again, 63 million in all.
func BenchmarkReadTileListNearLimit(b *testing.B) {
	g := builtin(b, "EPSG:900913")
	var text strings.Builder
	for x := range 5 {
		fmt.Fprintf(&text, "10/%d/0\n", x)
	}
	list := strings.Repeat(text.String(), 9)
	for b.Loop() {
		l, err := ReadTileList(strings.NewReader(list), g, ListOptions{ParentsTo: -1, ChildrenTo: 22, MetaW: 4, MetaH: 4})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(l.Metatiles()), "metatiles")
	}
}
