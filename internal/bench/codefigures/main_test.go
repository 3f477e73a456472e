package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// newGraph is a graph of n files with the references edges (from, to).
func newGraph(n int, edges ...[2]int) *graph {
	g := &graph{files: make([]string, n), big: make([][]bool, n)}
	for i := range g.big {
		g.big[i] = make([]bool, n)
	}
	for _, e := range edges {
		g.big[e[0]][e[1]] = true
	}
	return g
}

func TestBackEdges(t *testing.T) {
	cases := []struct {
		name                   string
		g                      *graph
		back, onCycles, larger int
	}{
		{"layered", newGraph(4, [2]int{0, 1}, [2]int{1, 2}, [2]int{0, 2}, [2]int{3, 2}), 0, 0, 0},
		{"a pair", newGraph(2, [2]int{0, 1}, [2]int{1, 0}), 1, 2, 2},
		{"a ring of three", newGraph(3, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}), 1, 3, 3},
		// two rings sharing the edge 0→1: one reference back up breaks both
		{"two rings", newGraph(4, [2]int{0, 1}, [2]int{1, 2}, [2]int{2, 0}, [2]int{1, 3}, [2]int{3, 0}), 1, 5, 4},
		// every pair both ways: half of the references run back up
		{"complete", newGraph(4, [2]int{0, 1}, [2]int{1, 0}, [2]int{0, 2}, [2]int{2, 0}, [2]int{0, 3}, [2]int{3, 0},
			[2]int{1, 2}, [2]int{2, 1}, [2]int{1, 3}, [2]int{3, 1}, [2]int{2, 3}, [2]int{3, 2}), 6, 12, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			back, exact := c.g.minBackEdges()
			onCycles, largest := c.g.cycleEdges()
			if back != c.back || !exact || onCycles != c.onCycles || largest != c.larger {
				t.Errorf("back %d (exact %v), on cycles %d, largest %d; want %d (exact), %d, %d", back, exact, onCycles, largest, c.back, c.onCycles, c.larger)
			}
		})
	}
}

// TestGreedyBound: the greedy order never beats the exact minimum, and is
// never above the references on cycles.
func TestGreedyBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		n := 3 + r.IntN(8)
		var edges [][2]int
		for i := range n {
			for j := range n {
				if i != j && r.IntN(3) == 0 {
					edges = append(edges, [2]int{i, j})
				}
			}
		}
		g := newGraph(n, edges...)
		for _, c := range g.sccs() {
			if len(c) < 2 {
				continue
			}
			exact, greedy := g.exactFAS(c), g.greedyFAS(c)
			if greedy < exact {
				t.Fatalf("greedy %d below the exact minimum %d for %v", greedy, exact, edges)
			}
		}
		back, _ := g.minBackEdges()
		on, _ := g.cycleEdges()
		if back > on {
			t.Fatalf("%d back up, more than the %d references on cycles, for %v", back, on, edges)
		}
	}
}

// TestFileGraph type-checks a package of three files: a.go uses b.go's
// function and c.go's method through a value, b.go uses a.go's type; c.go
// refers to nothing of the others.
func TestFileGraph(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "internal", "p")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"a.go":      "package p\n\ntype A struct{ n int }\n\nfunc UseB() int { var c C; return B() + c.M() }\n",
		"b.go":      "package p\n\nfunc B() int { return A{n: 1}.n }\n",
		"c.go":      "package p\n\ntype C struct{}\n\nfunc (C) M() int { return 2 }\n",
		"a_test.go": "package p\n\nfunc helper() int { return B() }\n",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	g, lines, err := fileGraph(root, "p", map[string]string{})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.files) != 3 || lines != 13 {
		t.Fatalf("files %v, %d lines; want a.go, b.go, c.go of 13 lines", g.files, lines)
	}
	want := map[[2]string]bool{{"a.go", "b.go"}: true, {"a.go", "c.go"}: true, {"b.go", "a.go"}: true}
	for i, from := range g.files {
		for j, to := range g.files {
			if g.has(i, j) != want[[2]string{from, to}] {
				t.Errorf("%s refers to %s: %v, want %v", from, to, g.has(i, j), want[[2]string{from, to}])
			}
		}
	}
	if back, _ := g.minBackEdges(); back != 1 {
		t.Errorf("%d back up, want 1 (a.go and b.go refer to each other)", back)
	}
}
