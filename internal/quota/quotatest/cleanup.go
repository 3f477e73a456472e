package quotatest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"tilecache/internal/layer"
	"tilecache/internal/quota"
	"tilecache/internal/tilestore/filestore"
)

type fixedConfig quota.Config

func (f fixedConfig) QuotaConfig(context.Context) (quota.Config, error) { return quota.Config(f), nil }

// unordered is a store that keeps no expiration order.
type unordered struct{ quota.UsageStore }

func (unordered) PagesInOrder(context.Context, string, string, string, int) ([]quota.Page, string, error) {
	return nil, "", quota.ErrUnordered
}

type noTasks struct{}

func (noTasks) ActiveLayers(context.Context, time.Time) (map[string]bool, error) { return nil, nil }

// expected returns the pages the clean-up deleted before stores kept the
// expiration order: every page of layers read, sorted by Order, deleted
// in that order while used is over limit.
func expected(t *testing.T, s quota.UsageStore, layers []string, policy string, used, limit int64) (map[string]bool, int64) {
	t.Helper()
	var all []quota.Page
	for _, l := range layers {
		ps, err := s.Pages(t.Context(), l)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, ps...)
	}
	quota.Order(all, policy)
	out := map[string]bool{}
	for _, p := range all {
		if used <= limit {
			break
		}
		out[p.Key.ID()] = true
		used -= p.Bytes
	}
	return out, used
}

// remaining returns the ids of the pages of layers.
func remaining(t *testing.T, s quota.UsageStore, layers []string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, l := range layers {
		ps, err := s.Pages(t.Context(), l)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps {
			out[p.Key.ID()] = true
		}
	}
	return out
}

// runCleanUp checks, on random page tables, that a clean-up (a layer
// quota, then the global quota over the other layers) deletes exactly the
// pages the in-memory sort of every page picks, for both policies.
func runCleanUp(t *testing.T, newStore func(t *testing.T) quota.UsageStore) {
	layers := []string{"a", "b", "c"}
	for _, policy := range []string{quota.PolicyLRU, quota.PolicyLFU} {
		for seed := uint64(3); seed <= 5; seed++ {
			// Seed 5: a store that keeps no order (ErrUnordered), where
			// the clean-up reads and sorts every page.
			name := fmt.Sprint(policy, seed)
			if seed == 5 {
				name += "Unordered"
			}
			t.Run(name, func(t *testing.T) {
				s := newStore(t)
				RandomTable(t, s, seed, layers, 20)
				if err := s.Rebase(t.Context(), 4096, nil); err != nil {
					t.Fatal(err)
				}
				ls, err := s.Layers(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				used := map[string]int64{}
				var global int64
				for _, l := range ls {
					used[l.Layer] = l.Bytes
					if l.Layer != "a" {
						global += l.Bytes
					}
				}
				before := remaining(t, s, layers)
				// Layer a keeps 60 % of its bytes with the other policy;
				// the others together, 70 %.
				other := quota.PolicyLFU
				if policy == quota.PolicyLFU {
					other = quota.PolicyLRU
				}
				limitA := used["a"] * 6 / 10
				limit := global*7/10 + used["a"]
				want, leftA := expected(t, s, []string{"a"}, other, used["a"], limitA)
				// The global quota holds for all layers: a's left after its
				// own clean-up, and the others' pages expire.
				wantGlobal, _ := expected(t, s, []string{"b", "c"}, policy, leftA+global, limit)
				maps.Copy(want, wantGlobal)

				cfg := quota.Default()
				cfg.Enabled, cfg.GlobalPolicy, cfg.GlobalQuota = true, policy, limit
				cfg.LayerQuotas = []quota.LayerQuota{{Layer: "a", Policy: other, Quota: limitA}}
				tiles, err := filestore.New(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				cat, err := layer.Parse([]byte("layers:\n  - name: other\n    gridSubsets: [{gridSet: EPSG:4326}]\n    formats: [image/png]\n    source: {type: testpattern}\n"), "test")
				if err != nil {
					t.Fatal(err)
				}
				var cs quota.UsageStore = s
				if seed == 5 {
					cs = unordered{s}
				}
				c := quota.NewCleaner(fixedConfig(cfg), cs, tiles, cat, noTasks{}, quota.CleanerOptions{},
					slog.New(slog.NewTextHandler(io.Discard, nil)))
				if err := c.Run(t.Context()); err != nil {
					t.Fatal(err)
				}
				after := remaining(t, s, layers)
				var deleted []string
				for id := range before {
					if !after[id] {
						deleted = append(deleted, id)
					}
				}
				slices.Sort(deleted)
				wantIDs := slices.Sorted(maps.Keys(want))
				if len(wantIDs) == 0 {
					t.Fatal("the table is within its quotas: nothing to compare")
				}
				if !slices.Equal(deleted, wantIDs) {
					t.Errorf("deleted\n  %v\nwant (every page sorted in memory)\n  %v", deleted, wantIDs)
				}
			})
		}
	}
}
