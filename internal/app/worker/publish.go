package worker

import (
	"context"

	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"

	"tilecache/internal/app/core"
	"tilecache/internal/awsconf"
	"tilecache/internal/cdn"
	"tilecache/internal/cdn/cloudfront"
	"tilecache/internal/config"
)

// publishLayers is publish after a change of the named layers (nil: of
// any): the documents of their tile sets and the root documents are
// brought up to date (written, the CDN's copies invalidated), at a cost
// that grows with the changed layers rather than with every configured one.
func (p *Program) publishLayers(ctx context.Context, names []string) {
	if names == nil {
		p.Publish(ctx)
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

// Invalidator returns the CDN port's adapter: CloudFront when a
// distribution is configured (endpoint and credentials from the SDK's
// variables in cfg, e.g. AWS_ENDPOINT_URL_CLOUDFRONT), else cdn.Nop.
func Invalidator(ctx context.Context, distribution string, a config.AWS) (cdn.Invalidator, error) {
	if distribution == "" {
		return cdn.Nop{}, nil
	}
	awsCfg, err := awsconf.Load(ctx, a.Env, awsconf.WithRetry(core.AWSRetry(a)))
	if err != nil {
		return nil, err
	}
	return cloudfront.NewFromConfig(awsCfg, distribution, func(o *cf.Options) {
		if e := awsconf.ServiceEndpoint(a.Env, "CLOUDFRONT"); e != nil {
			o.BaseEndpoint = e
		}
	}), nil
}
