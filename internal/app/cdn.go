package app

import (
	"context"

	cf "github.com/aws/aws-sdk-go-v2/service/cloudfront"

	"tilecache/internal/app/core"
	"tilecache/internal/awsconf"
	"tilecache/internal/cdn"
	"tilecache/internal/cdn/cloudfront"
	"tilecache/internal/config"
)

// Invalidator returns the CDN port's adapter for cfg: CloudFront when a
// distribution is configured (endpoint and credentials from the SDK's
// variables in cfg, e.g. AWS_ENDPOINT_URL_CLOUDFRONT), else cdn.Nop.
func Invalidator(ctx context.Context, cfg config.Config) (cdn.Invalidator, error) {
	if cfg.CDNDistribution == "" {
		return cdn.Nop{}, nil
	}
	awsCfg, err := awsconf.Load(ctx, cfg.AWS.Env, awsconf.WithRetry(core.AWSRetry(cfg.AWS)))
	if err != nil {
		return nil, err
	}
	return cloudfront.NewFromConfig(awsCfg, cfg.CDNDistribution, func(o *cf.Options) {
		if e := awsconf.ServiceEndpoint(cfg.AWS.Env, "CLOUDFRONT"); e != nil {
			o.BaseEndpoint = e
		}
	}), nil
}
