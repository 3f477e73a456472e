// Command coldstart measures each Lambda function of template.yaml as it is
// deployed (`make bench-functions`): what its bootstrap links and weighs,
// and its cold start under the Lambda Runtime Interface Emulator (RIE) on
// the local AWS stack. The same program gives the figures before and after
// a change of the code, in one run each.
//
// For every function (functions/<dir>, the bootstrap of its
// build-<Function> target in the Makefile) it reports:
//
//   - the packages linked: `go list -deps` of the main package for
//     linux/arm64 with the build's tags, counted as the project's own
//     (tilecache/…), the other modules' and the standard library's, and
//     which of a few heavy parts (bbolt, the REST admin handler, the seed
//     engine, the image code, the web assets) are among them;
//   - the binary size, built as the deploy builds it (GOOS=linux
//     GOARCH=arm64 CGO_ENABLED=0, -trimpath -ldflags "-s -w" -tags
//     lambda.norpc), and the size of the same build for this machine's
//     architecture, which is the one run under the emulator;
//   - cold starts, -runs times each (default 5): the emulator (built from
//     the module go.mod pins as a tool, cached under
//     $TILECACHE_CACHE/tools/bin like the tests' copy) is started on
//     127.0.0.1 with the bootstrap as its handler and the environment
//     template.yaml gives the function (Globals and the function's own
//     variables, references resolved to the local stack's resources and
//     the parameters' defaults; what cannot be had locally is left out and
//     listed), and invoked once with a representative event (the recorded
//     events of functions/*/testdata; for the log function an S3
//     notification of a CloudFront log written for the run). Per run:
//     init (the emulator's INIT REPORT: process start to ready for the
//     first request), first response (from the invocation request to its
//     answer, init included), the handler's duration (the REPORT line) and
//     peak RSS (VmHWM of the bootstrap process from /proc, read after the
//     first response). Printed as min / median / max.
//
// -revs measures several trees side by side in one run: git revisions
// (their files taken with git archive into a temporary directory) and "."
// for the working tree, e.g. -revs "7710197 ." for before and after. The
// cold starts are interleaved (run r of every tree before run r+1 of any)
// so that the trees share the machine's load; each tree's functions get
// the environment of its own template.yaml, and every tree the same events
// (the working tree's).
//
// It needs the local stack in its environment
// (eval "$(TILECACHE_DEVSTACK_DIR=$PWD/.devstack bash infra/devstack/up.sh)");
// -no-run skips the cold starts. Every run is bounded (-timeout), every
// process listens on 127.0.0.1 only and is killed (its process group) at
// the end of its run.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"tilecache/internal/auth"
	"tilecache/internal/bench/benchenv"
	"tilecache/internal/tilestore"
	"tilecache/internal/tilestore/s3store"
)

// function is one Lambda function of template.yaml.
type function struct {
	ID  string // the template's logical id
	Dir string // functions/<Dir>
}

var functions = []function{
	{"ApiFunction", "api"},
	{"WorkerFunction", "worker"},
	{"CleanerFunction", "cleaner"},
	{"TileFunction", "tile"},
	{"LogsFunction", "logs"},
}

// heavy are the parts whose presence in a bootstrap the table names.
var heavy = []struct{ name, pkg string }{
	{"bbolt", "go.etcd.io/bbolt"},
	{"rest", "tilecache/internal/rest"},
	{"seed", "tilecache/internal/seed"},
	{"imaging", "tilecache/internal/imaging"},
	{"web", "tilecache/internal/web"},
}

// buildFlags are the Makefile's LAMBDA_FLAGS.
var buildFlags = []string{"-trimpath", "-ldflags", "-s -w", "-tags", "lambda.norpc"}

const (
	deployArch = "arm64" // Architectures: [arm64] in template.yaml
	modulePath = "tilecache"
	// The recorded request's Authorization is Basic admin:"s3cret pass"
	// (internal/testkit/lambdatest); the API gets that account.
	apiUser, apiPassword = "admin", "s3cret pass"
)

func main() {
	runs := flag.Int("runs", 5, "cold starts per function")
	timeout := flag.Duration("timeout", 60*time.Second, "bound of one cold start (start, invocation, report)")
	only := flag.String("functions", "", "comma-separated template ids or dirs to measure (default: all)")
	noRun := flag.Bool("no-run", false, "packages and sizes only, no cold starts")
	out := flag.String("o", "", "also write the markdown report to this file")
	revs := flag.String("revs", ".", "space- or comma-separated trees to measure side by side, runs interleaved: git revisions (each taken with git archive) or . for the working tree")
	flag.BoolVar(&verbose, "v", false, "print the output of the emulator and the bootstrap of each run")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(log, *runs, *timeout, *only, *noRun, *out, strings.FieldsFunc(*revs, func(r rune) bool { return r == ',' || r == ' ' })); err != nil {
		log.Error("coldstart", "err", err)
		os.Exit(1)
	}
}

// verbose: print each run's output (-v).
var verbose bool

// tree is one tree measured: the working tree or a revision's files.
type tree struct {
	label, dir string
	tpl        *template
}

// measured are one function's figures in one tree.
type measured struct {
	deps                         deps
	deploySize, hostSize         int64
	hostBootstrap                string
	env                          map[string]string
	envDropped, failures         []string
	inits, firsts, handlers, rss []float64
	firstStatus                  string
	err                          error // the function could not be built in this tree
}

func run(log *slog.Logger, runs int, timeout time.Duration, only string, noRun bool, out string, revs []string) error {
	root, err := projectRoot()
	if err != nil {
		return err
	}
	fns := functions
	if only != "" {
		fns = nil
		for _, f := range functions {
			for _, name := range strings.Split(only, ",") {
				if name == f.ID || name == f.Dir {
					fns = append(fns, f)
				}
			}
		}
		if len(fns) == 0 {
			return fmt.Errorf("-functions %q names no function of %v", only, functions)
		}
	}
	if len(revs) == 0 {
		revs = []string{"."}
	}
	tmp, err := os.MkdirTemp("", "tilecache-coldstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var trees []*tree
	for i, rev := range revs {
		t, err := checkout(root, rev, filepath.Join(tmp, fmt.Sprintf("tree%d", i)))
		if err != nil {
			return err
		}
		trees = append(trees, t)
	}

	var report bytes.Buffer
	w := io.MultiWriter(os.Stdout, &report)
	goVersion, _ := output(root, nil, "go", "env", "GOVERSION")
	var labels []string
	for _, t := range trees {
		labels = append(labels, t.label)
	}
	fmt.Fprintf(w, "Functions of template.yaml at %s (%s, %d CPUs, load at start %s)\n\n", strings.Join(labels, ", "),
		strings.TrimSpace(string(goVersion)), runtime.NumCPU(), loadAvg())

	// Packages and sizes.
	results := make([][]*measured, len(fns)) // [function][tree]
	for i, f := range fns {
		results[i] = make([]*measured, len(trees))
		for j, t := range trees {
			m := &measured{}
			results[i][j] = m
			m.err = measureBuild(t, f, m, filepath.Join(tmp, fmt.Sprintf("bin%d", j)))
			if m.err != nil {
				log.Warn("not built", "function", f.ID, "tree", t.label, "err", m.err)
				continue
			}
			log.Info("built", "function", f.ID, "tree", t.label, "internal", m.deps.internal, "others", m.deps.others, "std", m.deps.std, "bytes", m.deploySize)
		}
	}
	treeCol := func(t *tree) string {
		if len(trees) == 1 {
			return ""
		}
		return " " + t.label + " |"
	}
	treeHead, treeRule := "", ""
	if len(trees) > 1 {
		treeHead, treeRule = " tree |", "---|"
	}
	fmt.Fprintf(w, "## Packages linked and binary size\n\n")
	fmt.Fprintf(w, "`go list -deps` for linux/%s with the build's tags; sizes of `GOOS=linux CGO_ENABLED=0 go build %s`.\n\n",
		deployArch, strings.Join(quoteArgs(buildFlags), " "))
	fmt.Fprintf(w, "| function |%s tilecache packages (besides main) | other modules' packages | std packages | all | modules | heavy parts linked | bootstrap linux/%s | bootstrap linux/%s |\n", treeHead, deployArch, runtime.GOARCH)
	fmt.Fprintf(w, "|---|%s--:|--:|--:|--:|--:|---|--:|--:|\n", treeRule)
	for i, f := range fns {
		for j, t := range trees {
			m := results[i][j]
			if m.err != nil {
				fmt.Fprintf(w, "| %s |%s not built: %s |||||||\n", f.ID, treeCol(t), firstLine(m.err.Error()))
				continue
			}
			fmt.Fprintf(w, "| %s |%s %d | %d | %d | %d | %d | %s | %s | %s |\n", f.ID, treeCol(t), m.deps.internal, m.deps.others, m.deps.std,
				m.deps.internal+m.deps.others+m.deps.std, m.deps.modules, strings.Join(m.deps.heavy, ", "), mb(m.deploySize), mb(m.hostSize))
		}
	}
	fmt.Fprintln(w)
	if noRun {
		return writeReport(out, report.Bytes())
	}

	// Cold starts: run r of every tree before run r+1 of any, so that the
	// trees share the machine's load.
	rie, rieVersion, err := rieBinary(root)
	if err != nil {
		return fmt.Errorf("the Lambda Runtime Interface Emulator cannot be built: %w", err)
	}
	log.Info("emulator", "path", rie, "version", rieVersion)
	local, cleanup, err := localResources(log)
	if err != nil {
		return err
	}
	defer cleanup()
	for i, f := range fns {
		event, err := eventFor(root, f, local) // the working tree's: the same event for every tree
		if err != nil {
			return err
		}
		for j, t := range trees {
			m := results[i][j]
			if m.err == nil {
				if m.env, m.envDropped, err = t.tpl.env(f.ID, local); err != nil {
					m.err = err
				}
			}
		}
		for r := range runs {
			for j, t := range trees {
				m := results[i][j]
				if m.err != nil {
					continue
				}
				c, err := coldStart(rie, m.hostBootstrap, f, m.env, event, timeout, filepath.Join(tmp, "task-"+f.Dir))
				if err != nil {
					m.failures = append(m.failures, fmt.Sprintf("run %d: %v", r+1, err))
					log.Warn("cold start failed", "function", f.ID, "tree", t.label, "run", r+1, "err", err)
					continue
				}
				log.Info("cold start", "function", f.ID, "tree", t.label, "run", r+1, "init_ms", c.init, "first_ms", c.first, "handler_ms", c.handler, "rss_mib", c.rssMiB, "answer", c.answer)
				m.inits, m.firsts, m.handlers, m.rss = append(m.inits, c.init), append(m.firsts, c.first), append(m.handlers, c.handler), append(m.rss, c.rssMiB)
				m.firstStatus = c.answer
			}
		}
	}
	fmt.Fprintf(w, "## Cold start under the Lambda Runtime Interface Emulator\n\n")
	fmt.Fprintf(w, "aws-lambda-rie %s, bootstraps for linux/%s, %d cold starts each (a fresh emulator and process per run; the trees' runs interleaved), min / **median** / max; load at the end %s. "+
		"Init: the emulator's INIT REPORT (process start to ready for the first request); first response: invocation request to answer, init included; "+
		"handler: the invocation's duration (the emulator's INVOKE RTDONE); RSS: VmHWM of the bootstrap after the first response.\n\n", rieVersion, runtime.GOARCH, runs, loadAvg())
	fmt.Fprintf(w, "| function |%s event (answer) | init ms | first response ms | handler ms | peak RSS MiB | runs ok |\n", treeHead)
	fmt.Fprintf(w, "|---|%s---|--:|--:|--:|--:|--:|\n", treeRule)
	for i, f := range fns {
		for j, t := range trees {
			m := results[i][j]
			fmt.Fprintf(w, "| %s |%s %s (%s) | %s | %s | %s | %s | %d/%d |\n", f.ID, treeCol(t), eventName(f), m.firstStatus,
				spread(m.inits, 1), spread(m.firsts, 1), spread(m.handlers, 1), spread(m.rss, 1), len(m.inits), runs)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "Environment: template.yaml's Globals and each function's variables (each tree's own template) on the local stack (a table, a queue, a key prefix made for the run; "+
		"parameters at their defaults; `!If` conditions taken as true, the CDN deployment); the API gets TILECACHE_ACCOUNTS inline for the SSM secret. Left out, as not to be had locally:\n\n")
	for i, f := range fns {
		for j, t := range trees {
			if d := results[i][j].envDropped; len(d) > 0 {
				fmt.Fprintf(w, "- %s%s: %s\n", f.ID, strings.TrimSuffix(treeCol(t), " |"), strings.Join(d, ", "))
			}
		}
	}
	for i, f := range fns {
		for j, t := range trees {
			for _, e := range results[i][j].failures {
				fmt.Fprintf(w, "\n%s%s failed: %s\n", f.ID, strings.TrimSuffix(treeCol(t), " |"), e)
			}
		}
	}
	return writeReport(out, report.Bytes())
}

// measureBuild lists what function f links in tree t and builds its
// bootstraps into dir.
func measureBuild(t *tree, f function, m *measured, dir string) error {
	pkg := "./functions/" + f.Dir
	var err error
	if m.deps, err = listDeps(t.dir, pkg); err != nil {
		return err
	}
	deploy := filepath.Join(dir, "deploy-"+f.Dir, "bootstrap")
	if err := buildBootstrap(t.dir, pkg, deployArch, deploy); err != nil {
		return err
	}
	if m.deploySize, err = size(deploy); err != nil {
		return err
	}
	m.hostBootstrap = deploy
	if runtime.GOARCH != deployArch {
		m.hostBootstrap = filepath.Join(dir, "host-"+f.Dir, "bootstrap")
		if err := buildBootstrap(t.dir, pkg, runtime.GOARCH, m.hostBootstrap); err != nil {
			return err
		}
	}
	m.hostSize, err = size(m.hostBootstrap)
	return err
}

// checkout returns the tree of rev: the working tree for ".", else the
// revision's files written into dir by git archive (no worktree, nothing
// left in the repository).
func checkout(root, rev, dir string) (*tree, error) {
	t := &tree{dir: root}
	if rev == "." {
		short, err := output(root, nil, "git", "rev-parse", "--short", "HEAD")
		if err != nil {
			return nil, err
		}
		t.label = strings.TrimSpace(string(short))
		if st, _ := output(root, nil, "git", "status", "--porcelain", "--untracked-files=no"); len(bytes.TrimSpace(st)) > 0 {
			t.label += "+changes"
		}
	} else {
		short, err := output(root, nil, "git", "rev-parse", "--short", rev+"^{commit}")
		if err != nil {
			return nil, err
		}
		t.label = strings.TrimSpace(string(short))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, err
		}
		archive := filepath.Join(dir + ".tar")
		if _, err := output(root, nil, "git", "archive", "-o", archive, t.label); err != nil {
			return nil, err
		}
		if _, err := output(dir, nil, "tar", "-xf", archive); err != nil {
			return nil, err
		}
		os.Remove(archive)
		t.dir = dir
	}
	tpl, err := loadTemplate(filepath.Join(t.dir, "template.yaml"))
	if err != nil {
		return nil, err
	}
	t.tpl = tpl
	return t, nil
}

func loadAvg() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.ReplaceAll(line, "|", "/")
}

func writeReport(path string, data []byte) error {
	if path == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

// projectRoot is the directory of go.mod above the working directory.
func projectRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "template.yaml")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				return dir, nil
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no project root (go.mod and template.yaml) above the working directory")
		}
		dir = parent
	}
}

// output runs a command in dir with this process's environment plus env
// and returns its standard output.
func output(dir string, env []string, name string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// deps are the packages a main package links.
type deps struct {
	internal, others, std, modules int
	heavy                          []string
}

func listDeps(root, pkg string) (deps, error) {
	out, err := output(root, []string{"GOOS=linux", "GOARCH=" + deployArch, "CGO_ENABLED=0"},
		"go", "list", "-deps", "-tags", "lambda.norpc", "-f", "{{.ImportPath}} {{.Standard}} {{with .Module}}{{.Path}}{{end}}", pkg)
	if err != nil {
		return deps{}, err
	}
	var d deps
	mods := map[string]bool{}
	var all []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		all = append(all, f[0])
		switch {
		case f[1] == "true":
			d.std++
		case f[0] == modulePath || strings.HasPrefix(f[0], modulePath+"/"):
			if f[0] != strings.TrimPrefix(pkg, ".") && f[0] != modulePath+strings.TrimPrefix(pkg, ".") {
				d.internal++ // the project's packages besides the main one
			}
		default:
			d.others++
			if len(f) > 2 {
				mods[f[2]] = true
			}
		}
	}
	d.modules = len(mods)
	for _, h := range heavy {
		if slices.ContainsFunc(all, func(p string) bool { return p == h.pkg || strings.HasPrefix(p, h.pkg+"/") }) {
			d.heavy = append(d.heavy, h.name)
		}
	}
	return d, nil
}

func buildBootstrap(root, pkg, arch, out string) error {
	args := append(append([]string{"build"}, buildFlags...), "-o", out, pkg)
	_, err := output(root, []string{"GOOS=linux", "GOARCH=" + arch, "CGO_ENABLED=0"}, "go", args...)
	return err
}

func size(path string) (int64, error) {
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

func mb(n int64) string { return fmt.Sprintf("%.2f MB", float64(n)/1e6) }

func quoteArgs(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.Contains(a, " ") {
			a = strconv.Quote(a)
		}
		out[i] = a
	}
	return out
}

// spread formats min / median / max.
func spread(xs []float64, decimals int) string {
	if len(xs) == 0 {
		return "–"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	f := "%." + strconv.Itoa(decimals) + "f"
	return fmt.Sprintf(f+" / **"+f+"** / "+f, s[0], med, s[len(s)-1])
}

// The emulator's main package: a tool of go.mod, so that its version and
// checksums are pinned with the project's modules (internal/testkit/lambdatest
// builds the same).
const (
	riePackage = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"
	rieModule  = "github.com/aws/aws-lambda-runtime-interface-emulator"
)

// rieBinary builds the emulator into $TILECACHE_CACHE/tools/bin (default
// ~/.cache/tilecache, as infra/devstack caches its tools) unless a build of
// the same inputs is there, under the name internal/testkit/lambdatest gives it
// (the version and a digest of the Go version, the platform and the module
// versions of its packages), so that the tests and this program share one
// copy. It returns the path and the emulator's version.
func rieBinary(root string) (string, string, error) {
	hostEnv := []string{"CGO_ENABLED=0", "GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH}
	list, err := output(root, hostEnv, "go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}@{{.Version}}{{end}}", riePackage)
	if err != nil {
		return "", "", err
	}
	goVersion, err := output(root, nil, "go", "env", "GOVERSION")
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s %s/%s\n", strings.TrimSpace(string(goVersion)), runtime.GOOS, runtime.GOARCH)
	seen := map[string]bool{}
	version := ""
	for line := range strings.Lines(string(list)) {
		line = strings.TrimSpace(line)
		if line == "" || seen[line] {
			continue
		}
		seen[line] = true
		fmt.Fprintln(h, line)
		if v, ok := strings.CutPrefix(line, rieModule+"@"); ok {
			version = v
		}
	}
	if version == "" {
		return "", "", fmt.Errorf("go list -deps %s: no version of %s (is it a tool of go.mod?)", riePackage, rieModule)
	}
	cache := os.Getenv("TILECACHE_CACHE")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", "", err
		}
		cache = filepath.Join(home, ".cache", "tilecache")
	}
	if cache, err = filepath.Abs(cache); err != nil {
		return "", "", err
	}
	dir := filepath.Join(cache, "tools", "bin")
	path := filepath.Join(dir, "aws-lambda-rie@"+version+"-"+hex.EncodeToString(h.Sum(nil))[:12])
	if info, err := os.Stat(path); err == nil && info.Mode()&0o111 != 0 {
		return path, version, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".aws-lambda-rie.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", "", fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if info, err := os.Stat(path); err == nil && info.Mode()&0o111 != 0 {
		return path, version, nil
	}
	tmp, err := os.MkdirTemp(dir, ".aws-lambda-rie-build-")
	if err != nil {
		return "", "", err
	}
	defer os.RemoveAll(tmp)
	if _, err := output(root, hostEnv, "go", "build", "-trimpath", "-o", filepath.Join(tmp, "aws-lambda-rie"), riePackage); err != nil {
		return "", "", err
	}
	return path, version, os.Rename(filepath.Join(tmp, "aws-lambda-rie"), path)
}

// local are the local stack's resources of one run.
type local struct {
	Bucket, Table, QueueURL, Prefix, LogKey string
	Accounts                                string
	s3                                      *s3store.Store
}

func localResources(log *slog.Logger) (local, func(), error) {
	env := map[string]string{}
	cleanup, err := benchenv.AWSResources("coldstart", env)
	if err != nil {
		return local{}, nil, fmt.Errorf("the cold starts need the local stack (make bench-functions starts one; -no-run skips them): %w", err)
	}
	l := local{Bucket: env["TILECACHE_S3_BUCKET"], Table: env["TILECACHE_DYNAMODB_TABLE"], QueueURL: env["TILECACHE_SQS_QUEUE_URL"], Prefix: env["TILECACHE_KEY_PREFIX"]}
	hash, err := auth.HashPassword(apiPassword, 4) // bcrypt's least cost: the function checks it once per request
	if err != nil {
		cleanup()
		return local{}, nil, err
	}
	l.Accounts = apiUser + ":" + hash
	if l.s3, err = s3store.NewFromEnv(os.LookupEnv, l.Bucket, ""); err != nil {
		cleanup()
		return local{}, nil, err
	}
	// The log function's object: a CloudFront standard log of a few reads
	// of the demo layer's tiles, as the CDN delivers it.
	l.LogKey = l.Prefix + "-logs/E2EXAMPLE." + time.Now().UTC().Format("2006-01-02-15") + ".abcd1234.gz"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.s3.Put(ctx, l.LogKey, cloudFrontLog(time.Now()), tilestore.Meta{ContentType: "application/gzip"}); err != nil {
		cleanup()
		return local{}, nil, fmt.Errorf("write the access log for the log function: %w", err)
	}
	return l, func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var keys []string
		l.s3.List(ctx, l.Prefix, func(o tilestore.Object) error { keys = append(keys, o.Key); return nil })
		for len(keys) > 0 {
			n := min(len(keys), tilestore.DeleteBatch)
			if _, err := l.s3.Delete(ctx, keys[:n]); err != nil {
				log.Warn("clean up the bucket", "err", err)
				break
			}
			keys = keys[n:]
		}
		l.s3.Close()
		cleanup()
	}, nil
}

// cloudFrontLog is a gzip-compressed CloudFront standard log of reads of
// the demo layer's tiles (the #Fields of internal/accesslog's format).
func cloudFrontLog(at time.Time) []byte {
	var b strings.Builder
	b.WriteString("#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) " +
		"cs-uri-query cs(Cookie) x-edge-result-type x-edge-request-id x-host-header cs-protocol cs-bytes time-taken x-forwarded-for ssl-protocol " +
		"ssl-cipher x-edge-response-result-type cs-protocol-version fle-status fle-encrypted-fields c-port time-to-first-byte " +
		"x-edge-detailed-result-type sc-content-type sc-content-len sc-range-start sc-range-end\n")
	for z := range 3 {
		for x := range 2 << z {
			for y := range 1 << z {
				fmt.Fprintf(&b, "%s\t%s\tSEA19-C1\t2390\t2001:db8::1\tGET\td111111abcdef8.cloudfront.net\t/demo%%3Aworld/EPSG%%3A4326/png/default/%d/%d/%d.png\t200\t-\tMozilla/5.0%%20(X11)\t-\t-\tHit\tid==\ttiles.example.com\thttps\t163\t0.001\t-\tTLSv1.3\tTLS_AES_128_GCM_SHA256\tHit\tHTTP/2.0\t-\t-\t443\t0.001\tHit\timage/png\t2390\t-\t-\n",
					at.UTC().Format("2006-01-02"), at.UTC().Format("15:04:05"), z, x, y)
			}
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(b.String()))
	zw.Close()
	return gz.Bytes()
}

// eventFor is the function's representative event: the recorded events
// the bootstrap tests use, and for the log function an S3 notification of
// the run's log object.
func eventFor(root string, f function, l local) ([]byte, error) {
	if f.Dir == "logs" {
		var ev events.S3Event
		ev.Records = []events.S3EventRecord{{EventVersion: "2.1", EventSource: "aws:s3", EventName: "ObjectCreated:Put", AWSRegion: "us-east-1",
			S3: events.S3Entity{Bucket: events.S3Bucket{Name: l.Bucket}, Object: events.S3Object{Key: url.QueryEscape(l.LogKey), ETag: "abcd1234"}}}}
		return json.Marshal(ev)
	}
	return os.ReadFile(filepath.Join(root, "functions", f.Dir, "testdata", eventName(f)))
}

// eventName names the event a function is invoked with.
func eventName(f function) string {
	switch f.Dir {
	case "api":
		return "tasks-get.json" // GET /rest/seed.json, API Gateway HTTP API payload 2.0
	case "worker":
		return "sqs-batch-poison.json" // an SQS batch
	case "cleaner":
		return "scheduled-event.json" // the EventBridge schedule
	case "tile":
		return "not-rendered.json" // a function URL (payload 2.0) miss from CloudFront
	case "logs":
		return "S3 notification of a CloudFront log"
	}
	return "?"
}

// measure is one cold start's figures.
type measure struct {
	init, first, handler, rssMiB float64
	answer                       string
}

// coldStart starts the emulator with bootstrap as its handler, invokes it
// once with event and returns the figures; the emulator and the bootstrap
// (one process group) are killed before it returns.
func coldStart(rie, bootstrap string, f function, env map[string]string, event []byte, timeout time.Duration, taskDir string) (measure, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := os.MkdirAll(taskDir, 0o755); err != nil {
		return measure{}, err
	}
	addr, apiAddr, err := freeAddrs()
	if err != nil {
		return measure{}, err
	}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", apiAddr, bootstrap)
	cmd.Dir = taskDir // /var/task
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		// The emulator passes its environment on to the function; it sets
		// the AWS_LAMBDA_* variables, LOG_LEVEL is its own.
		if strings.HasPrefix(name, "TILECACHE_") || strings.HasPrefix(name, "AWS_LAMBDA_") || name == "_HANDLER" || name == "LOG_LEVEL" {
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, "AWS_LAMBDA_FUNCTION_NAME=tilecache-"+f.ID, "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_LAMBDA_FUNCTION_TIMEOUT="+strconv.Itoa(int(timeout/time.Second)), "_HANDLER=bootstrap", "TZ=:UTC")
	for _, k := range slices.Sorted(mapsKeys(env)) {
		cmd.Env = append(cmd.Env, k+"="+env[k])
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return measure{}, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		return measure{}, err
	}
	pw.Close()
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	lines := &logLines{grew: make(chan struct{})}
	readDone := make(chan struct{})
	go func() { lines.read(pr); close(readDone) }()
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the emulator and the bootstrap: the group started here
		<-exited
		pr.Close()
		select {
		case <-readDone:
		case <-time.After(2 * time.Second):
		}
	}()
	fail := func(format string, args ...any) (measure, error) {
		return measure{}, fmt.Errorf(format+"\n%s", append(args, lines.tail(30))...)
	}

	// Ready: the emulator listens.
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			return fail("the emulator exited at start")
		case <-ctx.Done():
			return fail("the emulator did not listen on %s in time", addr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/2015-03-31/functions/function/invocations", bytes.NewReader(event))
	if err != nil {
		return measure{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fail("invoke: %v", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	first := time.Since(start)
	if err != nil {
		return fail("read the answer: %v", err)
	}
	if res.StatusCode != http.StatusOK {
		return fail("the emulator answered %d %.300q", res.StatusCode, body)
	}
	m := measure{first: ms(first), answer: answer(body)}
	if strings.HasPrefix(m.answer, "error") {
		return fail("the function failed: %.300s", body)
	}
	// Peak RSS of the bootstrap, now that it answered.
	pid := childOf(cmd.Process.Pid, bootstrap)
	if pid == 0 {
		return fail("no bootstrap process under the emulator")
	}
	if m.rssMiB, err = vmHWM(pid); err != nil {
		return fail("%v", err)
	}
	// The emulator writes its report before it answers; wait until read.
	report := lines.wait(ctx, func(l string) bool { return strings.HasPrefix(l, "REPORT RequestId:") })
	if report == "" {
		return fail("no REPORT line")
	}
	// The REPORT line's Duration counts the init too; the runtime's
	// INVOKE RTDONE gives the invocation's own.
	done := lines.wait(ctx, func(l string) bool { return strings.Contains(l, "INVOKE RTDONE(") })
	if _, rest, ok := strings.Cut(done, " duration: "); ok {
		m.handler, _ = strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), "ms)"), 64)
	}
	initReport := lines.wait(ctx, func(l string) bool { return strings.Contains(l, "INIT REPORT(durationMs: ") })
	if _, rest, ok := strings.Cut(initReport, "INIT REPORT(durationMs: "); ok {
		m.init, _ = strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), ")"), 64)
	} else if strings.Contains(report, "Init Duration: ") {
		m.init = field(report, "Init Duration: ")
	} else {
		return fail("no init duration reported")
	}
	if verbose {
		fmt.Fprintln(os.Stderr, lines.tail(40))
	}
	return m, nil
}

func mapsKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// field is the number of milliseconds after name in a REPORT line.
func field(line, name string) float64 {
	_, rest, ok := strings.Cut(line, name)
	if !ok {
		return 0
	}
	v, _ := strconv.ParseFloat(strings.Fields(rest)[0], 64)
	return v
}

// answer summarises the function's answer: the status code of an HTTP
// response, the failures of an SQS batch, or "ok".
func answer(body []byte) string {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return "ok"
	}
	if doc["errorType"] != nil {
		return "error " + string(doc["errorType"])
	}
	if code, ok := doc["statusCode"]; ok {
		return "HTTP " + string(code)
	}
	if f, ok := doc["batchItemFailures"]; ok {
		var items []any
		json.Unmarshal(f, &items)
		return fmt.Sprintf("%d batch item failures", len(items))
	}
	return "ok"
}

// freeAddrs returns two distinct free addresses on 127.0.0.1.
func freeAddrs() (string, string, error) {
	var addrs []string
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", "", err
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs[0], addrs[1], nil
}

// childOf returns the process under parent running exe, or 0.
func childOf(parent int, exe string) int {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(stat, ')')
		f := strings.Fields(string(stat[i+1:]))
		if i < 0 || len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		if cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.HasPrefix(string(cmdline), exe+"\x00") {
			return pid
		}
	}
	return 0
}

// vmHWM is a process's peak resident set in MiB.
func vmHWM(pid int) (float64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

// logLines collects the output of the emulator and the bootstrap.
type logLines struct {
	mu    sync.Mutex
	lines []string
	grew  chan struct{}
	done  bool
}

func (l *logLines) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		l.mu.Lock()
		l.lines = append(l.lines, sc.Text())
		close(l.grew)
		l.grew = make(chan struct{})
		l.mu.Unlock()
	}
	l.mu.Lock()
	l.done = true
	close(l.grew)
	l.grew = make(chan struct{})
	l.mu.Unlock()
}

// wait returns the first line that matches, or "" once ctx ends or the
// output ended without one.
func (l *logLines) wait(ctx context.Context, match func(string) bool) string {
	for {
		l.mu.Lock()
		for _, line := range l.lines {
			if match(line) {
				l.mu.Unlock()
				return line
			}
		}
		grew, done := l.grew, l.done
		l.mu.Unlock()
		if done {
			return ""
		}
		select {
		case <-grew:
		case <-ctx.Done():
			return ""
		}
	}
}

func (l *logLines) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines[max(len(l.lines)-n, 0):], "\n")
}
