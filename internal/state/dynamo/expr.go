// The table's keys, attribute values and the expression builder every
// request uses: the DynamoDB plumbing shared by all the ports.

package dynamo

import (
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Attribute names and fixed key values.
const (
	attrPK       = "pk"
	attrSK       = "sk"
	attrGSIPK    = "gsi1pk"
	attrGSISK    = "gsi1sk"
	attrExpires  = "expires"
	indexActive  = "active"
	skSeq        = "seq"
	skPool       = "pool"
	skLanes      = "lanes#" // + layer name: the layer's RUNNING tasks
	skClaim      = "claim"
	skQuota      = "quota"
	skJob        = "job"
	skTask       = "task"
	jobCommitted = "committed"
	jobStaged    = "staged"
	jobAbandoned = "abandoned"
)

// Keys and attribute values.

// key is the primary key of item pk/sk, pk in the store's namespace.
func (s *store) key(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrPK: str(s.ns + pk), attrSK: str(sk)}
}

// metaKey is the key of a meta item: the sequence, the pool, a layer's
// running count, the disk-quota configuration.
func (s *store) metaKey(sk string) map[string]types.AttributeValue { return s.key("meta", sk) }

// jobKey is the key of job id's item.
func (s *store) jobKey(id int64) map[string]types.AttributeValue {
	return s.key("job#"+strconv.FormatInt(id, 10), skJob)
}

// taskKey is the key of task id's item.
func (s *store) taskKey(id int64) map[string]types.AttributeValue {
	return s.key("task#"+strconv.FormatInt(id, 10), skTask)
}

// activePK is the index partition of active and recently finished tasks.
func (s *store) activePK() string { return s.ns + indexActive }

// str is a string attribute value.
func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// num is a number attribute value.
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}

// numAttr reads number attribute name of item; ok is false when it is
// missing or not an integer.
func numAttr(item map[string]types.AttributeValue, name string) (int64, bool) {
	n, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	return v, err == nil
}

// strAttr reads string attribute name of item; ok is false when it is
// missing.
func strAttr(item map[string]types.AttributeValue, name string) (string, bool) {
	v, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", false
	}
	return v.Value, true
}

// expr collects the placeholder names and values of one request's
// expressions; DynamoDB refuses unused ones, so each request has its own.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

// newExpr returns an empty expression for one request.
func newExpr() *expr {
	return &expr{names: map[string]string{}, values: map[string]types.AttributeValue{}}
}

// n returns the placeholder of attribute name a (every name is a
// placeholder, so reserved words never matter).
func (e *expr) n(a string) string {
	e.names["#"+a] = a
	return "#" + a
}

// v returns a placeholder for value av.
func (e *expr) v(av types.AttributeValue) string {
	k := ":v" + strconv.Itoa(len(e.values))
	e.values[k] = av
	return k
}

// Names returns the name placeholders, nil when there are none (the SDK
// refuses an empty map).
func (e *expr) Names() map[string]string {
	if len(e.names) == 0 {
		return nil
	}
	return e.names
}

// Values returns the value placeholders, nil when there are none.
func (e *expr) Values() map[string]types.AttributeValue {
	if len(e.values) == 0 {
		return nil
	}
	return e.values
}
