package bolt

import (
	"context"
	"encoding/json"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/quota"
)

var keyQuotaConfig = []byte("config")

// QuotaConfig returns the stored disk-quota configuration, or the default.
func (s *Usage) QuotaConfig(ctx context.Context) (quota.Config, error) {
	cfg := quota.Default()
	err := s.view(ctx, "read disk quota configuration", func(tx *bbolt.Tx) error {
		if v := tx.Bucket(bucketQuota).Get(keyQuotaConfig); v != nil {
			return json.Unmarshal(v, &cfg)
		}
		return nil
	})
	return cfg, err
}

// UpdateQuotaConfig replaces the configuration with fn(current) in one
// transaction; an error from fn changes nothing.
func (s *Usage) UpdateQuotaConfig(ctx context.Context, fn func(quota.Config) (quota.Config, error)) (quota.Config, error) {
	var next quota.Config
	err := s.update(ctx, "update disk quota configuration", func(tx *bbolt.Tx) error {
		cur := quota.Default()
		b := tx.Bucket(bucketQuota)
		if v := b.Get(keyQuotaConfig); v != nil {
			if err := json.Unmarshal(v, &cur); err != nil {
				return fmt.Errorf("decode stored configuration: %w", err)
			}
		}
		var err error
		if next, err = fn(cur); err != nil {
			return err
		}
		v, err := json.Marshal(next)
		if err != nil {
			return fmt.Errorf("encode configuration: %w", err)
		}
		return b.Put(keyQuotaConfig, v)
	})
	return next, err
}
