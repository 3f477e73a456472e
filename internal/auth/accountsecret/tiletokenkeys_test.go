package accountsecret_test

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"tilecache/internal/app"
	"tilecache/internal/app/backends"
	"tilecache/internal/app/backends/embedded"
	"tilecache/internal/app/tileorigin"
	"tilecache/internal/config"
	"tilecache/internal/tiletoken"
)

// TestLoadTileTokenKeysFromSecret: a program whose
// TILECACHE_TILE_TOKEN_KEYS_SECRET names a Secrets Manager secret holding
// "kid:secret,…" signs and checks tile tokens with those keys (the API,
// tile and cleaner functions' way), read at start as the accounts are; it
// must not be set beside TILECACHE_TILE_TOKEN_KEYS, and a missing secret
// or one that holds no keys stops the program from starting.
func TestLoadTileTokenKeysFromSecret(t *testing.T) {
	endpoint := moto(t)
	text := "k2:" + strings.Repeat("2", 43) + ",k1:" + strings.Repeat("1", 43)
	c := secretsmanager.NewFromConfig(awsConfig(), func(o *secretsmanager.Options) { o.BaseEndpoint = aws.String(endpoint) })
	out, err := c.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: aws.String("tilecache-tile-token-keys"), SecretString: aws.String(text + "\n")})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := c.CreateSecret(t.Context(), &secretsmanager.CreateSecretInput{Name: aws.String("tilecache-not-keys"), SecretString: aws.String("no keys here")})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for k, v := range map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED": "true"} {
		t.Setenv(k, v) // restored after the test
		if v == "" {
			os.Unsetenv(k)
		}
	}
	env := map[string]string{"TILECACHE_DATA": dir, "TILECACHE_TILE_TOKEN_KEYS_SECRET": aws.ToString(out.ARN), "AWS_ENDPOINT_URL_SECRETS_MANAGER": endpoint}
	cfg, err := config.Load(lookup(env))
	if err != nil {
		t.Fatal(err)
	}
	p, err := newTile(t.Context(), cfg)
	if err != nil {
		t.Fatalf("the tile origin with TILECACHE_TILE_TOKEN_KEYS_SECRET=%s: %v", aws.ToString(out.ARN), err)
	}
	defer p.Close()
	now := time.Now()
	for _, keys := range []string{text, "k1:" + strings.Repeat("1", 43)} { // the current key, and the previous one still accepted
		ring, err := tiletoken.ParseKeyring(keys)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := ring.Issue([]string{"topp:states"}, now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.TileKeys.Verify(tok, "topp:states", now); err != nil {
			t.Errorf("a token of the secret's keys %q is refused: %v", keys[:2], err)
		}
	}
	if tok, err := p.TileKeys.Issue([]string{"topp:states"}, now.Add(time.Hour)); err != nil || !strings.HasPrefix(tok, "v1.k2.") {
		t.Errorf("the program issues %q, %v; want a token of the secret's first key k2", tok, err)
	}
	loaded, err := app.LoadTileTokenKeys(t.Context(), cfg)
	if err != nil || loaded.TileTokenKeys != text {
		t.Errorf("LoadTileTokenKeys: %q, %v; want the secret's text %q", loaded.TileTokenKeys, err, text)
	}

	env["TILECACHE_TILE_TOKEN_KEYS"] = text
	if _, err := config.Load(lookup(env)); err == nil || !strings.Contains(err.Error(), "TILECACHE_TILE_TOKEN_KEYS_SECRET and TILECACHE_TILE_TOKEN_KEYS are both set") {
		t.Errorf("both set: %v, want an error naming both", err)
	}
	delete(env, "TILECACHE_TILE_TOKEN_KEYS")
	for arn, want := range map[string]string{
		strings.Replace(aws.ToString(out.ARN), "tilecache-tile-token-keys", "tilecache-gone", 1): "tilecache-gone",
		aws.ToString(bad.ARN): "tilecache-not-keys",
	} {
		env["TILECACHE_TILE_TOKEN_KEYS_SECRET"] = arn
		cfg, err := config.Load(lookup(env))
		if err != nil {
			t.Fatal(err)
		}
		_, err = newTile(t.Context(), cfg)
		if err == nil || !strings.Contains(err.Error(), "TILECACHE_TILE_TOKEN_KEYS_SECRET") || !strings.Contains(err.Error(), want) {
			t.Errorf("secret %s: %v, want an error naming the variable and %s", arn, err, want)
		} else if strings.Contains(err.Error(), "no keys here") {
			t.Errorf("secret %s: the error %q shows the secret's value", arn, err)
		}
	}
}

// newTile builds the tile function's program (the tile origin) on cfg's
// embedded backends.
func newTile(ctx context.Context, cfg config.Config) (*tileorigin.Origin, error) {
	return tileorigin.NewWith(ctx, tileorigin.Of(cfg), func(context.Context) (backends.Backends, error) { return embedded.Open(cfg.DataDir) },
		slog.New(slog.DiscardHandler))
}
