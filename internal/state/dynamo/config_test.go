package dynamo

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"tilecache/internal/apperr"
	"tilecache/internal/layer"
	"tilecache/internal/layer/configtest"
	"tilecache/internal/state/dynamo/dynamotest"
)

// TestConfigConformance runs the configuration suite with every store in a
// namespace of one table.
func TestConfigConformance(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	configtest.Run(t, func(t *testing.T) layer.ConfigStore { return sh.store(t) })
}

// TestConfigItems checks what the suite cannot: a document that does not
// compress enough is refused, namespaces keep configurations apart, and a
// save whose answer was lost is not taken for a conflict.
func TestConfigItems(t *testing.T) {
	dynamotest.Client(t)
	sh := newShared(t)
	ctx := t.Context()
	s := sh.store(t)

	// 1 MiB of random bytes compresses to more than an item holds.
	noise := make([]byte, 1<<20)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	_, err := s.SaveConfig(ctx, 0, noise)
	wantKind(t, err, apperr.Invalid)
	if msg := apperr.Message(err); !strings.Contains(msg, "1048576 bytes") || !strings.Contains(msg, "390000") {
		t.Errorf("refusal %q names neither the size nor the limit", msg)
	}
	if v, err := s.ConfigVersion(ctx); err != nil || v != 0 {
		t.Fatalf("after the refusal: version %d, %v; want 0", v, err)
	}

	doc := []byte("layers: []\n")
	if v, err := s.SaveConfig(ctx, 0, doc); err != nil || v != 1 {
		t.Fatalf("SaveConfig: %d, %v", v, err)
	}
	other := sh.store(t)
	if c, err := other.Config(ctx); err != nil || c.Version != 0 || len(c.Doc) != 0 {
		t.Fatalf("another namespace sees version %d, %q, %v; want nothing", c.Version, c.Doc, err)
	}
	if v, err := other.SaveConfig(ctx, 0, []byte("gridSets: []\n")); err != nil || v != 1 {
		t.Fatalf("SaveConfig in another namespace: %d, %v; want 1", v, err)
	}
	if c, err := s.Config(ctx); err != nil || c.Version != 1 || !bytes.Equal(c.Doc, doc) {
		t.Fatalf("after a save in another namespace: version %d, %q, %v; want 1, %q", c.Version, c.Doc, err, doc)
	}

	c, loser := dynamotest.LosingClient(t)
	lost := all(New(c, sh.table, WithNamespace(s.ns)))
	// Without the request token that makes DynamoDB answer the SDK's retry
	// as it answered the first attempt, the retry fails its condition.
	lost.callOpts = append(lost.callOpts, func(o *dynamodb.Options) { o.IdempotencyTokenProvider = nil })
	loser.Lose("TransactWriteItems", 1)
	if v, err := lost.SaveConfig(ctx, 1, []byte("layers: [a]\n")); err != nil || v != 2 {
		t.Fatalf("SaveConfig with its answer lost: %d, %v; want version 2", v, err)
	}
	n := len(loser.Lost())
	if n != 1 {
		t.Fatalf("lost %d answers, want 1: the test did not inject what it says", n)
	}
	if c, err := s.Config(ctx); err != nil || c.Version != 2 || string(c.Doc) != "layers: [a]\n" {
		t.Fatalf("after the lost answer: version %d, %q, %v; want 2", c.Version, c.Doc, err)
	}
}
