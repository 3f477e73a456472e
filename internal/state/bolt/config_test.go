package bolt_test

import (
	"testing"

	"tilecache/internal/layer"
	"tilecache/internal/layer/configtest"
)

func TestConfigConformance(t *testing.T) {
	configtest.Run(t, func(t *testing.T) layer.ConfigStore { return newStore(t).(*adapters) })
}
