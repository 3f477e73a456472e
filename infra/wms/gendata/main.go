// Command gendata writes the synthetic dataset that the test WMS of
// infra/wms serves: a world background (hillshade raster, star polygons,
// random-walk lines, labelled points) and a sparse dataset (a few polygons
// inside lon 0..45, lat 0..45 only), all in EPSG:4326.
//
// It is deterministic: every dataset draws from its own seeded random
// stream, so the same program writes the same features and pixels on every
// run. It writes GeoJSON and a raw EHdr raster into <out>/src, then converts
// them with the GDAL command-line tools (ogr2ogr, gdaldem, gdaladdo) and, when
// installed, MapServer's shptree:
//
//	polygons.shp   3000 star polygons (20-60 vertices, radius 0.05-8 deg): id, cls 0..5, name
//	lines.shp      3000 random walks (30-120 vertices): id, cls 0..2
//	points.shp     8000 points: id, cls 0..2, name
//	sparse.shp     12 star polygons inside lon 0..45, lat 0..45: id, name
//	hillshade.tif  3600x1800 (0.1 deg) Byte hillshade of a synthetic DEM,
//	               tiled, DEFLATE, overviews 2..32
//
// Usage: go run ./infra/wms/gendata -out DIR (DIR must not exist or be empty).
// infra/wms/up.sh runs it once and caches the result.
package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"
)

const (
	seed = 42

	demWidth  = 3600
	demHeight = 1800
	demRes    = 360.0 / demWidth // degrees per pixel

	numPolygons = 3000
	numLines    = 3000
	numPoints   = 8000
	numSparse   = 12
)

// stream returns the random stream of one dataset; each dataset has its own
// so that changing one leaves the others as they were.
func stream(dataset uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, dataset))
}

func main() {
	out := flag.String("out", "", "output directory (created; must not exist or be empty)")
	keep := flag.Bool("keep", false, "keep the intermediate GeoJSON and EHdr files in <out>/src")
	convert := flag.Bool("convert", true, "convert with the GDAL tools (false: write only <out>/src)")
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: gendata -out DIR [-keep] [-convert=false]")
		os.Exit(2)
	}
	if err := run(*out, *keep, *convert); err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
}

func run(out string, keep, convert bool) error {
	start := time.Now()
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty", out)
	}
	src := filepath.Join(out, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	writers := []struct {
		file  string
		write func(io.Writer) error
	}{
		{"polygons.geojson", writePolygons},
		{"lines.geojson", writeLines},
		{"points.geojson", writePoints},
		{"sparse.geojson", writeSparse},
		{"dem.bil", writeDEM},
	}
	for _, w := range writers {
		if err := writeFile(filepath.Join(src, w.file), w.write); err != nil {
			return err
		}
	}
	if err := writeDEMHeader(src); err != nil {
		return err
	}
	logf("wrote sources in %v", time.Since(start).Round(time.Millisecond))
	if !convert {
		return nil
	}

	for _, name := range []string{"polygons", "lines", "points", "sparse"} {
		shp := filepath.Join(out, name+".shp")
		if err := tool("ogr2ogr", "-f", "ESRI Shapefile", "-nln", name, shp, filepath.Join(src, name+".geojson")); err != nil {
			return err
		}
		if _, err := exec.LookPath("shptree"); err == nil {
			if err := tool("shptree", shp); err != nil {
				return err
			}
		}
	}
	hill := filepath.Join(out, "hillshade.tif")
	if err := tool("gdaldem", "hillshade", "-q", "-s", "111120", "-z", "200", "-compute_edges",
		"-co", "TILED=YES", "-co", "COMPRESS=DEFLATE", "-co", "PREDICTOR=2",
		filepath.Join(src, "dem.bil"), hill); err != nil {
		return err
	}
	if err := tool("gdaladdo", "-q", "-r", "average", hill, "2", "4", "8", "16", "32"); err != nil {
		return err
	}
	if !keep {
		if err := os.RemoveAll(src); err != nil {
			return err
		}
	}
	logf("done in %v: %s", time.Since(start).Round(time.Millisecond), out)
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gendata: "+format+"\n", args...)
}

// tool runs a command with its output on stderr.
func tool(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Stdout = os.Stderr
	cmd.Stderr = os.Stderr
	if name == "shptree" {
		cmd.Stdout = io.Discard // it reports every node
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	bw := bufio.NewWriterSize(f, 1<<20)
	if err := write(bw); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return bw.Flush()
}

// geojson writes a FeatureCollection feature by feature.
type geojson struct {
	w     io.Writer
	buf   []byte
	first bool
	err   error
}

func newGeoJSON(w io.Writer) *geojson {
	g := &geojson{w: w, first: true}
	_, g.err = io.WriteString(w, `{"type":"FeatureCollection","features":[`+"\n")
	return g
}

type point struct{ x, y float64 }

// feature writes one feature; kind is Point, LineString or Polygon (one
// closed ring), props are written in order as name, value pairs.
func (g *geojson) feature(kind string, pts []point, props ...any) {
	if g.err != nil {
		return
	}
	b := g.buf[:0]
	if !g.first {
		b = append(b, ",\n"...)
	}
	g.first = false
	b = append(b, `{"type":"Feature","properties":{`...)
	for i := 0; i+1 < len(props); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, props[i].(string))
		b = append(b, ':')
		v, err := json.Marshal(props[i+1])
		if err != nil {
			g.err = err
			return
		}
		b = append(b, v...)
	}
	b = append(b, `},"geometry":{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","coordinates":`...)
	switch kind {
	case "Point":
		b = appendPoint(b, pts[0])
	case "LineString":
		b = appendPoints(b, pts)
	case "Polygon":
		b = append(b, '[')
		b = appendPoints(b, pts)
		b = append(b, ']')
	}
	b = append(b, "}}"...)
	g.buf = b
	_, g.err = g.w.Write(b)
}

func (g *geojson) close() error {
	if g.err != nil {
		return g.err
	}
	_, err := io.WriteString(g.w, "\n]}\n")
	return err
}

func appendPoint(b []byte, p point) []byte {
	b = append(b, '[')
	b = strconv.AppendFloat(b, p.x, 'f', 5, 64)
	b = append(b, ',')
	b = strconv.AppendFloat(b, p.y, 'f', 5, 64)
	return append(b, ']')
}

func appendPoints(b []byte, pts []point) []byte {
	b = append(b, '[')
	for i, p := range pts {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPoint(b, p)
	}
	return append(b, ']')
}

func clamp(x, y float64) point {
	return point{max(-180, min(180, x)), max(-85, min(85, y))}
}

func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// between returns an integer in [lo, hi].
func between(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }

var syllables = []string{"ka", "lo", "mi", "ra", "ten", "bur", "ost", "vel", "an", "dor", "sa", "qu", "ix", "el"}

func name(r *rand.Rand) string {
	var b []byte
	for i, n := 0, between(r, 2, 4); i < n; i++ {
		b = append(b, syllables[r.IntN(len(syllables))]...)
	}
	b[0] -= 'a' - 'A'
	return string(b)
}

// star returns a closed star-shaped ring of n vertices around (cx, cy) with
// radii in [0.45r, r] degrees, stretched in longitude by 1/cos(latitude).
func star(r *rand.Rand, cx, cy, radius float64, n int, clampPts bool) []point {
	pts := make([]point, 0, n+1)
	stretch := 1 / max(0.2, math.Cos(cy*math.Pi/180))
	for k := range n {
		a := 2 * math.Pi * float64(k) / float64(n)
		rr := radius * uniform(r, 0.45, 1)
		p := point{cx + rr*math.Cos(a)*stretch, cy + rr*math.Sin(a)}
		if clampPts {
			p = clamp(p.x, p.y)
		}
		pts = append(pts, p)
	}
	return append(pts, pts[0])
}

func writePolygons(w io.Writer) error {
	r := stream(1)
	g := newGeoJSON(w)
	for i := range numPolygons {
		cx, cy := uniform(r, -178, 178), uniform(r, -80, 80)
		radius := math.Exp(uniform(r, math.Log(0.05), math.Log(8)))
		ring := star(r, cx, cy, radius, between(r, 20, 60), true)
		g.feature("Polygon", ring, "id", i, "cls", r.IntN(6), "name", name(r))
	}
	return g.close()
}

func writeLines(w io.Writer) error {
	r := stream(2)
	g := newGeoJSON(w)
	for i := range numLines {
		x, y := uniform(r, -178, 178), uniform(r, -80, 80)
		step := math.Exp(uniform(r, math.Log(0.02), math.Log(0.6)))
		heading := uniform(r, 0, 2*math.Pi)
		n := between(r, 30, 120)
		pts := make([]point, 0, n)
		for range n {
			pts = append(pts, clamp(x, y))
			heading += r.NormFloat64() * 0.35
			x += step * math.Cos(heading)
			y += step * math.Sin(heading)
		}
		g.feature("LineString", pts, "id", i, "cls", r.IntN(3))
	}
	return g.close()
}

func writePoints(w io.Writer) error {
	r := stream(3)
	g := newGeoJSON(w)
	classes := []int{0, 0, 0, 1, 1, 2}
	for i := range numPoints {
		p := point{uniform(r, -179.9, 179.9), uniform(r, -84, 84)}
		g.feature("Point", []point{p}, "id", i, "cls", classes[r.IntN(len(classes))], "name", name(r))
	}
	return g.close()
}

// writeSparse writes polygons that lie entirely inside lon 1..44, lat 1..44.
func writeSparse(w io.Writer) error {
	r := stream(4)
	g := newGeoJSON(w)
	for i := range numSparse {
		radius := uniform(r, 1, 4)
		cy := uniform(r, 1+radius, 44-radius)
		stretch := 1 / math.Cos((cy+radius)*math.Pi/180) // widest at the ring's highest latitude
		cx := uniform(r, 1+radius*stretch, 44-radius*stretch)
		ring := star(r, cx, cy, radius, between(r, 12, 30), false)
		for _, p := range ring {
			if p.x < 0 || p.x > 45 || p.y < 0 || p.y > 45 {
				return errors.New("sparse polygon outside lon 0..45, lat 0..45")
			}
		}
		g.feature("Polygon", ring, "id", i, "name", name(r))
	}
	return g.close()
}

// writeDEM writes a synthetic elevation model (Int16 metres, little endian,
// rows from north to south): fractal value noise (smoothly interpolated
// random lattices, 8 octaves, wrapping at the antimeridian).
func writeDEM(w io.Writer) error {
	r := stream(5)
	z := make([]float32, demWidth*demHeight)
	type cell struct {
		i0, i1 int
		t      float32
	}
	// at returns the lattice cells around pixel p of n pixels, with the
	// smoothstep weight of the second one.
	at := func(p, n, cells int, wrap bool) cell {
		u := (float64(p) + 0.5) / float64(n) * float64(cells)
		i := int(u)
		t := u - float64(i)
		c := cell{i, i + 1, float32(t * t * (3 - 2*t))}
		if wrap {
			c.i1 %= cells
		}
		return c
	}
	amp := float32(2400)
	for octave := range 8 {
		nx, ny := 6<<octave, 3<<octave
		lattice := make([]float32, nx*(ny+1))
		for i := range lattice {
			lattice[i] = float32(uniform(r, -1, 1))
		}
		cols := make([]cell, demWidth)
		for x := range cols {
			cols[x] = at(x, demWidth, nx, true)
		}
		for y := range demHeight {
			rc := at(y, demHeight, ny, false)
			top, bottom := lattice[rc.i0*nx:(rc.i0+1)*nx], lattice[rc.i1*nx:(rc.i1+1)*nx]
			zr := z[y*demWidth : (y+1)*demWidth]
			for x, c := range cols {
				a := top[c.i0] + (top[c.i1]-top[c.i0])*c.t
				b := bottom[c.i0] + (bottom[c.i1]-bottom[c.i0])*c.t
				zr[x] += amp * (a + (b-a)*rc.t)
			}
		}
		amp *= 0.5
	}
	buf := make([]byte, 2*demWidth)
	for y := range demHeight {
		for x := range demWidth {
			v := math.Round(float64(z[y*demWidth+x]) + 300)
			binary.LittleEndian.PutUint16(buf[2*x:], uint16(int16(max(-4000, min(6000, v)))))
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// writeDEMHeader writes the EHdr header and the ESRI WKT of WGS 84 next to
// dem.bil.
func writeDEMHeader(dir string) error {
	hdr := fmt.Sprintf(`BYTEORDER I
LAYOUT BIL
NROWS %d
NCOLS %d
NBANDS 1
NBITS 16
PIXELTYPE SIGNEDINT
ULXMAP %g
ULYMAP %g
XDIM %g
YDIM %g
`, demHeight, demWidth, -180+demRes/2, 90-demRes/2, demRes, demRes)
	if err := os.WriteFile(filepath.Join(dir, "dem.hdr"), []byte(hdr), 0o644); err != nil {
		return err
	}
	const wkt = `GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],` +
		`PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]`
	return os.WriteFile(filepath.Join(dir, "dem.prj"), []byte(wkt), 0o644)
}
