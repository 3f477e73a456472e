package layer

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Numeric filter types and their default thresholds (GeoWebCache's).
const (
	FilterFloat   = "float"
	FilterInteger = "integer"

	defaultFloatThreshold   = 1e-6
	defaultIntegerThreshold = 1
)

// nearest returns the value of Values nearest to v when it lies less than
// the threshold from it.
func (f ParameterFilter) nearest(v string) (string, bool) {
	x, err := f.number(v)
	if err != nil {
		return "", false
	}
	best, bestDiff := "", math.Inf(1)
	for _, s := range f.Values {
		y, _ := f.number(s) // checked when the filter was built
		if d := math.Abs(y - x); d < bestDiff {
			best, bestDiff = s, d
		}
	}
	return best, bestDiff < f.Threshold
}

// number parses s as the filter's type: a 32-bit float, as GeoWebCache
// compares float filters, or an integer.
func (f ParameterFilter) number(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if f.Type == FilterInteger {
		n, err := strconv.ParseInt(s, 10, 32)
		return float64(n), err
	}
	x, err := strconv.ParseFloat(s, 32)
	if err == nil && (math.IsNaN(x) || math.IsInf(x, 0)) {
		err = fmt.Errorf("%q is not a finite number", s)
	}
	return x, err
}

// buildFilter checks one parameterFilters entry.
func buildFilter(fd FilterEntry) (ParameterFilter, error) {
	f := ParameterFilter{Key: strings.ToUpper(strings.TrimSpace(fd.Key)), Default: fd.Default, Values: fd.Values, Type: fd.Type}
	if f.Key == "" {
		return f, fmt.Errorf("key is required")
	}
	switch fd.Type {
	case "":
		if fd.Threshold != nil {
			return f, fmt.Errorf("%s: threshold needs type float or integer", f.Key)
		}
	case FilterFloat, FilterInteger:
		return f, buildNumeric(&f, fd)
	default:
		return f, fmt.Errorf("%s: type %q is not float or integer (leave it out for a list or regex filter)", f.Key, fd.Type)
	}
	switch {
	case fd.Regex != nil && fd.Values != nil:
		return f, fmt.Errorf("%s: give either values or regex, not both", f.Key)
	case fd.Regex != nil:
		re, err := regexp.Compile("^(?:" + *fd.Regex + ")$")
		if err != nil {
			return f, fmt.Errorf("%s: %v", f.Key, err)
		}
		f.Regex = re
	case fd.Values == nil:
		return f, fmt.Errorf("%s: values or regex is required", f.Key)
	}
	return f, nil
}

// buildNumeric checks a float or integer filter: values that parse, a
// positive threshold (default GeoWebCache's: 1e-6 for floats, 1 for
// integers) and no regex.
func buildNumeric(f *ParameterFilter, fd FilterEntry) error {
	if fd.Regex != nil {
		return fmt.Errorf("%s: a %s filter takes values, not a regex", f.Key, fd.Type)
	}
	if len(fd.Values) == 0 {
		return fmt.Errorf("%s: a %s filter needs values", f.Key, fd.Type)
	}
	for _, v := range fd.Values {
		if _, err := f.number(v); err != nil {
			return fmt.Errorf("%s: value %q is not a %s", f.Key, v, fd.Type)
		}
	}
	f.Threshold = defaultFloatThreshold
	if fd.Type == FilterInteger {
		f.Threshold = defaultIntegerThreshold
	}
	if fd.Threshold != nil {
		f.Threshold = *fd.Threshold
	}
	if !(f.Threshold > 0) || math.IsInf(f.Threshold, 0) {
		return fmt.Errorf("%s: threshold %g must be finite and positive", f.Key, f.Threshold)
	}
	if fd.Type == FilterInteger && f.Threshold != math.Trunc(f.Threshold) {
		return fmt.Errorf("%s: threshold %g of an integer filter must be a whole number", f.Key, f.Threshold)
	}
	return nil
}
