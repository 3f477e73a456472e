package functions_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/testkit/lambdatest"
)

// TestTemplateTableMatchesCreateTable compares the template's TaskTable with
// a table dynamo.CreateTable (the code's own definition, also behind
// the local provisioning script) made on the local stack.
func TestTemplateTableMatchesCreateTable(t *testing.T) {
	tp := loadTemplate(t)
	r := lambdatest.NewResources(t) // creates the table with dynamo.CreateTable
	ddb := lambdatest.DynamoDB(t)
	out, err := ddb.DescribeTable(t.Context(), &dynamodb.DescribeTableInput{TableName: aws.String(r.Table)})
	if err != nil {
		t.Fatal(err)
	}
	desc := out.Table
	keySchema := func(ks []types.KeySchemaElement) string {
		var s []string
		for _, k := range ks {
			s = append(s, aws.ToString(k.AttributeName)+" "+string(k.KeyType))
		}
		return strings.Join(s, ", ")
	}
	var want []string
	for _, a := range desc.AttributeDefinitions {
		want = append(want, "attribute "+aws.ToString(a.AttributeName)+" "+string(a.AttributeType))
	}
	want = append(want, "key "+keySchema(desc.KeySchema))
	for _, g := range desc.GlobalSecondaryIndexes {
		nonKey := slices.Clone(g.Projection.NonKeyAttributes)
		slices.Sort(nonKey)
		want = append(want, fmt.Sprintf("index %s: %s, projection %s %v", aws.ToString(g.IndexName), keySchema(g.KeySchema), g.Projection.ProjectionType, nonKey))
	}
	if desc.BillingModeSummary != nil {
		want = append(want, "billing "+string(desc.BillingModeSummary.BillingMode))
	} else {
		want = append(want, "billing PAY_PER_REQUEST") // DynamoDB Local does not report it; CreateTable asks for it
	}
	ttl, err := ddb.DescribeTimeToLive(t.Context(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(r.Table)})
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, "ttl "+aws.ToString(ttl.TimeToLiveDescription.AttributeName))

	w := &world{tp: tp}
	v, err := w.eval(get(tp.resource("TaskTable"), "Properties"))
	if err != nil {
		t.Fatal(err)
	}
	props := v.(map[string]any)
	list := func(v any) []map[string]any {
		var out []map[string]any
		for _, x := range v.([]any) {
			out = append(out, x.(map[string]any))
		}
		return out
	}
	tplKeys := func(v any) string {
		var s []string
		for _, k := range list(v) {
			s = append(s, fmt.Sprint(k["AttributeName"], " ", k["KeyType"]))
		}
		return strings.Join(s, ", ")
	}
	var got []string
	for _, a := range list(props["AttributeDefinitions"]) {
		got = append(got, fmt.Sprint("attribute ", a["AttributeName"], " ", a["AttributeType"]))
	}
	got = append(got, "key "+tplKeys(props["KeySchema"]))
	for _, g := range list(props["GlobalSecondaryIndexes"]) {
		proj := g["Projection"].(map[string]any)
		var nonKey []string
		if v, ok := proj["NonKeyAttributes"].([]any); ok {
			for _, a := range v {
				nonKey = append(nonKey, fmt.Sprint(a))
			}
		}
		slices.Sort(nonKey)
		got = append(got, fmt.Sprintf("index %s: %s, projection %s %v", g["IndexName"], tplKeys(g["KeySchema"]), proj["ProjectionType"], nonKey))
	}
	got = append(got, fmt.Sprint("billing ", props["BillingMode"]))
	if ttl := props["TimeToLiveSpecification"].(map[string]any); ttl["Enabled"] == "true" {
		got = append(got, fmt.Sprint("ttl ", ttl["AttributeName"]))
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("TaskTable in template.yaml:\n  %s\ndynamo.CreateTable:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
