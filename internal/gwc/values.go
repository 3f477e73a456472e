package gwc

import (
	"math"
	"strconv"
	"strings"

	"tilecache/internal/apperr"
)

// str consumes the text of e's child name; nil when absent.
func (d *decoder) str(e *node, path, name string) *string {
	k := d.one(e, path, name)
	if k == nil {
		return nil
	}
	d.leftovers(k, path+"/"+name)
	s := k.text
	return &s
}

// trimmed is str with surrounding white space removed.
func (d *decoder) trimmed(e *node, path, name string) *string {
	s := d.str(e, path, name)
	if s != nil {
		t := strings.TrimSpace(*s)
		s = &t
	}
	return s
}

// integer consumes an integer child.
func (d *decoder) integer(e *node, path, name string) *int {
	s := d.trimmed(e, path, name)
	if s == nil {
		return nil
	}
	n, ok := d.parseInt(path+"/"+name, *s)
	if !ok {
		return nil
	}
	return &n
}

func (d *decoder) parseInt(path, s string) (int, bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 32)
	if err != nil {
		d.fail(path, "%s is not an integer", apperr.Show(s))
		return 0, false
	}
	return int(n), true
}

// boolean consumes a true/false child.
func (d *decoder) boolean(e *node, path, name string) *bool {
	s := d.trimmed(e, path, name)
	if s == nil {
		return nil
	}
	var b bool
	switch *s {
	case "true":
		b = true
	case "false":
	default:
		d.fail(path+"/"+name, "%s is not true or false", apperr.Show(*s))
		return nil
	}
	return &b
}

// number consumes a floating-point child.
func (d *decoder) number(e *node, path, name string) *float64 {
	s := d.trimmed(e, path, name)
	if s == nil {
		return nil
	}
	x, ok := d.parseFloat(path+"/"+name, *s)
	if !ok {
		return nil
	}
	return &x
}

func (d *decoder) parseFloat(path, s string) (float64, bool) {
	x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		d.fail(path, "%s is not a finite number", apperr.Show(s))
		return 0, false
	}
	return x, true
}

// list consumes the container child name and returns the texts of its
// item children; nil when the container is absent.
func (d *decoder) list(e *node, path, name, item string) []string {
	c := d.one(e, path, name)
	if c == nil {
		return nil
	}
	out := []string{}
	for _, k := range all(c, item) {
		d.leftovers(k, path+"/"+name+"/"+item)
		out = append(out, k.text)
	}
	d.leftovers(c, path+"/"+name)
	return out
}

// numbers is list with each item a floating-point number.
func (d *decoder) numbers(e *node, path, name string) []float64 {
	texts := d.list(e, path, name, "double")
	if texts == nil {
		return nil
	}
	out := make([]float64, 0, len(texts))
	for _, s := range texts {
		if x, ok := d.parseFloat(path+"/"+name+"/double", s); ok {
			out = append(out, x)
		}
	}
	return out
}

// coords consumes an extent element: coords/double ×4.
func (d *decoder) coords(e *node, path string) []float64 {
	ext := d.one(e, path, "extent")
	if ext == nil {
		return nil
	}
	out := d.numbers(ext, path+"/extent", "coords")
	d.leftovers(ext, path+"/extent")
	if len(out) != 4 {
		d.fail(path+"/extent/coords", "needs 4 numbers (minx, miny, maxx, maxy), got %d", len(out))
		return nil
	}
	return out
}

// formatFloat writes a number as Java's Double.toString does (as
// GeoWebCache's documents show them: 25000.0, 2.5E7, 2.8E-4), with the
// shortest digits that read back the same.
func formatFloat(x float64) string {
	if x == 0 {
		return "0.0"
	}
	sign := ""
	if x < 0 {
		sign, x = "-", -x
	}
	if x >= 1e-3 && x < 1e7 {
		s := strconv.FormatFloat(x, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return sign + s
	}
	s := strconv.FormatFloat(x, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return sign + mant + "E" + strconv.Itoa(n)
}
