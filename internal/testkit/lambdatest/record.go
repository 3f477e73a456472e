package lambdatest

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Call is one AWS API call as IAM authorizes it: the action, the ARN of
// the resource it acts on and the condition keys the request sets. One
// request can be several calls (a DeleteObjects request is one
// s3:DeleteObject per key, a TransactWriteItems one call per item).
type Call struct {
	Action   string            // e.g. "dynamodb:UpdateItem"
	Resource string            // e.g. "arn:aws:dynamodb:us-east-1:000000000000:table/t"
	Op       string            // the wire operation, e.g. "TransactWriteItems"
	Keys     map[string]string // condition keys, e.g. "s3:prefix"
}

// Recorder collects the calls that pass its proxies. It is safe for
// concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls []Call
}

func (r *Recorder) add(cs ...Call) {
	r.mu.Lock()
	r.calls = append(r.calls, cs...)
	r.mu.Unlock()
}

// Calls returns the calls recorded so far.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// Actions returns the distinct actions recorded so far, sorted.
func (r *Recorder) Actions() []string {
	var out []string
	for _, c := range r.Calls() {
		if !slices.Contains(out, c.Action) {
			out = append(out, c.Action)
		}
	}
	slices.Sort(out)
	return out
}

// endpointVars are the SDK variables the programs take their endpoints from.
var endpointVars = map[string]string{"s3": "AWS_ENDPOINT_URL_S3", "dynamodb": "AWS_ENDPOINT_URL_DYNAMODB", "sqs": "AWS_ENDPOINT_URL_SQS",
	"cloudfront": "AWS_ENDPOINT_URL_CLOUDFRONT"}

// Recording runs build with the process's AWS_ENDPOINT_URL_S3, _DYNAMODB,
// _SQS and _CLOUDFRONT pointing at recording reverse proxies in front of the local
// stack's endpoints, so that the clients build creates (app.New,
// worker.NewAWS) send every request through rec; then it restores the
// variables. The proxies keep the Host header, so MinIO's signature checks
// pass. It uses t.Setenv: the test must not be parallel.
//
// This needs no change in the product. Were app.AWSBackends (and
// s3store) to take an http.RoundTripper wrapper, the same classification
// could record in-process, without proxies and without t.Setenv.
func Recording(t *testing.T, rec *Recorder, build func()) {
	t.Helper()
	orig := map[string]string{}
	for svc, name := range endpointVars {
		target := os.Getenv(name)
		if target == "" {
			t.Fatalf("%s is not set: recording needs the local AWS stack", name)
		}
		orig[name] = target
		t.Setenv(name, recordingProxy(t, rec, svc, target))
	}
	build()
	for name, v := range orig {
		t.Setenv(name, v)
	}
}

func recordingProxy(t *testing.T, rec *Recorder, service, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		pr.SetURL(u)
		pr.Out.Host = pr.In.Host // signed by the client (SigV4): keep it
	}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.add(classify(service, r, body)...)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// classify turns a request into the calls IAM authorizes.
func classify(service string, r *http.Request, body []byte) []Call {
	switch service {
	case "s3":
		return classifyS3(r, body)
	case "cloudfront":
		return classifyCloudFront(r)
	case "dynamodb":
		return classifyDynamoDB(r, body)
	case "sqs":
		return classifySQS(r, body)
	}
	return []Call{{Action: service + ":?", Op: r.Method + " " + r.URL.String()}}
}

// S3ARN is the ARN of a bucket, or of an object when key is not empty.
func S3ARN(bucket, key string) string {
	if key == "" {
		return "arn:aws:s3:::" + bucket
	}
	return "arn:aws:s3:::" + bucket + "/" + key
}

// classifyS3 reads a path-style request (http://host/bucket/key?query), as
// minio-go sends to non-AWS endpoints.
func classifyS3(r *http.Request, body []byte) []Call {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	call := func(action, op string) []Call {
		return []Call{{Action: action, Resource: S3ARN(bucket, key), Op: op}}
	}
	switch {
	case r.Method == http.MethodPost && q.Has("delete"):
		var req struct {
			Objects []struct{ Key string } `xml:"Object"`
		}
		if err := xml.Unmarshal(body, &req); err != nil {
			return call("s3:?", "DeleteObjects with an unreadable body")
		}
		var out []Call
		for _, o := range req.Objects {
			out = append(out, Call{Action: "s3:DeleteObject", Resource: S3ARN(bucket, o.Key), Op: "DeleteObjects"})
		}
		return out
	case key == "" && r.Method == http.MethodGet && q.Has("location"):
		return call("s3:GetBucketLocation", "GetBucketLocation")
	case key == "" && r.Method == http.MethodGet && (q.Has("list-type") || len(q) == 0 || q.Has("prefix")):
		return []Call{{Action: "s3:ListBucket", Resource: S3ARN(bucket, ""), Op: "ListObjectsV2", Keys: map[string]string{"s3:prefix": q.Get("prefix")}}}
	case key == "" && r.Method == http.MethodHead:
		return call("s3:ListBucket", "HeadBucket")
	case key == "":
		return call("s3:?", r.Method+" bucket ?"+r.URL.RawQuery)
	case q.Has("uploadId") && r.Method == http.MethodDelete:
		return call("s3:AbortMultipartUpload", "AbortMultipartUpload")
	case r.Method == http.MethodGet && len(q) == 0:
		return call("s3:GetObject", "GetObject")
	case r.Method == http.MethodHead:
		return call("s3:GetObject", "HeadObject")
	case r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") == "",
		r.Method == http.MethodPost && (q.Has("uploads") || q.Has("uploadId")):
		return call("s3:PutObject", "PutObject")
	case r.Method == http.MethodDelete && len(q) == 0:
		return call("s3:DeleteObject", "DeleteObject")
	}
	return call("s3:?", r.Method+" object ?"+r.URL.RawQuery)
}

// DynamoDBARN is the ARN of a table, or of its index when index is not empty.
func DynamoDBARN(table, index string) string {
	arn := "arn:aws:dynamodb:" + Region + ":" + Account + ":table/" + table
	if index != "" {
		arn += "/index/" + index
	}
	return arn
}

// hashKey is the partition key attribute of the tables the programs use
// (dynamo.CreateTable).
const hashKey = "pk"

// leadingKeys is a call's condition keys for an item of partition key
// value pk (IAM's dynamodb:LeadingKeys); none when pk is empty.
func leadingKeys(pk string) map[string]string {
	if pk == "" {
		return nil
	}
	return map[string]string{"dynamodb:LeadingKeys": pk}
}

// itemPK is the partition key value of an item or key in DynamoDB JSON.
type itemPK map[string]struct{ S string }

func (k itemPK) pk() string { return k[hashKey].S }

// queryPK is the partition key value a Query's key condition compares
// with, IAM's dynamodb:LeadingKeys for it ("#pk = :v", "pk = :v").
func queryPK(cond string, names map[string]string, values map[string]struct{ S string }) string {
	for part := range strings.SplitSeq(cond, " AND ") {
		name, value, ok := strings.Cut(part, "=")
		if !ok || strings.ContainsAny(value, "<>") {
			continue
		}
		name, value = strings.Trim(strings.TrimSpace(name), "()"), strings.Trim(strings.TrimSpace(value), "()")
		if n, ok := names[name]; ok {
			name = n
		}
		if name == hashKey || name == "gsi1pk" { // the table's, the index active's

			return values[value].S
		}
	}
	return ""
}

func classifyDynamoDB(r *http.Request, body []byte) []Call {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810.")
	var req struct {
		TableName    string
		IndexName    string
		Key, Item    itemPK
		RequestItems map[string]json.RawMessage
		// TransactWriteItems / TransactGetItems
		TransactItems []map[string]struct {
			TableName string
			Key, Item itemPK
		}
		// Query
		KeyConditionExpression    string
		ExpressionAttributeNames  map[string]string
		ExpressionAttributeValues map[string]struct{ S string }
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return []Call{{Action: "dynamodb:?", Op: op}}
	}
	switch op {
	case "TransactWriteItems", "TransactGetItems":
		// IAM authorizes each item with the action of its kind.
		kinds := map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}
		var out []Call
		for _, item := range req.TransactItems {
			for kind, v := range item {
				action, ok := kinds[kind]
				if !ok {
					action = "?" + kind
				}
				out = append(out, Call{Action: "dynamodb:" + action, Resource: DynamoDBARN(v.TableName, ""), Op: op,
					Keys: leadingKeys(v.Key.pk() + v.Item.pk())})
			}
		}
		return out
	case "BatchWriteItem", "BatchGetItem":
		// One call per item: IAM holds every item's partition key to a
		// ForAllValues condition on dynamodb:LeadingKeys.
		var out []Call
		for table, raw := range req.RequestItems {
			var writes []struct {
				PutRequest    struct{ Item itemPK }
				DeleteRequest struct{ Key itemPK }
			}
			var reads struct{ Keys []itemPK }
			var pks []string
			if op == "BatchWriteItem" && json.Unmarshal(raw, &writes) == nil {
				for _, w := range writes {
					pks = append(pks, w.PutRequest.Item.pk()+w.DeleteRequest.Key.pk())
				}
			} else if op == "BatchGetItem" && json.Unmarshal(raw, &reads) == nil {
				for _, k := range reads.Keys {
					pks = append(pks, k.pk())
				}
			}
			if len(pks) == 0 {
				pks = []string{""}
			}
			for _, pk := range pks {
				out = append(out, Call{Action: "dynamodb:" + op, Resource: DynamoDBARN(table, ""), Op: op, Keys: leadingKeys(pk)})
			}
		}
		return out
	case "Query":
		return []Call{{Action: "dynamodb:Query", Resource: DynamoDBARN(req.TableName, req.IndexName), Op: op,
			Keys: leadingKeys(queryPK(req.KeyConditionExpression, req.ExpressionAttributeNames, req.ExpressionAttributeValues))}}
	}
	return []Call{{Action: "dynamodb:" + op, Resource: DynamoDBARN(req.TableName, req.IndexName), Op: op, Keys: leadingKeys(req.Key.pk() + req.Item.pk())}}
}

// SQSARN is the ARN of a queue on the local stack.
// CloudFrontARN is the ARN of a distribution (CloudFront is global: no
// region).
func CloudFrontARN(id string) string { return "arn:aws:cloudfront::" + Account + ":distribution/" + id }

// classifyCloudFront knows the calls the product makes: CreateInvalidation
// (POST /2020-05-31/distribution/{id}/invalidation).
func classifyCloudFront(r *http.Request) []Call {
	rest, ok := strings.CutPrefix(r.URL.Path, "/2020-05-31/distribution/")
	id, tail, _ := strings.Cut(rest, "/")
	if ok && r.Method == http.MethodPost && tail == "invalidation" {
		return []Call{{Action: "cloudfront:CreateInvalidation", Resource: CloudFrontARN(id), Op: "CreateInvalidation"}}
	}
	return []Call{{Action: "cloudfront:?", Resource: r.Method + " " + r.URL.Path, Op: "unknown"}}
}

func SQSARN(name string) string { return "arn:aws:sqs:" + Region + ":" + Account + ":" + name }

func classifySQS(r *http.Request, body []byte) []Call {
	op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "AmazonSQS.")
	var req struct{ QueueUrl, QueueName string }
	json.Unmarshal(body, &req)
	name := req.QueueName
	if req.QueueUrl != "" {
		name = req.QueueUrl[strings.LastIndexByte(req.QueueUrl, '/')+1:]
	}
	// The batch calls are authorized as their single-message actions.
	action := strings.TrimSuffix(op, "Batch")
	return []Call{{Action: "sqs:" + action, Resource: SQSARN(name), Op: op}}
}
