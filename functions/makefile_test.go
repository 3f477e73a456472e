package functions_test

import (
	"bufio"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// makeCmd is make run on the repository's Makefile with args, in an
// environment without the MAKEFLAGS of a make this test may run under.
func makeCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed to read the Makefile: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), "make", append([]string{"-C", "..", "--no-print-directory"}, args...)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return name == "MAKEFLAGS" || name == "MFLAGS" || name == "MAKELEVEL"
	})
	return cmd
}

// makeDryRun returns the commands `make -n target vars...` prints: the
// recipe as make expands it, run by nobody.
func makeDryRun(t *testing.T, target string, vars ...string) (string, error) {
	t.Helper()
	out, err := makeCmd(t, append([]string{"-n", target}, vars...)...).CombinedOutput()
	if err != nil {
		return "", &makeError{err: err, out: string(out)}
	}
	return string(out), nil
}

type makeError struct {
	err error
	out string
}

func (e *makeError) Error() string { return e.err.Error() + ": " + strings.TrimSpace(e.out) }

// makeTargets returns the Makefile's targets as make reads them (its rule
// database), special ones (.PHONY) aside, and its phony targets.
func makeTargets(t *testing.T) (targets, phony []string) {
	t.Helper()
	// -p prints the database, -q runs nothing, -r -R leave out the built-in
	// rules; the target asked for ("-") does not exist, hence the error.
	out, _ := makeCmd(t, "-pqrR", "-").Output()
	rule := regexp.MustCompile(`^([^\s#.:=][^\s:=]*):(?:\s|$)`)
	notTarget := false
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, ".PHONY:"); ok {
			phony = append(phony, strings.Fields(rest)...)
		}
		if m := rule.FindStringSubmatch(line); m != nil && !notTarget && m[1] != "-" && !slices.Contains(targets, m[1]) {
			targets = append(targets, m[1])
		}
		notTarget = line == "# Not a target:"
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(targets) == 0 {
		t.Fatalf("make -pqrR printed no targets:\n%.2000s", out)
	}
	slices.Sort(targets)
	slices.Sort(phony)
	return targets, phony
}

// TestMakefileHelp: `make` alone prints the help; every target of the
// Makefile is phony and listed by `make help` with a line saying what it
// does, under one of the groups; the help names no target that is not
// there. The build-<Function> targets are listed once as a family.
func TestMakefileHelp(t *testing.T) {
	out, err := makeCmd(t, "-s", "help").Output()
	if err != nil {
		t.Fatalf("make help: %v", err)
	}
	def, err := makeCmd(t, "-s").Output()
	if err != nil || string(def) != string(out) {
		t.Errorf("make with no target: %v, printed\n%s\nwant the help:\n%s", err, def, out)
	}

	groups := map[string]bool{}
	listed := map[string]string{} // target: its group
	group := ""
	entry := regexp.MustCompile(`^  (\S+) +(\S.*)$`)
	for line := range strings.Lines(string(out)) {
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
		case strings.HasSuffix(line, ":") && !strings.HasPrefix(line, " "):
			group = strings.TrimSuffix(line, ":")
			groups[group] = true
		case entry.MatchString(line):
			name := entry.FindStringSubmatch(line)[1]
			if group == "" {
				t.Errorf("make help: %q comes before any group", line)
			}
			if _, dup := listed[name]; dup {
				t.Errorf("make help: %s listed twice", name)
			}
			listed[name] = group
		default:
			t.Errorf("make help: line %q is neither a group nor a target and what it does", line)
		}
	}
	for _, g := range []string{"run", "test", "bench", "stack", "other"} {
		if !groups[g] {
			t.Errorf("make help: no group %q; groups: %v", g, groups)
		}
	}

	targets, phony := makeTargets(t)
	if !slices.Equal(targets, phony) {
		t.Errorf("Makefile: targets %v\nphony %v\nwant every target phony and every phony name a target", targets, phony)
	}
	family := regexp.MustCompile(`^build-[A-Z][a-z]*Function$`)
	for _, name := range targets {
		if family.MatchString(name) {
			name = "build-<Function>"
		}
		if _, ok := listed[name]; !ok {
			t.Errorf("Makefile: target %s is not in make help (give it a `## %s: what it does` line above its rule)", name, name)
		}
	}
	for name := range listed {
		if name == "build-<Function>" {
			if !slices.ContainsFunc(targets, family.MatchString) {
				t.Errorf("make help lists build-<Function> but the Makefile has no build-<Name>Function target")
			}
			continue
		}
		if !slices.Contains(targets, name) {
			t.Errorf("make help lists %s, which is no target of the Makefile", name)
		}
	}
	for name, group := range map[string]string{"run": "run", "test": "test", "staticcheck": "test", "bench-peers": "bench", "devstack": "stack", "help": "other"} {
		if listed[name] != group {
			t.Errorf("make help: %s under %q, want %q", name, listed[name], group)
		}
	}
}
