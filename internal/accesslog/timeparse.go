package accesslog

import "time"

// dayCache remembers the start of the last day parsed, since a log's
// lines share a handful of days and time.Date is the costly part of
// parsing a time.
type dayCache struct {
	key  [16]byte // the day's text (and zone), as logged
	n    int      // len of key in use; 0: empty
	unix int64    // start of the day (in the logged zone), Unix seconds
}

func (c *dayCache) lookup(text []byte) (int64, bool) {
	if c.n == 0 || c.n != len(text) || string(c.key[:c.n]) != string(text) {
		return 0, false
	}
	return c.unix, true
}

func (c *dayCache) store(text []byte, unix int64) {
	if len(text) > len(c.key) {
		return
	}
	c.n = copy(c.key[:], text)
	c.unix = unix
}

// num parses a fixed-width decimal number.
func num(b []byte) (int, bool) {
	if len(b) == 0 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// dayStart returns the Unix time of 00:00 UTC of y-m-d, checking that the
// date exists.
func dayStart(y, m, d int) (int64, bool) {
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, false
	}
	t := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC)
	if t.Day() != d {
		return 0, false // 31 April and the like
	}
	return t.Unix(), true
}

// clock parses "hh:mm:ss" into seconds since midnight.
func clock(b []byte) (int64, bool) {
	if len(b) != 8 || b[2] != ':' || b[5] != ':' {
		return 0, false
	}
	h, ok1 := num(b[0:2])
	m, ok2 := num(b[3:5])
	s, ok3 := num(b[6:8])
	if !ok1 || !ok2 || !ok3 || h > 23 || m > 59 || s > 59 {
		return 0, false
	}
	return int64(h*3600 + m*60 + s), true
}

// w3cTime parses CloudFront's date ("2019-12-04") and time ("21:02:31",
// optionally with a fraction of a second), both UTC.
func (c *dayCache) w3cTime(date, clk []byte) (time.Time, bool) {
	day, ok := c.lookup(date)
	if !ok {
		if len(date) != 10 || date[4] != '-' || date[7] != '-' {
			return time.Time{}, false
		}
		y, ok1 := num(date[0:4])
		m, ok2 := num(date[5:7])
		d, ok3 := num(date[8:10])
		if !ok1 || !ok2 || !ok3 {
			return time.Time{}, false
		}
		if day, ok = dayStart(y, m, d); !ok {
			return time.Time{}, false
		}
		c.store(date, day)
	}
	var nsec int64
	if len(clk) > 8 && clk[8] == '.' {
		frac := clk[9:]
		if len(frac) == 0 || len(frac) > 9 {
			return time.Time{}, false
		}
		f, ok := num(frac)
		if !ok {
			return time.Time{}, false
		}
		nsec = int64(f)
		for range 9 - len(frac) {
			nsec *= 10
		}
		clk = clk[:8]
	}
	secs, ok := clock(clk)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(day+secs, nsec).UTC(), true
}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// clfTime parses the common log format's time, "06/Feb/2019:00:00:38
// +0000" (the text between the brackets), into UTC.
func (c *dayCache) clfTime(b []byte) (time.Time, bool) {
	// 0         1         2
	// 012345678901234567890123456
	// 06/Feb/2019:00:00:38 +0000
	if len(b) != 26 || b[2] != '/' || b[6] != '/' || b[11] != ':' || b[20] != ' ' {
		return time.Time{}, false
	}
	dayKey := make([]byte, 0, 16) // stays on the stack
	dayKey = append(append(dayKey, b[0:11]...), b[21:26]...)
	day, ok := c.lookup(dayKey)
	if !ok {
		d, ok1 := num(b[0:2])
		y, ok2 := num(b[7:11])
		m := 0
		for i, name := range months {
			if string(b[3:6]) == name {
				m = i + 1
			}
		}
		if !ok1 || !ok2 || m == 0 {
			return time.Time{}, false
		}
		sign := b[21]
		zh, ok3 := num(b[22:24])
		zm, ok4 := num(b[24:26])
		if (sign != '+' && sign != '-') || !ok3 || !ok4 || zh > 23 || zm > 59 {
			return time.Time{}, false
		}
		if day, ok = dayStart(y, m, d); !ok {
			return time.Time{}, false
		}
		offset := int64(zh*3600 + zm*60)
		if sign == '+' {
			day -= offset // local midnight east of UTC is earlier in UTC
		} else {
			day += offset
		}
		c.store(dayKey, day)
	}
	secs, ok := clock(b[12:20])
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(day+secs, 0).UTC(), true
}
