package app

import "context"

// publishLayers is publish after a change of the named layers (nil: of
// any): the documents of their tile sets and the root documents are
// brought up to date (written, the CDN's copies invalidated), at a cost
// that grows with the changed layers rather than with every configured one.
func (p *Program) publishLayers(ctx context.Context, names []string) {
	if names == nil {
		p.publish(ctx)
		return
	}
	changed, err := p.Site.PublishLayers(ctx, names)
	if err != nil && ctx.Err() == nil {
		p.log.Error("publish the documents of the tile store", "layers", names, "err", err)
	}
	p.Purger.KeysChanged(changed...)
	if len(changed) > 0 {
		p.log.Info("documents of the tile store written", "keys", len(changed))
	}
}
