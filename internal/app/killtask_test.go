package app_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/task"
	"tilecache/internal/testkit/testenv"
)

// TestKillOneTaskAcrossProcesses: a one-task kill (kill_thread) sent to
// one process stops the lane another process works, as kill_all does,
// and leaves the other task running. Two `tilecache serve` share the
// local AWS stack with one lane worker each and long lane slices, so the
// two running lanes are worked one in each process, and one of the two
// kills, both sent to process A, is noticed in process B.
func TestKillOneTaskAcrossProcesses(t *testing.T) {
	t.Parallel()
	awsPass(t)
	dir := t.TempDir()
	// Long slices: a lane stays in the process that took it.
	extra := map[string]string{"TILECACHE_SEED_THREADS": "2", "TILECACHE_WORKERS": "1", "TILECACHE_LANE_SLICE": "10m"}
	pa := apptest.StartProcess(t, dir, extra)
	pb := apptest.StartProcess(t, dir, extra)
	a := pa.App()
	backends, _ := apptest.AWSBackends(t, dir, nil)
	rows := seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":5,"threadCount":2}}`)
	defer a.Do(t, "POST", "/rest/seed", "kill_all=all", "Content-Type", "application/x-www-form-urlencoded")
	get := func(id int64) task.Task {
		tk, err := backends.Tasks.Get(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	testenv.Eventually(t, 60*time.Second, "both lanes to make progress", func() bool { return get(rows[0][3]).Done > 0 && get(rows[1][3]).Done > 0 })
	stoppedIn := map[string]int{}
	for i, r := range rows {
		id := r[3]
		res := a.Do(t, "POST", "/rest/seed/slow:world", fmt.Sprintf("kill_thread=1&thread_id=%d", id), "Content-Type", "application/x-www-form-urlencoded")
		if res.Status != 200 || !strings.Contains(res.Body, fmt.Sprintf("<li>[%d: slow:world, SEED, RUNNING]</li>", id)) {
			t.Fatalf("kill task %d: got %d %q", id, res.Status, res.Body)
		}
		killedAt := time.Now()
		stoppedWhere := func() string {
			for name, p := range map[string]*apptest.Process{"A": pa, "B": pb} {
				for _, msg := range []string{"lane stopped: task killed or taken over", "lane message dropped: the lane is worked by a live worker, or ended"} {
					for _, rec := range logEvents(p, msg) {
						if n, _ := rec["task"].(float64); int64(n) == id {
							return name
						}
					}
				}
			}
			return ""
		}
		var where string
		func() {
			defer func() {
				if where != "" {
					return
				}
				for name, p := range map[string]*apptest.Process{"A": pa, "B": pb} {
					for _, line := range p.Log() {
						if strings.Contains(line, fmt.Sprintf(`"task":%d`, id)) {
							t.Logf("%s: %s", name, line)
						}
					}
				}
			}()
			testenv.Eventually(t, 10*time.Second, fmt.Sprintf("a process to stop the lane of task %d", id), func() bool {
				where = stoppedWhere()
				return where != ""
			})
		}()
		stoppedIn[where]++
		t.Logf("task %d: its lane stopped in process %s %v after the kill", id, where, time.Since(killedAt).Round(time.Millisecond))
		// The killed task stands still while other work goes on: the
		// other task, or after the last kill a new one (170 tiles, 7 s;
		// the deferred kill ends it).
		before := get(id)
		other := rows[1][3]
		if i == len(rows)-1 {
			other = seedReq(t, a, "slow:world", `{"seedRequest":{"zoomStart":0,"zoomStop":3,"threadCount":1}}`)[0][3]
		}
		o := get(other).Done
		testenv.Eventually(t, 20*time.Second, "the other task to go on", func() bool { tk := get(other); return tk.Status == task.Running && tk.Done > o })
		if after := get(id); after.Status != task.Aborted || !after.Killed || after.Done != before.Done {
			t.Errorf("killed task %d moved on or is not ABORTED+killed: %+v then %+v", id, before, after)
		}
	}
	if stoppedIn["B"] == 0 {
		t.Errorf("lanes stopped in %v: want one in process B (the kills went to A)", stoppedIn)
	}
}
