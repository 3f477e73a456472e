package functions_test

import (
	"fmt"
	"strings"
	"testing"
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
				"dynamodb:UpdateItem on arn:aws:dynamodb:us-east-1:000000000000:table/tc if map[ForAllValues:StringLike:map[dynamodb:LeadingKeys:[pages#*]]]",
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
