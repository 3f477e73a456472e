package cli_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"tilecache/internal/app/apptest"
	"tilecache/internal/testkit/testenv"
)

// tmuxSession runs command in a detached tmux session of w×h cells (a real
// pseudo-terminal) and returns a function that reads its screen.
func tmuxSession(t *testing.T, command string, env map[string]string) (screen func() string, keys func(...string)) {
	t.Helper()
	tmux := testenv.RequireTmux(t)
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	name := "tc"
	args := []string{"-S", sock, "new-session", "-d", "-s", name, "-x", "110", "-y", "30"}
	for k, v := range env {
		args = append(args, "-e", k+"="+v)
	}
	args = append(args, command)
	if out, err := exec.Command(tmux, args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command(tmux, "-S", sock, "kill-server").Run() })
	screen = func() string {
		out, err := exec.Command(tmux, "-S", sock, "capture-pane", "-p", "-t", name).Output()
		if err != nil {
			return ""
		}
		return string(out)
	}
	keys = func(k ...string) {
		if out, err := exec.Command(tmux, append([]string{"-S", sock, "send-keys", "-t", name}, k...)...).CombinedOutput(); err != nil {
			t.Fatalf("tmux send-keys: %v: %s", err, out)
		}
	}
	return screen, keys
}

func waitScreen(t *testing.T, screen func() string, what string, timeout time.Duration, ok func(string) bool) string {
	t.Helper()
	var s string
	waited := false
	defer func() {
		if !waited { // timed out: Eventually's Fatalf unwinds through here
			t.Logf("the screen:\n%s", s)
		}
	}()
	testenv.Eventually(t, timeout, what, func() bool { s = screen(); return ok(s) })
	waited = true
	return s
}

// TestTerminalProgressAndCtrlC runs the real binary in a terminal (tmux)
// and reads its screen: a bar per task and a total with tiles/s and ETA
// while the seed runs, the final counts and exit 0; then Ctrl-C asks
// whether to kill, "y" kills the tasks and the exit code is 2.
func TestTerminalProgressAndCtrlC(t *testing.T) {
	a := apptest.Start(t, apptest.Options{SeedThreads: 2})
	bin := apptest.PlainBinary(t)
	env := map[string]string{"TILECACHE_URL": a.URL, "TILECACHE_USER": apptest.User, "TILECACHE_PASSWORD": apptest.Password, "TERM": "xterm"}

	// z0-3 of the slow layer in two tasks: about 3.5 s.
	screen, _ := tmuxSession(t, fmt.Sprintf("%s seed slow:world --zoom 0-3 --threads 2; echo EXIT=$?; sleep 60", bin), env)
	mid := waitScreen(t, screen, "the bars under way", 20*time.Second, func(s string) bool {
		return strings.Contains(s, "total") && strings.Contains(s, "tiles/s") && strings.Count(s, "task ") >= 2 &&
			!strings.Contains(s, " 0/170") && !strings.Contains(s, "EXIT=") && !strings.Contains(s, " 0 tiles/s")
	})
	if !strings.Contains(mid, "ETA") || !strings.Contains(mid, "[") {
		t.Errorf("no bar or ETA on the screen while seeding:\n%s", mid)
	}
	end := waitScreen(t, screen, "the end", 30*time.Second, func(s string) bool { return strings.Contains(s, "EXIT=") })
	if !strings.Contains(end, "EXIT=0") || !strings.Contains(end, "170/170") || !strings.Contains(end, "170 of 170 tiles; 2 task(s) done") {
		t.Errorf("final screen:\n%s", end)
	}
	if os.Getenv("TILECACHE_TEST_SHOW_SCREENS") != "" {
		t.Logf("while seeding:\n%s\nat the end:\n%s", mid, end)
	}

	// Ctrl-C: the question, then y.
	screen, keys := tmuxSession(t, fmt.Sprintf("%s seed slow:world --zoom 0-5 --threads 2; echo EXIT=$?; sleep 60", bin), env)
	waitScreen(t, screen, "the bars", 20*time.Second, func(s string) bool { return strings.Contains(s, "tiles/s") })
	keys("C-c")
	waitScreen(t, screen, "the question", 10*time.Second, func(s string) bool {
		return strings.Contains(s, "Kill the 2 unfinished task(s) of slow:world on the server? [y/N]")
	})
	keys("y", "Enter")
	end = waitScreen(t, screen, "the exit", 10*time.Second, func(s string) bool { return strings.Contains(s, "EXIT=") })
	if !strings.Contains(end, "EXIT=2") || !strings.Contains(end, "killed the tasks of slow:world") {
		t.Errorf("after y:\n%s", end)
	}
	for _, r := range listRows(t, a) {
		if r[4] == 0 || r[4] == 1 {
			t.Errorf("task %d still %d after the kill", r[3], r[4])
		}
	}
}

func listRows(t *testing.T, a *apptest.App) [][5]int64 {
	t.Helper()
	res := a.Do(t, "GET", "/rest/seed/slow:world.json", "")
	var rows [][5]int64
	for _, f := range strings.Split(strings.Trim(strings.TrimPrefix(res.Body, `{"long-array-array":`), "[]}"), "],[") {
		var r [5]int64
		if n, _ := fmt.Sscanf(strings.Trim(f, "[]"), "%d,%d,%d,%d,%d", &r[0], &r[1], &r[2], &r[3], &r[4]); n == 5 {
			rows = append(rows, r)
		}
	}
	return rows
}
