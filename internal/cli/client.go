// Package cli is tilecache's seeding command line: `tilecache seed`,
// `reseed`, `truncate`, `estimate`, `tasks` and `kill` against any server
// that speaks GeoWebCache's REST seeding interface — tilecache locally or
// on AWS, or GeoWebCache itself — with live progress.
package cli

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"

	"tilecache/internal/gwc"
	"tilecache/internal/task"
)

// Client talks to a server's /rest interface.
type Client struct {
	Base     string // the URL under which /rest lives, e.g. http://127.0.0.1:8080 or https://host/geoserver/gwc
	User     string
	Password string
	// Token, when set, is sent as Authorization: Bearer instead of User
	// and Password (an API token).
	Token string
	HTTP  *http.Client // nil: one with a one-minute timeout
	// Stderr receives the warning about credentials sent over plain
	// http:// to a host other than this machine (nil: os.Stderr).
	Stderr io.Writer

	hcOnce   sync.Once
	hc       *http.Client
	warnOnce sync.Once
}

// Row is a task's status row: [processed, total, remaining, id, status].
type Row [5]int64

// Task statuses of the rows (contract §5.2, as GeoWebCache).
const (
	Aborted = int64(task.Aborted)
	Pending = int64(task.Pending)
	Running = int64(task.Running)
	Done    = int64(task.Done)
)

// statusError is an answer other than 200, with the server's message.
type statusError struct {
	Status int
	Msg    string
}

func (e *statusError) Error() string {
	msg := strings.TrimSpace(e.Msg)
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	if msg == "" {
		return fmt.Sprintf("the server answered %d", e.Status)
	}
	return fmt.Sprintf("the server answered %d: %s", e.Status, msg)
}

func (c *Client) do(ctx context.Context, method, path, contentType string, body []byte, headers ...string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Base, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	switch {
	case c.Token != "":
		req.Header.Set("Authorization", "Bearer "+c.Token)
	case c.User != "":
		req.SetBasicAuth(c.User, c.Password)
	}
	res, err := c.httpClient().Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s %s: %w", method, path, &statusError{res.StatusCode, string(b)})
	}
	return b, nil
}

func layerPath(layer string) string { return url.PathEscape(layer) }

// rowsOf decodes {"long-array-array": [[…], …]}; an empty body (what
// GeoWebCache answers to a seed request) is no rows.
func rowsOf(b []byte) ([]Row, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var v struct {
		Rows []Row `json:"long-array-array"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("decode the task list: %w", err)
	}
	return v.Rows, nil
}

// Submit posts a seed request and returns the rows of the tasks it
// created (none from a server that answers without them).
func (c *Client) Submit(ctx context.Context, layer string, req SeedRequest) ([]Row, error) {
	if req.Tiles != "" {
		b, err := c.postList(ctx, "/rest/seed/"+layerPath(layer)+".json", req)
		if err != nil {
			return nil, err
		}
		return rowsOf(b)
	}
	body, err := json.Marshal(map[string]any{"seedRequest": req})
	if err != nil {
		return nil, err
	}
	b, err := c.do(ctx, http.MethodPost, "/rest/seed/"+layerPath(layer)+".json", "application/json", body)
	if err != nil {
		return nil, err
	}
	return rowsOf(b)
}

// Estimate posts the request to this project's dry-run extension and
// decodes the answer into the type the server encodes it from.
func (c *Client) Estimate(ctx context.Context, layer string, req SeedRequest) (gwc.Estimate, error) {
	body, err := json.Marshal(map[string]any{"seedRequest": req})
	if err != nil {
		return gwc.Estimate{}, err
	}
	var b []byte
	if req.Tiles != "" {
		b, err = c.postList(ctx, "/rest/estimate/"+layerPath(layer)+".json", req)
	} else {
		b, err = c.do(ctx, http.MethodPost, "/rest/estimate/"+layerPath(layer)+".json", "application/json", body)
	}
	var se *statusError
	if errors.As(err, &se) && se.Status == http.StatusNotFound {
		return gwc.Estimate{}, errors.New("the server offers no estimates (POST /rest/estimate is an extension of tilecache; GeoWebCache lacks it)")
	}
	if err != nil {
		return gwc.Estimate{}, err
	}
	var est gwc.Estimate
	if err := json.Unmarshal(b, &est); err != nil {
		return gwc.Estimate{}, fmt.Errorf("decode the estimate: %w", err)
	}
	return est, nil
}

// Tasks lists the tasks of a layer, or of all layers when layer is "".
func (c *Client) Tasks(ctx context.Context, layer string) ([]Row, error) {
	path := "/rest/seed.json"
	if layer != "" {
		path = "/rest/seed/" + layerPath(layer) + ".json"
	}
	b, err := c.do(ctx, http.MethodGet, path, "", nil)
	if err != nil {
		return nil, err
	}
	return rowsOf(b)
}

// Kill terminates the running, pending or all tasks of a layer, or of all
// layers when layer is "".
func (c *Client) Kill(ctx context.Context, layer, which string) error {
	path := "/rest/seed"
	if layer != "" {
		path += "/" + layerPath(layer)
	}
	_, err := c.do(ctx, http.MethodPost, path, "application/x-www-form-urlencoded", []byte("kill_all="+url.QueryEscape(which)))
	return err
}

// SeedRequest is the body of a seed request (contract §4).
type SeedRequest struct {
	Name        string      `json:"name,omitempty"`
	GridSetID   string      `json:"gridSetId,omitempty"`
	Bounds      *bounds     `json:"bounds,omitempty"`
	ZoomStart   *int        `json:"zoomStart,omitempty"`
	ZoomStop    *int        `json:"zoomStop,omitempty"`
	Format      string      `json:"format,omitempty"`
	Type        string      `json:"type"`
	ThreadCount *int        `json:"threadCount,omitempty"`
	Parameters  *parameters `json:"parameters,omitempty"`
	Retries     *int        `json:"tileFailureRetryCount,omitempty"`
	RetryWait   *int        `json:"tileFailureRetryWaitTime,omitempty"`
	MaxFailures *int        `json:"totalFailuresBeforeAborting,omitempty"`
	// Geometry is the area: a GeoJSON object, or WKT as a JSON string.
	Geometry json.RawMessage `json:"geometry,omitempty"`
	Buffer   *float64        `json:"buffer,omitempty"`
	// Tiles names a file of z/x/y lines ("-": standard input): the
	// request is then sent as a tile list, its other fields in the query.
	Tiles      string `json:"-"`
	XYZ        bool   `json:"-"`
	ParentsTo  *int   `json:"-"`
	ChildrenTo *int   `json:"-"`
}

// postList posts req as a tile list (Content-Type text/x-tile-list), the
// file gzipped, to path.
func (c *Client) postList(ctx context.Context, path string, req SeedRequest) ([]byte, error) {
	if req.Parameters != nil || req.Bounds != nil || req.Geometry != nil {
		return nil, errors.New("--tiles takes no --param, --bbox or --geometry: a tile list names its tiles")
	}
	q := url.Values{}
	set := func(k string, v *int) {
		if v != nil {
			q.Set(k, strconv.Itoa(*v))
		}
	}
	if req.Type != "" {
		q.Set("type", req.Type)
	}
	if req.GridSetID != "" {
		q.Set("gridSetId", req.GridSetID)
	}
	if req.Format != "" {
		q.Set("format", req.Format)
	}
	set("zoomStart", req.ZoomStart)
	set("zoomStop", req.ZoomStop)
	set("threadCount", req.ThreadCount)
	set("tileFailureRetryCount", req.Retries)
	set("tileFailureRetryWaitTime", req.RetryWait)
	set("totalFailuresBeforeAborting", req.MaxFailures)
	set("parentsTo", req.ParentsTo)
	set("childrenTo", req.ChildrenTo)
	if req.XYZ {
		q.Set("xyz", "true")
	}
	var in io.Reader = os.Stdin
	if req.Tiles != "-" {
		f, err := os.Open(req.Tiles)
		if err != nil {
			return nil, fmt.Errorf("--tiles: %w", err)
		}
		defer f.Close()
		in = f
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := io.Copy(zw, in); err != nil {
		return nil, fmt.Errorf("--tiles: read %s: %w", req.Tiles, err)
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return c.do(ctx, http.MethodPost, path+"?"+q.Encode(), "text/x-tile-list", gz.Bytes(), "Content-Encoding", "gzip")
}

type bounds struct {
	Coords struct {
		Double [4]float64 `json:"double"`
	} `json:"coords"`
}

type parameters struct {
	Entry [][2]string `json:"entry"`
}

// MarshalJSON writes entries as GeoWebCache does: {"string": [key, value]}.
func (p *parameters) MarshalJSON() ([]byte, error) {
	type entry struct {
		String [2]string `json:"string"`
	}
	var es []entry
	for _, kv := range p.Entry {
		es = append(es, entry{kv})
	}
	return json.Marshal(map[string]any{"entry": es})
}
