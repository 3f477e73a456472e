package dynamo

import (
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// The attribute codec of the item API (Table.Items), for the adapters
// over it (adminstore, schedulestore): the same encodings as this
// package's own items.

// Str is a string attribute value.
func Str(v string) types.AttributeValue { return str(v) }

// Num is a number attribute value.
func Num(v int64) types.AttributeValue { return num(v) }

// NumAttr reads number attribute name of item; ok is false when it is
// missing or not an integer.
func NumAttr(item Item, name string) (int64, bool) { return numAttr(item, name) }

// StrAttr reads string attribute name of item; ok is false when it is
// missing.
func StrAttr(item Item, name string) (string, bool) { return strAttr(item, name) }

// Nanos encodes a time as Unix nanoseconds, the zero time as 0.
func Nanos(t time.Time) int64 { return nanos(t) }

// FromNanos decodes Nanos (in UTC).
func FromNanos(n int64) time.Time { return fromNanos(n) }

// ReasonCodes lists the codes of a cancelled transaction's reasons.
func ReasonCodes(rs []types.CancellationReason) string { return reasonCodes(rs) }

// ReasonCode is the code of a cancelled transaction's reason ("" when
// none).
func ReasonCode(r types.CancellationReason) string { return code(r) }
