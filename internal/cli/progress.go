package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// taskState is what the status rows told about one task.
type taskState struct {
	id          int64
	done, total int64
	status      int64
	seen, final bool
}

// follow polls the layer's status rows until every task of ids finished,
// shows the progress (bars on a terminal, periodic lines otherwise), and
// returns the exit code: ExitDone when all finished DONE, ExitAborted when
// one was aborted or killed, ExitInterrupted after a Ctrl-C whose tasks go
// on.
func follow(ctx context.Context, c *Client, layer string, ids []int64, mode string, every time.Duration, env Env) (int, error) {
	states := make([]*taskState, len(ids))
	index := map[int64]*taskState{}
	for i, id := range ids {
		states[i] = &taskState{id: id, status: Pending}
		index[id] = states[i]
	}
	var view progressView
	if mode == "bars" {
		view = newBars(ctx, env.Stdout, states)
	} else {
		view = &lines{w: env.Stdout, layer: layer, every: every}
	}
	sigs, stopSigs := interrupts(env)
	defer stopSigs()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		rows, err := c.Tasks(ctx, layer)
		if err != nil {
			view.stop()
			return ExitError, err
		}
		listed := map[int64]bool{}
		for _, r := range rows {
			st, ok := index[r[3]]
			if !ok {
				continue
			}
			listed[r[3]] = true
			st.seen, st.done, st.total, st.status = true, r[0], r[1], r[4]
			st.final = r[4] == Done || r[4] == Aborted
		}
		for _, st := range states {
			if !listed[st.id] && !st.final {
				// Gone from the list (finished longer ago than the
				// server's retention): done if its count was complete.
				st.final = true
				if st.done < st.total || !st.seen {
					st.status = Aborted
				} else {
					st.status = Done
				}
			}
		}
		view.update(states)
		finished, aborted := true, false
		for _, st := range states {
			finished = finished && st.final
			aborted = aborted || (st.final && st.status == Aborted)
		}
		if finished {
			view.stop()
			summary(env.Stderr, layer, states)
			if aborted {
				return ExitAborted, nil
			}
			return ExitDone, nil
		}
		select {
		case <-ctx.Done():
			view.stop()
			return ExitInterrupted, ctx.Err()
		case <-sigs:
			view.stop()
			open := 0
			for _, st := range states {
				if !st.final {
					open++
				}
			}
			if env.Terminal && askKill(env, layer, open) {
				if err := c.Kill(context.WithoutCancel(ctx), layer, "all"); err != nil {
					return ExitError, err
				}
				fmt.Fprintf(env.Stdout, "killed the tasks of %s\n", layer)
				return ExitAborted, nil
			}
			fmt.Fprintf(env.Stderr, "\nthe tasks go on on the server; `tilecache kill %s` stops them\n", layer)
			return ExitInterrupted, nil
		case <-tick.C:
		}
	}
}

func summary(w io.Writer, layer string, states []*taskState) {
	var done, total int64
	nDone, nAborted := 0, 0
	for _, st := range states {
		done += st.done
		total += st.total
		if st.status == Done {
			nDone++
		} else {
			nAborted++
		}
	}
	fmt.Fprintf(w, "%s: %d of %d tiles; %d task(s) done, %d aborted\n", layer, done, total, nDone, nAborted)
}

type progressView interface {
	update(states []*taskState)
	stop()
}

// bars draws one bar per task and one for the request (mpb).
type bars struct {
	p     *mpb.Progress
	tasks map[int64]*mpb.Bar
	total *mpb.Bar
}

func newBars(ctx context.Context, w io.Writer, states []*taskState) *bars {
	b := &bars{p: mpb.NewWithContext(ctx, mpb.WithOutput(w), mpb.WithWidth(32), mpb.WithRefreshRate(200*time.Millisecond)),
		tasks: map[int64]*mpb.Bar{}}
	for _, st := range states {
		b.tasks[st.id] = b.p.AddBar(0,
			mpb.PrependDecorators(decor.Name(fmt.Sprintf("task %-6d", st.id)), decor.CountersNoUnit(" %d/%d", decor.WCSyncWidth)),
			mpb.AppendDecorators(decor.OnComplete(decor.Percentage(decor.WC{W: 5}), " done"), decor.OnAbort(decor.Name(""), " ABORTED")))
	}
	b.total = b.p.AddBar(0,
		mpb.PrependDecorators(decor.Name("total      "), decor.CountersNoUnit(" %d/%d", decor.WCSyncWidth)),
		mpb.AppendDecorators(decor.AverageSpeed(0, " %.0f tiles/s"), decor.Name("  ETA "), decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO), "done")))
	return b
}

func (b *bars) update(states []*taskState) {
	var done, total int64
	for _, st := range states {
		bar := b.tasks[st.id]
		done += st.done
		total += st.total
		if bar.Completed() || bar.Aborted() {
			continue
		}
		bar.SetTotal(st.total, false)
		bar.SetCurrent(st.done)
		switch {
		case st.final && st.status == Aborted:
			bar.Abort(false)
		case st.final:
			bar.SetTotal(-1, true)
		}
	}
	if !b.total.Completed() && !b.total.Aborted() {
		b.total.SetTotal(total, false)
		b.total.SetCurrent(done)
	}
}

func (b *bars) stop() {
	for _, bar := range b.tasks {
		if !bar.Completed() && !bar.Aborted() {
			bar.Abort(false)
		}
	}
	if !b.total.Completed() {
		b.total.SetTotal(-1, true)
	}
	b.p.Wait()
}

// lines prints one line every interval (logs, CI).
type lines struct {
	w         io.Writer
	layer     string
	every     time.Duration
	lastDone  int64
	lastPrint time.Time
}

func (l *lines) update(states []*taskState) {
	now := time.Now()
	if !l.lastPrint.IsZero() && now.Sub(l.lastPrint) < l.every {
		return
	}
	var done, total int64
	running, pending, finished := 0, 0, 0
	for _, st := range states {
		done += st.done
		total += st.total
		switch {
		case st.final:
			finished++
		case st.status == Running:
			running++
		default:
			pending++
		}
	}
	rate := 0.0
	if !l.lastPrint.IsZero() {
		rate = float64(done-l.lastDone) / now.Sub(l.lastPrint).Seconds()
	}
	eta := "?"
	if rate > 0 && total > done {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	pct := 0.0
	if total > 0 {
		pct = 100 * float64(done) / float64(total)
	}
	fmt.Fprintf(l.w, "%s %s: %d/%d tiles (%.1f%%), %.0f tiles/s, ETA %s; tasks: %d running, %d pending, %d finished\n",
		now.Format("15:04:05"), l.layer, done, total, pct, rate, eta, running, pending, finished)
	l.lastPrint, l.lastDone = now, done
}

func (l *lines) stop() {}
