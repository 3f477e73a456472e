package faultproxy

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Default throttle codes, one per service. Each is in the AWS SDK for Go
// v2's retry.DefaultThrottleErrorCodes, so its standard retryer backs off
// and retries them as throttling.
const (
	// S3ThrottleCode is S3's "reduce your request rate" error (HTTP 503).
	S3ThrottleCode = "SlowDown"
	// DynamoDBThrottleCode is DynamoDB's usual throttling error (HTTP 400).
	DynamoDBThrottleCode = "ProvisionedThroughputExceededException"
	// SQSThrottleCode is SQS's throttling error (HTTP 403), the one its
	// API model declares (com.amazonaws.sqs#RequestThrottled).
	SQSThrottleCode = "RequestThrottled"
)

// dynamoNamespaces gives the __type namespace DynamoDB uses for error codes
// outside its own model namespace.
var dynamoNamespaces = map[string]string{
	"ThrottlingException": "com.amazon.coral.availability",
	"InternalFailure":     "com.amazon.coral.service",
}

// messages are the texts AWS sends with the codes, where known.
var messages = map[string]string{
	"SlowDown":      "Please reduce your request rate.",
	"InternalError": "We encountered an internal error. Please try again.",
	"ProvisionedThroughputExceededException": "The level of configured provisioned throughput for the table was exceeded. " +
		"Consider increasing your provisioning level with the UpdateTable API.",
	"ThrottlingException": "Rate of requests exceeds the allowed throughput.",
	"RequestThrottled":    "Request is throttled.",
	"InternalFailure":     "The request processing has failed because of an unknown error, exception or failure.",
}

func message(code string) string {
	if m, ok := messages[code]; ok {
		return m
	}
	return "Injected by faultproxy: " + code + "."
}

// answer writes the throttle or server error fault as the service would.
func (p *Proxy) answer(w http.ResponseWriter, r *http.Request, op operation, fault Fault) {
	code, id := p.nextAnswer(fault)
	var (
		status int
		ctype  string
		body   []byte
	)
	h := w.Header()
	switch p.service {
	case S3:
		status = http.StatusServiceUnavailable
		if fault == ServerError {
			status = http.StatusInternalServerError
		}
		ctype, body = "application/xml", s3Error(code, r.URL.Path, id)
		h.Set("X-Amz-Request-Id", id)
		h.Set("X-Amz-Id-2", "faultproxy/"+id)
	case DynamoDB:
		status = http.StatusBadRequest
		if fault == ServerError {
			status = http.StatusInternalServerError
		}
		ns := "com.amazonaws.dynamodb.v20120810"
		if n, ok := dynamoNamespaces[code]; ok {
			ns = n
		}
		ctype, body = "application/x-amz-json-1.0", jsonError(ns+"#"+code, message(code))
		h.Set("X-Amzn-Requestid", id)
		h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	case SQS:
		status = http.StatusBadRequest
		faultType := "Sender"
		switch {
		case fault == ServerError:
			status, faultType = http.StatusInternalServerError, "Receiver"
		case code == SQSThrottleCode:
			status = http.StatusForbidden // as SQS's model declares it
		}
		h.Set("X-Amzn-Requestid", id)
		if op.JSON {
			ns := "com.amazonaws.sqs"
			if code == "InternalFailure" {
				ns = "com.amazon.coral.service"
			}
			ctype, body = "application/x-amz-json-1.0", jsonError(ns+"#"+code, message(code))
			// The SQS client is query-compatible: it takes the error code
			// from this header when present.
			h.Set("X-Amzn-Query-Error", code+";"+faultType)
		} else {
			ctype, body = "text/xml", sqsQueryError(faultType, code, id)
		}
	}
	writeAnswer(w, status, ctype, body)
}

func writeAnswer(w http.ResponseWriter, status int, ctype string, body []byte) {
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // nothing to do about a client that went away
}

// nextAnswer returns the error code and request id of the next injected
// answer of kind fault.
func (p *Proxy) nextAnswer(fault Fault) (code, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reqID++
	id = fmt.Sprintf("FAULTPROXY%010d", p.reqID)
	if fault == ServerError {
		if p.service == S3 {
			return "InternalError", id
		}
		return "InternalFailure", id
	}
	if n := len(p.cfg.ThrottleCodes); n > 0 {
		code = p.cfg.ThrottleCodes[p.throttle%n]
		p.throttle++
		return code, id
	}
	switch p.service {
	case S3:
		return S3ThrottleCode, id
	case DynamoDB:
		return DynamoDBThrottleCode, id
	}
	return SQSThrottleCode, id
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}

// s3Error is S3's REST error document.
func s3Error(code, resource, id string) []byte {
	return fmt.Appendf(nil, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>%s</RequestId><HostId>faultproxy/%s</HostId></Error>`,
		xmlText(code), xmlText(message(code)), xmlText(resource), id, id)
}

// jsonError is an AWS JSON protocol error document.
func jsonError(typ, msg string) []byte {
	b, err := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{typ, msg})
	if err != nil { // two strings always marshal
		panic(fmt.Sprintf("faultproxy: marshal error answer: %v", err))
	}
	return b
}

// sqsQueryError is SQS's query-protocol error document.
func sqsQueryError(faultType, code, id string) []byte {
	return fmt.Appendf(nil, `<?xml version="1.0"?>`+"\n"+
		`<ErrorResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/"><Error><Type>%s</Type><Code>%s</Code><Message>%s</Message><Detail/></Error><RequestId>%s</RequestId></ErrorResponse>`,
		faultType, xmlText(code), xmlText(message(code)), id)
}

// discard reads r to its end and reports how much it read.
func discard(r io.Reader) (int64, error) {
	return io.Copy(io.Discard, r)
}
