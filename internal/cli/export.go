package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"tilecache/internal/archive"
	"tilecache/internal/archive/export"
)

// ExportCmd writes a layer's stored tiles to an archive file, reading
// them as any client does: the public tiles and their documents
// (index.json, the TileJSON) of a deployment.
type ExportCmd struct {
	Layer     string    `help:"Layer name." required:""`
	GridSet   string    `help:"Grid set id (default: the layer's first with documents); PMTiles and MBTiles hold Web Mercator tiles only." name:"gridset"`
	Format    string    `help:"Tile format, e.g. image/png (default: the layer's first)."`
	Zoom      string    `help:"Levels, e.g. 0-12 or 7 (default: the grid subset's)."`
	Bbox      []float64 `help:"Bounds minx,miny,maxx,maxy in the grid set's CRS (default: the layer's coverage)." sep:","`
	To        string    `help:"Archive to write: a .pmtiles, .mbtiles or .gpkg file (replaced when it exists)." required:""`
	PublicURL string    `help:"Base URL of the public tiles, where index.json lies: the CDN's on AWS (default: --server, as tilecache serve answers both)." name:"public-url" env:"TILECACHE_PUBLIC_URL"`
	Parallel  int       `help:"Tiles fetched at once." default:"8"`
}

// exportEntry is what export reads of an index.json entry.
type exportEntry struct {
	Layer        string      `json:"layer"`
	Title        string      `json:"title"`
	Attribution  string      `json:"attribution"`
	GridSet      string      `json:"gridSet"`
	Format       string      `json:"format"`
	ParametersID string      `json:"parametersId"`
	TileWidth    int         `json:"tileWidth"`
	Origin       [2]float64  `json:"origin"`
	Extent       [4]float64  `json:"extent"`
	Bounds       *[4]float64 `json:"bounds"`
	Resolutions  []float64   `json:"resolutions"`
	MinZoom      int         `json:"minZoom"`
	MaxZoom      int         `json:"maxZoom"`
	TileJSON     string      `json:"tileJSON"`
	Tiles        string      `json:"tiles"`
	Rows         []int64     `json:"rows"`
}

func (e ExportCmd) run(ctx context.Context, c *Client, env Env) (int, error) {
	kind, ok := export.Kind(strings.TrimPrefix(filepath.Ext(e.To), "."))
	if !ok {
		return ExitError, fmt.Errorf("--to %q: the archive is a .pmtiles, .mbtiles or .gpkg file", e.To)
	}
	if e.Parallel < 1 || e.Parallel > 64 {
		return ExitError, fmt.Errorf("--parallel %d: give 1 to 64", e.Parallel)
	}
	base := e.PublicURL
	if base == "" {
		base = c.Base
	}
	indexURL, err := url.Parse(strings.TrimRight(base, "/") + "/index.json")
	if err != nil || (indexURL.Scheme != "http" && indexURL.Scheme != "https") {
		return ExitError, fmt.Errorf("--public-url %q: want an http(s) URL", base)
	}
	hc := c.httpClient()
	var index struct {
		TileSets []exportEntry `json:"tileSets"`
	}
	if err := getJSON(ctx, hc, indexURL.String(), &index); err != nil {
		return ExitError, fmt.Errorf("read the tile sets' index: %w", err)
	}
	ent, err := e.pick(index.TileSets)
	if err != nil {
		return ExitError, err
	}
	if ent.TileJSON == "" {
		return ExitError, fmt.Errorf("grid set %s of layer %s is not the Web Mercator pyramid (level z of 2^z × 2^z tiles), the only tiling %s archives hold here", ent.GridSet, e.Layer, kind)
	}
	if err := export.Check(kind, ent.Format); err != nil {
		return ExitError, err
	}
	tileFormat, _ := export.TileFormat(ent.Format)
	lo, hi := ent.MinZoom, ent.MaxZoom
	if e.Zoom != "" {
		r, err := RequestFlags{Zoom: e.Zoom}.request("seed")
		if err != nil {
			return ExitError, err
		}
		lo, hi = *r.ZoomStart, *r.ZoomStop
		if lo < ent.MinZoom || hi > ent.MaxZoom {
			return ExitError, fmt.Errorf("--zoom %s: the layer's grid subset has levels %d-%d", e.Zoom, ent.MinZoom, ent.MaxZoom)
		}
	}
	box := ent.Extent
	if len(e.Bbox) != 0 {
		if len(e.Bbox) != 4 || !(e.Bbox[0] < e.Bbox[2] && e.Bbox[1] < e.Bbox[3]) {
			return ExitError, fmt.Errorf("--bbox needs 4 numbers minx,miny,maxx,maxy with min < max")
		}
		box = [4]float64{max(box[0], e.Bbox[0]), max(box[1], e.Bbox[1]), min(box[2], e.Bbox[2]), min(box[3], e.Bbox[3])}
		if !(box[0] < box[2] && box[1] < box[3]) {
			return ExitError, fmt.Errorf("--bbox %v does not meet the layer's coverage %v", e.Bbox, ent.Extent)
		}
	}
	tjURL, _ := indexURL.Parse(ent.TileJSON)
	var tj struct {
		Center       *[3]float64     `json:"center"`
		VectorLayers json.RawMessage `json:"vector_layers"`
	}
	if err := getJSON(ctx, hc, tjURL.String(), &tj); err != nil {
		return ExitError, fmt.Errorf("read the tile set's TileJSON: %w", err)
	}
	desc := export.Description{Name: orDefault(ent.Title, ent.Layer), Attribution: ent.Attribution, TileFormat: tileFormat,
		MinZoom: lo, MaxZoom: hi, Box: box, VectorLayers: tj.VectorLayers}
	if len(e.Bbox) == 0 {
		desc.Center = tj.Center
	}
	md := export.Metadata(desc)

	levels := ent.levels(lo, hi, box)
	var total int64
	for _, r := range levels {
		total += (r.maxX - r.minX + 1) * (r.maxY - r.minY + 1)
	}
	// The placeholders are put back after resolving: a URL escapes braces.
	dirPart, tail, found := strings.Cut(ent.Tiles, "{z}")
	if !found {
		return ExitError, fmt.Errorf("index.json's tile template %q has no {z}", ent.Tiles)
	}
	tileDir, err := indexURL.Parse(dirPart)
	if err != nil {
		return ExitError, fmt.Errorf("index.json's tile template %q: %w", ent.Tiles, err)
	}
	tmpl := tileDir.String() + "{z}" + tail

	part := e.To + ".part"
	os.Remove(part)
	w, closeOut, err := export.Create(ctx, kind, part, export.Options{TileFormat: tileFormat, MaxZoom: hi})
	if err != nil {
		return ExitError, err
	}
	fmt.Fprintf(env.Stderr, "export: %s %s %s levels %d-%d: %d tiles to %s\n", ent.Layer, ent.GridSet, ent.Format, lo, hi, total, e.To)
	start := time.Now()
	var done, missing atomic.Int64
	stopProgress := progressLines(env.Stderr, total, &done, &missing, start)
	err = fetchTiles(ctx, hc, tmpl, levels, e.Parallel, func(t fetched) error {
		done.Add(1)
		if t.data == nil {
			missing.Add(1)
			return nil
		}
		data, err := export.TileData(tileFormat, t.data, t.gzip)
		if err != nil {
			return fmt.Errorf("tile %d/%d/%d: %w", t.z, t.x, t.y, err)
		}
		return w.Put(ctx, t.z, t.x, t.y, data)
	})
	stopProgress()
	if err == nil {
		err = w.Close(ctx, md)
		if cerr := closeOut(); err == nil {
			err = cerr
		}
	} else {
		w.Abort()
		closeOut()
	}
	if err == nil {
		err = os.Rename(part, e.To)
	}
	if err != nil {
		os.Remove(part)
		if errors.Is(err, archive.ErrNoTiles) {
			return ExitError, fmt.Errorf("export: none of the %d tiles is stored (blank or not seeded): %w", total, err)
		}
		return ExitError, fmt.Errorf("export: %w", err)
	}
	took := time.Since(start)
	fmt.Fprintf(env.Stderr, "export: %d tiles written, %d not stored (blank or not seeded), in %s (%.0f tiles/s)\n",
		done.Load()-missing.Load(), missing.Load(), took.Round(time.Millisecond), float64(done.Load())/max(took.Seconds(), 1e-3))
	return ExitDone, nil
}

// pick finds the tile set of the command's layer, grid set and format
// (default parameters).
func (e ExportCmd) pick(sets []exportEntry) (exportEntry, error) {
	var names []string
	for _, s := range sets {
		if s.Layer != e.Layer || s.ParametersID != "default" {
			continue
		}
		names = append(names, s.GridSet+" "+s.Format)
		if (e.GridSet == "" || s.GridSet == e.GridSet) && (e.Format == "" || s.Format == e.Format) {
			return s, nil
		}
	}
	if len(names) == 0 {
		return exportEntry{}, fmt.Errorf("layer %s has no tile set in index.json (an unknown layer, or one whose tile sets have no documents yet)", e.Layer)
	}
	return exportEntry{}, fmt.Errorf("layer %s has no tile set of grid set %q and format %q; it has: %s", e.Layer, e.GridSet, e.Format, strings.Join(names, ", "))
}

// levelRange is the tiles of one level to export, rows from the bottom.
type levelRange struct {
	z                      int
	minX, minY, maxX, maxY int64
}

// levels returns the tiles of levels lo..hi meeting box (grid units).
func (ent exportEntry) levels(lo, hi int, box [4]float64) []levelRange {
	var out []levelRange
	for z := lo; z <= hi && z < len(ent.Resolutions) && z < len(ent.Rows); z++ {
		span := ent.Resolutions[z] * float64(ent.TileWidth)
		n := ent.Rows[z]
		clamp := func(v float64) int64 { return min(max(int64(v), 0), n-1) }
		const eps = 1e-9
		r := levelRange{z: z,
			minX: clamp(math.Floor((box[0]-ent.Origin[0])/span + eps)),
			minY: clamp(math.Floor((box[1]-ent.Origin[1])/span + eps)),
			maxX: clamp(math.Ceil((box[2]-ent.Origin[0])/span-eps) - 1),
			maxY: clamp(math.Ceil((box[3]-ent.Origin[1])/span-eps) - 1),
		}
		out = append(out, r)
	}
	return out
}

// fetched is one tile read: data nil when the deployment has none.
type fetched struct {
	z    int
	x, y int64 // y from the top
	data []byte
	gzip bool
}

// fetchTiles GETs every tile of levels from the key template (rows from
// the bottom), parallel at once, and hands each to put, one at a time.
func fetchTiles(ctx context.Context, hc *http.Client, tmpl string, levels []levelRange, parallel int, put func(fetched) error) error {
	g, ctx := errgroup.WithContext(ctx)
	jobs := make(chan fetched)
	results := make(chan fetched, parallel)
	g.Go(func() error {
		defer close(jobs)
		for _, r := range levels {
			rows := int64(1) << r.z
			for y := r.maxY; y >= r.minY; y-- {
				for x := r.minX; x <= r.maxX; x++ {
					select {
					case jobs <- fetched{z: r.z, x: x, y: rows - 1 - y}:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
			}
		}
		return nil
	})
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		g.Go(func() error {
			defer wg.Done()
			for j := range jobs {
				rows := int64(1) << j.z
				u := strings.NewReplacer("{z}", strconv.Itoa(j.z), "{x}", strconv.FormatInt(j.x, 10), "{y}", strconv.FormatInt(rows-1-j.y, 10)).Replace(tmpl)
				data, gz, err := getTile(ctx, hc, u)
				if err != nil {
					return err
				}
				j.data, j.gzip = data, gz
				select {
				case results <- j:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return nil
		})
	}
	go func() { wg.Wait(); close(results) }()
	g.Go(func() error {
		for r := range results {
			if err := put(r); err != nil {
				return err
			}
		}
		return nil
	})
	return g.Wait()
}

// getTile GETs one tile as stored (its Content-Encoding kept); a 404 is
// no tile.
func getTile(ctx context.Context, hc *http.Client, u string) ([]byte, bool, error) {
	for try := 0; ; try++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, false, err
		}
		// Asked for explicitly, so the transport hands the bytes as stored.
		req.Header.Set("Accept-Encoding", "gzip")
		res, err := hc.Do(req)
		if err == nil {
			data, rerr := io.ReadAll(io.LimitReader(res.Body, export.MaxTile+1))
			res.Body.Close()
			switch {
			case rerr != nil:
				err = rerr
			case res.StatusCode == http.StatusNotFound:
				return nil, false, nil
			case res.StatusCode == http.StatusOK && len(data) > export.MaxTile:
				return nil, false, fmt.Errorf("GET %s: a tile of more than %d bytes", u, export.MaxTile)
			case res.StatusCode == http.StatusOK:
				return data, res.Header.Get("Content-Encoding") == "gzip", nil
			case res.StatusCode < 500 && res.StatusCode != http.StatusTooManyRequests:
				return nil, false, fmt.Errorf("GET %s: %s", u, (&statusError{Status: res.StatusCode, Msg: string(data)}).Error())
			default:
				err = fmt.Errorf("GET %s: HTTP %d", u, res.StatusCode)
			}
		}
		if try >= 4 || ctx.Err() != nil {
			return nil, false, err
		}
		t := time.NewTimer(time.Duration(250<<try) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, false, ctx.Err()
		case <-t.C:
		}
	}
}

// getJSON GETs a JSON document into v.
func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, 64<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %w", u, &statusError{Status: res.StatusCode, Msg: string(data)})
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

// progressLines prints the export's progress to w every 2 seconds until
// the returned stop is called.
func progressLines(w io.Writer, total int64, done, missing *atomic.Int64, start time.Time) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				d := done.Load()
				rate := float64(d) / max(time.Since(start).Seconds(), 1e-3)
				eta := ""
				if rate > 0 && d < total {
					eta = fmt.Sprintf(", about %s left", (time.Duration(float64(total-d)/rate) * time.Second).Round(time.Second))
				}
				fmt.Fprintf(w, "export: %d/%d tiles (%.1f%%), %d not stored, %.0f tiles/s%s\n", d, total, 100*float64(d)/float64(max(total, 1)), missing.Load(), rate, eta)
			}
		}
	}()
	return func() { close(quit); <-finished }
}
