package core

import (
	"context"
	"log/slog"

	"tilecache/internal/config"
	"tilecache/internal/layer"
)

// OpenRegistry reads the layer file l names and opens the layer registry
// over it and the configuration stored in st.
func OpenRegistry(ctx context.Context, l config.Layers, st layer.ConfigStore, log *slog.Logger) (*layer.Registry, error) {
	file, fileName, err := layer.ReadFile(l.LayersFile)
	if err != nil {
		return nil, err
	}
	return layer.OpenRegistry(ctx, file, fileName, st, l.LayersRefresh, log)
}

// RefreshLayers reads the stored layer configuration's version when it
// is due (Registry.Refresh); a failure is logged and the catalogue kept.
func RefreshLayers(ctx context.Context, reg *layer.Registry, log *slog.Logger) {
	if _, err := reg.Refresh(ctx); err != nil && ctx.Err() == nil {
		log.Error("refresh the layer configuration", "err", err)
	}
}
