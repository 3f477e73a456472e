package functions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"tilecache/internal/metrics"
)

// TestTemplateLogIngestion: with access logs on (the CDN's, or without a
// CDN the bucket's), the log function is triggered by every new object of
// the log bucket, reads it and writes only page reads and batch marks,
// fails into a dead-letter queue with an alarm; LogIngestion false, or no
// access logs, leaves it out.
func TestTemplateLogIngestion(t *testing.T) {
	tp := loadTemplate(t)
	for _, c := range []struct {
		name   string
		params map[string]string
		on     bool
		format string
	}{
		{"defaults", map[string]string{}, false, ""},
		{"CDN logs", map[string]string{"EnableCdn": "true", "CdnAccessLogs": "true"}, true, "cloudfront"},
		{"CDN logs, ingestion off", map[string]string{"EnableCdn": "true", "CdnAccessLogs": "true", "LogIngestion": "false"}, false, ""},
		{"bucket logs", map[string]string{"EnableCdn": "false", "BucketAccessLogs": "true"}, true, "s3"},
		{"bucket logs with a CDN", map[string]string{"EnableCdn": "true", "BucketAccessLogs": "true"}, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := alarmWorld(tp, c.params)
			w.refs["CdnLogBucket"] = "tilecache-logs-6a7b8c90-0000-1111-2222-333344445555"
			w.atts["LogsRole.Arn"] = "arn:aws:iam::000000000000:role/tc-logs"
			w.refs["LogsLogGroup"] = "tc-logs"
			w.refs["LogsFunction"] = "tc-logs"
			w.atts["LogsFunction.Arn"] = "arn:aws:lambda:us-east-1:000000000000:function:tc-logs"
			w.atts["CdnLogBucket.Arn"] = "arn:aws:s3:::tilecache-logs-6a7b8c90-0000-1111-2222-333344445555"
			w.atts["TileBucket.Arn"] = "arn:aws:s3:::bkt"
			w.atts["TaskTable.Arn"] = "arn:aws:dynamodb:us-east-1:000000000000:table/tc"
			w.atts["LogsDeadLetterQueue.Arn"] = "arn:aws:sqs:us-east-1:000000000000:tc-logs-dlq"
			w.atts["LogsDeadLetterQueue.QueueName"] = "tc-logs-dlq"
			w.atts["LogsLogGroup.Arn"] = "arn:aws:logs:us-east-1:000000000000:log-group:tc-logs"
			fn, ok := resource(t, w, "LogsFunction")
			if ok != c.on {
				t.Fatalf("LogsFunction present: %v, want %v", ok, c.on)
			}
			if !c.on {
				return
			}
			bucket, ok := resource(t, w, "CdnLogBucket")
			if !ok {
				t.Fatal("the log bucket is missing")
			}
			if got := fmt.Sprint(bucket["BucketName"]); got != "tilecache-logs-6a7b8c90-0000-1111-2222-333344445555" {
				t.Errorf("log bucket name %s, want tilecache-logs-<stack uuid> (the role names it without a cycle)", got)
			}
			lc := m(bucket, "NotificationConfiguration", "LambdaConfigurations")
			if got := fmt.Sprint(lc); got != "[map[Event:s3:ObjectCreated:* Function:arn:aws:lambda:us-east-1:000000000000:function:tc-logs]]" {
				t.Errorf("log bucket notifications %s, want every new object to the log function", got)
			}
			perm, _ := resource(t, w, "LogsInvokePermission")
			if perm["Principal"] != "s3.amazonaws.com" || perm["SourceArn"] != "arn:aws:s3:::tilecache-logs-6a7b8c90-0000-1111-2222-333344445555" || perm["SourceAccount"] == nil {
				t.Errorf("invoke permission %v: want S3, from the log bucket of this account only", perm)
			}
			if got := fmt.Sprint(m(fn, "Environment", "Variables", "TILECACHE_ACCESS_LOG_FORMAT")); got != c.format {
				t.Errorf("log format %s, want %s", got, c.format)
			}
			if m(fn, "DeadLetterQueue", "TargetArn") != "arn:aws:sqs:us-east-1:000000000000:tc-logs-dlq" {
				t.Errorf("dead-letter queue %v, want LogsDeadLetterQueue", m(fn, "DeadLetterQueue"))
			}
			alarm, ok := resource(t, w, "LogsDeadLetterAlarm")
			if !ok || fmt.Sprint(alarm["Dimensions"]) != "[map[Name:QueueName Value:tc-logs-dlq]]" {
				t.Errorf("dead-letter alarm %v, want one on LogsDeadLetterQueue", alarm)
			}
			role, _ := resource(t, w, "LogsRole")
			var actions []string
			for _, st := range m(role, "Policies").([]any)[0].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				st := st.(map[string]any)
				actions = append(actions, fmt.Sprintf("%v on %v if %v", st["Action"], st["Resource"], st["Condition"]))
			}
			want := []string{
				"[logs:CreateLogStream logs:PutLogEvents] on arn:aws:logs:us-east-1:000000000000:log-group:tc-logs if <nil>",
				"s3:GetObject on arn:aws:s3:::tilecache-logs-6a7b8c90-0000-1111-2222-333344445555/* if <nil>",
				"[dynamodb:GetItem dynamodb:UpdateItem] on arn:aws:dynamodb:us-east-1:000000000000:table/tc if map[ForAllValues:StringLike:map[dynamodb:LeadingKeys:[pages#*]]]",
				"[dynamodb:PutItem dynamodb:DeleteItem] on arn:aws:dynamodb:us-east-1:000000000000:table/tc if map[ForAllValues:StringLike:map[dynamodb:LeadingKeys:[claim#reads#*]]]",
				"dynamodb:GetItem on arn:aws:dynamodb:us-east-1:000000000000:table/tc if map[ForAllValues:StringEquals:map[dynamodb:LeadingKeys:[config]]]",
				"sqs:SendMessage on arn:aws:sqs:us-east-1:000000000000:tc-logs-dlq if <nil>",
			}
			if strings.Join(actions, "\n") != strings.Join(want, "\n") {
				t.Errorf("the log function's role allows\n%s\nwant\n%s", strings.Join(actions, "\n"), strings.Join(want, "\n"))
			}
			tile, _ := resource(t, w, "TileBucket")
			logging := m(tile, "LoggingConfiguration")
			if (c.format == "s3") != (logging != nil) {
				t.Errorf("tile bucket logging %v with format %s: want server access logs exactly without the CDN", logging, c.format)
			}
		})
	}
}

// TestTemplateLogsNoneKeptAlarm: with log ingestion, an alarm fires when
// for three hours the logs held reads (the log function's AccessLogReads,
// summed over outcomes) and none was kept as a tile's (outcome kept); it
// notifies like the other alarms. Without ingestion there is none.
func TestTemplateLogsNoneKeptAlarm(t *testing.T) {
	tp := loadTemplate(t)
	for _, c := range []struct {
		params map[string]string
		on     bool
	}{
		{map[string]string{"EnableCdn": "true", "CdnAccessLogs": "true", "KeyPrefix": "tiles", "AlarmEmail": "ops@example.org"}, true},
		{map[string]string{"EnableCdn": "false", "BucketAccessLogs": "true", "AlarmEmail": "ops@example.org"}, true},
		{map[string]string{"EnableCdn": "true", "CdnAccessLogs": "true", "LogIngestion": "false"}, false},
	} {
		w := alarmWorld(tp, c.params)
		w.refs["LogsFunction"] = "tc-logs"
		a, ok := resource(t, w, "LogsNoneKeptAlarm")
		if ok != c.on {
			t.Fatalf("%v: LogsNoneKeptAlarm present %v, want %v", c.params, ok, c.on)
		}
		if !ok {
			continue
		}
		dead, _ := resource(t, w, "WorkerErrorsAlarm")
		sameActions(t, "LogsNoneKeptAlarm", a, dead)
		byID := map[string]string{}
		expr := ""
		for _, q := range a["Metrics"].([]any) {
			if ms := m(q, "MetricStat"); ms != nil {
				var dims []string
				for _, d := range m(ms, "Metric", "Dimensions").([]any) {
					dims = append(dims, fmt.Sprintf("%v=%v", m(d, "Name"), m(d, "Value")))
				}
				byID[fmt.Sprint(m(q, "Id"))] = fmt.Sprintf("%v/%v %s %v %v", m(ms, "Metric", "Namespace"), m(ms, "Metric", "MetricName"), strings.Join(dims, ","), m(ms, "Stat"), m(ms, "Period"))
			} else if m(q, "ReturnData") == "true" {
				expr = fmt.Sprint(m(q, "Expression"))
			}
		}
		name := "tilecache/" + metrics.AccessLogReads.EMFName
		want := map[string]string{"reads": name + " Function=tc-logs Sum 3600", "kept": name + " Function=tc-logs,outcome=kept Sum 3600"}
		if fmt.Sprint(byID) != fmt.Sprint(want) {
			t.Errorf("metrics %v, want %v", byID, want)
		}
		if !slices.Contains(metrics.AccessLogReads.Labels, "outcome") {
			t.Errorf("%s has no outcome label for the kept reads", metrics.AccessLogReads.EMFName)
		}
		if expr != "IF(FILL(reads, 0) > 0 AND FILL(kept, 0) == 0, 1, 0)" {
			t.Errorf("expression %q: want 1 for an hour with reads and none kept", expr)
		}
		if a["EvaluationPeriods"] != "3" || a["DatapointsToAlarm"] != "3" || a["Threshold"] != "0" || a["ComparisonOperator"] != "GreaterThanThreshold" || a["TreatMissingData"] != "notBreaching" {
			t.Errorf("fires on %v of %v periods %v %v (missing %v), want 3 of 3, > 0, missing not breaching", a["DatapointsToAlarm"], a["EvaluationPeriods"], a["ComparisonOperator"], a["Threshold"], a["TreatMissingData"])
		}
	}
}
