// Package mbtiles writes and reads MBTiles 1.3 archives: an SQLite file
// with a metadata table and a tiles table of z/x/y in TMS order (rows
// counted from the south). The writer stores each distinct content once,
// in the layout MapProxy and mbutil use (a map table of tiles pointing
// into an images table of contents, and a tiles view joining them), which
// every MBTiles reader reads through the tiles view.
package mbtiles

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"tilecache/internal/archive"
	"tilecache/internal/archive/sqlitedb"
)

// applicationID is "MPBX", the application_id MBTiles 1.3 gives its files.
const applicationID = 0x4d504258

// batch is how many tiles one transaction takes.
const batch = 10000

const schema = `
CREATE TABLE IF NOT EXISTS metadata (name TEXT, value TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS metadata_name ON metadata (name);
CREATE TABLE IF NOT EXISTS map (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_id TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS map_index ON map (zoom_level, tile_column, tile_row);
CREATE TABLE IF NOT EXISTS images (tile_data BLOB, tile_id TEXT);
CREATE UNIQUE INDEX IF NOT EXISTS images_id ON images (tile_id);
CREATE VIEW IF NOT EXISTS tiles AS
  SELECT map.zoom_level AS zoom_level, map.tile_column AS tile_column,
         map.tile_row AS tile_row, images.tile_data AS tile_data
  FROM map JOIN images ON images.tile_id = map.tile_id;
`

// Writer writes an MBTiles file. Every 10,000 tiles, and at Checkpoint,
// what was put is committed: a writer opened again on the same file (by
// an export that resumes) keeps it and adds to it.
//
// A Writer is not safe for concurrent use.
type Writer struct {
	db       *sql.DB
	tx       *sql.Tx
	putMap   *sql.Stmt
	putImage *sql.Stmt
	pending  int
	done     bool
}

// Create opens the MBTiles file at path for writing, creating it if it
// does not exist and keeping the tiles of one that does.
func Create(ctx context.Context, path string) (*Writer, error) {
	db, err := sqlitedb.Open(ctx, path, false)
	if err != nil {
		return nil, fmt.Errorf("mbtiles: opening %s: %w", path, err)
	}
	stmts := []string{
		"PRAGMA journal_mode = DELETE",
		"PRAGMA synchronous = NORMAL",
		"PRAGMA cache_size = -32768", // 32 MiB: the tile index stays in memory
		fmt.Sprintf("PRAGMA application_id = %d", applicationID),
		schema,
	}
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			db.Close()
			return nil, fmt.Errorf("mbtiles: creating %s: %w", path, err)
		}
	}
	var kind string
	err = db.QueryRowContext(ctx, "SELECT type FROM sqlite_master WHERE name = 'tiles'").Scan(&kind)
	if err != nil || kind != "view" {
		db.Close()
		if err == nil {
			err = fmt.Errorf("it has a tiles %s, not the map and images tables this writer adds to", kind)
		}
		return nil, fmt.Errorf("mbtiles: %s: %w", path, err)
	}
	w := &Writer{db: db}
	if err := w.begin(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return w, nil
}

func (w *Writer) begin(ctx context.Context) error {
	tx, err := w.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("mbtiles: %w", err)
	}
	w.tx = tx
	if w.putMap, err = tx.PrepareContext(ctx, "INSERT OR REPLACE INTO map (zoom_level, tile_column, tile_row, tile_id) VALUES (?, ?, ?, ?)"); err != nil {
		tx.Rollback()
		return fmt.Errorf("mbtiles: %w", err)
	}
	if w.putImage, err = tx.PrepareContext(ctx, "INSERT OR IGNORE INTO images (tile_data, tile_id) VALUES (?, ?)"); err != nil {
		tx.Rollback()
		return fmt.Errorf("mbtiles: %w", err)
	}
	return nil
}

func (w *Writer) commit() error {
	w.putMap.Close()
	w.putImage.Close()
	if err := w.tx.Commit(); err != nil {
		return fmt.Errorf("mbtiles: commit: %w", err)
	}
	w.tx, w.pending = nil, 0
	return nil
}

// Put adds tile z/x/y (y counted from the north, as everywhere in the
// archive packages; it is stored in TMS order); a tile put twice keeps
// the data of the last Put. Vector tiles must be given gzipped, as
// MBTiles stores them.
func (w *Writer) Put(ctx context.Context, z int, x, y int64, data []byte) error {
	if w.done {
		return errors.New("mbtiles: put after close")
	}
	if err := archive.CheckTile(z, x, y); err != nil {
		return fmt.Errorf("mbtiles: %w", err)
	}
	sum := sha256.Sum256(data)
	id := hex.EncodeToString(sum[:16])
	if _, err := w.putImage.ExecContext(ctx, data, id); err != nil {
		return fmt.Errorf("mbtiles: tile %d/%d/%d: %w", z, x, y, err)
	}
	if _, err := w.putMap.ExecContext(ctx, z, x, tmsRow(z, y), id); err != nil {
		return fmt.Errorf("mbtiles: tile %d/%d/%d: %w", z, x, y, err)
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

func tmsRow(z int, y int64) int64 { return int64(1)<<z - 1 - y }

// Close writes the metadata, removes contents no tile points at any more
// (tiles put twice with different data) and closes the file.
func (w *Writer) Close(ctx context.Context, md archive.Metadata) error {
	if w.done {
		return errors.New("mbtiles: closed twice")
	}
	w.done = true
	defer w.db.Close()
	rows, err := metadataRows(md)
	if err != nil {
		w.tx.Rollback()
		return err
	}
	del, err := w.tx.PrepareContext(ctx, "DELETE FROM metadata WHERE name = ?")
	if err != nil {
		w.tx.Rollback()
		return fmt.Errorf("mbtiles: metadata: %w", err)
	}
	defer del.Close()
	put, err := w.tx.PrepareContext(ctx, "INSERT INTO metadata (name, value) VALUES (?, ?)")
	if err != nil {
		w.tx.Rollback()
		return fmt.Errorf("mbtiles: metadata: %w", err)
	}
	defer put.Close()
	for _, kv := range rows {
		if _, err := del.ExecContext(ctx, kv[0]); err != nil {
			w.tx.Rollback()
			return fmt.Errorf("mbtiles: metadata %s: %w", kv[0], err)
		}
		if kv[1] == "" {
			continue
		}
		if _, err := put.ExecContext(ctx, kv[0], kv[1]); err != nil {
			w.tx.Rollback()
			return fmt.Errorf("mbtiles: metadata %s: %w", kv[0], err)
		}
	}
	if _, err := w.tx.ExecContext(ctx, "DELETE FROM images WHERE tile_id NOT IN (SELECT tile_id FROM map)"); err != nil {
		w.tx.Rollback()
		return fmt.Errorf("mbtiles: removing unused contents: %w", err)
	}
	del.Close()
	put.Close()
	if err := w.commit(); err != nil {
		return err
	}
	if err := w.db.Close(); err != nil {
		return fmt.Errorf("mbtiles: closing: %w", err)
	}
	return nil
}

// Abort closes the file without writing the metadata, rolling back what
// was put since the last checkpoint.
func (w *Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.tx.Rollback()
	return w.db.Close()
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func metadataRows(md archive.Metadata) ([][2]string, error) {
	if md.Format == "" {
		return nil, errors.New("mbtiles: metadata needs the tile format")
	}
	rows := [][2]string{
		{"name", md.Name},
		{"format", md.Format},
		{"minzoom", strconv.Itoa(md.MinZoom)},
		{"maxzoom", strconv.Itoa(md.MaxZoom)},
		{"attribution", md.Attribution},
		{"description", md.Description},
		{"type", md.Type},
		{"bounds", ""},
		{"center", ""},
		{"json", ""},
	}
	if md.Bounds != [4]float64{} {
		b := md.Bounds
		rows[7][1] = strings.Join([]string{ftoa(b[0]), ftoa(b[1]), ftoa(b[2]), ftoa(b[3])}, ",")
	}
	if md.Center != [3]float64{} {
		c := md.Center
		rows[8][1] = strings.Join([]string{ftoa(c[0]), ftoa(c[1]), strconv.Itoa(int(c[2]))}, ",")
	}
	if md.Format == "pbf" {
		if len(md.VectorLayers) == 0 {
			return nil, errors.New("mbtiles: vector tiles (format pbf) need vector_layers in the metadata")
		}
		var layers []json.RawMessage
		if err := json.Unmarshal(md.VectorLayers, &layers); err != nil {
			return nil, fmt.Errorf("mbtiles: vector_layers is not a JSON array: %w", err)
		}
		b, _ := json.Marshal(map[string]any{"vector_layers": layers})
		rows[9][1] = string(b)
	}
	if rows[0][1] == "" {
		rows[0][1] = "tiles"
	}
	return rows, nil
}

// Reader reads an MBTiles file through its tiles table or view, whatever
// wrote it. It is safe for concurrent use.
type Reader struct {
	db *sql.DB
}

// Open opens the MBTiles file at path read-only.
func Open(ctx context.Context, path string) (*Reader, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("mbtiles: %w", err)
	}
	db, err := sqlitedb.Open(ctx, path, true)
	if err != nil {
		return nil, fmt.Errorf("mbtiles: opening %s: %w", path, err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE name = 'tiles' AND type IN ('table', 'view')").Scan(&n); err != nil || n == 0 {
		db.Close()
		if err == nil {
			err = errors.New("no tiles table")
		}
		return nil, fmt.Errorf("mbtiles: %s is not an MBTiles file: %w", path, err)
	}
	return &Reader{db: db}, nil
}

// Close closes the file.
func (r *Reader) Close() error { return r.db.Close() }

// Tile returns tile z/x/y (y counted from the north).
func (r *Reader) Tile(ctx context.Context, z int, x, y int64) ([]byte, bool, error) {
	if err := archive.CheckTile(z, x, y); err != nil {
		return nil, false, fmt.Errorf("mbtiles: %w", err)
	}
	var b []byte
	err := r.db.QueryRowContext(ctx, "SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?", z, x, tmsRow(z, y)).Scan(&b)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("mbtiles: tile %d/%d/%d: %w", z, x, y, err)
	}
	return b, true, nil
}

// Tiles calls fn for every tile, in the file's order.
func (r *Reader) Tiles(ctx context.Context, fn func(z int, x, y int64, data []byte) error) error {
	return r.each(ctx, fn, "SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles")
}

// each calls fn for every row of query, whose columns are zoom_level,
// tile_column, tile_row and tile_data, with rows counted from the top.
func (r *Reader) each(ctx context.Context, fn func(z int, x, y int64, data []byte) error, query string, args ...any) error {
	rows, err := r.db.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("mbtiles: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var z int
		var x, row int64
		var b []byte
		if err := rows.Scan(&z, &x, &row, &b); err != nil {
			return fmt.Errorf("mbtiles: %w", err)
		}
		if z < 0 || z > 31 {
			return fmt.Errorf("mbtiles: a tile has zoom level %d", z)
		}
		if err := fn(z, x, tmsRow(z, row), b); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("mbtiles: %w", err)
	}
	return nil
}

// Metadata returns the metadata table's values; ones that are missing or
// do not parse are left zero.
func (r *Reader) Metadata(ctx context.Context) (archive.Metadata, error) {
	var md archive.Metadata
	rows, err := r.db.QueryContext(ctx, "SELECT name, value FROM metadata")
	if err != nil {
		return md, fmt.Errorf("mbtiles: metadata: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v sql.NullString
		if err := rows.Scan(&k, &v); err != nil {
			return md, fmt.Errorf("mbtiles: metadata: %w", err)
		}
		val := v.String
		switch k.String {
		case "name":
			md.Name = val
		case "description":
			md.Description = val
		case "attribution":
			md.Attribution = val
		case "format":
			md.Format = val
		case "type":
			md.Type = val
		case "minzoom":
			md.MinZoom, _ = strconv.Atoi(strings.TrimSpace(val))
		case "maxzoom":
			md.MaxZoom, _ = strconv.Atoi(strings.TrimSpace(val))
		case "bounds":
			if f := floats(val); len(f) == 4 {
				md.Bounds = [4]float64(f)
			}
		case "center":
			if f := floats(val); len(f) == 3 {
				md.Center = [3]float64(f)
			}
		case "json":
			var j struct {
				VectorLayers json.RawMessage `json:"vector_layers"`
			}
			if json.Unmarshal([]byte(val), &j) == nil {
				md.VectorLayers = j.VectorLayers
			}
		}
	}
	if err := rows.Err(); err != nil {
		return md, fmt.Errorf("mbtiles: metadata: %w", err)
	}
	return md, nil
}

func floats(s string) []float64 {
	var out []float64
	for p := range strings.SplitSeq(s, ",") {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil
		}
		out = append(out, f)
	}
	return out
}
