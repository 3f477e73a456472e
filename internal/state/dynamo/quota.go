package dynamo

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/apperr"
	"tilecache/internal/quota"
)

// quotaAttempts bounds UpdateQuotaConfig's optimistic retries. A try fails
// only when another update committed since its read, so with up to
// quotaAttempts concurrent updaters every one of them succeeds.
const quotaAttempts = 10

// readQuota returns the stored configuration (the default when there is
// none) and its version (0 when there is none).
func (s *Usage) readQuota(ctx context.Context, what string) (quota.Config, int64, error) {
	cfg := quota.Default()
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      &s.table,
		Key:            s.metaKey(skQuota),
		ConsistentRead: aws.Bool(true),
	}, s.callOpts...)
	if err != nil {
		return cfg, 0, s.fail(ctx, err, "%s", what)
	}
	data, ok := strAttr(out.Item, aData)
	if !ok {
		return cfg, 0, nil
	}
	if err := json.Unmarshal([]byte(data), &cfg); err != nil {
		return cfg, 0, fmt.Errorf("%s: decode stored configuration: %w", what, err)
	}
	version, _ := numAttr(out.Item, aVersion)
	return cfg, version, nil
}

// QuotaConfig returns the stored disk-quota configuration, or the default.
func (s *Usage) QuotaConfig(ctx context.Context) (quota.Config, error) {
	cfg, _, err := s.readQuota(ctx, "read disk quota configuration")
	return cfg, err
}

// UpdateQuotaConfig replaces the configuration with fn(current), atomically:
// the write is conditional on the version read, and is retried from a fresh
// read when another update won (so fn may run more than once and must not
// have side effects). An error from fn is returned as is and changes
// nothing; after quotaAttempts lost races the error is apperr.Conflict.
func (s *Usage) UpdateQuotaConfig(ctx context.Context, fn func(quota.Config) (quota.Config, error)) (quota.Config, error) {
	const what = "update disk quota configuration"
	for attempt := 0; attempt < quotaAttempts; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return quota.Config{}, fmt.Errorf("%s: %w", what, err)
			}
		}
		cur, version, err := s.readQuota(ctx, what)
		if err != nil {
			return quota.Config{}, err
		}
		next, err := fn(cur)
		if err != nil {
			return quota.Config{}, err
		}
		data, err := json.Marshal(next)
		if err != nil {
			return quota.Config{}, fmt.Errorf("%s: encode configuration: %w", what, err)
		}
		item := s.metaKey(skQuota)
		item[aData] = str(string(data))
		item[aVersion] = num(version + 1)
		e := newExpr()
		var cond string
		if version > 0 {
			cond = e.n(aVersion) + " = " + e.v(num(version))
		} else {
			cond = "attribute_not_exists(" + e.n(attrPK) + ")"
		}
		s.wrote("UpdateQuotaConfig", 1)
		_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                 &s.table,
			Item:                      item,
			ConditionExpression:       aws.String(cond),
			ExpressionAttributeNames:  e.Names(),
			ExpressionAttributeValues: e.Values(),
		}, s.callOpts...)
		if err == nil {
			return next, nil
		}
		if !isConditionFailed(err) {
			return quota.Config{}, s.fail(ctx, err, "%s", what)
		}
	}
	return quota.Config{}, apperr.New(apperr.Conflict, "%s: %d concurrent updates won, try again", what, quotaAttempts)
}
