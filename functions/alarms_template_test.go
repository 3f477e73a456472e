package functions_test

import (
	"encoding/json"
	"fmt"
	"go/constant"
	"go/token"
	"go/types"
	"slices"
	"strconv"
	"strings"
	"testing"

	"tilecache/internal/metrics"
)

func alarmWorld(tp *template, params map[string]string) *world {
	return &world{tp: tp, params: params,
		refs: map[string]string{"WorkerFunction": "tc-worker", "CleanerFunction": "tc-cleaner", "HttpApi": "api123", "TileBucket": "bkt",
			"AlarmTopic": "arn:aws:sns:us-east-1:000000000000:alarms", "Dashboard": "tilecache-tilecache-us-east-1"},
		atts: map[string]string{"LaneDeadLetterQueue.QueueName": "lanes-dlq", "LaneQueue.QueueName": "lanes"}}
}

// TestTemplateAlarmsAndDashboard: the alarms watch what the issue names
// (dead letters, worker errors and throttles, API 5xx, the upstream error
// rate from the functions' own EMF metrics), notify the optional topic,
// and the dashboard's body is JSON naming only metrics the code writes.
func TestTemplateAlarmsAndDashboard(t *testing.T) {
	tp := loadTemplate(t)
	emfNames := map[string]bool{}
	for _, m := range metrics.All {
		emfNames[m.EMFName] = true
	}
	for _, email := range []string{"", "ops@example.org"} {
		w := alarmWorld(tp, map[string]string{"AlarmEmail": email})
		topic, hasTopic := resource(t, w, "AlarmTopic")
		if hasTopic != (email != "") {
			t.Fatalf("AlarmEmail %q: topic created %v", email, hasTopic)
		}
		if hasTopic && fmt.Sprint(topic["Subscription"]) != "[map[Endpoint:ops@example.org Protocol:email]]" {
			t.Errorf("topic subscription: %v", topic["Subscription"])
		}
		for id, want := range map[string]string{
			"DeadLetterAlarm":      "AWS/SQS ApproximateNumberOfMessagesVisible QueueName=lanes-dlq",
			"WorkerErrorsAlarm":    "AWS/Lambda Errors FunctionName=tc-worker",
			"WorkerThrottlesAlarm": "AWS/Lambda Throttles FunctionName=tc-worker",
			"ApiServerErrorsAlarm": "AWS/ApiGateway 5xx ApiId=api123 Stage=$default",
		} {
			a, ok := resource(t, w, id)
			if !ok {
				t.Fatalf("%s missing", id)
			}
			var dims []string
			for _, d := range a["Dimensions"].([]any) {
				dims = append(dims, fmt.Sprintf("%v=%v", m(d, "Name"), m(d, "Value")))
			}
			if got := fmt.Sprintf("%v %v %s", a["Namespace"], a["MetricName"], strings.Join(dims, " ")); got != want {
				t.Errorf("%s watches %s, want %s", id, got, want)
			}
			if a["Threshold"] != "0" || a["ComparisonOperator"] != "GreaterThanThreshold" || a["TreatMissingData"] != "notBreaching" {
				t.Errorf("%s: fires on %v %v (missing data %v), want anything > 0", id, a["ComparisonOperator"], a["Threshold"], a["TreatMissingData"])
			}
			if got := fmt.Sprint(a["AlarmActions"]); (email == "" && a["AlarmActions"] != nil) || (email != "" && got != "[arn:aws:sns:us-east-1:000000000000:alarms]") {
				t.Errorf("%s: AlarmActions %v with AlarmEmail %q", id, a["AlarmActions"], email)
			}
		}
		up, _ := resource(t, w, "UpstreamErrorRateAlarm")
		var names []string
		for _, q := range up["Metrics"].([]any) {
			if ms := m(q, "MetricStat", "Metric"); ms != nil {
				names = append(names, fmt.Sprintf("%v/%v/%v", m(ms, "Namespace"), m(ms, "MetricName"), m(ms, "Dimensions")))
			}
		}
		want := []string{"tilecache/UpstreamErrors/[map[Name:Function Value:tc-worker]]", "tilecache/UpstreamLatency/[map[Name:Function Value:tc-worker]]"}
		if !slices.Equal(names, want) || up["Threshold"] != "10" {
			t.Errorf("upstream error rate alarm: metrics %v threshold %v; want %v, 10", names, up["Threshold"], want)
		}
		for _, n := range []string{metrics.UpstreamErrors.EMFName, metrics.UpstreamSeconds.EMFName} {
			if !slices.ContainsFunc(names, func(s string) bool { return strings.Contains(s, "/"+n+"/") }) {
				t.Errorf("the upstream alarm does not use %s", n)
			}
		}

		d, _ := resource(t, w, "Dashboard")
		var body struct {
			Widgets []struct {
				Properties struct {
					Title   string  `json:"title"`
					Metrics [][]any `json:"metrics"`
				} `json:"properties"`
			} `json:"widgets"`
		}
		if err := json.Unmarshal([]byte(fmt.Sprint(d["DashboardBody"])), &body); err != nil {
			t.Fatalf("dashboard body is not JSON: %v\n%v", err, d["DashboardBody"])
		}
		var titles []string
		for _, wg := range body.Widgets {
			titles = append(titles, wg.Properties.Title)
			ns := ""
			for _, row := range wg.Properties.Metrics {
				if s, ok := row[0].(string); ok && s != "." && s != "..." {
					ns = s
				}
				if name, ok := row[1].(string); ok && ns == "tilecache" && name != "." && !emfNames[name] {
					t.Errorf("dashboard widget %q shows tilecache/%s, which the code does not write", wg.Properties.Title, name)
				}
			}
		}
		for _, want := range []string{"Seeding rate", "Failures", "Lane lag", "Bucket usage"} {
			if !slices.ContainsFunc(titles, func(s string) bool { return strings.HasPrefix(s, want) }) {
				t.Errorf("dashboard: no %q widget in %v", want, titles)
			}
		}
	}
}

// TestTemplateTileFunctionAlarms: with the CDN, the tile function's
// throttles (its reserved concurrency taken), errors and renders close to
// its timeout alarm like the worker's, notifying the same topic; without
// it there is no tile function to watch.
func TestTemplateTileFunctionAlarms(t *testing.T) {
	tp := loadTemplate(t)
	for _, email := range []string{"", "ops@example.org"} {
		w := alarmWorld(tp, map[string]string{"AlarmEmail": email, "EnableCdn": "true"})
		w.refs["TileFunction"] = "tc-tile"
		worker, _ := resource(t, w, "WorkerThrottlesAlarm")
		for id, want := range map[string]string{
			"TileThrottlesAlarm": "AWS/Lambda Throttles FunctionName=tc-tile",
			"TileErrorsAlarm":    "AWS/Lambda Errors FunctionName=tc-tile",
		} {
			a, ok := resource(t, w, id)
			if !ok {
				t.Fatalf("%s missing with EnableCdn true", id)
			}
			var dims []string
			for _, d := range a["Dimensions"].([]any) {
				dims = append(dims, fmt.Sprintf("%v=%v", m(d, "Name"), m(d, "Value")))
			}
			if got := fmt.Sprintf("%v %v %s", a["Namespace"], a["MetricName"], strings.Join(dims, " ")); got != want {
				t.Errorf("%s watches %s, want %s", id, got, want)
			}
			if a["Statistic"] != "Sum" || a["Threshold"] != "0" || a["ComparisonOperator"] != "GreaterThanThreshold" || a["TreatMissingData"] != "notBreaching" {
				t.Errorf("%s: fires on %v %v %v (missing data %v), want a sum > 0", id, a["Statistic"], a["ComparisonOperator"], a["Threshold"], a["TreatMissingData"])
			}
			sameActions(t, id, a, worker)
		}

		// Duration: the longest invocation of 5 minutes as a percentage
		// of the timeout, for every timeout the parameter allows.
		for _, timeout := range []string{"5", "30", "60"} {
			w.params["TileFunctionTimeout"] = timeout
			a, ok := resource(t, w, "TileDurationAlarm")
			if !ok {
				t.Fatal("TileDurationAlarm missing with EnableCdn true")
			}
			sameActions(t, "TileDurationAlarm", a, worker)
			var duration, expr string
			for _, q := range a["Metrics"].([]any) {
				if ms := m(q, "MetricStat"); ms != nil {
					duration = fmt.Sprint(m(q, "Id"))
					if got := fmt.Sprintf("%v %v %v %v", m(ms, "Metric", "Namespace"), m(ms, "Metric", "MetricName"), m(ms, "Metric", "Dimensions"), m(ms, "Stat")); got != "AWS/Lambda Duration [map[Name:FunctionName Value:tc-tile]] Maximum" {
						t.Errorf("TileDurationAlarm: metric %s, want the tile function's Maximum Duration", got)
					}
				}
				if m(q, "ReturnData") == "true" {
					expr = fmt.Sprint(m(q, "Expression"))
				}
			}
			secs, _ := strconv.ParseFloat(timeout, 64)
			threshold, _ := strconv.ParseFloat(fmt.Sprint(a["Threshold"]), 64)
			at := func(frac float64) float64 { // the expression for an invocation of frac × the timeout
				t.Helper()
				v, err := types.Eval(token.NewFileSet(), nil, token.NoPos, strings.ReplaceAll(expr, duration, strconv.FormatFloat(frac*secs*1000, 'f', 3, 64)))
				if err != nil || v.Value == nil {
					t.Fatalf("TileDurationAlarm expression %q: %v", expr, err)
				}
				f, _ := constant.Float64Val(constant.ToFloat(v.Value))
				return f
			}
			if a["ComparisonOperator"] != "GreaterThanThreshold" || at(0.5) > threshold || at(0.95) <= threshold || at(1) <= threshold {
				t.Errorf("TileFunctionTimeout %s: %q %v %v gives %.1f at half the timeout, %.1f at 95%%: want it to fire near the timeout only",
					timeout, expr, a["ComparisonOperator"], threshold, at(0.5), at(0.95))
			}
		}
	}
	w := alarmWorld(tp, map[string]string{"EnableCdn": "false"})
	for _, id := range []string{"TileThrottlesAlarm", "TileErrorsAlarm", "TileDurationAlarm"} {
		if _, ok := resource(t, w, id); ok {
			t.Errorf("EnableCdn false: %s is created", id)
		}
	}
}

// sameActions checks that alarm a notifies as ref (the worker's) does.
func sameActions(t *testing.T, id string, a, ref map[string]any) {
	t.Helper()
	for _, k := range []string{"AlarmActions", "OKActions", "InsufficientDataActions"} {
		if fmt.Sprint(a[k]) != fmt.Sprint(ref[k]) {
			t.Errorf("%s: %s %v, want %v like WorkerThrottlesAlarm", id, k, a[k], ref[k])
		}
	}
}
