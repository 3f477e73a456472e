package bolt

import (
	"bytes"
	"context"

	bbolt "go.etcd.io/bbolt"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
)

// The configuration managed at run time is two keys of its bucket: version
// (8 bytes, big-endian; absent before the first save) and doc. A save is
// one transaction, so its compare-and-set of the version is atomic.

// Config is the store of the configuration managed at run time
// (layer.ConfigStore) in a DB.
type Config struct{ *store }

var _ layer.ConfigStore = (*Config)(nil)

var (
	keyConfigVersion = []byte("version")
	keyConfigDoc     = []byte("doc")
)

func configVersion(tx *bbolt.Tx) int64 {
	v := tx.Bucket(bucketConfig).Get(keyConfigVersion)
	if v == nil {
		return 0
	}
	return btoi(v)
}

// Config implements layer.ConfigStore.
func (s *Config) Config(ctx context.Context) (layer.StoredConfig, error) {
	var c layer.StoredConfig
	err := s.view(ctx, "read configuration", func(tx *bbolt.Tx) error {
		c.Version = configVersion(tx)
		if c.Version > 0 {
			// The value lives only as long as the transaction.
			c.Doc = bytes.Clone(tx.Bucket(bucketConfig).Get(keyConfigDoc))
		}
		return nil
	})
	return c, err
}

// ConfigVersion implements layer.ConfigStore.
func (s *Config) ConfigVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.view(ctx, "read configuration version", func(tx *bbolt.Tx) error {
		v = configVersion(tx)
		return nil
	})
	return v, err
}

// SaveConfig implements layer.ConfigStore.
func (s *Config) SaveConfig(ctx context.Context, expect int64, doc []byte) (int64, error) {
	if len(doc) > layer.MaxStoredConfig {
		return 0, apperr.New(apperr.Invalid, "Configuration of %d bytes exceeds the limit of %d bytes", len(doc), layer.MaxStoredConfig)
	}
	err := s.update(ctx, "save configuration", func(tx *bbolt.Tx) error {
		if v := configVersion(tx); v != expect {
			return apperr.New(apperr.Conflict, "Configuration is at version %d, not %d: it was saved meanwhile", v, expect)
		}
		b := tx.Bucket(bucketConfig)
		if err := b.Put(keyConfigVersion, itob(expect+1)); err != nil {
			return err
		}
		return b.Put(keyConfigDoc, doc)
	})
	if err != nil {
		return 0, err
	}
	return expect + 1, nil
}
