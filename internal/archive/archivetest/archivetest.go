// Package archivetest holds what the archive formats' tests share: random
// tile sets, solid PNG tiles, running GDAL's programs, a bucket.
package archivetest

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"tilecache/internal/archive"
	"tilecache/internal/awsconf"
	"tilecache/internal/testkit/testenv"
	"tilecache/internal/tilestore/s3store"
)

// Tile is a tile's address, y counted from the north.
type Tile struct {
	Z    int
	X, Y int64
}

// RandomTiles returns about n tiles of levels 0..maxZ: rows of neighbours
// sharing one content, contents repeated across the set, and some
// distinct ones.
func RandomTiles(rng *rand.Rand, maxZ, n int) map[Tile][]byte {
	pool := make([][]byte, 8)
	for i := range pool {
		pool[i] = fmt.Appendf(nil, "shared content %d", i)
	}
	total := ((1 << (2 * (maxZ + 1))) - 1) / 3
	n = min(n, total)
	set := map[Tile][]byte{}
	for len(set) < n {
		z := rng.IntN(maxZ + 1)
		side := int64(1) << z
		x, y := rng.Int64N(side), rng.Int64N(side)
		data := pool[rng.IntN(len(pool))]
		if rng.IntN(4) == 0 {
			data = fmt.Appendf(nil, "distinct %d/%d/%d %d", z, x, y, rng.Uint64())
		}
		for i := int64(0); i < 1+rng.Int64N(10) && x+i < side && len(set) < n; i++ {
			set[Tile{z, x + i, y}] = data
		}
	}
	return set
}

// Shuffled returns the tiles of set in a random order.
func Shuffled(rng *rand.Rand, set map[Tile][]byte) []Tile {
	ts := make([]Tile, 0, len(set))
	for t := range set {
		ts = append(ts, t)
	}
	// Map order is random but not seeded: sort first.
	slicesSort(ts)
	rng.Shuffle(len(ts), func(i, j int) { ts[i], ts[j] = ts[j], ts[i] })
	return ts
}

func slicesSort(ts []Tile) {
	less := func(a, b Tile) bool {
		if a.Z != b.Z {
			return a.Z < b.Z
		}
		if a.Y != b.Y {
			return a.Y < b.Y
		}
		return a.X < b.X
	}
	slices.SortFunc(ts, func(a, b Tile) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
}

// CheckReader fails t unless r holds exactly the tiles of set, by Tile
// and by Tiles.
func CheckReader(t testing.TB, r archive.Reader, set map[Tile][]byte) {
	t.Helper()
	ctx := context.Background()
	for tl, want := range set {
		got, ok, err := r.Tile(ctx, tl.Z, tl.X, tl.Y)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("tile %v: got %q %v %v, want %q", tl, got, ok, err, want)
		}
	}
	n := 0
	err := r.Tiles(ctx, func(z int, x, y int64, data []byte) error {
		want, ok := set[Tile{z, x, y}]
		if !ok || !bytes.Equal(want, data) {
			return fmt.Errorf("tile %d/%d/%d: got %q, want %q (%v)", z, x, y, data, want, ok)
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(set) {
		t.Fatalf("Tiles walked %d tiles, want %d", n, len(set))
	}
}

// SolidPNG returns a 256x256 PNG of one colour.
func SolidPNG(c color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 256, 256))
	for i := 0; i < len(img.Pix); i += 4 {
		img.Pix[i], img.Pix[i+1], img.Pix[i+2], img.Pix[i+3] = c.R, c.G, c.B, c.A
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// Quadrants returns an image of w x w pixels whose four quadrants are
// the colours cs (north-west, north-east, south-west, south-east).
func Quadrants(w int, cs [4]color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, w, w))
	for y := range w {
		for x := range w {
			q := 0
			if x >= w/2 {
				q++
			}
			if y >= w/2 {
				q += 2
			}
			img.SetRGBA(x, y, cs[q])
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err)
	}
	return b.Bytes()
}

// DecodeRGBA decodes an image and returns the colour of pixel x, y.
func DecodeRGBA(t testing.TB, data []byte, x, y int) color.RGBA {
	t.Helper()
	img, _, err := image.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decoding image: %v", err)
	}
	return color.RGBAModel.Convert(img.At(img.Bounds().Min.X+x, img.Bounds().Min.Y+y)).(color.RGBA)
}

// GDAL runs GDAL's command-line programs, or skips the test where they
// are not installed (see testenv.RequireGDAL).
type GDAL struct {
	Info, Translate, OGRInfo string
}

// RequireGDAL returns GDAL's programs or skips.
func RequireGDAL(t testing.TB) GDAL {
	t.Helper()
	info, translate := testenv.RequireGDAL(t)
	g := GDAL{Info: info, Translate: translate}
	g.OGRInfo, _ = exec.LookPath("ogrinfo")
	return g
}

// Run runs one of GDAL's programs for at most a minute and returns its
// standard output; a warning on its standard error fails the test.
func (GDAL) Run(t testing.TB, bin string, args ...string) []byte {
	t.Helper()
	if bin == "" {
		t.Skip("a GDAL program is not on PATH: install GDAL (Debian package gdal-bin)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "GDAL_PAM_ENABLED=NO")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, stderr.String())
	}
	if strings.Contains(stderr.String(), "Warning") {
		t.Errorf("%s %s warns:\n%s", filepath.Base(bin), strings.Join(args, " "), stderr.String())
	}
	return stdout.Bytes()
}

// S3Bucket returns a store of a new bucket of the environment's S3 (the
// local stack's MinIO), without a prefix, removed with what it holds when
// the test ends; it skips where no S3 is configured (see
// testenv.RequireS3).
func S3Bucket(t testing.TB) (*s3store.Store, string) {
	t.Helper()
	testenv.RequireS3(t)
	bucket := testenv.Name(t, "archive")
	store, err := s3store.NewFromEnv(os.LookupEnv, bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := awsconf.ParseS3Endpoint(os.LookupEnv, "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := minio.New(ep.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY"), os.Getenv("AWS_SESSION_TOKEN")),
		Secure:       ep.Secure,
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := raw.MakeBucket(ctx, bucket, minio.MakeBucketOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for o := range raw.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
			raw.RemoveObject(ctx, bucket, o.Key, minio.RemoveObjectOptions{})
		}
		if err := raw.RemoveBucket(ctx, bucket); err != nil {
			t.Errorf("remove bucket %s: %v", bucket, err)
		}
	})
	return store, bucket
}
