package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"tilecache/internal/gwc"
	"tilecache/internal/wmscaps"
)

// LayersCmd groups the layer commands.
type LayersCmd struct {
	List             LayersListCmd        `cmd:"" help:"List the server's layers (GET /rest/layers)."`
	Get              LayersGetCmd         `cmd:"" help:"Print a layer's wmsLayer document (GET /rest/layers/{name}.xml)."`
	FromCapabilities FromCapabilitiesCmd  `cmd:"" name:"from-capabilities" help:"Read a WMS GetCapabilities and propose cached layers: a layer file to review (or wmsLayer documents)."`
	Import           ImportGeoWebCacheCmd `cmd:"" help:"Read a GeoWebCache configuration (geowebcache.xml) and create its grid sets and WMS layers on the server (PUT /rest/gridsets, /rest/layers), or with --print print them as a layer file; what cannot be mapped is listed on stderr."`
}

// LayersListCmd lists the layers of the server.
type LayersListCmd struct{}

func (LayersListCmd) run(ctx context.Context, c *Client, env Env) (int, error) {
	b, err := c.do(ctx, http.MethodGet, "/rest/layers.xml", "", nil)
	if err != nil {
		return ExitError, err
	}
	_, err = env.Stdout.Write(b)
	return 0, err
}

// LayersGetCmd prints one layer's document.
type LayersGetCmd struct {
	Layer string `arg:"" help:"Layer name."`
}

func (g LayersGetCmd) run(ctx context.Context, c *Client, env Env) (int, error) {
	b, err := c.do(ctx, http.MethodGet, "/rest/layers/"+layerPath(g.Layer)+".xml", "", nil)
	if err != nil {
		return ExitError, err
	}
	_, err = env.Stdout.Write(b)
	return 0, err
}

// FromCapabilitiesCmd proposes layers from a WMS's capabilities.
type FromCapabilitiesCmd struct {
	URL     string   `arg:"" help:"The WMS's address (its GetCapabilities request is added when the URL has no REQUEST), or - for a capabilities document on stdin."`
	Layers  []string `help:"The WMS layers to propose (default: every named layer)." sep:","`
	Version string   `help:"WMS version to ask for." enum:"1.1.1,1.3.0" default:"1.3.0"`
	Near    bool     `help:"The WMS runs next to the seeder (same host or region): ask it for uncompressed TIFF when it offers it, else PNG."`
	Format  string   `help:"Output: a layer file (yaml) or wmsLayer documents (xml)." enum:"yaml,xml" default:"yaml"`
	Out     string   `help:"With --format xml: write one {layer}.xml per layer into this directory (required for more than one layer)." type:"path"`
}

// capsTimeout bounds the GetCapabilities request, capsMaxBytes its
// document.
const (
	capsTimeout  = time.Minute
	capsMaxBytes = 32 << 20
)

func (f FromCapabilitiesCmd) run(ctx context.Context, env Env) (int, error) {
	data, base, err := f.fetch(ctx, env)
	if err != nil {
		return ExitError, err
	}
	caps, err := wmscaps.Parse(data)
	if err != nil {
		return ExitError, err
	}
	// The address of GetMap: the capabilities' own, else the URL asked.
	proposals, err := wmscaps.Propose(caps, f.Layers, wmscaps.Options{URL: orDefault(caps.GetMapURL, base), Near: f.Near})
	if err != nil {
		return ExitError, err
	}
	if f.Format == "yaml" {
		file, err := gwc.LayerFile(nil, proposals)
		if err != nil {
			return ExitError, err
		}
		fmt.Fprintf(env.Stdout, "# Proposed from the capabilities of %s (WMS %s, %s): review, then add to the layer file.\n",
			orDefault(base, "stdin"), caps.Version, orDefault(caps.Title, "untitled"))
		_, err = env.Stdout.Write(file)
		return 0, err
	}
	if len(proposals) > 1 && f.Out == "" {
		return ExitError, fmt.Errorf("%d layers proposed: give --out DIR for their documents, or --layers one of them", len(proposals))
	}
	for _, p := range proposals {
		doc, err := wmscaps.LayerDocument(p)
		if err != nil {
			return ExitError, err
		}
		if f.Out == "" {
			_, err = env.Stdout.Write(doc)
			return 0, err
		}
		path := filepath.Join(f.Out, url.PathEscape(p.Name)+".xml")
		if err := os.WriteFile(path, doc, 0o644); err != nil {
			return ExitError, fmt.Errorf("write %s: %w", path, err)
		}
		fmt.Fprintln(env.Stderr, "wrote", path)
	}
	return 0, nil
}

// fetch reads the capabilities document and returns the server's address
// (the URL without its query; "" for stdin).
func (f FromCapabilitiesCmd) fetch(ctx context.Context, env Env) ([]byte, string, error) {
	if f.URL == "-" {
		data, err := io.ReadAll(io.LimitReader(env.Stdin, capsMaxBytes))
		return data, "", err
	}
	return wmscaps.Fetch(ctx, env.HTTP, f.URL, wmscaps.FetchOptions{Version: f.Version, Timeout: capsTimeout, MaxBytes: capsMaxBytes})
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ImportGeoWebCacheCmd converts a geowebcache.xml.
type ImportGeoWebCacheCmd struct {
	File    string `arg:"" help:"GeoWebCache's configuration file (geowebcache.xml), or - for stdin." type:"path"`
	Print   bool   `help:"Print a layer file instead of creating the grid sets and layers on the server (for a layer file kept in git)."`
	Replace bool   `help:"Replace grid sets and layers the server already has (by default they are left as they are and named)."`
}

// errNotAllImported makes the exit status 1 when some items could not be
// mapped or created (the others are still printed or created).
var errNotAllImported = errors.New("some items could not be imported (listed above)")

// needsServer reports whether the command talks to the server.
func (i ImportGeoWebCacheCmd) needsServer() bool { return !i.Print }

func (i ImportGeoWebCacheCmd) read(env Env) (gwc.Configuration, error) {
	var data []byte
	var err error
	if i.File == "-" {
		data, err = io.ReadAll(io.LimitReader(env.Stdin, 32<<20))
	} else {
		data, err = os.ReadFile(i.File)
	}
	if err != nil {
		return gwc.Configuration{}, fmt.Errorf("read the configuration: %w", err)
	}
	conf, err := gwc.DecodeConfiguration(data)
	if err != nil {
		return conf, err
	}
	for _, n := range conf.NotMapped {
		fmt.Fprintf(env.Stderr, "not mapped (no counterpart in tilecache): %s\n", n)
	}
	for _, p := range conf.Problems {
		fmt.Fprintf(env.Stderr, "not imported: %s: %s\n", p.Item, p.Message)
	}
	if len(conf.Layers) == 0 && len(conf.GridSets) == 0 {
		return conf, fmt.Errorf("nothing could be imported from %s", i.File)
	}
	return conf, nil
}

func (i ImportGeoWebCacheCmd) print(env Env) (int, error) {
	conf, err := i.read(env)
	if err != nil {
		return ExitError, err
	}
	file, err := gwc.LayerFile(conf.GridSets, conf.Layers)
	if err != nil {
		return ExitError, err
	}
	fmt.Fprintf(env.Stdout, "# Imported from %s: %d grid sets, %d layers.\n", i.File, len(conf.GridSets), len(conf.Layers))
	if _, err := env.Stdout.Write(file); err != nil {
		return ExitError, err
	}
	for _, l := range conf.Layers {
		fmt.Fprintf(env.Stderr, "imported layer %s\n", l.Name)
	}
	if len(conf.Problems) > 0 {
		return ExitError, errNotAllImported
	}
	return 0, nil
}

// run creates the configuration's grid sets, then its layers, on the
// server, each with one PUT of its GeoWebCache document (the path of every
// other client); each item is created whole or not at all. Items the
// server has are left alone unless --replace.
func (i ImportGeoWebCacheCmd) run(ctx context.Context, c *Client, env Env) (int, error) {
	conf, err := i.read(env)
	if err != nil {
		return ExitError, err
	}
	// The documents, as the server will read them: checked together (a
	// layer may use a grid set of the file).
	cat, err := gwc.Catalogue(conf.GridSets, conf.Layers)
	if err != nil {
		return ExitError, err
	}
	failed := len(conf.Problems) > 0
	put := func(kind, name, path string, doc []byte) {
		headers := []string{"If-None-Match", "*"}
		if i.Replace {
			headers = nil
		}
		_, err := c.do(ctx, http.MethodPut, path, "text/xml", doc, headers...)
		var se *statusError
		switch {
		case err == nil:
			fmt.Fprintf(env.Stdout, "created %s %s\n", kind, name)
		case errors.As(err, &se) && se.Status == http.StatusPreconditionFailed:
			fmt.Fprintf(env.Stdout, "exists, left as it is (--replace replaces it): %s %s\n", kind, name)
		default:
			failed = true
			fmt.Fprintf(env.Stderr, "not created: %s %s: %v\n", kind, name, err)
		}
	}
	for _, g := range conf.GridSets {
		gs, info, _ := cat.GridSet(g.ID)
		doc, err := gwc.EncodeGridSet(gs, info)
		if err != nil {
			return ExitError, err
		}
		put("grid set", g.ID, "/rest/gridsets/"+layerPath(g.ID)+".xml", doc)
	}
	for _, l := range conf.Layers {
		ll, _ := cat.Layer(l.Name)
		doc, err := gwc.EncodeLayer(ll)
		if err != nil {
			return ExitError, err
		}
		put("layer", l.Name, "/rest/layers/"+layerPath(l.Name)+".xml", doc)
	}
	if failed {
		return ExitError, errNotAllImported
	}
	return 0, nil
}
