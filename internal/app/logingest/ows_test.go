package logingest_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/app/logingest"
	"tilecache/internal/config"
	"tilecache/internal/layer"
	"tilecache/internal/quota"
)

// TestLogFunctionCountsOWSReads: the log function counts a tile read
// through the WMTS KVP binding and through WMS-C (CloudFront logs them as
// the binding's path with the request in cs-uri-query) as it counts the
// RESTful read of the same tile; the capabilities read is no tile's.
func TestLogFunctionCountsOWSReads(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "layers.yaml")
	if err := os.WriteFile(path, []byte(apptest.Layers), 0o644); err != nil {
		t.Fatal(err)
	}
	layers, err := layer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	log := "#Version: 1.0\n#Fields: date time x-edge-location sc-bytes c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer) cs(User-Agent) cs-uri-query\n"
	for _, r := range [][2]string{
		// demo:world EPSG:4326 1/3/1 (row 0 from the top), four ways.
		{"/gwc/service/wmts", "SERVICE=WMTS&REQUEST=GetTile&VERSION=1.0.0&LAYER=demo%253Aworld&STYLE=&FORMAT=image%252Fpng&TILEMATRIXSET=EPSG%253A4326&TILEMATRIX=1&TILEROW=0&TILECOL=3"},
		{"/wmts", "service=WMTS&request=GetTile&version=1.0.0&layer=demo:world&style=default&format=image/png&tileMatrixSet=EPSG:4326&tileMatrix=1&tileRow=0&tileCol=3"},
		{"/gwc/service/wms", "SERVICE=WMS&VERSION=1.1.1&REQUEST=GetMap&LAYERS=demo:world&STYLES=&SRS=EPSG:4326&BBOX=90,0,180,90&WIDTH=256&HEIGHT=256&FORMAT=image/png&TILED=true"},
		{"/wmts/demo:world/EPSG:4326/png/default/1/3/0.png", "-"},
		{"/gwc/service/wmts", "SERVICE=WMTS&REQUEST=GetCapabilities"},
	} {
		log += at.Format("2006-01-02\t15:04:05") + "\tSEA19-C1\t2390\t192.0.2.1\tGET\td1.cloudfront.net\t" + r[0] + "\t200\t-\tQGIS\t" + r[1] + "\n"
	}
	cfg := logingest.Config{KeyPrefix: "tiles",
		AccessLogs: config.AccessLogs{AccessLogFormat: "cloudfront", AccessLogPathPrefix: "/", AccessLogOriginPath: "/tiles"}}
	sink := &readSink{}
	li, err := logingest.NewIngester(cfg, layers, quota.NewReadLog(sink, sink), oneLog(log), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	st, err := li.Ingest(t.Context(), "logs/E2EXAMPLE.2026-12-02-06.0123abcd.gz@e", strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if st.Kept != 4 || st.NotTile != 1 || sink.hits != 4 {
		t.Errorf("kept %d, not tiles %d, %d reads recorded; want 4, 1, 4", st.Kept, st.NotTile, sink.hits)
	}
}
