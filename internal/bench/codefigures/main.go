// Command codefigures prints the code figures of issue 53 ("The code,
// round 3") as markdown (`make code-figures`), so that the same program
// gives them before and after the change:
//
//   - the five types with the most methods (every non-test .go file of the
//     module; methods counted per receiver's base type, pointer or value
//     receiver alike; with the files they are spread over);
//   - the references that run back up inside rest, layer, state/dynamo
//     and seed (defined below);
//   - README.md's lines and the files under docs/;
//   - time.Sleep calls in _test.go files;
//   - test functions (func TestX(t *testing.T)) over 100 lines;
//   - for context: Makefile targets, folders directly under internal/.
//
// References that run back up. A package's files are its floors: a file
// that refers to an identifier declared in another file of the same
// package (a function, type, variable, constant, method or field; found
// with go/types, so that x.M resolves to the method it calls) depends on
// that file, as a package depends on the packages it imports. A reference
// is one such pair of files (file A refers to something of file B,
// however many times: the "82 references inside rest" of the issue count
// pairs, not identifiers). Drawn as floors, with each file above the files
// it refers to, a reference runs back up when it goes from a file to one
// above it. The figure is the least number of references that must run
// back up whatever the order of the files (the minimum feedback arc set of
// the file graph): 0 when the files can be layered, as the packages are.
// It is computed exactly per strongly connected component of up to 22
// files (dynamic programming over subsets), and bounded above by a greedy
// order improved by moves of single files for larger ones (then marked
// "≤"). The table also gives the references that lie on a cycle of files
// (inside a strongly connected component), an upper bound that needs no
// order.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// backPackages are the packages whose back references are counted.
var backPackages = []string{"rest", "layer", "state/dynamo", "seed"}

func main() {
	out := flag.String("o", "", "also write the markdown to this file")
	top := flag.Int("top", 5, "types with the most methods to list")
	rev := flag.String("rev", "", "measure this git revision (its files taken with git archive) instead of the working tree")
	flag.Parse()
	var buf bytes.Buffer
	w := io.MultiWriter(os.Stdout, &buf)
	if err := run(w, *top, *rev); err != nil {
		fmt.Fprintln(os.Stderr, "codefigures:", err)
		os.Exit(1)
	}
	if *out != "" {
		if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "codefigures:", err)
			os.Exit(1)
		}
		if err := os.WriteFile(*out, buf.Bytes(), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "codefigures:", err)
			os.Exit(1)
		}
	}
}

func run(w io.Writer, top int, rev string) error {
	root, err := moduleRoot()
	if err != nil {
		return err
	}
	label, err := gitOutput(root, "rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	git := true
	if rev != "" {
		if label, err = gitOutput(root, "rev-parse", "--short", rev+"^{commit}"); err != nil {
			return err
		}
		tmp, err := os.MkdirTemp("", "tilecache-codefigures-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		if _, err := gitOutput(root, "archive", "-o", filepath.Join(tmp, "tree.tar"), label); err != nil {
			return err
		}
		dir := filepath.Join(tmp, "tree")
		if err := os.Mkdir(dir, 0o755); err != nil {
			return err
		}
		cmd := exec.Command("tar", "-xf", filepath.Join(tmp, "tree.tar"))
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("tar: %w: %s", err, out)
		}
		root, git = dir, false
	} else if st, _ := gitOutput(root, "status", "--porcelain", "--untracked-files=no"); st != "" {
		label += "+changes"
	}
	fmt.Fprintf(w, "Code figures at %s\n\n", label)
	files, err := goFiles(root, git)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	parsed := map[string]*ast.File{}
	for _, f := range files {
		af, err := parser.ParseFile(fset, filepath.Join(root, f), nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		parsed[f] = af
	}

	// Methods per type.
	type typeKey struct{ dir, name string }
	methods := map[typeKey]int{}
	spread := map[typeKey]map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		for _, d := range parsed[f].Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv == nil || len(fd.Recv.List) == 0 {
				continue
			}
			k := typeKey{filepath.Dir(f), recvName(fd.Recv.List[0].Type)}
			methods[k]++
			if spread[k] == nil {
				spread[k] = map[string]bool{}
			}
			spread[k][f] = true
		}
	}
	keys := make([]typeKey, 0, len(methods))
	for k := range methods {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if methods[keys[i]] != methods[keys[j]] {
			return methods[keys[i]] > methods[keys[j]]
		}
		return keys[i].dir+keys[i].name < keys[j].dir+keys[j].name
	})
	fmt.Fprintf(w, "## The types with the most methods\n\n| type | methods | files |\n|---|--:|--:|\n")
	for _, k := range keys[:min(top, len(keys))] {
		fmt.Fprintf(w, "| `%s.%s` (%s) | %d | %d |\n", filepath.Base(k.dir), k.name, k.dir, methods[k], len(spread[k]))
	}
	fmt.Fprintln(w)

	// References that run back up.
	fmt.Fprintf(w, "## References that run back up inside a package\n\n")
	fmt.Fprintf(w, "A reference: file A uses something declared in file B of the same package (pairs of files, test files left out). "+
		"Back up: the least number of references that point from a file to one above it, whatever the order of the files as floors "+
		"(each file above the files it refers to; the minimum feedback arc set). On cycles: references between files of one cycle.\n\n")
	fmt.Fprintf(w, "| package | files | lines | references | run back up | on cycles | largest cycle (files) |\n|---|--:|--:|--:|--:|--:|--:|\n")
	exports, err := exportData(root, backPackages)
	if err != nil {
		return err
	}
	for _, p := range backPackages {
		g, lines, err := fileGraph(root, p, exports)
		if err != nil {
			return err
		}
		up, exact := g.minBackEdges()
		onCycles, largest := g.cycleEdges()
		mark := ""
		if !exact {
			mark = "≤ "
		}
		fmt.Fprintf(w, "| `%s` | %d | %d | %d | %s%d | %d | %d |\n", p, len(g.files), lines, g.edges(), mark, up, onCycles, largest)
	}
	fmt.Fprintln(w)

	// The front door.
	readme, err := countLines(filepath.Join(root, "README.md"))
	if err != nil {
		return err
	}
	var docs []string
	filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(root, path)
			docs = append(docs, rel)
		}
		return nil
	})
	targets, err := makeTargets(filepath.Join(root, "Makefile"))
	if err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(root, "internal"))
	if err != nil {
		return err
	}
	folders := 0
	for _, e := range entries {
		if e.IsDir() {
			folders++
		}
	}
	fmt.Fprintf(w, "## The front door\n\n| figure | value |\n|---|--:|\n")
	fmt.Fprintf(w, "| README.md lines | %d |\n| files under docs/ | %d |\n| Makefile targets | %d |\n| folders directly under internal/ | %d |\n\n",
		readme, len(docs), targets, folders)
	if len(docs) > 0 {
		fmt.Fprintf(w, "docs/:\n\n")
		for _, d := range docs {
			n, _ := countLines(filepath.Join(root, d))
			fmt.Fprintf(w, "- %s (%d lines)\n", d, n)
		}
		fmt.Fprintln(w)
	}

	// Tests.
	sleeps, sleepFiles := 0, map[string]bool{}
	var realSleeps []string // outside a synctest bubble: they wait in real time
	var long []string
	testFuncs := 0
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			continue
		}
		af := parsed[f]
		timeName := importName(af, "time")
		bubbles := synctestBubbles(af)
		ast.Inspect(af, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || timeName == "" {
				return true
			}
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Sleep" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName {
					sleeps++
					sleepFiles[f] = true
					if !bubbles.holds(call.Pos()) {
						realSleeps = append(realSleeps, fmt.Sprintf("%s:%d", f, fset.Position(call.Pos()).Line))
					}
				}
			}
			return true
		})
		for _, d := range af.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Recv != nil || !isTest(fd) {
				continue
			}
			testFuncs++
			n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1
			if n > 100 {
				long = append(long, fmt.Sprintf("%s:%s (%d)", f, fd.Name.Name, n))
			}
		}
	}
	fmt.Fprintf(w, "## Tests\n\n| figure | value |\n|---|--:|\n")
	fmt.Fprintf(w, "| `time.Sleep` calls in _test.go files | %d (in %d files) |\n", sleeps, len(sleepFiles))
	fmt.Fprintf(w, "| of them outside a synctest bubble (waiting in real time) | %d |\n", len(realSleeps))
	fmt.Fprintf(w, "| test functions over 100 lines | %d of %d |\n\n", len(long), testFuncs)
	if len(long) > 0 {
		fmt.Fprintf(w, "Test functions over 100 lines:\n\n")
		for _, l := range long {
			fmt.Fprintf(w, "- %s\n", l)
		}
		fmt.Fprintln(w)
	}
	if len(realSleeps) > 0 {
		fmt.Fprintf(w, "Sleeps in real time:\n\n")
		for _, s := range realSleeps {
			fmt.Fprintf(w, "- %s\n", s)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// spans are source ranges [from, to).
type spans [][2]token.Pos

func (s spans) holds(p token.Pos) bool {
	for _, r := range s {
		if p >= r[0] && p < r[1] {
			return true
		}
	}
	return false
}

// synctestBubbles returns the bodies of the functions a file passes to
// synctest.Test: a time.Sleep inside one advances the bubble's fake
// clock instead of waiting. (A helper called from a bubble is not
// followed: its sleeps count as real, which overstates, never hides.)
func synctestBubbles(af *ast.File) spans {
	name := importName(af, "testing/synctest")
	if name == "" {
		return nil
	}
	var out spans
	ast.Inspect(af, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Test" {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); !ok || id.Name != name {
			return true
		}
		for _, a := range call.Args {
			if fl, ok := a.(*ast.FuncLit); ok {
				out = append(out, [2]token.Pos{fl.Pos(), fl.End()})
			}
		}
		return true
	})
	return out
}

// isTest reports whether fd is func TestX(t *testing.T).
func isTest(fd *ast.FuncDecl) bool {
	name := fd.Name.Name
	if !strings.HasPrefix(name, "Test") || name == "TestMain" {
		return false
	}
	if len(name) > 4 && strings.ToLower(name[4:5]) == name[4:5] && name[4] != '_' {
		return false // Testify is no test
	}
	params := fd.Type.Params.List
	if len(params) != 1 || len(params[0].Names) > 1 {
		return false
	}
	star, ok := params[0].Type.(*ast.StarExpr)
	if !ok {
		return false
	}
	sel, ok := star.X.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "T"
}

// importName is the name under which f imports path, "" when it does not.
func importName(f *ast.File, path string) string {
	for _, imp := range f.Imports {
		if strings.Trim(imp.Path.Value, `"`) != path {
			continue
		}
		if imp.Name != nil {
			return imp.Name.Name
		}
		return filepath.Base(path)
	}
	return ""
}

// recvName is the base type name of a receiver.
func recvName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return "?"
		}
	}
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", fmt.Errorf("not inside the module")
	}
	return filepath.Dir(mod), nil
}

// gitOutput runs git in dir and returns its output, trimmed.
func gitOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// goFiles are the module's .go files, relative to root, outside testdata
// and hidden folders: git's (tracked and untracked, not ignored) when git
// is set, else every one under root.
func goFiles(root string, git bool) ([]string, error) {
	var list []string
	if git {
		out, err := gitOutput(root, "ls-files", "--cached", "--others", "--exclude-standard", "*.go")
		if err != nil {
			return nil, err
		}
		list = strings.Split(out, "\n")
	} else {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".go") {
				rel, _ := filepath.Rel(root, path)
				list = append(list, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var files []string
	for _, f := range list {
		if f == "" || strings.Contains("/"+f, "/testdata/") || strings.Contains("/"+f, "/.") || strings.Contains("/"+f, "/node_modules/") {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			continue // deleted in the work tree
		}
		files = append(files, f)
	}
	slices.Sort(files)
	return files, nil
}

func countLines(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return bytes.Count(data, []byte("\n")), nil
}

// makeTargets counts the Makefile's rules (name: at a line's start, not a
// variable assignment nor a special target).
func makeTargets(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '\t' || line[0] == '#' || line[0] == '.' || line[0] == ' ' {
			continue
		}
		name, rest, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(rest, "=") || strings.ContainsAny(name, "=$ ") {
			continue
		}
		seen[name] = true
	}
	return len(seen), sc.Err()
}

// exportData returns the export data files of the dependencies of the
// packages internal/<p> (go list -export), for the type checker.
func exportData(root string, pkgs []string) (map[string]string, error) {
	args := []string{"list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}"}
	for _, p := range pkgs {
		args = append(args, "./internal/"+p)
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -export: %w: %s", err, stderr.String())
	}
	m := map[string]string{}
	for line := range strings.Lines(string(out)) {
		path, file, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if ok && file != "" {
			m[path] = file
		}
	}
	return m, nil
}

// graph is a package's files and which refers to which.
type graph struct {
	files []string
	big   [][]bool // big[i][j] when file i refers to file j
}

func (g *graph) has(i, j int) bool { return g.big[i][j] }

func (g *graph) edges() int {
	n := 0
	for i := range g.files {
		for j := range g.files {
			if g.has(i, j) {
				n++
			}
		}
	}
	return n
}

// fileGraph type-checks internal/<p> (non-test files) and returns its file
// graph and its lines.
func fileGraph(root, p string, exports map[string]string) (*graph, int, error) {
	dir := filepath.Join(root, "internal", p)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, 0, err
	}
	fset := token.NewFileSet()
	var files []*ast.File
	g := &graph{}
	lines := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, 0, err
		}
		n, _ := countLines(filepath.Join(dir, name))
		lines += n
		files = append(files, f)
		g.files = append(g.files, name)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	conf := types.Config{Importer: imp, GoVersion: ""}
	pkg, err := conf.Check("tilecache/internal/"+p, fset, files, info)
	if err != nil {
		return nil, 0, fmt.Errorf("type-check internal/%s: %w", p, err)
	}
	index := map[string]int{}
	for i, name := range g.files {
		index[filepath.Join(dir, name)] = i
	}
	g.big = make([][]bool, len(g.files))
	for i := range g.big {
		g.big[i] = make([]bool, len(g.files))
	}
	for id, obj := range info.Uses {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			continue
		}
		if _, ok := obj.(*types.PkgName); ok {
			continue
		}
		from, ok1 := index[fset.Position(id.Pos()).Filename]
		to, ok2 := index[fset.Position(obj.Pos()).Filename]
		if ok1 && ok2 && from != to {
			g.big[from][to] = true
		}
	}
	return g, lines, nil
}

// sccs are the strongly connected components of g (Tarjan).
func (g *graph) sccs() [][]int {
	n := len(g.files)
	index, low := make([]int, n), make([]int, n)
	for i := range index {
		index[i] = -1
	}
	onStack := make([]bool, n)
	var stack []int
	var out [][]int
	next := 0
	var visit func(v int)
	visit = func(v int) {
		index[v], low[v] = next, next
		next++
		stack = append(stack, v)
		onStack[v] = true
		for u := range n {
			if !g.has(v, u) {
				continue
			}
			if index[u] < 0 {
				visit(u)
				low[v] = min(low[v], low[u])
			} else if onStack[u] {
				low[v] = min(low[v], index[u])
			}
		}
		if low[v] == index[v] {
			var comp []int
			for {
				u := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[u] = false
				comp = append(comp, u)
				if u == v {
					break
				}
			}
			out = append(out, comp)
		}
	}
	for v := range n {
		if index[v] < 0 {
			visit(v)
		}
	}
	return out
}

// cycleEdges counts the references inside strongly connected components,
// and the size of the largest.
func (g *graph) cycleEdges() (edges, largest int) {
	for _, c := range g.sccs() {
		largest = max(largest, len(c))
		for _, a := range c {
			for _, b := range c {
				if a != b && g.has(a, b) {
					edges++
				}
			}
		}
	}
	if largest == 1 {
		largest = 0
	}
	return edges, largest
}

// exactLimit is the largest component ordered exactly (2^n states).
const exactLimit = 22

// minBackEdges is the minimum feedback arc set of g, summed over its
// components; exact is false when a component was too large and the
// figure is an upper bound.
func (g *graph) minBackEdges() (total int, exact bool) {
	exact = true
	for _, c := range g.sccs() {
		if len(c) < 2 {
			continue
		}
		if len(c) <= exactLimit {
			total += g.exactFAS(c)
		} else {
			total += g.greedyFAS(c)
			exact = false
		}
	}
	return total, exact
}

// exactFAS: files placed from the ground floor up; placing v above the set
// S costs the references from files of S to v (they run back up).
// best[S] = min over v in S of best[S\v] + |refs from S\v to v|.
func (g *graph) exactFAS(c []int) int {
	n := len(c)
	in := make([]uint32, n) // in[v]: the members (by position in c) that refer to v
	for i, a := range c {
		for j, b := range c {
			if i != j && g.has(b, a) {
				in[i] |= 1 << j
			}
		}
	}
	best := make([]int32, 1<<n)
	for s := uint32(1); s < 1<<n; s++ {
		m := int32(1 << 30)
		for rest := s; rest != 0; rest &= rest - 1 {
			v := bits.TrailingZeros32(rest)
			below := s &^ (1 << v)
			if cost := best[below] + int32(bits.OnesCount32(in[v]&below)); cost < m {
				m = cost
			}
		}
		best[s] = m
	}
	return int(best[1<<n-1])
}

// greedyFAS orders c by the Eades–Lin–Smyth heuristic, then moves single
// files to their best place while that helps, and counts the references
// that run back up in that order.
func (g *graph) greedyFAS(c []int) int {
	// order[0] is the ground floor.
	left := slices.Clone(c)
	var bottom, top []int
	deg := func(v int, out bool) int {
		n := 0
		for _, u := range left {
			if u != v && ((out && g.has(v, u)) || (!out && g.has(u, v))) {
				n++
			}
		}
		return n
	}
	for len(left) > 0 {
		moved := true
		for moved {
			moved = false
			for i, v := range left {
				if deg(v, true) == 0 { // refers to nothing left: lowest
					bottom = append(bottom, v)
					left = slices.Delete(left, i, i+1)
					moved = true
					break
				}
				if deg(v, false) == 0 { // nothing left refers to it: highest
					top = append([]int{v}, top...)
					left = slices.Delete(left, i, i+1)
					moved = true
					break
				}
			}
		}
		if len(left) == 0 {
			break
		}
		// the file referred to most and referring least goes down
		bi, bd := 0, -1<<30
		for i, v := range left {
			if d := deg(v, false) - deg(v, true); d > bd {
				bi, bd = i, d
			}
		}
		bottom = append(bottom, left[bi])
		left = slices.Delete(left, bi, bi+1)
	}
	order := append(bottom, top...)
	cost := func(o []int) int {
		n := 0
		for i, a := range o {
			for _, b := range o[i+1:] {
				if g.has(a, b) { // a lower file refers to a higher one
					n++
				}
			}
		}
		return n
	}
	best := cost(order)
	for improved := true; improved; {
		improved = false
		for i := range order {
			for j := range order {
				if i == j {
					continue
				}
				o := slices.Clone(order)
				v := o[i]
				o = slices.Delete(o, i, i+1)
				o = slices.Insert(o, j, v)
				if c := cost(o); c < best {
					best, order, improved = c, o, true
				}
			}
		}
	}
	return best
}
