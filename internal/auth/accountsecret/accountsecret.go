// Package accountsecret reads the administrator accounts (the accounts-file
// format, see auth.Parse) from an SSM parameter (SecureString or String) or
// a Secrets Manager secret, once, when a program starts: on Lambda the
// account hashes then stay out of the function's environment, which anyone
// allowed lambda:GetFunctionConfiguration can read.
//
// The place is named by its ARN (TILECACHE_ACCOUNTS_SECRET):
//
//	arn:aws:ssm:eu-west-1:123456789012:parameter/tilecache/accounts
//	arn:aws:secretsmanager:eu-west-1:123456789012:secret:tilecache-accounts-AbCdEf
//
// A secret must hold a SecretString (not SecretBinary). The clients connect
// where AWS_ENDPOINT_URL_SSM or AWS_ENDPOINT_URL_SECRETS_MANAGER (else
// AWS_ENDPOINT_URL) say, as the other clients do (awsconf.ServiceEndpoint).
package accountsecret

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"tilecache/internal/awsconf"
)

// Place is where the accounts are kept.
type Place struct {
	ARN string
	// Service is "ssm" or "secretsmanager".
	Service string
}

// ParseARN checks that s is the ARN of an SSM parameter or of a Secrets
// Manager secret.
func ParseARN(s string) (Place, error) {
	a, err := arn.Parse(strings.TrimSpace(s))
	if err != nil {
		return Place{}, fmt.Errorf("%q is not an ARN (want arn:aws:ssm:REGION:ACCOUNT:parameter/NAME or arn:aws:secretsmanager:REGION:ACCOUNT:secret:NAME): %w", s, err)
	}
	switch {
	case a.Service == "ssm" && strings.HasPrefix(a.Resource, "parameter/") && len(a.Resource) > len("parameter/"):
	case a.Service == "secretsmanager" && strings.HasPrefix(a.Resource, "secret:") && len(a.Resource) > len("secret:"):
	default:
		return Place{}, fmt.Errorf("%q is neither an SSM parameter (arn:…:ssm:…:parameter/NAME) nor a Secrets Manager secret (arn:…:secretsmanager:…:secret:NAME)", s)
	}
	return Place{ARN: a.String(), Service: a.Service}, nil
}

// parameterGetter and secretGetter are the one call each client makes.
type (
	parameterGetter interface {
		GetParameter(ctx context.Context, in *ssm.GetParameterInput, opts ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	}
	secretGetter interface {
		GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, opts ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
	}
)

// Read returns the text kept at the ARN s, with clients made from cfg at
// the endpoints lookup names (the SDK's variables, as awsconf reads them).
func Read(ctx context.Context, cfg aws.Config, lookup func(string) (string, bool), s string) (string, error) {
	p, err := ParseARN(s)
	if err != nil {
		return "", err
	}
	if p.Service == "ssm" {
		return readParameter(ctx, ssm.NewFromConfig(cfg, func(o *ssm.Options) {
			if e := awsconf.ServiceEndpoint(lookup, "SSM"); e != nil {
				o.BaseEndpoint = e
			}
		}), p.ARN)
	}
	return readSecret(ctx, secretsmanager.NewFromConfig(cfg, func(o *secretsmanager.Options) {
		if e := awsconf.ServiceEndpoint(lookup, "SECRETS_MANAGER"); e != nil {
			o.BaseEndpoint = e
		}
	}), p.ARN)
}

func readParameter(ctx context.Context, c parameterGetter, name string) (string, error) {
	out, err := c.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
	if err != nil {
		return "", fmt.Errorf("read SSM parameter %s: %w", name, err)
	}
	if out.Parameter == nil || out.Parameter.Value == nil {
		return "", fmt.Errorf("read SSM parameter %s: no value", name)
	}
	return *out.Parameter.Value, nil
}

func readSecret(ctx context.Context, c secretGetter, id string) (string, error) {
	out, err := c.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", id, err)
	}
	if out.SecretString == nil {
		return "", errors.New("read secret " + id + ": it holds no SecretString (a binary secret is not read)")
	}
	return *out.SecretString, nil
}
