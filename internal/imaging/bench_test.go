package imaging

import (
	"bytes"
	"image"
	"image/jpeg"
	"image/png"
	"runtime"
	"sync"
	"testing"
	"time"
)

// The benchmarks compare the standard library (image/png, image/jpeg)
// with this package on the seeding hot path. Their metatile is map-like
// (see mapLike) and written as MapServer writes it: RGB, no filter, zlib
// level 1, 8 KiB IDAT chunks, about 1.2 MB for 1024×1024; "overlay" is the
// transparent variant (TRANSPARENT=TRUE: RGBA, mostly empty). MB/s is of
// decoded pixel bytes (3 or 4 per pixel) for decoding and of the 4-byte
// pixels of the tile for encoding; B/tile is the mean encoded tile size;
// cpu-ns/op is the CPU time of all threads per op (see reportCPU).

type benchMeta struct {
	name string
	png  []byte
	bpp  int
}

var (
	benchOnce  sync.Once
	benchMetas []benchMeta
)

func metatiles(b *testing.B) []benchMeta {
	benchOnce.Do(func() {
		benchMetas = []benchMeta{
			{"map", mapServerPNG(b, mapLike(1024, 1024, 1, false), true), 3},
			{"overlay", mapServerPNG(b, mapLike(1024, 1024, 2, true), false), 4},
		}
	})
	return benchMetas
}

// stdPNGEncoder is image/png's encoder as it is best used: fastest level,
// buffers pooled.
var stdPNGEncoder = png.Encoder{CompressionLevel: png.BestSpeed, BufferPool: &stdPool{}}

type stdPool struct{ p sync.Pool }

func (s *stdPool) Get() *png.EncoderBuffer {
	b, _ := s.p.Get().(*png.EncoderBuffer)
	return b
}
func (s *stdPool) Put(b *png.EncoderBuffer) { s.p.Put(b) }

// stdEncoders encode like the Encoders, with the standard library alone.
var stdEncoders = map[string]func(image.Image) ([]byte, error){
	"image/png": func(img image.Image) ([]byte, error) {
		var buf bytes.Buffer
		err := stdPNGEncoder.Encode(&buf, img)
		return buf.Bytes(), err
	},
	"image/jpeg": func(img image.Image) ([]byte, error) {
		var buf bytes.Buffer
		err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: DefaultJPEGQuality})
		return buf.Bytes(), err
	},
}

func stdDecode(data []byte) (image.Image, error) { return png.Decode(bytes.NewReader(data)) }

// decodeRelease decodes and releases the image at once, as a caller done
// with it would.
func decodeRelease(data []byte) (image.Image, error) {
	img, err := Decode(data)
	Release(img)
	return img, err
}

// reportCPU reports the CPU time per op since start (a cpuTime): unlike
// ns/op it counts the garbage collector's work on other threads.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

func BenchmarkDecodeMetatile(b *testing.B) {
	for _, m := range metatiles(b) {
		for _, impl := range []struct {
			name   string
			decode func([]byte) (image.Image, error)
		}{{"stdlib", stdDecode}, {"imaging", Decode}, {"imaging+release", decodeRelease}} {
			b.Run(m.name+"/"+impl.name, func(b *testing.B) {
				b.SetBytes(1024 * 1024 * int64(m.bpp))
				b.ReportMetric(float64(len(m.png)), "png-bytes")
				start := cpuTime()
				for b.Loop() {
					if _, err := impl.decode(m.png); err != nil {
						b.Fatal(err)
					}
				}
				reportCPU(b, start)
			})
		}
	}
}

// benchTiles returns the 16 tiles of a decoded metatile.
func benchTiles(b *testing.B, m benchMeta) []image.Image {
	img, err := Decode(m.png)
	if err != nil {
		b.Fatal(err)
	}
	grid, err := Tiles(img, 4, 4, 256, 256, 0)
	if err != nil {
		b.Fatal(err)
	}
	var tiles []image.Image
	for _, row := range grid {
		tiles = append(tiles, row...)
	}
	return tiles
}

// benchEncode encodes the tiles round robin and reports the mean size.
func benchEncode(b *testing.B, tiles []image.Image, encode func(image.Image) ([]byte, error)) {
	b.SetBytes(256 * 256 * 4)
	total, n := 0, 0
	start := cpuTime()
	for b.Loop() {
		data, err := encode(tiles[n%len(tiles)])
		if err != nil {
			b.Fatal(err)
		}
		total += len(data)
		n++
	}
	reportCPU(b, start)
	b.ReportMetric(float64(total)/float64(n), "B/tile")
}

func BenchmarkEncodeTilePNG(b *testing.B) {
	enc, err := NewEncoder("image/png", Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range metatiles(b) {
		tiles := benchTiles(b, m)
		b.Run(m.name+"/stdlib", func(b *testing.B) { benchEncode(b, tiles, stdEncoders["image/png"]) })
		b.Run(m.name+"/imaging", func(b *testing.B) { benchEncode(b, tiles, enc.Encode) })
	}
}

func BenchmarkEncodeTilePNG8(b *testing.B) {
	enc, err := NewEncoder("image/png8", Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range metatiles(b) {
		tiles := benchTiles(b, m)
		b.Run(m.name+"/imaging", func(b *testing.B) { benchEncode(b, tiles, enc.Encode) })
	}
}

func BenchmarkEncodeTileJPEG(b *testing.B) {
	enc, err := NewEncoder("image/jpeg", Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, m := range metatiles(b) {
		tiles := benchTiles(b, m)
		if m.name == "map" { // image/jpeg cannot composite the overlay's transparency
			b.Run(m.name+"/stdlib", func(b *testing.B) { benchEncode(b, tiles, stdEncoders["image/jpeg"]) })
		}
		b.Run(m.name+"/imaging", func(b *testing.B) { benchEncode(b, tiles, enc.Encode) })
	}
}

// BenchmarkMetatilePipeline is the work per metatile: decode, cut into
// 16 tiles, skip uniform ones, encode the others, release the metatile.
func BenchmarkMetatilePipeline(b *testing.B) {
	type impl struct {
		name    string
		decode  func([]byte) (image.Image, error)
		encode  func(image.Image) ([]byte, error)
		release func(image.Image)
	}
	for _, format := range []string{"image/png", "image/png8", "image/jpeg"} {
		enc, err := NewEncoder(format, Options{})
		if err != nil {
			b.Fatal(err)
		}
		impls := []impl{{"imaging", Decode, enc.Encode, Release}}
		if std := stdEncoders[format]; std != nil {
			impls = append([]impl{{"stdlib", stdDecode, std, func(image.Image) {}}}, impls...)
		}
		for _, m := range metatiles(b) {
			for _, im := range impls {
				if format == "image/jpeg" && m.name == "overlay" && im.name == "stdlib" {
					continue // image/jpeg cannot composite the overlay's transparency
				}
				b.Run(format+"/"+m.name+"/"+im.name, func(b *testing.B) {
					total, n := 0, 0
					start := cpuTime()
					for b.Loop() {
						img, err := im.decode(m.png)
						if err != nil {
							b.Fatal(err)
						}
						grid, err := Tiles(img, 4, 4, 256, 256, 0)
						if err != nil {
							b.Fatal(err)
						}
						for _, row := range grid {
							for _, tile := range row {
								if _, ok := Uniform(tile); ok {
									continue
								}
								data, err := im.encode(tile)
								if err != nil {
									b.Fatal(err)
								}
								total += len(data)
							}
						}
						im.release(img)
						n++
					}
					reportCPU(b, start)
					b.ReportMetric(float64(total)/float64(n), "B/metatile")
				})
			}
		}
	}
}

// BenchmarkMetatileLanes is BenchmarkMetatilePipeline for png map
// metatiles in 4 concurrent lanes, as a seed runs them: the garbage of one
// lane's metatile makes the collector run under all of them.
func BenchmarkMetatileLanes(b *testing.B) {
	enc, err := NewEncoder("image/png", Options{})
	if err != nil {
		b.Fatal(err)
	}
	m := metatiles(b)[0]
	b.SetParallelism((4 + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	start := cpuTime()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			img, err := Decode(m.png)
			if err != nil {
				b.Error(err)
				return
			}
			grid, err := Tiles(img, 4, 4, 256, 256, 0)
			if err != nil {
				b.Error(err)
				return
			}
			for _, row := range grid {
				for _, tile := range row {
					if _, ok := Uniform(tile); ok {
						continue
					}
					if _, err := enc.Encode(tile); err != nil {
						b.Error(err)
						return
					}
				}
			}
			Release(img)
		}
	})
	reportCPU(b, start)
}
