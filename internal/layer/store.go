package layer

import "context"

// StoredConfig is the configuration managed at run time: the layers and
// grid sets created or changed through the REST interface, as one layer
// file document (YAML, the layer file's schema), and its version. One
// document keeps a change of several entries (a grid set and the layer
// that uses it, say) one atomic step, and lets a process learn that
// anything changed from one small read (ConfigStore.ConfigVersion).
type StoredConfig struct {
	// Version counts the saves: 0 when nothing was ever stored, then
	// 1, 2, … .
	Version int64
	// Doc is the layer file document; empty when Version is 0.
	Doc []byte
}

// MaxStoredConfig is the largest document a ConfigStore must keep: 4 MiB
// of YAML, about 8,000 layers of a source, two grid subsets and a
// parameter filter. (The DynamoDB adapter compresses it into one item,
// whose limit is 400 KB.)
const MaxStoredConfig = 4 << 20

// ConfigStore keeps the configuration managed at run time (in the task
// store: a bbolt bucket, DynamoDB items). Implementations must pass
// configtest.Run.
type ConfigStore interface {
	// Config returns the stored configuration, with Version 0 and no Doc
	// when nothing was ever saved.
	Config(ctx context.Context) (StoredConfig, error)
	// ConfigVersion returns the stored configuration's version alone: the
	// read every process makes to learn of a change, so it must be cheap
	// (one small item).
	ConfigVersion(ctx context.Context) (int64, error)
	// SaveConfig stores doc as version expect+1 if the stored version is
	// expect, and returns the new version; an apperr.Conflict error when
	// the stored version differs (another writer saved first), and
	// apperr.Invalid when doc is larger than the store can keep. Nothing
	// is stored on error.
	SaveConfig(ctx context.Context, expect int64, doc []byte) (int64, error)
}
