package faultproxy

import (
	"bytes"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
)

// operation is what the proxy knows about one request: the API operation's
// name (for Stats) and whether it writes.
type operation struct {
	Name  string
	Write bool
	// JSON is set for SQS requests in the AWS JSON protocol (X-Amz-Target),
	// whose errors are answered in JSON rather than query-protocol XML.
	JSON bool
}

// dynamoWrites and sqsWrites are the operations IsWrite reports as writes.
var (
	dynamoWrites = map[string]bool{
		"PutItem": true, "UpdateItem": true, "DeleteItem": true,
		"BatchWriteItem": true, "TransactWriteItems": true,
	}
	sqsWrites = map[string]bool{
		"SendMessage": true, "SendMessageBatch": true,
		"DeleteMessage": true, "DeleteMessageBatch": true,
		"ChangeMessageVisibility": true, "ChangeMessageVisibilityBatch": true,
	}
)

// IsWrite reports whether op, an operation name as Stats reports it, is a
// write of service: for S3 any PUT, POST or DELETE; for DynamoDB PutItem,
// UpdateItem, DeleteItem, BatchWriteItem and TransactWriteItems; for SQS
// SendMessage(Batch), DeleteMessage(Batch) and
// ChangeMessageVisibility(Batch).
func IsWrite(service Service, op string) bool {
	switch service {
	case DynamoDB:
		return dynamoWrites[op]
	case SQS:
		return sqsWrites[op]
	case S3:
		return s3Writes[op] || strings.HasPrefix(op, "PUT ") || strings.HasPrefix(op, "POST ") ||
			strings.HasPrefix(op, "DELETE ")
	}
	return false
}

func (p *Proxy) classify(r *http.Request) operation {
	switch p.service {
	case DynamoDB:
		name := targetOp(r, "DynamoDB_20120810.")
		return operation{Name: name, Write: dynamoWrites[name]}
	case SQS:
		if r.Header.Get("X-Amz-Target") != "" {
			name := targetOp(r, "AmazonSQS.")
			return operation{Name: name, Write: sqsWrites[name], JSON: true}
		}
		name := sqsAction(r)
		return operation{Name: name, Write: sqsWrites[name]}
	default:
		write := r.Method == http.MethodPut || r.Method == http.MethodPost || r.Method == http.MethodDelete
		return operation{Name: s3Op(r), Write: write}
	}
}

// targetOp returns the operation named by the X-Amz-Target header, without
// prefix, or "unknown".
func targetOp(r *http.Request, prefix string) string {
	t := r.Header.Get("X-Amz-Target")
	if name, ok := strings.CutPrefix(t, prefix); ok && name != "" {
		return name
	}
	if t == "" {
		return "unknown"
	}
	return t
}

// maxFormPeek bounds the part of a query-protocol SQS body read to find
// its Action (a message is at most 1 MiB, URL-encoded up to three times
// that).
const maxFormPeek = 4 << 20

// sqsAction returns the Action of a query-protocol SQS request, from the
// URL or from the form body. The body is read (up to maxFormPeek) and put
// back, so it is still forwarded whole.
func sqsAction(r *http.Request) string {
	if a := r.URL.Query().Get("Action"); a != "" {
		return a
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if r.Body == nil || r.Body == http.NoBody || ct != "application/x-www-form-urlencoded" {
		return "unknown"
	}
	buf, err := io.ReadAll(io.LimitReader(r.Body, maxFormPeek))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
	if err != nil || len(buf) == maxFormPeek {
		return "unknown"
	}
	form, err := url.ParseQuery(string(buf))
	if err != nil || form.Get("Action") == "" {
		return "unknown"
	}
	return form.Get("Action")
}

// s3Writes are the S3 operation names s3Op gives to PUT, POST and DELETE
// requests.
var s3Writes = map[string]bool{
	"PutObject": true, "CopyObject": true, "UploadPart": true, "UploadPartCopy": true,
	"CreateBucket": true, "DeleteObjects": true, "CreateMultipartUpload": true,
	"CompleteMultipartUpload": true, "AbortMultipartUpload": true,
	"DeleteObject": true, "DeleteBucket": true,
}

// s3Op names the S3 operation of a path-style request (the first path
// segment is the bucket). Bucket sub-resources not named here are reported
// as the method and the sub-resource, e.g. "PUT ?policy".
func s3Op(r *http.Request) string {
	path := strings.TrimPrefix(r.URL.Path, "/")
	bucket, key, _ := strings.Cut(path, "/")
	q := r.URL.Query()
	sub := ""
	for _, s := range []string{"uploads", "uploadId", "delete", "location", "versioning", "policy",
		"lifecycle", "tagging", "acl", "cors", "notification", "object-lock", "encryption", "replication"} {
		if q.Has(s) {
			sub = s
			break
		}
	}
	copySource := r.Header.Get("X-Amz-Copy-Source") != ""
	switch r.Method {
	case http.MethodGet:
		switch {
		case bucket == "":
			return "ListBuckets"
		case key == "" && sub == "location":
			return "GetBucketLocation"
		case key == "" && sub == "uploads":
			return "ListMultipartUploads"
		case key == "" && q.Get("list-type") == "2":
			return "ListObjectsV2"
		case key == "" && sub == "":
			return "ListObjects"
		case key != "" && sub == "uploadId":
			return "ListParts"
		case key != "" && sub == "":
			return "GetObject"
		}
	case http.MethodHead:
		if key == "" {
			return "HeadBucket"
		}
		return "HeadObject"
	case http.MethodPut:
		switch {
		case key != "" && q.Has("partNumber") && q.Has("uploadId") && copySource:
			return "UploadPartCopy"
		case key != "" && q.Has("partNumber") && q.Has("uploadId"):
			return "UploadPart"
		case key != "" && sub == "" && copySource:
			return "CopyObject"
		case key != "" && sub == "":
			return "PutObject"
		case key == "" && sub == "":
			return "CreateBucket"
		}
	case http.MethodPost:
		switch {
		case key == "" && sub == "delete":
			return "DeleteObjects"
		case key != "" && sub == "uploads":
			return "CreateMultipartUpload"
		case key != "" && sub == "uploadId":
			return "CompleteMultipartUpload"
		}
	case http.MethodDelete:
		switch {
		case key != "" && sub == "uploadId":
			return "AbortMultipartUpload"
		case key != "" && sub == "":
			return "DeleteObject"
		case key == "" && sub == "":
			return "DeleteBucket"
		}
	}
	if sub != "" {
		return r.Method + " ?" + sub
	}
	if key == "" {
		return r.Method + " bucket"
	}
	return r.Method + " object"
}
