package lambdatest

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// echoAnswer is what testdata/echo answers.
type echoAnswer struct {
	RequestID   string `json:"requestId"`
	FunctionARN string `json:"functionArn"`
	Function    string `json:"function"`
	Value       string `json:"value"`
	RemainingMs int64  `json:"remainingMs"`
	PID         int    `json:"pid"`
}

func hasLine(lines []string, substr string) bool {
	return slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, substr) })
}

// TestRIE checks the harness against the emulator with a function of its
// own (testdata/echo), without the local AWS stack: what the emulator
// tells the function (request id, deadline from the function timeout,
// environment), what the harness reads back (response, error document,
// timeout, EMF lines, init duration), warm invocations in the same
// process, and a failed init.
func TestRIE(t *testing.T) {
	RIEBinary(t) // skips or fails first when the emulator cannot be had
	bootstrap := buildBootstraps(t, "tilecache/internal/testkit/lambdatest/testdata/echo")[0]
	rie := StartRIE(t, Function{Bootstrap: bootstrap, Name: "echo-fn", Timeout: 2 * time.Second, Env: map[string]string{"ECHO_VALUE": "x=y z"}})
	t.Logf("Lambda Runtime Interface Emulator %s", RIEVersion())

	var cold, warm echoAnswer
	first := rie.InvokeJSON(t, map[string]string{}, &cold)
	if cold.RequestID != first.RequestID || cold.Function != "echo-fn" || cold.Value != "x=y z" ||
		!strings.HasSuffix(cold.FunctionARN, ":function:echo-fn") {
		t.Errorf("cold invocation %s: the function saw %+v", first.RequestID, cold)
	}
	if cold.RemainingMs <= 1000 || cold.RemainingMs > 2000 {
		t.Errorf("cold invocation: %d ms left at the start, want the 2 s timeout", cold.RemainingMs)
	}
	if first.Init <= 0 || first.Init > first.Elapsed {
		t.Errorf("cold invocation: init %v of %v, want the emulator's INIT REPORT", first.Init, first.Elapsed)
	}
	if emf := first.EMF(t); len(emf) != 1 || emf[0]["Echoes"] != 1.0 {
		t.Errorf("EMF records %v, want the one the function logged", emf)
	}
	if !strings.HasPrefix(first.Log[0], "START RequestId: "+first.RequestID) || !strings.HasPrefix(first.Log[len(first.Log)-1], "REPORT RequestId: "+first.RequestID) {
		t.Errorf("invocation log from %q to %q, want START to REPORT", first.Log[0], first.Log[len(first.Log)-1])
	}

	second := rie.InvokeJSON(t, map[string]string{}, &warm)
	if warm.PID != cold.PID || second.Init != 0 || warm.RequestID != second.RequestID || warm.RequestID == cold.RequestID {
		t.Errorf("warm invocation: pid %d (cold %d), init %v, request %s: want the same process, no init, a new id", warm.PID, cold.PID, second.Init, warm.RequestID)
	}
	if emf := second.EMF(t); len(emf) != 1 {
		t.Errorf("warm invocation: %d EMF records, want only its own", len(emf))
	}

	failed := rie.Invoke(t, []byte(`{"fail":"boom"}`))
	if failed.Status != http.StatusOK || failed.Error == nil || failed.Error.Message != "boom" || failed.Error.Type != "errorString" {
		t.Errorf("failing invocation: %d %q (%v), want 200 with the error document", failed.Status, failed.Body, failed.Error)
	}

	late := rie.Invoke(t, []byte(`{"sleep":"3s"}`))
	if late.Error == nil || late.Error.Type != "Sandbox.Timedout" {
		t.Errorf("invocation past the timeout: %d %q, want the emulator's timeout", late.Status, late.Body)
	}
	var after echoAnswer
	rie.InvokeJSON(t, map[string]string{}, &after)
	if after.Value != "x=y z" {
		t.Errorf("invocation after a timeout: %+v", after)
	}

	t.Run("init error", func(t *testing.T) {
		rie := StartRIE(t, Function{Bootstrap: bootstrap, Name: "echo-broken", Env: map[string]string{"ECHO_INIT_FAIL": "no configuration"}})
		inv := rie.Invoke(t, []byte(`{}`))
		if inv.Status != http.StatusBadGateway || !hasLine(inv.Log, "echo: init: no configuration") || !hasLine(inv.Log, "Runtime.ExitError") {
			t.Errorf("init that exits: %d %q, log:\n%s\nwant 502, the function's message and Runtime.ExitError", inv.Status, inv.Body, strings.Join(inv.Log, "\n"))
		}
	})
}
