package schedulestore

import (
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/state/dynamo"
)

// str is a string attribute value.
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// num is a number attribute value.
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// numAttr reads number attribute name of item; ok is false when it is
// missing or not an integer.
func numAttr(item dynamo.Item, name string) (int64, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	return v, err == nil
}

// strAttr reads string attribute name of item; ok is false when it is
// missing.
func strAttr(item dynamo.Item, name string) (string, bool) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return v.Value, true
}

// nanos encodes a time as Unix nanoseconds, the zero time as 0.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// fromNanos decodes nanos (in UTC).
func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// code is a transaction's cancellation reason's code.
func code(r types.CancellationReason) string {
	if r.Code == nil {
		return ""
	}
	return *r.Code
}

// reasonCodes lists the codes of rs.
func reasonCodes(rs []types.CancellationReason) string {
	codes := make([]string, len(rs))
	for i, r := range rs {
		codes[i] = code(r)
	}
	return strings.Join(codes, ", ")
}
