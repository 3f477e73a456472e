package rest

// GET /rest/export/{layer}.json, an extension of this project: the
// archives the layer's exports wrote, and with ?archive={task}.{kind} one
// of them, downloaded: a redirect to a link that reads it for an hour
// (S3: a presigned GET, since an archive is far larger than an API answer
// may be), or the archive itself (the embedded backend's file store).

import (
	"context"
	"net/http"
	"net/url"
	"time"

	"tilecache/internal/apperr"
	"tilecache/internal/archive/export"
	"tilecache/internal/seed"
)

// ArchiveReader lists and hands out the archives exports wrote
// (seed.Control does).
type ArchiveReader interface {
	ExportedArchives(ctx context.Context, layer string) ([]seed.ExportedArchive, error)
	DownloadArchive(ctx context.Context, layer, name string) (seed.Download, error)
}

// exportedArchive is an archive in the listing.
type exportedArchive struct {
	Task     int64     `json:"task"`
	Archive  string    `json:"archive"` // pmtiles, mbtiles or gpkg
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	// Href downloads it (this path with ?archive=).
	Href string `json:"href"`
}

// exports answers GET /rest/export/{layer}.json.
func (ts tasksResource) exports(name string, f format) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		ar, ok := ts.tasks.(ArchiveReader)
		if !ok || f != formatJSON {
			return apperr.New(apperr.NotFound, "Not found: exported archives are listed in JSON only")
		}
		if a := r.URL.Query().Get("archive"); a != "" {
			return ts.download(w, r, ar, name, a)
		}
		list, err := ar.ExportedArchives(r.Context(), name)
		if err != nil {
			return err
		}
		out := struct {
			Layer    string            `json:"layer"`
			Archives []exportedArchive `json:"archives"`
		}{Layer: name, Archives: make([]exportedArchive, 0, len(list))}
		self := ts.basePath + "/rest/export/" + url.PathEscape(name) + ".json?archive="
		for _, a := range list {
			out.Archives = append(out.Archives, exportedArchive{Task: a.Task, Archive: a.Kind, Size: a.Size, Modified: a.Modified.UTC(),
				Href: self + url.QueryEscape(a.FileName())})
		}
		w.Header().Set("Cache-Control", "no-store")
		return writeJSON(w, http.StatusOK, out, "exported archives")
	}
}

// download answers GET /rest/export/{layer}.json?archive=…: a redirect to
// the archive's link, or the archive (with ranges, as http.ServeContent
// serves a file).
func (ts tasksResource) download(w http.ResponseWriter, r *http.Request, ar ArchiveReader, layer, name string) error {
	d, err := ar.DownloadArchive(r.Context(), layer, name)
	if err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	if d.Link != "" {
		http.Redirect(w, r, d.Link, http.StatusFound)
		return nil
	}
	defer d.File.Close()
	w.Header().Set("Content-Type", export.ContentType(d.Archive.Kind))
	w.Header().Set("Content-Disposition", `attachment; filename="`+d.Archive.FileName()+`"`)
	http.ServeContent(w, r, d.Archive.FileName(), d.Archive.Modified, d.File)
	return nil
}
