package cloudfront

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	kvs "github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore/types"
)

// KeyValueStore is a CloudFront KeyValueStore, read and written whole by
// a few keys (the edge path function's grid sets): an edgepath.KeyValues.
type KeyValueStore struct {
	client *kvs.Client
	arn    string
}

// NewKeyValueStore returns the store of ARN arn with a client made from
// cfg; the SDK reads an endpoint of its own from
// AWS_ENDPOINT_URL_CLOUDFRONT_KEYVALUESTORE. It makes no calls.
func NewKeyValueStore(cfg aws.Config, arn string, optFns ...func(*kvs.Options)) *KeyValueStore {
	return &KeyValueStore{client: kvs.NewFromConfig(cfg, optFns...), arn: arn}
}

// updateBatch is the most keys one UpdateKeys changes here (CloudFront
// takes 50 at most).
const updateBatch = 50

// Read returns every key and value and the store's ETag.
func (s *KeyValueStore) Read(ctx context.Context) (map[string]string, string, error) {
	d, err := s.client.DescribeKeyValueStore(ctx, &kvs.DescribeKeyValueStoreInput{KvsARN: &s.arn})
	if err != nil {
		return nil, "", fmt.Errorf("describe key-value store %s: %w", s.arn, err)
	}
	out := map[string]string{}
	p := kvs.NewListKeysPaginator(s.client, &kvs.ListKeysInput{KvsARN: &s.arn})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, "", fmt.Errorf("list keys of %s: %w", s.arn, err)
		}
		for _, it := range page.Items {
			out[aws.ToString(it.Key)] = aws.ToString(it.Value)
		}
	}
	return out, aws.ToString(d.ETag), nil
}

// Write puts and deletes keys, at most updateBatch per UpdateKeys, each
// conditional on the ETag the previous one returned.
func (s *KeyValueStore) Write(ctx context.Context, version string, put map[string]string, del []string) error {
	keys := slices.Sorted(maps.Keys(put))
	for len(keys) > 0 || len(del) > 0 {
		in := &kvs.UpdateKeysInput{KvsARN: &s.arn, IfMatch: aws.String(version)}
		for len(keys) > 0 && len(in.Puts) < updateBatch {
			in.Puts = append(in.Puts, types.PutKeyRequestListItem{Key: aws.String(keys[0]), Value: aws.String(put[keys[0]])})
			keys = keys[1:]
		}
		for len(del) > 0 && len(in.Puts)+len(in.Deletes) < updateBatch {
			in.Deletes = append(in.Deletes, types.DeleteKeyRequestListItem{Key: aws.String(del[0])})
			del = del[1:]
		}
		out, err := s.client.UpdateKeys(ctx, in)
		if err != nil {
			return fmt.Errorf("update keys of %s: %w", s.arn, err)
		}
		version = aws.ToString(out.ETag)
	}
	return nil
}
