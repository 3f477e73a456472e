package tilestore

import (
	"context"
	"io"
)

// Uploader is a Store that stores an object read from a stream of known
// size without holding it in memory: an archive written by an export,
// larger than any tile. Both adapters are one (S3 in parts, the file
// store by copying); a caller with another Store reads the stream into
// memory and Puts it.
type Uploader interface {
	// Upload stores size bytes read from r under key, replacing any
	// previous object atomically, with meta as Put does.
	Upload(ctx context.Context, key string, r io.Reader, size int64, meta Meta) error
}

// Upload stores size bytes of r under key in s: through Uploader when s
// is one, else read whole and Put.
func Upload(ctx context.Context, s Store, key string, r io.Reader, size int64, meta Meta) error {
	if u, ok := s.(Uploader); ok {
		return u.Upload(ctx, key, r, size, meta)
	}
	data, err := io.ReadAll(io.LimitReader(r, size))
	if err != nil {
		return err
	}
	return s.Put(ctx, key, data, meta)
}
