// The configuration managed at run time (layer.ConfigStore): two items in
// one partition, so that learning of a change is one small read.
//
//	pk=config  sk=version  version, wt          the version, and the token
//	                       of the save that wrote it
//	pk=config  sk=doc      version, doc, size   the document, gzip-compressed
//	                       (doc, binary), and its size uncompressed
//
// A save is one TransactWriteItems: a Put of the version item conditional
// on the version being the expected one (on its absence for 0) and a Put
// of the document item, so both change together or not at all.
//
// The document item must fit in one DynamoDB item (400 KB, names and
// values counted): a document whose compressed form exceeds
// MaxConfigCompressed is refused. Layer file YAML compresses about tenfold,
// so layer.MaxStoredConfig (4 MiB) of it fits. A save writes up to 400 KB
// transactionally: on AWS, about 800 write capacity units; ConfigVersion
// reads the small version item alone.

package dynamo

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/token"
)

// Config is the store of the configuration managed at run time
// (layer.ConfigStore) over a Table.
type Config struct{ *store }

var _ layer.ConfigStore = (*Config)(nil)

// MaxConfigCompressed is the largest compressed configuration document
// SaveConfig stores: DynamoDB's item limit (400 KB) less room for the
// document item's key and other attributes.
const MaxConfigCompressed = 390_000

// The configuration items' key and attributes (besides version and wt).
const (
	pkConfig        = "config"
	skConfigVersion = "version"
	skConfigDoc     = "doc"
	aConfigDoc      = "doc"  // the document, gzip-compressed
	aConfigSize     = "size" // the document's size uncompressed
)

// ConfigVersion implements layer.ConfigStore: one consistent GetItem of
// the version item.
func (s *Config) ConfigVersion(ctx context.Context) (int64, error) {
	e := newExpr()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:                &s.table,
		Key:                      s.key(pkConfig, skConfigVersion),
		ConsistentRead:           aws.Bool(true),
		ProjectionExpression:     aws.String(e.n(aVersion)),
		ExpressionAttributeNames: e.Names(),
	}, s.callOpts...)
	if err != nil {
		return 0, s.fail(ctx, err, "read configuration version")
	}
	if len(out.Item) == 0 {
		return 0, nil
	}
	v, ok := numAttr(out.Item, aVersion)
	if !ok {
		return 0, fmt.Errorf("read configuration version: the version item has no version")
	}
	return v, nil
}

// Config implements layer.ConfigStore: one consistent GetItem of the
// document item.
func (s *Config) Config(ctx context.Context) (layer.StoredConfig, error) {
	const what = "read configuration"
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            s.key(pkConfig, skConfigDoc),
		ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return layer.StoredConfig{}, s.fail(ctx, err, "%s", what)
	}
	if len(out.Item) == 0 {
		return layer.StoredConfig{}, nil
	}
	v, ok := numAttr(out.Item, aVersion)
	z, zok := out.Item[aConfigDoc].(*types.AttributeValueMemberB)
	if !ok || !zok {
		return layer.StoredConfig{}, fmt.Errorf("%s: the document item lacks its version or document", what)
	}
	size, _ := numAttr(out.Item, aConfigSize)
	doc, err := gunzip(z.Value, size)
	if err != nil {
		return layer.StoredConfig{}, fmt.Errorf("%s: version %d: %w", what, v, err)
	}
	return layer.StoredConfig{Version: v, Doc: doc}, nil
}

// SaveConfig implements layer.ConfigStore. The version item carries the
// save's token, so that a save retried by the SDK after its answer was
// lost, failing its condition, recognises its own write.
func (s *Config) SaveConfig(ctx context.Context, expect int64, doc []byte) (int64, error) {
	what := fmt.Sprintf("save configuration version %d", expect+1)
	if len(doc) > layer.MaxStoredConfig {
		return 0, apperr.New(apperr.Invalid, "Configuration of %d bytes exceeds the limit of %d bytes", len(doc), layer.MaxStoredConfig)
	}
	z, err := gzipped(doc)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if len(z) > MaxConfigCompressed {
		return 0, apperr.New(apperr.Invalid, "Configuration of %d bytes compresses to %d bytes, more than the %d bytes the task store keeps",
			len(doc), len(z), MaxConfigCompressed)
	}
	tok := token.New()
	e := newExpr()
	var cond string
	if expect == 0 {
		cond = "attribute_not_exists(" + e.n(attrPK) + ")"
	} else {
		cond = e.n(aVersion) + " = " + e.v(num(expect))
	}
	version := s.key(pkConfig, skConfigVersion)
	version[aVersion] = num(expect + 1)
	version[aWT] = str(tok)
	item := s.key(pkConfig, skConfigDoc)
	item[aVersion] = num(expect + 1)
	item[aConfigDoc] = &types.AttributeValueMemberB{Value: z}
	item[aConfigSize] = num(int64(len(doc)))
	reasons, err := s.transact(ctx, what, []types.TransactWriteItem{
		{Put: &types.Put{
			TableName:                           &s.table,
			Item:                                version,
			ConditionExpression:                 aws.String(cond),
			ExpressionAttributeNames:            e.Names(),
			ExpressionAttributeValues:           e.Values(),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		}},
		{Put: &types.Put{TableName: &s.table, Item: item}},
	})
	if err != nil {
		return 0, err
	}
	if reasons != nil {
		r := reasons[0]
		if code(r) != "ConditionalCheckFailed" {
			return 0, fmt.Errorf("%s: refused (%s)", what, reasonCodes(reasons))
		}
		if wt, _ := strAttr(r.Item, aWT); wt == tok {
			return expect + 1, nil // applied before its answer was lost
		}
		stored, _ := numAttr(r.Item, aVersion)
		return 0, apperr.New(apperr.Conflict, "Configuration is at version %d, not %d: it was saved meanwhile", stored, expect)
	}
	return expect + 1, nil
}

// gzipped compresses doc.
func gzipped(doc []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(doc); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// gunzip decompresses a stored document of size bytes (as recorded),
// reading no more than layer.MaxStoredConfig.
func gunzip(z []byte, size int64) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		return nil, fmt.Errorf("decompress document: %w", err)
	}
	var b bytes.Buffer
	b.Grow(int(min(max(size, 0), layer.MaxStoredConfig)))
	n, err := b.ReadFrom(io.LimitReader(r, layer.MaxStoredConfig+1))
	if err != nil {
		return nil, fmt.Errorf("decompress document: %w", err)
	}
	if n > layer.MaxStoredConfig {
		return nil, fmt.Errorf("decompress document: more than %d bytes", layer.MaxStoredConfig)
	}
	if n != size {
		return nil, fmt.Errorf("decompress document: %d bytes, %d recorded", n, size)
	}
	return b.Bytes(), nil
}
