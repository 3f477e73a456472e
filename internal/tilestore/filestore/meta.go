package filestore

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"tilecache/internal/tilestore"
)

// sidecar is the JSON form of non-default meta.
type sidecar struct {
	ContentType     string `json:"contentType"`
	CacheControl    string `json:"cacheControl,omitempty"`
	ContentEncoding string `json:"contentEncoding,omitempty"`
}

func sidecarPath(dirPath, name string) string { return dirPath + sep + "." + name + ".meta" }

// removeSidecar removes a sidecar if there is one. It runs on every Put and
// Delete, mostly for sidecars that do not exist, hence one plain unlink
// rather than os.Remove (unlink, then rmdir, then an error value).
func removeSidecar(p string) error {
	if err := syscall.Unlink(p); err != nil && !isNotExist(err) {
		return &fs.PathError{Op: "unlink", Path: p, Err: err}
	}
	return nil
}

// readMeta returns the object's sidecar meta, or the default meta of its
// extension when it has none.
func readMeta(dirPath, name string) (tilestore.Meta, error) {
	b, err := os.ReadFile(sidecarPath(dirPath, name))
	if err != nil {
		if isNotExist(err) {
			return tilestore.Meta{ContentType: DefaultContentType(name)}, nil
		}
		return tilestore.Meta{}, err
	}
	var sc sidecar
	if err := json.Unmarshal(b, &sc); err != nil {
		return tilestore.Meta{}, fmt.Errorf("decode meta sidecar of %q: %w", name, err)
	}
	return tilestore.Meta(sc), nil
}

func isDefaultMeta(name string, m tilestore.Meta) bool {
	return m.CacheControl == "" && m.ContentEncoding == "" && m.ContentType == DefaultContentType(name)
}

// DefaultContentType returns the content type Get reports for an object
// named name that has no sidecar: a fixed table of tile formats keyed by
// extension (deliberately not the system's MIME database, which varies
// between machines), application/octet-stream otherwise.
func DefaultContentType(name string) string {
	ext := ""
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		ext = name[i+1:]
	}
	switch ext {
	case "png":
		return "image/png"
	case "jpeg", "jpg":
		return "image/jpeg"
	case "gif":
		return "image/gif"
	case "webp":
		return "image/webp"
	case "tiff", "tif":
		return "image/tiff"
	case "pbf", "mvt":
		return "application/vnd.mapbox-vector-tile"
	case "json":
		return "application/json"
	case "geojson":
		return "application/geo+json"
	case "kml":
		return "application/vnd.google-earth.kml+xml"
	case "kmz":
		return "application/vnd.google-earth.kmz"
	case "svg":
		return "image/svg+xml"
	default:
		return "application/octet-stream"
	}
}
