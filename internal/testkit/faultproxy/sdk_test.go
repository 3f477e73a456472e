package faultproxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dyntypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	"github.com/minio/minio-go/v7"
	miniocreds "github.com/minio/minio-go/v7/pkg/credentials"

	"tilecache/internal/testkit/faultproxy"
)

const (
	testKey    = "AKIDFAULTPROXY"
	testSecret = "secret"
	testRegion = "us-east-1"
)

var testCreds = credentials.NewStaticCredentialsProvider(testKey, testSecret, "")

// apiCode returns err's API error code and HTTP status.
func apiCode(err error) (string, int) {
	code, status := "", 0
	var api smithy.APIError
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

func isThrottle(err error) bool {
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

func isRetryable(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// checkSignature re-signs the request the upstream received with the
// client's credentials and signing time and compares the result with the
// Authorization header: equal only if the proxy kept everything the client
// signed, the Host header first.
func checkSignature(r *http.Request, body []byte, service string) error {
	auth := r.Header.Get("Authorization")
	_, signed, ok := strings.Cut(auth, "SignedHeaders=")
	if !ok {
		return errors.New("no SigV4 Authorization header")
	}
	signed, _, _ = strings.Cut(signed, ",")
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return err
	}
	req, err := http.NewRequest(r.Method, "http://"+r.Host+r.RequestURI, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.ContentLength = 0
	for h := range strings.SplitSeq(signed, ";") {
		switch h {
		case "host":
		case "content-length":
			req.ContentLength = r.ContentLength
		default:
			req.Header[http.CanonicalHeaderKey(h)] = r.Header.Values(h)
		}
	}
	sum := sha256.Sum256(body)
	creds, _ := testCreds.Retrieve(context.Background())
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), service, testRegion, when); err != nil {
		return err
	}
	if got := req.Header.Get("Authorization"); got != auth {
		return errors.New("signature mismatch: upstream computes " + got + ", client sent " + auth)
	}
	return nil
}

// jsonUpstream answers every request with 200 {} and records whether its
// signature verified.
func jsonUpstream(tb testing.TB, service string, sigErrs chan<- error) *upstream {
	return mustUpstream(tb, func(w http.ResponseWriter, r *http.Request, body []byte) {
		sigErrs <- checkSignature(r, body, service)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Write([]byte("{}"))
	})
}

// TestDynamoDBClient points a real DynamoDB client (no retries) at the
// proxy: the injected throttles must be classified as throttling by the
// SDK's retryer, server errors as retryable, and reads must pass with a
// signature the upstream can verify.
func TestDynamoDBClient(t *testing.T) {
	sigErrs := make(chan error, 10)
	up := jsonUpstream(t, "dynamodb", sigErrs)
	p := mustProxy(t, up.URL, faultproxy.DynamoDB, faultproxy.Config{Seed: 7, ThrottleRate: 1,
		ThrottleCodes: []string{"ProvisionedThroughputExceededException", "ThrottlingException"}})
	client := dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(p.URL()), Region: testRegion, Credentials: testCreds, Retryer: aws.NopRetryer{},
	})
	ctx := testContext(t, 20*time.Second)
	key := map[string]dyntypes.AttributeValue{"pk": &dyntypes.AttributeValueMemberS{Value: "tile"}}

	_, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("t"), Item: key})
	var pte *dyntypes.ProvisionedThroughputExceededException
	if code, status := apiCode(err); !errors.As(err, &pte) || !isThrottle(err) || status != 400 {
		t.Errorf("PutItem: %v (code %q, HTTP %d), want a ProvisionedThroughputExceededException the retryer counts as throttling",
			err, code, status)
	}
	_, err = client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("t"), Key: key})
	var te *dyntypes.ThrottlingException
	if code, _ := apiCode(err); !errors.As(err, &te) || !isThrottle(err) {
		t.Errorf("UpdateItem: %v (code %q), want a ThrottlingException the retryer counts as throttling", err, code)
	}

	if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: key}); err != nil {
		t.Fatalf("GetItem (a read, not throttled): %v", err)
	}
	if err := <-sigErrs; err != nil {
		t.Errorf("upstream signature check: %v", err)
	}

	srv := mustProxy(t, up.URL, faultproxy.DynamoDB, faultproxy.Config{ServerErrorRate: 1})
	client = dynamodb.New(dynamodb.Options{
		BaseEndpoint: aws.String(srv.URL()), Region: testRegion, Credentials: testCreds, Retryer: aws.NopRetryer{},
	})
	_, err = client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("t"), Key: key})
	if code, status := apiCode(err); code != "InternalFailure" || status != 500 || !isRetryable(err) || isThrottle(err) {
		t.Errorf("DeleteItem: %v (code %q, HTTP %d), want a retryable InternalFailure 500", err, code, status)
	}
	if n := len(up.requests()); n != 1 {
		t.Errorf("upstream saw %d requests, want 1 (the GetItem)", n)
	}
}

// TestSQSClient points a real SQS client (AWS JSON protocol, no retries)
// at the proxy.
func TestSQSClient(t *testing.T) {
	sigErrs := make(chan error, 10)
	up := jsonUpstream(t, "sqs", sigErrs)
	p := mustProxy(t, up.URL, faultproxy.SQS, faultproxy.Config{ThrottleRate: 1})
	client := sqs.New(sqs.Options{
		BaseEndpoint: aws.String(p.URL()), Region: testRegion, Credentials: testCreds, Retryer: aws.NopRetryer{},
	})
	ctx := testContext(t, 20*time.Second)
	queue := aws.String(p.URL() + "/000000000000/tiles")

	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: queue, MessageBody: aws.String("m")})
	var rt *sqstypes.RequestThrottled
	if code, status := apiCode(err); !errors.As(err, &rt) || !isThrottle(err) || code != "RequestThrottled" || status != 403 {
		t.Errorf("SendMessage: %v (code %q, HTTP %d), want RequestThrottled the retryer counts as throttling", err, code, status)
	}
	_, err = client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: queue,
		Entries: []sqstypes.DeleteMessageBatchRequestEntry{{Id: aws.String("1"), ReceiptHandle: aws.String("h")}}})
	if !isThrottle(err) {
		t.Errorf("DeleteMessageBatch: %v, want throttling", err)
	}

	if _, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: queue}); err != nil {
		t.Fatalf("ReceiveMessage (a read, not throttled): %v", err)
	}
	if err := <-sigErrs; err != nil {
		t.Errorf("upstream signature check: %v", err)
	}
	if r := up.requests()[0]; r.Header.Get("X-Amz-Target") != "AmazonSQS.ReceiveMessage" {
		t.Errorf("upstream X-Amz-Target = %q, want AmazonSQS.ReceiveMessage (the SDK speaks AWS JSON)", r.Header.Get("X-Amz-Target"))
	}

	srv := mustProxy(t, up.URL, faultproxy.SQS, faultproxy.Config{ServerErrorRate: 1})
	client = sqs.New(sqs.Options{
		BaseEndpoint: aws.String(srv.URL()), Region: testRegion, Credentials: testCreds, Retryer: aws.NopRetryer{},
	})
	_, err = client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: queue,
		ReceiptHandle: aws.String("h"), VisibilityTimeout: 30})
	var api smithy.APIError
	if code, status := apiCode(err); code != "InternalFailure" || status != 500 || !isRetryable(err) ||
		!errors.As(err, &api) || api.ErrorFault() != smithy.FaultServer {
		t.Errorf("ChangeMessageVisibility: %v (code %q, HTTP %d), want a retryable server-fault InternalFailure 500", err, code, status)
	}
}

// TestMinioClient points minio-go (one attempt per call) at the proxy: it
// must see SlowDown and InternalError as S3 error responses.
func TestMinioClient(t *testing.T) {
	up := mustUpstream(t, func(w http.ResponseWriter, r *http.Request, _ []byte) {
		w.Header().Set("ETag", `"d41d8cd98f00b204e9800998ecf8427e"`)
		w.Header().Set("Last-Modified", "Mon, 02 Jan 2006 15:04:05 GMT")
		w.Header().Set("Content-Type", "image/png")
		if r.Method == http.MethodGet {
			w.Write([]byte("png"))
		}
	})
	ctx := testContext(t, 20*time.Second)
	for _, tc := range []struct {
		cfg    faultproxy.Config
		code   string
		status int
	}{
		{faultproxy.Config{ThrottleRate: 1}, "SlowDown", 503},
		{faultproxy.Config{ServerErrorRate: 1}, "InternalError", 500},
	} {
		p := mustProxy(t, up.URL, faultproxy.S3, tc.cfg)
		mc, err := minio.New(hostOf(t, p.URL()), &minio.Options{
			Creds: miniocreds.NewStaticV4(testKey, testSecret, ""), Region: testRegion, MaxRetries: 1,
		})
		if err != nil {
			t.Fatalf("minio.New: %v", err)
		}
		start := time.Now()
		_, err = mc.PutObject(ctx, "bucket", "z/1/2.png", bytes.NewReader([]byte("png")), 3, minio.PutObjectOptions{})
		if er := minio.ToErrorResponse(err); er.Code != tc.code || er.StatusCode != tc.status {
			t.Errorf("PutObject: %v (code %q, HTTP %d), want %s %d", err, er.Code, er.StatusCode, tc.code, tc.status)
		}
		if n := p.Stats().ByOp["PutObject"].Requests; n != 1 {
			t.Errorf("proxy saw %d PutObject requests, want 1 (no retries); took %v", n, time.Since(start))
		}
		obj, err := mc.GetObject(ctx, "bucket", "z/1/2.png", minio.GetObjectOptions{})
		if err != nil {
			t.Fatalf("GetObject: %v", err)
		}
		var buf bytes.Buffer
		_, err = buf.ReadFrom(obj)
		obj.Close()
		if err != nil || buf.String() != "png" {
			t.Errorf("GetObject (a read, not throttled) = %q, %v; want png", buf.String(), err)
		}
	}
}
