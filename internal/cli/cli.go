package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/alecthomas/kong"
	"golang.org/x/term"

	"tilecache/internal/task"
)

// Exit codes.
const (
	ExitDone        = 0   // every task of the request finished DONE
	ExitError       = 1   // the request could not be made (bad input, server error)
	ExitAborted     = 2   // a task was aborted (tile failures) or killed
	ExitInterrupted = 130 // Ctrl-C: the tasks go on on the server
)

// Globals are the flags every command takes.
type Globals struct {
	Server   string `help:"Base URL of the server, under which /rest lives (GeoWebCache: https://host/geoserver/gwc)." env:"TILECACHE_URL" default:"${default_server}"`
	User     string `help:"User name (else from the credentials file)." env:"TILECACHE_USER"`
	Password string `help:"Password; prefer the environment or the credentials file, a flag shows in the process list." env:"TILECACHE_PASSWORD"`
	Token    string `help:"API token (<id>.<secret>, from POST /rest/tokens.json), sent as Authorization: Bearer instead of a user and password; prefer the environment, a flag shows in the process list." env:"TILECACHE_TOKEN"`
	Netrc    string `help:"netrc-style credentials file, mode 600: 'machine HOST login USER password PASSWORD'; its 'default' entry goes only to the host of TILECACHE_URL (else 127.0.0.1)." env:"TILECACHE_NETRC" default:"~/.netrc"`
}

// RequestFlags describe a seed, reseed or truncate request.
type RequestFlags struct {
	Layer       string            `arg:"" help:"Layer name."`
	GridSet     string            `help:"Grid set id, e.g. EPSG:900913 (default: the layer's first)." name:"gridset"`
	Zoom        string            `help:"Levels, e.g. 0-12 or 7 (default: the grid subset's)."`
	Bbox        []float64         `help:"Bounds minx,miny,maxx,maxy in the grid set's CRS." sep:","`
	Format      string            `help:"Tile format, e.g. image/png (default: the layer's first)."`
	Param       map[string]string `help:"Parameter KEY=VALUE (repeatable), e.g. --param STYLES=night."`
	Threads     int               `help:"threadCount: tasks that split the request." default:"1"`
	Retries     *int              `help:"tileFailureRetryCount (-1: abort on the first failure)."`
	RetryWait   *int              `help:"tileFailureRetryWaitTime in ms."`
	MaxFailures *int              `help:"totalFailuresBeforeAborting."`
	Geometry    string            `help:"File holding the area to work: GeoJSON (a geometry, Feature or FeatureCollection, in EPSG:4326) or WKT (EWKT's SRID=n; gives its CRS); '-' reads standard input. Only the tiles it meets are worked."`
	Buffer      float64           `help:"Buffer around the geometry in metres (lines and points need one)."`
	Tiles       string            `help:"File of tiles to work, one z/x/y per line as osm2pgsql and imposm write expiry lists ('-' reads standard input): exactly the metatiles holding them are worked."`
	XYZ         bool              `help:"The --tiles rows count from the top (XYZ, as osm2pgsql and imposm write them), not from the bottom (TMS)." name:"xyz"`
	ParentsTo   *int              `help:"With --tiles: also the tiles holding each listed tile at every level from this one up to its own." name:"parents-to"`
	ChildrenTo  *int              `help:"With --tiles: also the tiles each listed tile holds at every level below its own down to this one." name:"children-to"`
}

func (f RequestFlags) request(typ string) (SeedRequest, error) {
	r := SeedRequest{Name: f.Layer, GridSetID: f.GridSet, Format: f.Format, Type: typ, Retries: f.Retries, RetryWait: f.RetryWait, MaxFailures: f.MaxFailures}
	if f.Threads != 0 {
		r.ThreadCount = &f.Threads
	}
	if f.Zoom != "" {
		lo, hi, ok := strings.Cut(f.Zoom, "-")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b, err2 := strconv.Atoi(strings.TrimSpace(hi))
		if err1 != nil || err2 != nil || a < 0 || b < a {
			return r, fmt.Errorf("--zoom %q: want a level or a range such as 0-12", f.Zoom)
		}
		r.ZoomStart, r.ZoomStop = &a, &b
	}
	if len(f.Bbox) != 0 {
		if len(f.Bbox) != 4 {
			return r, fmt.Errorf("--bbox needs 4 numbers minx,miny,maxx,maxy, got %d", len(f.Bbox))
		}
		r.Bounds = &bounds{}
		copy(r.Bounds.Coords.Double[:], f.Bbox)
	}
	if f.Tiles != "" {
		if f.Geometry != "" {
			return r, fmt.Errorf("give --tiles or --geometry, not both")
		}
		r.Tiles, r.XYZ, r.ParentsTo, r.ChildrenTo = f.Tiles, f.XYZ, f.ParentsTo, f.ChildrenTo
	} else if f.XYZ || f.ParentsTo != nil || f.ChildrenTo != nil {
		return r, fmt.Errorf("--xyz, --parents-to and --children-to need --tiles")
	}
	if f.Geometry != "" {
		g, err := readGeometry(f.Geometry)
		if err != nil {
			return r, err
		}
		r.Geometry = g
		if f.Buffer != 0 {
			r.Buffer = &f.Buffer
		}
	} else if f.Buffer != 0 {
		return r, fmt.Errorf("--buffer needs --geometry")
	}
	if len(f.Param) > 0 {
		r.Parameters = &parameters{}
		keys := make([]string, 0, len(f.Param))
		for k := range f.Param {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			r.Parameters.Entry = append(r.Parameters.Entry, [2]string{k, f.Param[k]})
		}
	}
	return r, nil
}

// readGeometry reads a geometry file ('-': standard input) as the
// request's geometry field: a GeoJSON object as it is, WKT as a string.
func readGeometry(path string) (json.RawMessage, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(os.Stdin, maxGeometryBytes+1))
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("--geometry: %w", err)
	}
	if len(data) > maxGeometryBytes {
		return nil, fmt.Errorf("--geometry: %s is larger than %d bytes, the most a request can carry; simplify the geometry", path, maxGeometryBytes)
	}
	text := strings.TrimSpace(string(data))
	if text == "" {
		return nil, fmt.Errorf("--geometry: %s is empty", path)
	}
	if strings.HasPrefix(text, "{") {
		if !json.Valid([]byte(text)) {
			return nil, fmt.Errorf("--geometry: %s is not valid JSON", path)
		}
		return json.RawMessage(text), nil
	}
	return json.Marshal(text)
}

// maxGeometryBytes keeps a request with its geometry under the server's
// 1 MiB body limit.
const maxGeometryBytes = 1000 << 10

// SeedCmd submits a request and follows it.
type SeedCmd struct {
	RequestFlags
	DryRun   bool          `help:"Print the estimate instead of seeding (tilecache servers only)." name:"dry-run"`
	Detach   bool          `help:"Submit and return without following the tasks."`
	Progress string        `help:"Progress display: auto (bars on a terminal, lines otherwise), bars or lines." enum:"auto,bars,lines" default:"auto"`
	Every    time.Duration `help:"Interval of the progress lines." default:"5s"`
}

// EstimateCmd prints a dry-run estimate.
type EstimateCmd struct {
	RequestFlags
	Type string `help:"Request type." enum:"seed,reseed,truncate" default:"seed"`
}

// TasksCmd lists tasks.
type TasksCmd struct {
	Layer string `arg:"" optional:"" help:"Layer (default: all layers)."`
}

// KillCmd kills tasks.
type KillCmd struct {
	Layer string `arg:"" optional:"" help:"Layer (default: all layers)."`
	Which string `help:"Which tasks." enum:"running,pending,all" default:"all"`
}

type root struct {
	Globals
	Seed     SeedCmd     `cmd:"" help:"Seed a layer: render and store the tiles that are missing, then follow the tasks."`
	Reseed   SeedCmd     `cmd:"" help:"Reseed a layer: render and store every tile, then follow the tasks."`
	Truncate SeedCmd     `cmd:"" help:"Truncate a layer: delete its tiles in the range, then follow the tasks."`
	Estimate EstimateCmd `cmd:"" help:"Estimate a request: tiles per level, requests, bytes, time and AWS cost."`
	Tasks    TasksCmd    `cmd:"" help:"List the tasks: processed, total, remaining, id, status."`
	Kill     KillCmd     `cmd:"" help:"Kill the tasks of a layer (or all)."`
	Quota    QuotaCmd    `cmd:"" help:"Disk quota: count the tile reads of access logs."`
	Layers   LayersCmd   `cmd:"" help:"Layers: list or read the server's, propose some from a WMS's capabilities, import a GeoWebCache configuration."`
	Export   ExportCmd   `cmd:"" help:"Export a layer's stored tiles to a PMTiles, MBTiles or GeoPackage file, read from the deployment's public tiles."`
}

// Env is what a command runs with; tests give their own.
type Env struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Terminal reports whether Stdout is a terminal (progress bars, and
	// Ctrl-C asks whether to kill).
	Terminal bool
	// Interrupt delivers Ctrl-C; nil: the process's SIGINT.
	Interrupt <-chan os.Signal
	// HTTP makes the requests; nil: a client with a one-minute timeout.
	HTTP *http.Client
}

// Commands are the subcommands Run handles.
var Commands = []string{"seed", "reseed", "truncate", "estimate", "tasks", "kill", "quota", "layers", "export"}

// Main runs a command with the process's streams and returns the exit code.
func Main(ctx context.Context, args []string) int {
	return Run(ctx, args, Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Terminal: term.IsTerminal(int(os.Stdout.Fd()))})
}

// Run parses args (a command of Commands and its flags) and runs it.
func Run(ctx context.Context, args []string, env Env) int {
	var cli root
	exit := -1
	parser, err := kong.New(&cli, kong.Name("tilecache"),
		kong.Description("Seed, reseed, truncate and follow tiles on a tilecache or GeoWebCache server."),
		kong.Writers(env.Stdout, env.Stderr), kong.Exit(func(code int) { exit = code }),
		kong.UsageOnError(), kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		kong.Vars{"default_server": defaultServer})
	if err != nil {
		fmt.Fprintln(env.Stderr, "tilecache:", err)
		return ExitError
	}
	kctx, err := parser.Parse(args)
	if exit >= 0 {
		return exit // --help
	}
	if err != nil {
		fmt.Fprintln(env.Stderr, "tilecache:", err)
		return ExitError
	}
	var code int
	// The commands that read files or a WMS, not the server.
	switch cmd := kctx.Command(); {
	case strings.HasPrefix(cmd, "layers from-capabilities"):
		code, err = cli.Layers.FromCapabilities.run(ctx, env)
		return finish(env, code, err)
	case strings.HasPrefix(cmd, "layers import") && !cli.Layers.Import.needsServer():
		code, err = cli.Layers.Import.print(env)
		return finish(env, code, err)
	}
	c, err := cli.client(env)
	if err != nil {
		fmt.Fprintln(env.Stderr, "tilecache:", err)
		return ExitError
	}
	switch cmd := kctx.Command(); {
	case strings.HasPrefix(cmd, "seed"):
		code, err = cli.Seed.run(ctx, c, "seed", env)
	case strings.HasPrefix(cmd, "reseed"):
		code, err = cli.Reseed.run(ctx, c, "reseed", env)
	case strings.HasPrefix(cmd, "truncate"):
		code, err = cli.Truncate.run(ctx, c, "truncate", env)
	case strings.HasPrefix(cmd, "estimate"):
		code, err = cli.Estimate.run(ctx, c, env)
	case strings.HasPrefix(cmd, "tasks"):
		code, err = cli.Tasks.run(ctx, c, env)
	case strings.HasPrefix(cmd, "kill"):
		code, err = cli.Kill.run(ctx, c, env)
	case strings.HasPrefix(cmd, "quota ingest-logs"):
		code, err = cli.Quota.IngestLogs.run(ctx, c, env)
	case strings.HasPrefix(cmd, "layers list"):
		code, err = cli.Layers.List.run(ctx, c, env)
	case strings.HasPrefix(cmd, "layers get"):
		code, err = cli.Layers.Get.run(ctx, c, env)
	case strings.HasPrefix(cmd, "layers import"):
		code, err = cli.Layers.Import.run(ctx, c, env)
	case strings.HasPrefix(cmd, "export"):
		code, err = cli.Export.run(ctx, c, env)
	}
	return finish(env, code, err)
}

// finish prints a command's error and returns its exit code.
func finish(env Env, code int, err error) int {
	if err != nil {
		fmt.Fprintln(env.Stderr, "tilecache:", err)
		if code == 0 {
			code = ExitError
		}
	}
	return code
}

// client makes the Client of the command. Without a password from a flag
// or the environment it reads the credentials file, under the rules of
// credentials.go: a file open to group or others is an error, and its
// default entry only goes to the command's own host (else a note says
// the request goes out without credentials).
func (g Globals) client(env Env) (*Client, error) {
	u, err := url.Parse(g.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want an http(s) URL such as %s", g.Server, defaultServer)
	}
	c := &Client{Base: g.Server, User: g.User, Password: g.Password, Token: g.Token, HTTP: env.HTTP, Stderr: env.Stderr}
	if c.Token != "" {
		// A token replaces the account's credentials.
		c.User, c.Password = "", ""
	}
	if c.Password == "" && c.Token == "" {
		own := ownHost(os.LookupEnv)
		m, err := credentials(g.Netrc, u.Hostname(), own, g.User)
		if err != nil {
			return nil, err
		}
		if m.defaultWithheld {
			fmt.Fprintf(env.Stderr, "tilecache: no credentials for %s: the default entry of %s is only sent to this command's own host %s (TILECACHE_URL, else %s), so the request goes out without them; add a 'machine %s login USER password PASSWORD' entry or use --user and --password\n",
				u.Hostname(), m.file, ownHostName(own), defaultServer, u.Hostname())
		}
		if m.password != "" {
			c.User, c.Password = m.login, m.password
		}
	}
	return c, nil
}

func ownHostName(own string) string {
	if own == "" {
		return "(none: TILECACHE_URL names no host)"
	}
	return own
}

func (s SeedCmd) run(ctx context.Context, c *Client, typ string, env Env) (int, error) {
	req, err := s.request(typ)
	if err != nil {
		return ExitError, err
	}
	if s.DryRun {
		return printEstimate(ctx, c, s.Layer, req, env)
	}
	rows, err := c.Submit(ctx, s.Layer, req)
	if err != nil {
		return ExitError, err
	}
	var ids []int64
	for _, r := range rows {
		ids = append(ids, r[3])
	}
	if len(ids) == 0 {
		// GeoWebCache answers a seed request without its tasks: follow
		// the layer's.
		all, err := c.Tasks(ctx, s.Layer)
		if err != nil {
			return ExitError, err
		}
		for _, r := range all {
			if r[4] == Pending || r[4] == Running {
				ids = append(ids, r[3])
			}
		}
	}
	fmt.Fprintf(env.Stderr, "%s %s: %d task(s) %v\n", typ, s.Layer, len(ids), ids)
	if s.Detach || len(ids) == 0 {
		return ExitDone, nil
	}
	mode := s.Progress
	if mode == "auto" {
		mode = "lines"
		if env.Terminal {
			mode = "bars"
		}
	}
	return follow(ctx, c, s.Layer, ids, mode, s.Every, env)
}

func (e EstimateCmd) run(ctx context.Context, c *Client, env Env) (int, error) {
	req, err := e.request(e.Type)
	if err != nil {
		return ExitError, err
	}
	return printEstimate(ctx, c, e.Layer, req, env)
}

func printEstimate(ctx context.Context, c *Client, layer string, req SeedRequest, env Env) (int, error) {
	est, err := c.Estimate(ctx, layer, req)
	if err != nil {
		return ExitError, err
	}
	writeEstimate(env.Stdout, layer, req.Type, est)
	return ExitDone, nil
}

func (t TasksCmd) run(ctx context.Context, c *Client, env Env) (int, error) {
	rows, err := c.Tasks(ctx, t.Layer)
	if err != nil {
		return ExitError, err
	}
	w := tabwriter.NewWriter(env.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "id\tstatus\tprocessed\ttotal\tremaining\t")
	for _, r := range rows {
		fmt.Fprintf(w, "%d\t%s\t%d\t%d\t%d\t\n", r[3], task.Status(r[4]), r[0], r[1], r[2])
	}
	w.Flush()
	return ExitDone, nil
}

func (k KillCmd) run(ctx context.Context, c *Client, env Env) (int, error) {
	if err := c.Kill(ctx, k.Layer, k.Which); err != nil {
		return ExitError, err
	}
	what := "all layers"
	if k.Layer != "" {
		what = k.Layer
	}
	fmt.Fprintf(env.Stdout, "killed the %s tasks of %s\n", k.Which, what)
	return ExitDone, nil
}

// askKill asks on the terminal whether to kill the tasks after a Ctrl-C.
func askKill(env Env, layer string, n int) bool {
	fmt.Fprintf(env.Stdout, "\nKill the %d unfinished task(s) of %s on the server? [y/N] ", n, layer)
	line, err := bufio.NewReader(env.Stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return false
	}
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

func interrupts(env Env) (<-chan os.Signal, func()) {
	if env.Interrupt != nil {
		return env.Interrupt, func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	return ch, func() { signal.Stop(ch) }
}
