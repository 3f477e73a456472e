package core

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/auth/accountsecret"
	"tilecache/internal/awsconf"
	"tilecache/internal/config"
	"tilecache/internal/tiletoken"
)

// AWSRetry is the retry policy of every AWS client: a's attempts and
// budget, awsconf's backoff.
func AWSRetry(a config.AWS) awsconf.Retry {
	return awsconf.Retry{MaxAttempts: a.AWSMaxAttempts, Budget: a.AWSRetryBudget}
}

// DynamoClient returns the DynamoDB client of awsCfg, at the endpoint a
// names (awsconf.ServiceEndpoint).
func DynamoClient(awsCfg aws.Config, a config.AWS) *dynamodb.Client {
	return dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.DisableValidateResponseChecksum = true
		if e := awsconf.ServiceEndpoint(a.Env, "DYNAMODB"); e != nil {
			o.BaseEndpoint = e
		}
	})
}

// ReadSecret returns the text kept at arn, an SSM parameter or a Secrets
// Manager secret (see accountsecret), read with a's AWS configuration.
func ReadSecret(ctx context.Context, a config.AWS, arn string) (string, error) {
	awsCfg, err := awsconf.Load(ctx, a.Env, awsconf.WithRetry(AWSRetry(a)))
	if err != nil {
		return "", err
	}
	return accountsecret.Read(ctx, awsCfg, a.Env, arn)
}

// LoadTileTokenKeys returns the tile token keys: those read from the SSM
// parameter or Secrets Manager secret TILECACHE_TILE_TOKEN_KEYS_SECRET
// names (secret), if it names one, checked; else keys as they are
// (TILECACHE_TILE_TOKEN_KEYS, checked when read).
func LoadTileTokenKeys(ctx context.Context, a config.AWS, keys, secret string) (string, error) {
	if secret == "" {
		return keys, nil
	}
	text, err := ReadSecret(ctx, a, secret)
	if err != nil {
		return "", fmt.Errorf("load tile token keys (TILECACHE_TILE_TOKEN_KEYS_SECRET): %w", err)
	}
	text = strings.TrimSpace(text)
	if _, err := tiletoken.ParseKeyring(text); err != nil {
		return "", fmt.Errorf("load tile token keys (TILECACHE_TILE_TOKEN_KEYS_SECRET %s): %w", secret, err)
	}
	return text, nil
}
