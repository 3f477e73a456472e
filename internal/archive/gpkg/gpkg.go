// Package gpkg writes and reads GeoPackage tile pyramids (OGC GeoPackage
// 1.2): an SQLite file with the gpkg_spatial_ref_sys, gpkg_contents,
// gpkg_tile_matrix_set and gpkg_tile_matrix tables and one tile table, on
// any tile matrix set the caller describes.
//
// GeoPackage has no standard way to store identical tiles once: a tile
// pyramid user data table must hold each tile's data in its own row, and
// readers (GDAL, QGIS, mobile SDKs) read that table directly, so a table
// of shared contents with a view in front of it would be an extension
// that no reader knows. This package stores every tile in full.
package gpkg

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"time"

	"tilecache/internal/archive"
	"tilecache/internal/archive/sqlitedb"
)

// applicationID is "GPKG"; userVersion 10200 is GeoPackage 1.2.
const (
	applicationID = 0x47504B47
	userVersion   = 10200
)

// SRS is a row of gpkg_spatial_ref_sys.
type SRS struct {
	ID           int    // srs_id
	Name         string // srs_name
	Organization string // organization, e.g. "EPSG"
	OrgID        int    // organization_coordsys_id
	Definition   string // WKT
}

// TileMatrix is one zoom level of a tile matrix set.
type TileMatrix struct {
	Zoom                   int
	MatrixWidth            int64 // tiles across
	MatrixHeight           int64 // tiles down
	TileWidth, TileHeight  int   // pixels
	PixelXSize, PixelYSize float64
}

// TileMatrixSet is the tiling a GeoPackage tile table follows: its SRS,
// the bounds whose top-left corner is every level's origin, and its
// levels. Rows count from the top (MaxY) down.
type TileMatrixSet struct {
	SRS                    SRS
	MinX, MinY, MaxX, MaxY float64
	Matrices               []TileMatrix
}

// Validate reports the first problem of s, naming it.
func (s TileMatrixSet) Validate() error {
	if s.SRS.ID == 0 || s.SRS.Definition == "" || s.SRS.Organization == "" {
		return errors.New("the tile matrix set needs its SRS's id, organization and definition")
	}
	if !(s.MinX < s.MaxX && s.MinY < s.MaxY) {
		return fmt.Errorf("the tile matrix set's bounds %v,%v,%v,%v are empty", s.MinX, s.MinY, s.MaxX, s.MaxY)
	}
	if len(s.Matrices) == 0 {
		return errors.New("the tile matrix set has no levels")
	}
	seen := map[int]bool{}
	for _, m := range s.Matrices {
		if m.Zoom < 0 || seen[m.Zoom] {
			return fmt.Errorf("level %d is negative or repeated", m.Zoom)
		}
		seen[m.Zoom] = true
		if m.MatrixWidth < 1 || m.MatrixHeight < 1 || m.TileWidth < 1 || m.TileHeight < 1 ||
			!(m.PixelXSize > 0) || !(m.PixelYSize > 0) || math.IsInf(m.PixelXSize, 0) || math.IsInf(m.PixelYSize, 0) {
			return fmt.Errorf("level %d: matrix and tile sizes must be at least 1 and pixel sizes positive", m.Zoom)
		}
	}
	return nil
}

func (s TileMatrixSet) matrix(z int) (TileMatrix, bool) {
	for _, m := range s.Matrices {
		if m.Zoom == z {
			return m, true
		}
	}
	return TileMatrix{}, false
}

// WebMercatorSRS is EPSG:3857.
var WebMercatorSRS = SRS{ID: 3857, Name: "WGS 84 / Pseudo-Mercator", Organization: "EPSG", OrgID: 3857,
	Definition: `PROJCS["WGS 84 / Pseudo-Mercator",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AUTHORITY["EPSG","4326"]],PROJECTION["Mercator_1SP"],PARAMETER["central_meridian",0],PARAMETER["scale_factor",1],PARAMETER["false_easting",0],PARAMETER["false_northing",0],UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],EXTENSION["PROJ4","+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs"],AUTHORITY["EPSG","3857"]]`}

// WGS84SRS is EPSG:4326, which every GeoPackage lists.
var WGS84SRS = SRS{ID: 4326, Name: "WGS 84 geodetic", Organization: "EPSG", OrgID: 4326,
	Definition: `GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AXIS["Latitude",NORTH],AXIS["Longitude",EAST],AUTHORITY["EPSG","4326"]]`}

// WebMercatorQuad returns the usual web map tiling of EPSG:3857, levels
// 0..maxZoom of 256-pixel tiles.
func WebMercatorQuad(maxZoom int) TileMatrixSet {
	const m = 20037508.342789244
	s := TileMatrixSet{SRS: WebMercatorSRS, MinX: -m, MinY: -m, MaxX: m, MaxY: m}
	for z := 0; z <= maxZoom; z++ {
		px := 2 * m / 256 / float64(int64(1)<<z)
		s.Matrices = append(s.Matrices, TileMatrix{Zoom: z, MatrixWidth: 1 << z, MatrixHeight: 1 << z,
			TileWidth: 256, TileHeight: 256, PixelXSize: px, PixelYSize: px})
	}
	return s
}

var tableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

const batch = 10000

// Writer writes one tile table of a GeoPackage. Every 10,000 tiles, and
// at Checkpoint, what was put is committed: a writer opened again on the
// same file and table (by an export that resumes) keeps it.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	db      *sql.DB
	table   string
	tms     TileMatrixSet
	format  string
	tx      *sql.Tx
	put     *sql.Stmt
	pending int
	done    bool
}

const coreSchema = `
CREATE TABLE IF NOT EXISTS gpkg_spatial_ref_sys (
  srs_name TEXT NOT NULL, srs_id INTEGER NOT NULL PRIMARY KEY, organization TEXT NOT NULL,
  organization_coordsys_id INTEGER NOT NULL, definition TEXT NOT NULL, description TEXT);
CREATE TABLE IF NOT EXISTS gpkg_contents (
  table_name TEXT NOT NULL PRIMARY KEY, data_type TEXT NOT NULL, identifier TEXT UNIQUE,
  description TEXT DEFAULT '', last_change DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  min_x DOUBLE, min_y DOUBLE, max_x DOUBLE, max_y DOUBLE, srs_id INTEGER,
  CONSTRAINT fk_gc_r_srs_id FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys(srs_id));
CREATE TABLE IF NOT EXISTS gpkg_geometry_columns (
  table_name TEXT NOT NULL, column_name TEXT NOT NULL, geometry_type_name TEXT NOT NULL,
  srs_id INTEGER NOT NULL, z TINYINT NOT NULL, m TINYINT NOT NULL,
  CONSTRAINT pk_geom_cols PRIMARY KEY (table_name, column_name));
CREATE TABLE IF NOT EXISTS gpkg_tile_matrix_set (
  table_name TEXT NOT NULL PRIMARY KEY, srs_id INTEGER NOT NULL,
  min_x DOUBLE NOT NULL, min_y DOUBLE NOT NULL, max_x DOUBLE NOT NULL, max_y DOUBLE NOT NULL,
  CONSTRAINT fk_gtms_table_name FOREIGN KEY (table_name) REFERENCES gpkg_contents(table_name),
  CONSTRAINT fk_gtms_srs FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys (srs_id));
CREATE TABLE IF NOT EXISTS gpkg_tile_matrix (
  table_name TEXT NOT NULL, zoom_level INTEGER NOT NULL, matrix_width INTEGER NOT NULL,
  matrix_height INTEGER NOT NULL, tile_width INTEGER NOT NULL, tile_height INTEGER NOT NULL,
  pixel_x_size DOUBLE NOT NULL, pixel_y_size DOUBLE NOT NULL,
  CONSTRAINT pk_ttm PRIMARY KEY (table_name, zoom_level),
  CONSTRAINT fk_tmm_table_name FOREIGN KEY (table_name) REFERENCES gpkg_contents(table_name));
CREATE TABLE IF NOT EXISTS gpkg_extensions (
  table_name TEXT, column_name TEXT, extension_name TEXT NOT NULL, definition TEXT NOT NULL,
  scope TEXT NOT NULL, CONSTRAINT ge_tce UNIQUE (table_name, column_name, extension_name));
INSERT OR IGNORE INTO gpkg_spatial_ref_sys VALUES
  ('Undefined cartesian SRS', -1, 'NONE', -1, 'undefined', 'undefined cartesian coordinate reference system'),
  ('Undefined geographic SRS', 0, 'NONE', 0, 'undefined', 'undefined geographic coordinate reference system');
`

// Options describe the tile table a Writer makes.
type Options struct {
	// Table names the tile table (letters, digits, underscores); "" means
	// "tiles".
	Table string
	// Format is the tiles' encoding: "png" or "jpg" (GeoPackage's own) or
	// "webp" (its gpkg_webp extension, registered when used).
	Format string
	// TileMatrixSet is the tiling.
	TileMatrixSet TileMatrixSet
}

// Create opens the GeoPackage at path for writing the tile table of opt,
// creating the file and the table if they do not exist and keeping the
// tiles of ones that do.
func Create(ctx context.Context, path string, opt Options) (*Writer, error) {
	if opt.Table == "" {
		opt.Table = "tiles"
	}
	if !tableName.MatchString(opt.Table) || len(opt.Table) > 4 && opt.Table[:5] == "gpkg_" {
		return nil, fmt.Errorf("gpkg: table name %q: use letters, digits and underscores, not starting with gpkg_", opt.Table)
	}
	switch opt.Format {
	case "png", "jpg", "jpeg", "webp":
	default:
		return nil, fmt.Errorf("gpkg: tile format %q: a GeoPackage tile table holds png, jpg or webp tiles", opt.Format)
	}
	if err := opt.TileMatrixSet.Validate(); err != nil {
		return nil, fmt.Errorf("gpkg: %w", err)
	}
	db, err := sqlitedb.Open(ctx, path, false)
	if err != nil {
		return nil, fmt.Errorf("gpkg: opening %s: %w", path, err)
	}
	w := &Writer{db: db, table: opt.Table, tms: opt.TileMatrixSet, format: opt.Format}
	if err := w.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("gpkg: creating %s: %w", path, err)
	}
	if err := w.begin(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return w, nil
}

func (w *Writer) init(ctx context.Context) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	s := w.tms
	stmts := []struct {
		q    string
		args []any
	}{
		{q: fmt.Sprintf("PRAGMA application_id = %d", applicationID)},
		{q: fmt.Sprintf("PRAGMA user_version = %d", userVersion)},
		{q: "PRAGMA cache_size = -32768"}, // 32 MiB: the tile index stays in memory
		{q: coreSchema},
		{q: "INSERT OR IGNORE INTO gpkg_spatial_ref_sys VALUES (?, ?, ?, ?, ?, '')",
			args: []any{WGS84SRS.Name, WGS84SRS.ID, WGS84SRS.Organization, WGS84SRS.OrgID, WGS84SRS.Definition}},
		{q: "INSERT OR IGNORE INTO gpkg_spatial_ref_sys VALUES (?, ?, ?, ?, ?, '')",
			args: []any{s.SRS.Name, s.SRS.ID, s.SRS.Organization, s.SRS.OrgID, s.SRS.Definition}},
		{q: fmt.Sprintf(`CREATE TABLE IF NOT EXISTS "%s" (
  id INTEGER PRIMARY KEY AUTOINCREMENT, zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL,
  tile_row INTEGER NOT NULL, tile_data BLOB NOT NULL, UNIQUE (zoom_level, tile_column, tile_row))`, w.table)},
		{q: "INSERT OR REPLACE INTO gpkg_contents (table_name, data_type, identifier, min_x, min_y, max_x, max_y, srs_id) VALUES (?, 'tiles', ?, ?, ?, ?, ?, ?)",
			args: []any{w.table, w.table, s.MinX, s.MinY, s.MaxX, s.MaxY, s.SRS.ID}},
		{q: "INSERT OR REPLACE INTO gpkg_tile_matrix_set VALUES (?, ?, ?, ?, ?, ?)",
			args: []any{w.table, s.SRS.ID, s.MinX, s.MinY, s.MaxX, s.MaxY}},
		{q: "DELETE FROM gpkg_tile_matrix WHERE table_name = ?", args: []any{w.table}},
	}
	for _, m := range s.Matrices {
		stmts = append(stmts, struct {
			q    string
			args []any
		}{"INSERT INTO gpkg_tile_matrix VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			[]any{w.table, m.Zoom, m.MatrixWidth, m.MatrixHeight, m.TileWidth, m.TileHeight, m.PixelXSize, m.PixelYSize}})
	}
	if w.format == "webp" {
		stmts = append(stmts, struct {
			q    string
			args []any
		}{"INSERT OR IGNORE INTO gpkg_extensions VALUES (?, 'tile_data', 'gpkg_webp', 'http://www.geopackage.org/spec120/#extension_tiles_webp', 'read-write')",
			[]any{w.table}})
	}
	for _, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func (w *Writer) begin(ctx context.Context) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("gpkg: %w", err)
	}
	w.tx = tx
	if w.put, err = tx.PrepareContext(ctx, fmt.Sprintf(`INSERT OR REPLACE INTO "%s" (zoom_level, tile_column, tile_row, tile_data) VALUES (?, ?, ?, ?)`, w.table)); err != nil {
		tx.Rollback()
		return fmt.Errorf("gpkg: %w", err)
	}
	return nil
}

func (w *Writer) commit() error {
	w.put.Close()
	if err := w.tx.Commit(); err != nil {
		return fmt.Errorf("gpkg: commit: %w", err)
	}
	w.tx, w.pending = nil, 0
	return nil
}

// Put adds tile z/x/y (row y counted from the top of the tile matrix); a
// tile put twice keeps the data of the last Put.
func (w *Writer) Put(ctx context.Context, z int, x, y int64, data []byte) error {
	if w.done {
		return errors.New("gpkg: put after close")
	}
	m, ok := w.tms.matrix(z)
	if !ok {
		return fmt.Errorf("gpkg: level %d is not in the tile matrix set", z)
	}
	if x < 0 || x >= m.MatrixWidth || y < 0 || y >= m.MatrixHeight {
		return fmt.Errorf("gpkg: tile %d/%d/%d is outside level %d's %dx%d tiles", z, x, y, z, m.MatrixWidth, m.MatrixHeight)
	}
	if len(data) == 0 {
		return fmt.Errorf("gpkg: tile %d/%d/%d has no data", z, x, y)
	}
	if _, err := w.put.ExecContext(ctx, z, x, y, data); err != nil {
		return fmt.Errorf("gpkg: tile %d/%d/%d: %w", z, x, y, err)
	}
	w.pending++
	if w.pending >= batch {
		return w.Checkpoint(ctx)
	}
	return nil
}

// Checkpoint commits every tile put so far.
func (w *Writer) Checkpoint(ctx context.Context) error {
	if err := w.commit(); err != nil {
		return err
	}
	return w.begin(ctx)
}

// Close writes the name and description of md to gpkg_contents and
// closes the file. GeoPackage has no place for the other metadata: the
// zooms and bounds are the tile matrix set's.
func (w *Writer) Close(ctx context.Context, md archive.Metadata) error {
	if w.done {
		return errors.New("gpkg: closed twice")
	}
	w.done = true
	defer w.db.Close()
	ident := md.Name
	if ident == "" {
		ident = w.table
	}
	if _, err := w.tx.ExecContext(ctx, "UPDATE gpkg_contents SET identifier = ?, description = ?, last_change = ? WHERE table_name = ?",
		ident, md.Description, time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), w.table); err != nil {
		w.tx.Rollback()
		return fmt.Errorf("gpkg: contents: %w", err)
	}
	if err := w.commit(); err != nil {
		return err
	}
	if err := w.db.Close(); err != nil {
		return fmt.Errorf("gpkg: closing: %w", err)
	}
	return nil
}

// Abort closes the file, rolling back what was put since the last
// checkpoint.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.tx.Rollback()
	return w.db.Close()
}

// Reader reads one tile table of a GeoPackage. It is safe for concurrent
// use.
type Reader struct {
	db    *sql.DB
	table string
	tms   TileMatrixSet
	ident string
	desc  string
}

// Open opens the GeoPackage at path read-only, for its tile table named
// table ("" means its first tile table).
func Open(ctx context.Context, path, table string) (*Reader, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("gpkg: %w", err)
	}
	db, err := sqlitedb.Open(ctx, path, true)
	if err != nil {
		return nil, fmt.Errorf("gpkg: opening %s: %w", path, err)
	}
	r := &Reader{db: db}
	if err := r.load(ctx, table); err != nil {
		db.Close()
		return nil, fmt.Errorf("gpkg: %s: %w", path, err)
	}
	return r, nil
}

func (r *Reader) load(ctx context.Context, table string) error {
	q := "SELECT table_name, coalesce(identifier, ''), coalesce(description, '') FROM gpkg_contents WHERE data_type = 'tiles'"
	args := []any{}
	if table != "" {
		q += " AND table_name = ?"
		args = append(args, table)
	}
	err := r.db.QueryRowContext(ctx, q+" ORDER BY table_name LIMIT 1", args...).Scan(&r.table, &r.ident, &r.desc)
	if errors.Is(err, sql.ErrNoRows) {
		if table != "" {
			return fmt.Errorf("no tile table %q", table)
		}
		return errors.New("no tile table")
	}
	if err != nil {
		return fmt.Errorf("not a GeoPackage: %w", err)
	}
	if !tableName.MatchString(r.table) {
		return fmt.Errorf("tile table name %q is not supported", r.table)
	}
	s := &r.tms
	err = r.db.QueryRowContext(ctx, `SELECT s.srs_id, s.srs_name, s.organization, s.organization_coordsys_id, s.definition,
  t.min_x, t.min_y, t.max_x, t.max_y
  FROM gpkg_tile_matrix_set t JOIN gpkg_spatial_ref_sys s ON s.srs_id = t.srs_id WHERE t.table_name = ?`, r.table).
		Scan(&s.SRS.ID, &s.SRS.Name, &s.SRS.Organization, &s.SRS.OrgID, &s.SRS.Definition, &s.MinX, &s.MinY, &s.MaxX, &s.MaxY)
	if err != nil {
		return fmt.Errorf("tile matrix set of %s: %w", r.table, err)
	}
	rows, err := r.db.QueryContext(ctx, `SELECT zoom_level, matrix_width, matrix_height, tile_width, tile_height, pixel_x_size, pixel_y_size
  FROM gpkg_tile_matrix WHERE table_name = ? ORDER BY zoom_level`, r.table)
	if err != nil {
		return fmt.Errorf("tile matrices of %s: %w", r.table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var m TileMatrix
		if err := rows.Scan(&m.Zoom, &m.MatrixWidth, &m.MatrixHeight, &m.TileWidth, &m.TileHeight, &m.PixelXSize, &m.PixelYSize); err != nil {
			return fmt.Errorf("tile matrices of %s: %w", r.table, err)
		}
		s.Matrices = append(s.Matrices, m)
	}
	return rows.Err()
}

// TileMatrixSet returns the tiling of the table.
func (r *Reader) TileMatrixSet() TileMatrixSet { return r.tms }

// Close closes the file.
func (r *Reader) Close() error { return r.db.Close() }

// Tile returns tile z/x/y (row y counted from the top).
func (r *Reader) Tile(ctx context.Context, z int, x, y int64) ([]byte, bool, error) {
	if _, ok := r.tms.matrix(z); !ok {
		return nil, false, nil
	}
	var b []byte
	err := r.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT tile_data FROM "%s" WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?`, r.table), z, x, y).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("gpkg: tile %d/%d/%d: %w", z, x, y, err)
	}
	return b, true, nil
}

// Tiles calls fn for every tile of the table.
func (r *Reader) Tiles(ctx context.Context, fn func(z int, x, y int64, data []byte) error) error {
	rows, err := r.db.QueryContext(ctx, fmt.Sprintf(`SELECT zoom_level, tile_column, tile_row, tile_data FROM "%s"`, r.table))
	if err != nil {
		return fmt.Errorf("gpkg: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var z int
		var x, y int64
		var b []byte
		if err := rows.Scan(&z, &x, &y, &b); err != nil {
			return fmt.Errorf("gpkg: %w", err)
		}
		if err := fn(z, x, y, b); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("gpkg: %w", err)
	}
	return nil
}

// Metadata returns the table's identifier and description and the tile
// matrix set's zooms; the rest is not in a GeoPackage.
func (r *Reader) Metadata(ctx context.Context) (archive.Metadata, error) {
	md := archive.Metadata{Name: r.ident, Description: r.desc}
	if n := len(r.tms.Matrices); n > 0 {
		md.MinZoom, md.MaxZoom = r.tms.Matrices[0].Zoom, r.tms.Matrices[n-1].Zoom
	}
	var head []byte
	err := r.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT substr(tile_data, 1, 12) FROM "%s" LIMIT 1`, r.table)).Scan(&head)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return md, fmt.Errorf("gpkg: %w", err)
	}
	md.Format = sniff(head)
	return md, nil
}

// sniff names the image format of a tile by its first bytes.
func sniff(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("\x89PNG")):
		return "png"
	case bytes.HasPrefix(b, []byte{0xff, 0xd8}):
		return "jpg"
	case len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP":
		return "webp"
	}
	return ""
}
