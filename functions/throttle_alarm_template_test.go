package functions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/metrics"
)

// TestTemplateThrottlingAlarm: the sustained-throttling alarm sums the
// EMF metric the AWS clients write (metrics.AWSThrottled) over every
// function there is, the tile function only with the CDN, and notifies
// like the other alarms.
func TestTemplateThrottlingAlarm(t *testing.T) {
	tp := loadTemplate(t)
	for _, cdn := range []string{"false", "true"} {
		w := alarmWorld(tp, map[string]string{"AlarmEmail": "ops@example.org", "EnableCdn": cdn})
		w.refs["ApiFunction"], w.refs["TileFunction"] = "tc-api", "tc-tile"
		a, ok := resource(t, w, "AwsThrottlingAlarm")
		if !ok {
			t.Fatalf("EnableCdn %s: AwsThrottlingAlarm missing", cdn)
		}
		worker, _ := resource(t, w, "WorkerThrottlesAlarm")
		sameActions(t, "AwsThrottlingAlarm", a, worker)
		var ids, functions []string
		expr := ""
		for _, q := range a["Metrics"].([]any) {
			if ms := m(q, "MetricStat"); ms != nil {
				if got := fmt.Sprintf("%v/%v %v %v", m(ms, "Metric", "Namespace"), m(ms, "Metric", "MetricName"), m(ms, "Stat"), m(ms, "Period")); got != "tilecache/"+metrics.AWSThrottled.EMFName+" Sum 300" {
					t.Errorf("EnableCdn %s: metric %s, want the 5-minute sum of tilecache/%s", cdn, got, metrics.AWSThrottled.EMFName)
				}
				ids = append(ids, fmt.Sprint(m(q, "Id")))
				functions = append(functions, fmt.Sprint(m(ms, "Metric", "Dimensions")))
			} else if m(q, "ReturnData") == "true" {
				expr = fmt.Sprint(m(q, "Expression"))
			}
		}
		want := []string{"[map[Name:Function Value:tc-worker]]", "[map[Name:Function Value:tc-api]]", "[map[Name:Function Value:tc-cleaner]]"}
		if cdn == "true" {
			want = append(want, "[map[Name:Function Value:tc-tile]]")
		}
		if !slices.Equal(functions, want) {
			t.Errorf("EnableCdn %s: functions %v, want %v", cdn, functions, want)
		}
		if expr != "SUM(["+strings.Join(ids, ", ")+"])" {
			t.Errorf("EnableCdn %s: expression %q does not sum exactly %v", cdn, expr, ids)
		}
		if a["EvaluationPeriods"] != "3" || a["DatapointsToAlarm"] != "3" || a["ComparisonOperator"] != "GreaterThanThreshold" || a["TreatMissingData"] != "notBreaching" {
			t.Errorf("EnableCdn %s: fires on %v of %v periods %v %v (missing %v), want 3 of 3, greater than", cdn, a["DatapointsToAlarm"], a["EvaluationPeriods"], a["ComparisonOperator"], a["Threshold"], a["TreatMissingData"])
		}
	}
}
