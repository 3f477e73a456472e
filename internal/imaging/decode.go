package imaging

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"html"
	"image"
	"image/gif"
	"image/jpeg"
	"io"
	"net/http"
	"regexp"
	"strings"
	"unicode"
)

// NotImageError is Decode's error for an answer that is not an image, such
// as an OGC ServiceException report or an HTML error page.
type NotImageError struct {
	ContentType string // sniffed from the body (net/http.DetectContentType), "" for an empty body
	Message     string // a short, single-line excerpt: the exception text when there is one
	Code        string // the exception code of an OGC exception report, if any
}

func (e *NotImageError) Error() string {
	var b strings.Builder
	b.WriteString("imaging: not an image")
	if e.ContentType != "" {
		b.WriteString(" (" + e.ContentType + ")")
	}
	if e.Code != "" {
		b.WriteString(": " + e.Code)
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	return b.String()
}

// Decode decodes an upstream answer (PNG, JPEG, GIF, TIFF). When data is not an
// image it returns a *NotImageError whose Message is a short, single-line
// excerpt of the body (the text of an OGC ServiceException when present), so
// the caller can log the upstream's message. Truncated or corrupt images
// give an error naming the format.
//
// PNGs decode to *RGB for 8-bit RGB without transparency (tRNS), and
// otherwise to the types image/png gives: *image.NRGBA for RGBA (and RGB
// with tRNS), *image.Paletted, *image.Gray, and *image.RGBA for interlaced
// RGB; JPEGs to *image.YCbCr (or *image.Gray); GIFs (the first frame) to
// *image.Paletted; uncompressed 8-bit RGB TIFFs in strips to an *RGB over
// data itself (see tiff.go), so data must outlive the image and stay
// unchanged while it is used. Release hands the pixel buffer of an image
// to the next Decode once the caller is done with it.
func Decode(data []byte) (image.Image, error) {
	switch {
	case bytes.HasPrefix(data, []byte(pngSignature)):
		return decodePNG(data)
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		return decodeWith("jpeg", data, jpeg.DecodeConfig, jpeg.Decode)
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		return decodeWith("gif", data, gif.DecodeConfig, gif.Decode)
	case bytes.HasPrefix(data, []byte(tiffLE)), bytes.HasPrefix(data, []byte(tiffBE)):
		return decodeTIFF(data)
	}
	if len(data) == 0 {
		return nil, &NotImageError{Message: "empty body"}
	}
	ct := http.DetectContentType(data)
	if strings.HasPrefix(ct, "image/") {
		return nil, fmt.Errorf("imaging: image format %s is not supported", ct)
	}
	e := &NotImageError{ContentType: ct}
	e.Code, e.Message = excerpt(data, ct)
	return nil, e
}

// Size reads the width and height an image's header declares (PNG IHDR,
// JPEG SOF, GIF logical screen, a TIFF's first IFD) without decoding or
// allocating pixels; ok is false when data is no image of these formats
// or its header is cut (Decode then gives the reason).
func Size(data []byte) (w, h int, ok bool) {
	var cfg image.Config
	var err error
	switch {
	case bytes.HasPrefix(data, []byte(pngSignature)):
		// The signature, then the IHDR chunk: length, type, width, height.
		if len(data) < 24 || string(data[12:16]) != "IHDR" {
			return 0, 0, false
		}
		w, h := binary.BigEndian.Uint32(data[16:20]), binary.BigEndian.Uint32(data[20:24])
		if w > 1<<30 || h > 1<<30 {
			return 1 << 30, 1 << 30, true
		}
		return int(w), int(h), true
	case bytes.HasPrefix(data, []byte("\xff\xd8\xff")):
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte("GIF87a")), bytes.HasPrefix(data, []byte("GIF89a")):
		cfg, err = gif.DecodeConfig(bytes.NewReader(data))
	case bytes.HasPrefix(data, []byte(tiffLE)), bytes.HasPrefix(data, []byte(tiffBE)):
		return tiffSize(data)
	default:
		return 0, 0, false
	}
	if err != nil {
		return 0, 0, false
	}
	return cfg.Width, cfg.Height, true
}

// decodeWith decodes with a standard library decoder after checking the
// size in the header, so a corrupt header cannot make it allocate a huge
// image.
func decodeWith(name string, data []byte, config func(r io.Reader) (image.Config, error), decode func(r io.Reader) (image.Image, error)) (image.Image, error) {
	cfg, err := config(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("imaging: decode %s: %w", name, eofIsUnexpected(err))
	}
	if int64(cfg.Width)*int64(cfg.Height) > maxPixels {
		return nil, fmt.Errorf("imaging: decode %s: %dx%d image is too large", name, cfg.Width, cfg.Height)
	}
	img, err := decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("imaging: decode %s: %w", name, eofIsUnexpected(err))
	}
	return img, nil
}

func eofIsUnexpected(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// maxExcerpt is the most runes of the body a NotImageError quotes.
const maxExcerpt = 300

var (
	// The text of an OGC exception: <ServiceException code="…">text<…
	// (WMS, any namespace prefix) or <ows:ExceptionText>text<… (OWS
	// Common: WMTS, WCS); the code attribute, or exceptionCode of the
	// enclosing <ows:Exception>.
	serviceException = regexp.MustCompile(`(?s)<(?:[\w.-]+:)?ServiceException\b([^>]*)>(.*?)</(?:[\w.-]+:)?ServiceException\s*>`)
	owsException     = regexp.MustCompile(`(?s)<(?:[\w.-]+:)?Exception\b([^>]*)>.*?<(?:[\w.-]+:)?ExceptionText\b[^>]*>(.*?)</(?:[\w.-]+:)?ExceptionText\s*>`)
	codeAttribute    = regexp.MustCompile(`\b(?:exceptionCode|code)\s*=\s*["']([^"']*)["']`)
	cdata            = regexp.MustCompile(`(?s)<!\[CDATA\[(.*?)\]\]>`)
	// Markup to drop from an HTML or XML page to get at its text.
	scriptOrStyle = regexp.MustCompile(`(?is)<(script|style)\b.*?</(script|style)\s*>`)
	comment       = regexp.MustCompile(`(?s)<!--.*?-->`)
	tag           = regexp.MustCompile(`(?s)<[!?/]?[a-zA-Z][^>]*>|<\?.*?\?>`)
)

// excerpt returns the exception code and a single line of text from a body
// that is not an image.
func excerpt(data []byte, ct string) (code, msg string) {
	if !strings.HasPrefix(ct, "text/") && !strings.Contains(ct, "xml") && !strings.Contains(ct, "json") {
		return "", fmt.Sprintf("%d bytes of binary data", len(data))
	}
	// The exceptions are found in the first 64 KiB; more is not read.
	s := string(data[:min(len(data), 64<<10)])
	if m := serviceException.FindStringSubmatch(s); m != nil {
		return attrCode(m[1]), text(m[2])
	}
	if m := owsException.FindStringSubmatch(s); m != nil {
		return attrCode(m[1]), text(m[2])
	}
	if strings.Contains(ct, "html") || strings.Contains(ct, "xml") {
		s = scriptOrStyle.ReplaceAllString(s, " ")
		return "", text(s)
	}
	return "", oneLine(s)
}

func attrCode(attrs string) string {
	if m := codeAttribute.FindStringSubmatch(attrs); m != nil {
		return oneLine(html.UnescapeString(m[1]))
	}
	return ""
}

// text returns the character data of a piece of markup on one line.
func text(s string) string {
	s = cdata.ReplaceAllString(s, "$1")
	s = comment.ReplaceAllString(s, " ")
	s = tag.ReplaceAllString(s, " ")
	return oneLine(html.UnescapeString(s))
}

// oneLine collapses white space and control characters to single spaces,
// replaces invalid UTF-8, and cuts the text to maxExcerpt runes.
func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	s = strings.Join(strings.Fields(s), " ")
	n := 0
	for i := range s {
		if n == maxExcerpt {
			return strings.TrimRight(s[:i], " ") + "…"
		}
		n++
	}
	return s
}
