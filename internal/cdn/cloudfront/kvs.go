package cloudfront

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	kvs "github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore"
	"github.com/aws/aws-sdk-go-v2/service/cloudfrontkeyvaluestore/types"

	"tilecache/internal/cdn"
)

// KeyValueStore is a CloudFront KeyValueStore, read and written whole by
// a few keys (the edge path function's grid sets): an edgepath.KeyValues.
type KeyValueStore struct {
	client *kvs.Client
	arn    string
	log    *slog.Logger

	mu sync.Mutex
	// seen are the keys the last Read found, at version seenAt: Write
	// deletes the stale value of a key whose new value it cannot store.
	seen   map[string]bool
	seenAt string
}

// NewKeyValueStore returns the store of ARN arn with a client made from
// cfg; the SDK reads an endpoint of its own from
// AWS_ENDPOINT_URL_CLOUDFRONT_KEYVALUESTORE. It makes no calls.
func NewKeyValueStore(cfg aws.Config, arn string, optFns ...func(*kvs.Options)) *KeyValueStore {
	return &KeyValueStore{client: kvs.NewFromConfig(cfg, optFns...), arn: arn, log: slog.Default()}
}

// WithLog makes s log what it skips to log instead of slog's default
// logger, and returns s.
func (s *KeyValueStore) WithLog(log *slog.Logger) *KeyValueStore {
	s.log = log
	return s
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
	seen := make(map[string]bool, len(out))
	for k := range out {
		seen[k] = true
	}
	s.mu.Lock()
	s.seen, s.seenAt = seen, aws.ToString(d.ETag)
	s.mu.Unlock()
	return out, aws.ToString(d.ETag), nil
}

// Write puts and deletes keys, at most updateBatch per UpdateKeys, each
// conditional on the ETag the previous one returned. A key or value over
// the store's limits (cdn.EdgeKeyMax, cdn.EdgeValueMax), which CloudFront
// would refuse with every other key of its batch, is left out and logged;
// when the last Read at version found that key, its stale value is
// deleted, so that the edge refuses the grid set's paths instead of
// mapping them with levels that are no longer its.
func (s *KeyValueStore) Write(ctx context.Context, version string, put map[string]string, del []string) error {
	var keys []string
	del = slices.Clone(del)
	s.mu.Lock()
	for _, k := range slices.Sorted(maps.Keys(put)) {
		err := cdn.CheckEdgeEntry(k, put[k])
		if err == nil {
			keys = append(keys, k)
			continue
		}
		stale := s.seenAt == version && s.seen[k] && !slices.Contains(del, k)
		if stale {
			del = append(del, k)
		}
		s.log.Error("edge key-value store: entry left out", "kvs", s.arn, "key", k, "err", err, "stale_value_deleted", stale)
	}
	s.mu.Unlock()
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
