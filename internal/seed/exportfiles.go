// The archives exports wrote: listed per layer and handed out for download.

package seed

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/archive/export"
	"tilecache/internal/tilestore"
)

// ExportedArchive is an archive an export wrote.
type ExportedArchive struct {
	Task     int64  // the export's task id
	Kind     string // pmtiles, mbtiles or gpkg
	Size     int64
	Modified time.Time
}

// FileName is the archive's name: {task}.{kind}.
func (a ExportedArchive) FileName() string { return strconv.FormatInt(a.Task, 10) + "." + a.Kind }

// ExportedArchives lists the archives the exports of layerName wrote
// (those finished; an export's staged chunks are not archives), newest
// task first. An unknown layer is NotFound.
func (c *Control) ExportedArchives(ctx context.Context, layerName string) ([]ExportedArchive, error) {
	l, ok := c.planner.layers.Layer(layerName)
	if !ok {
		return nil, apperr.New(apperr.NotFound, "Unknown layer: %s", layerName)
	}
	dir := withPrefix(c.opts.KeyPrefix, exportDir+l.ID+"/")
	var out []ExportedArchive
	err := c.tiles.List(ctx, dir, func(o tilestore.Object) error {
		name := strings.TrimPrefix(o.Key, dir)
		if a, ok := parseArchiveName(name); ok {
			a.Size, a.Modified = o.Size, o.Modified
			out = append(out, a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list the exports of layer %s: %w", layerName, err)
	}
	slices.SortFunc(out, func(a, b ExportedArchive) int { return int(b.Task - a.Task) })
	return out, nil
}

// parseArchiveName reads "{task}.{kind}", the name of an archive in a
// layer's exports (a staged chunk, "{task}.stage/…", is none).
func parseArchiveName(name string) (ExportedArchive, bool) {
	id, ext, ok := strings.Cut(name, ".")
	kind, known := export.Kind(ext)
	n, err := strconv.ParseInt(id, 10, 64)
	if !ok || !known || kind != ext || err != nil || n <= 0 || strings.Contains(name, "/") {
		return ExportedArchive{}, false
	}
	return ExportedArchive{Task: n, Kind: kind}, true
}

// Download is how an archive is read by a client: Link, a URL reading it
// without credentials for a while (S3's presigned GET), or else File, the
// archive itself to serve (the file store), which the caller closes.
type Download struct {
	Archive ExportedArchive
	Link    string
	File    io.ReadSeekCloser
}

// linker is a tile store that hands out links to its objects (s3store).
type linker interface {
	Link(ctx context.Context, key, filename string, expires time.Duration) (string, error)
}

// opener is a tile store whose objects are files (filestore).
type opener interface {
	Open(ctx context.Context, key string) (*os.File, int64, tilestore.Meta, bool, error)
}

// DownloadLinkLife is how long a download link reads the archive.
const DownloadLinkLife = time.Hour

// DownloadArchive returns how to read archive name ("{task}.{kind}") of
// layerName's exports. An unknown layer or archive is NotFound, one whose
// export is still running a Conflict saying so.
func (c *Control) DownloadArchive(ctx context.Context, layerName, name string) (Download, error) {
	l, ok := c.planner.layers.Layer(layerName)
	if !ok {
		return Download{}, apperr.New(apperr.NotFound, "Unknown layer: %s", layerName)
	}
	a, ok := parseArchiveName(name)
	if !ok {
		return Download{}, apperr.New(apperr.NotFound, "No archive %s: exports are named {task}.pmtiles, .mbtiles or .gpkg", apperr.Show(name))
	}
	key := ExportKey(c.opts.KeyPrefix, l.ID, a.Task, a.Kind)
	o, found, err := c.tiles.Stat(ctx, key)
	if err != nil {
		return Download{}, fmt.Errorf("look for archive %s of layer %s: %w", name, layerName, err)
	}
	if !found {
		if t, err := c.tasks.Get(ctx, a.Task); err == nil && t.Layer == layerName && t.Status.Active() {
			return Download{}, apperr.New(apperr.Conflict, "Export task %d of layer %s is %s: its archive is written when it is DONE", a.Task, layerName, t.Status)
		}
		return Download{}, apperr.New(apperr.NotFound, "No archive %s of layer %s: no export wrote it, or it was removed", name, layerName)
	}
	a.Size, a.Modified = o.Size, o.Modified
	filename := strings.ReplaceAll(l.ID, ":", "-") + "-" + path.Base(a.FileName())
	switch st := c.tiles.(type) {
	case linker:
		u, err := st.Link(ctx, key, filename, DownloadLinkLife)
		if err != nil {
			return Download{}, fmt.Errorf("link to archive %s of layer %s: %w", name, layerName, err)
		}
		return Download{Archive: a, Link: u}, nil
	case opener:
		f, _, _, found, err := st.Open(ctx, key)
		if err != nil {
			return Download{}, fmt.Errorf("open archive %s of layer %s: %w", name, layerName, err)
		}
		if !found {
			return Download{}, apperr.New(apperr.NotFound, "No archive %s of layer %s: it was removed", name, layerName)
		}
		return Download{Archive: a, File: f}, nil
	}
	return Download{}, apperr.New(apperr.NotFound, "Archives cannot be downloaded from this tile store")
}
