package pmtiles

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// recordCodec is how an external sort orders its records and writes them
// to its run files, each in size bytes.
type recordCodec[T any] struct {
	size int
	put  func(b []byte, v T)
	get  func(b []byte) T
	cmp  func(a, b T) int
}

// extSort sorts more records than it holds: it keeps up to max of them,
// sorts them and writes them to a run file when full, and merges the runs
// (fanIn at a time, in more passes when there are more) back as one
// sorted stream. With lastWins, of records that compare equal only the
// last added is kept.
//
// Memory: max records and a 32 KiB reader per run merged at once; disk:
// the records, and as much again while a pass merges runs.
type extSort[T any] struct {
	c        recordCodec[T]
	dir      string
	prefix   string // run files are prefix-000000, prefix-000001, ...
	max      int
	fanIn    int
	lastWins bool
	durable  bool     // run files outlive the sort (a Writer's checkpointed runs)
	buf      []T      // the records not spilled yet
	runs     []string // the run files, oldest first
	unsynced []string // the durable runs not synced to the disk yet
	next     int      // the number of the next run file
	temps    []string // files this sort made and removes when done
}

const (
	defaultFanIn = 128
	runReadBuf   = 1 << 15
)

func newExtSort[T any](c recordCodec[T], dir, prefix string, max, fanIn int) *extSort[T] {
	if fanIn < 2 {
		fanIn = defaultFanIn
	}
	return &extSort[T]{c: c, dir: dir, prefix: prefix, max: max, fanIn: fanIn}
}

func (s *extSort[T]) add(ctx context.Context, v T) error {
	if s.buf == nil {
		// Whole at once, rather than grown by copies: the pages of a
		// large allocation take memory only once written.
		s.buf = make([]T, 0, s.max)
	}
	s.buf = append(s.buf, v)
	if len(s.buf) >= s.max {
		return s.spill(ctx)
	}
	return nil
}

// sortBuf sorts the buffer and, with lastWins, drops the records a later
// equal one replaces.
func (s *extSort[T]) sortBuf() {
	if !s.lastWins {
		slices.SortFunc(s.buf, s.c.cmp)
		return
	}
	slices.SortStableFunc(s.buf, s.c.cmp)
	out := s.buf[:0]
	for i, v := range s.buf {
		if i+1 < len(s.buf) && s.c.cmp(s.buf[i+1], v) == 0 {
			continue
		}
		out = append(out, v)
	}
	clear(s.buf[len(out):])
	s.buf = out
}

// spill writes the buffer, sorted, to a new run file.
func (s *extSort[T]) spill(ctx context.Context) error {
	if len(s.buf) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.sortBuf()
	name := fmt.Sprintf("%s-%06d", s.prefix, s.next)
	err := s.writeRun(name, func(emit func(T) error) error {
		for _, v := range s.buf {
			if err := emit(v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	s.next++
	s.runs = append(s.runs, name)
	if s.durable {
		s.unsynced = append(s.unsynced, name)
	} else {
		s.temps = append(s.temps, name)
	}
	s.buf = s.buf[:0]
	return nil
}

// writeRun writes the records fill emits to run file name.
func (s *extSort[T]) writeRun(name string, fill func(emit func(T) error) error) error {
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("pmtiles: run file: %w", err)
	}
	bw := bufio.NewWriterSize(f, runReadBuf)
	rec := make([]byte, s.c.size)
	err = fill(func(v T) error {
		s.c.put(rec, v)
		_, err := bw.Write(rec)
		return err
	})
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("pmtiles: run file %s: %w", name, err)
	}
	return nil
}

// syncRuns syncs the durable runs spilled since the last syncRuns to
// the disk (a Writer's Checkpoint: an export that never checkpoints never
// waits for the disk).
func (s *extSort[T]) syncRuns() error {
	for len(s.unsynced) > 0 {
		name := s.unsynced[0]
		f, err := os.Open(filepath.Join(s.dir, name))
		if err == nil {
			err = f.Sync()
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			return fmt.Errorf("pmtiles: run file %s: %w", name, err)
		}
		s.unsynced = s.unsynced[1:]
	}
	return nil
}

// sorted returns the records added, in order. The sort takes no more
// records; the iterator's close removes the files the sort made (not the
// durable runs).
func (s *extSort[T]) sorted(ctx context.Context) (*mergeIter[T], error) {
	s.sortBuf()
	mem := s.buf
	s.buf = nil
	// Merge the oldest runs fanIn at a time (adjacent ones, so that the
	// last of equal records is still the last) until one pass with the
	// records in memory is left.
	runs := s.runs
	pass := 0
	for limit := s.fanIn - 1; len(runs) > limit; pass++ {
		var merged []string
		for i := 0; i < len(runs); i += s.fanIn {
			group := runs[i:min(i+s.fanIn, len(runs))]
			if len(group) == 1 {
				merged = append(merged, group[0])
				continue
			}
			name := fmt.Sprintf("%s-p%d-%06d", s.prefix, pass, i/s.fanIn)
			s.temps = append(s.temps, name)
			m, err := s.merge(group, nil)
			if err != nil {
				return nil, err
			}
			err = s.writeRun(name, func(emit func(T) error) error {
				for n := 0; ; n++ {
					if n%65536 == 0 {
						if err := ctx.Err(); err != nil {
							return err
						}
					}
					v, ok, err := m.next()
					if err != nil || !ok {
						return err
					}
					if err := emit(v); err != nil {
						return err
					}
				}
			})
			m.close()
			if err != nil {
				return nil, err
			}
			for _, r := range group {
				if slices.Contains(s.temps, r) {
					os.Remove(filepath.Join(s.dir, r))
				}
			}
			merged = append(merged, name)
		}
		runs = merged
	}
	m, err := s.merge(runs, mem)
	if err != nil {
		return nil, err
	}
	m.temps = s.temps
	return m, nil
}

// merge opens runs (oldest first) and the sorted records mem (the
// latest) as one sorted stream.
func (s *extSort[T]) merge(runs []string, mem []T) (*mergeIter[T], error) {
	m := &mergeIter[T]{c: s.c, dir: s.dir, lastWins: s.lastWins}
	for i, name := range runs {
		f, err := os.Open(filepath.Join(s.dir, name))
		if err != nil {
			m.close()
			return nil, fmt.Errorf("pmtiles: run file: %w", err)
		}
		m.files = append(m.files, f)
		m.heads = append(m.heads, &runHead[T]{run: i, r: bufio.NewReaderSize(f, runReadBuf), rec: make([]byte, s.c.size), get: s.c.get})
	}
	if len(mem) > 0 {
		m.heads = append(m.heads, &runHead[T]{run: len(runs), mem: mem})
	}
	live := m.heads[:0]
	for _, h := range m.heads {
		ok, err := h.advance()
		if err != nil {
			m.close()
			return nil, err
		}
		if ok {
			live = append(live, h)
		}
	}
	m.heads = live
	for i := len(m.heads)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return m, nil
}

// mergeIter is the sorted stream of an extSort: a heap of its runs'
// next records.
type mergeIter[T any] struct {
	c        recordCodec[T]
	dir      string
	lastWins bool
	heads    []*runHead[T]
	files    []*os.File
	temps    []string
}

type runHead[T any] struct {
	v   T
	run int
	r   *bufio.Reader // a run file
	rec []byte
	get func([]byte) T
	mem []T // or records in memory
}

func (h *runHead[T]) advance() (bool, error) {
	if h.r == nil {
		if len(h.mem) == 0 {
			return false, nil
		}
		h.v, h.mem = h.mem[0], h.mem[1:]
		return true, nil
	}
	if _, err := io.ReadFull(h.r, h.rec); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("pmtiles: run file: %w", err)
	}
	h.v = h.get(h.rec)
	return true, nil
}

// less orders the heads by record, and equal records latest run first.
func (m *mergeIter[T]) less(i, j int) bool {
	if c := m.c.cmp(m.heads[i].v, m.heads[j].v); c != 0 {
		return c < 0
	}
	return m.heads[i].run > m.heads[j].run
}

func (m *mergeIter[T]) down(i int) {
	n := len(m.heads)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		j := l
		if r := l + 1; r < n && m.less(r, l) {
			j = r
		}
		if !m.less(j, i) {
			return
		}
		m.heads[i], m.heads[j] = m.heads[j], m.heads[i]
		i = j
	}
}

// pop advances the least head.
func (m *mergeIter[T]) pop() error {
	ok, err := m.heads[0].advance()
	if err != nil {
		return err
	}
	if !ok {
		last := len(m.heads) - 1
		m.heads[0] = m.heads[last]
		m.heads = m.heads[:last]
	}
	m.down(0)
	return nil
}

// next returns the next record in order; with lastWins, of equal ones
// that of the latest run.
func (m *mergeIter[T]) next() (T, bool, error) {
	var zero T
	if len(m.heads) == 0 {
		return zero, false, nil
	}
	v := m.heads[0].v
	if err := m.pop(); err != nil {
		return zero, false, err
	}
	for m.lastWins && len(m.heads) > 0 && m.c.cmp(m.heads[0].v, v) == 0 {
		if err := m.pop(); err != nil {
			return zero, false, err
		}
	}
	return v, true, nil
}

// close closes the runs and removes the files the sort made.
func (m *mergeIter[T]) close() {
	for _, f := range m.files {
		f.Close()
	}
	m.files = nil
	for _, name := range m.temps {
		os.Remove(filepath.Join(m.dir, name))
	}
	m.temps = nil
	m.heads = nil
}

// sortedRun returns a writer of records already in order, which finish
// makes one of the sort's runs.
func (s *extSort[T]) sortedRun() (*runWriter[T], error) {
	name := fmt.Sprintf("%s-%06d", s.prefix, s.next)
	s.next++
	f, err := os.OpenFile(filepath.Join(s.dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pmtiles: run file: %w", err)
	}
	s.temps = append(s.temps, name)
	return &runWriter[T]{s: s, name: name, f: f, w: bufio.NewWriterSize(f, runReadBuf), rec: make([]byte, s.c.size)}, nil
}

type runWriter[T any] struct {
	s    *extSort[T]
	name string
	f    *os.File
	w    *bufio.Writer
	rec  []byte
}

func (r *runWriter[T]) add(v T) error {
	r.s.c.put(r.rec, v)
	if _, err := r.w.Write(r.rec); err != nil {
		return fmt.Errorf("pmtiles: run file %s: %w", r.name, err)
	}
	return nil
}

func (r *runWriter[T]) finish() error {
	err := r.w.Flush()
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	r.f = nil
	if err != nil {
		return fmt.Errorf("pmtiles: run file %s: %w", r.name, err)
	}
	r.s.runs = append(r.s.runs, r.name)
	return nil
}

// abort closes a run not finished (its file is among the sort's temps).
func (r *runWriter[T]) abort() {
	if r.f != nil {
		r.f.Close()
		os.Remove(filepath.Join(r.s.dir, r.name))
	}
}
