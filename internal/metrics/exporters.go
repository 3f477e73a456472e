package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus exports the metrics in the Prometheus text format, with the Go
// runtime's and the process's own.
type Prometheus struct {
	reg      *prometheus.Registry
	counters map[*Metric]*prometheus.CounterVec
	hists    map[*Metric]*prometheus.HistogramVec
}

// NewPrometheus returns an exporter with every metric of All declared, so
// a scrape lists them before they are first recorded.
func NewPrometheus() *Prometheus {
	p := &Prometheus{reg: prometheus.NewRegistry(), counters: map[*Metric]*prometheus.CounterVec{}, hists: map[*Metric]*prometheus.HistogramVec{}}
	p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	for _, m := range All {
		switch m.Kind {
		case Counter:
			c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: m.Name, Help: m.Help}, m.Labels)
			p.reg.MustRegister(c)
			p.counters[m] = c
			if len(m.Labels) == 0 {
				c.WithLabelValues() // listed at 0 from the start
			}
		case Distribution:
			h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: m.Name, Help: m.Help, Buckets: m.Buckets}, m.Labels)
			p.reg.MustRegister(h)
			p.hists[m] = h
			if len(m.Labels) == 0 {
				h.WithLabelValues()
			}
		}
	}
	return p
}

// Record implements Exporter.
func (p *Prometheus) Record(m *Metric, v float64, labels []string) {
	if len(labels) != len(m.Labels) {
		return // a programming error; never take a request down for it
	}
	if c, ok := p.counters[m]; ok {
		c.WithLabelValues(labels...).Add(v)
	} else if h, ok := p.hists[m]; ok {
		h.WithLabelValues(labels...).Observe(v)
	}
}

// Handler serves the metrics (GET /metrics).
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{})
}

// EMF collects the metrics of one Lambda invocation and writes them, at
// Flush, as CloudWatch Embedded Metric Format log lines: one JSON object
// per metric and set of label values, under namespace, with two dimension
// sets: the fixed dimensions plus the labels, and the fixed ones alone
// (the metric summed over the labels, e.g. over layers).
type EMF struct {
	namespace string
	fixed     map[string]string // dimensions on every line, e.g. the function name
	mu        sync.Mutex
	sums      map[emfKey]float64
	values    map[emfKey][]float64
}

type emfKey struct {
	m      *Metric
	labels string // values joined by \x00
}

// NewEMF returns an EMF collector; fixed dimensions (e.g. {"Function":
// name}) are added to every line.
func NewEMF(namespace string, fixed map[string]string) *EMF {
	return &EMF{namespace: namespace, fixed: fixed, sums: map[emfKey]float64{}, values: map[emfKey][]float64{}}
}

// Record implements Exporter.
func (e *EMF) Record(m *Metric, v float64, labels []string) {
	if len(labels) != len(m.Labels) {
		return
	}
	k := emfKey{m, strings.Join(labels, "\x00")}
	e.mu.Lock()
	defer e.mu.Unlock()
	if m.Kind == Counter {
		e.sums[k] += v
	} else if vs := e.values[k]; len(vs) < 100 { // EMF takes at most 100 values per metric
		e.values[k] = append(vs, v)
	}
}

// Flush writes what was recorded since the last Flush to w, one line per
// metric and dimension values, and forgets it.
func (e *EMF) Flush(w io.Writer, now time.Time) error {
	e.mu.Lock()
	sums, values := e.sums, e.values
	e.sums, e.values = map[emfKey]float64{}, map[emfKey][]float64{}
	e.mu.Unlock()
	keys := slices.Collect(maps.Keys(sums))
	keys = append(keys, slices.Collect(maps.Keys(values))...)
	slices.SortFunc(keys, func(a, b emfKey) int { return strings.Compare(a.m.EMFName+a.labels, b.m.EMFName+b.labels) })
	for _, k := range keys {
		fixed := slices.Sorted(maps.Keys(e.fixed))
		line := map[string]any{}
		for _, d := range fixed {
			line[d] = e.fixed[d]
		}
		dimSets := [][]string{append([]string{}, fixed...)}
		if len(k.m.Labels) > 0 {
			for i, v := range strings.Split(k.labels, "\x00") {
				line[k.m.Labels[i]] = v
			}
			// By label values, and summed over them (what alarms use).
			dimSets = [][]string{append(append([]string{}, fixed...), k.m.Labels...), append([]string{}, fixed...)}
		}
		if k.m.Kind == Counter {
			line[k.m.EMFName] = sums[k]
		} else {
			line[k.m.EMFName] = values[k]
		}
		line["_aws"] = map[string]any{
			"Timestamp": now.UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  e.namespace,
				"Dimensions": dimSets,
				"Metrics":    []any{map[string]string{"Name": k.m.EMFName, "Unit": k.m.Unit}},
			}},
		}
		b, err := json.Marshal(line)
		if err != nil {
			return fmt.Errorf("encode EMF line: %w", err)
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return fmt.Errorf("write EMF line: %w", err)
		}
	}
	return nil
}
