package app

import (
	"encoding/json"
	"slices"
	"testing"
)

func TestRecountRequest(t *testing.T) {
	tests := []struct {
		detail string
		layers []string
		ok     bool
	}{
		{``, nil, false},
		{`{}`, nil, false},
		{`{"recount":false}`, nil, false},
		{`{"recount":true}`, nil, true},
		{`{"recount":["a","b:c"]}`, []string{"a", "b:c"}, true},
		{`{"recount":[]}`, nil, false},
		{`{"recount":"yes"}`, nil, false},
		{`not json`, nil, false},
	}
	for _, tt := range tests {
		layers, ok := recountRequest(json.RawMessage(tt.detail))
		if ok != tt.ok || !slices.Equal(layers, tt.layers) {
			t.Errorf("recountRequest(%s): got %v, %v; want %v, %v", tt.detail, layers, ok, tt.layers, tt.ok)
		}
	}
}
