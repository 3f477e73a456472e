package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"tilecache/internal/accesslog"
	"tilecache/internal/gwc"
	"tilecache/internal/quota"
	"tilecache/internal/token"
)

// QuotaCmd groups the disk-quota commands.
type QuotaCmd struct {
	IngestLogs IngestLogsCmd `cmd:"" name:"ingest-logs" help:"Read access logs (a CDN's, a bucket's, a proxy's) and count their tile reads in the disk quota's pages, so LRU and LFU see them (tilecache servers only)."`
}

// IngestLogsCmd reads access logs and sends the reads of tiles, per quota
// page, to the server (POST /rest/diskquota/access.json): the server
// resolves the layer ids the logs hold and records each batch once.
type IngestLogsCmd struct {
	Format     string   `help:"Log format: cloudfront (standard logs, gzip or plain), s3 (server access logs) or combined (nginx/Apache)." enum:"cloudfront,s3,combined" required:""`
	KeyPrefix  string   `help:"The tile store's key prefix (TILECACHE_KEY_PREFIX of the server)." name:"key-prefix"`
	PathPrefix string   `help:"Start of URL paths that is not part of the key, e.g. /tiles for a proxy that serves the bucket under /tiles/." name:"path-prefix" default:"/"`
	OriginPath string   `help:"Put in front of a URL path to make the key (CloudFront's origin path)." name:"origin-path"`
	Files      []string `arg:"" help:"Log files; - reads standard input."`
}

func (c IngestLogsCmd) run(ctx context.Context, cl *Client, env Env) (int, error) {
	f, err := accesslog.ParseFormat(c.Format)
	if err != nil {
		return ExitError, err
	}
	// The layer id in a key is sent as it is: the server knows its layers.
	m, err := accesslog.NewMapper(accesslog.MapperConfig{PageShift: quota.PageShift, Prefix: c.KeyPrefix, PathPrefix: c.PathPrefix, OriginPath: c.OriginPath,
		LayerName: func(id string) (string, bool) { return id, true }})
	if err != nil {
		return ExitError, err
	}
	code := ExitDone
	for _, name := range c.Files {
		if err := c.ingest(ctx, cl, env, f, m, name); err != nil {
			fmt.Fprintf(env.Stderr, "tilecache: %s: %v\n", name, err)
			code = ExitError
		}
	}
	return code, nil
}

// postBatch is the most pages one POST carries: well inside the server's
// 1 MiB body limit whatever the names (a page is about 200 bytes of JSON).
const postBatch = 2_000

// ingest sends one log's reads. A file's batches are named by its
// content's SHA-256, so that a file sent twice counts once; standard
// input gets a random name.
func (c IngestLogsCmd) ingest(ctx context.Context, cl *Client, env Env, f accesslog.Format, m *accesslog.Mapper, name string) error {
	var r io.Reader
	var id string
	if name == "-" {
		r = env.Stdin
		id = "stdin:" + token.New()
	} else {
		file, err := os.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		h := sha256.New()
		if _, err := io.Copy(h, file); err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if _, err := file.Seek(0, io.SeekStart); err != nil {
			return err
		}
		id = "file:" + hex.EncodeToString(h.Sum(nil))
		r = file
	}
	n, skipped, dups := 0, 0, 0
	st, err := accesslog.Ingest(ctx, r, f, m, func(ctx context.Context, batch []accesslog.PageHits) error {
		n++
		reads := quota.ReadsOf(batch)
		body, err := cl.do(ctx, "POST", "/rest/diskquota/access.json", "application/json", gwc.EncodeAccessBatchByID(accesslog.BatchID(id, n), reads))
		if err != nil {
			return err
		}
		var ans struct {
			Skipped   int  `json:"skipped"`
			Duplicate bool `json:"duplicate"`
		}
		if err := json.Unmarshal(body, &ans); err != nil {
			return fmt.Errorf("the server's answer %q: %w", body, err)
		}
		skipped += ans.Skipped
		if ans.Duplicate {
			dups++
		}
		return nil
	}, accesslog.Options{MaxPages: postBatch})
	if err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "%s: %d lines read, %d tile reads, %d pages touched (%d of unknown layers), %d skipped (%d malformed, %d not reads, %d not successful, %d not tiles)",
		name, st.Lines, st.Kept, st.Pages, skipped, st.Lines-st.Kept, st.Malformed, st.NotRead, st.NotSuccessful, st.NotTile)
	if dups > 0 {
		fmt.Fprintf(env.Stdout, "; %d of %d batches were counted before", dups, n)
	}
	fmt.Fprintln(env.Stdout)
	return nil
}
