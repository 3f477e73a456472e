package functions_test

import (
	"slices"
	"strings"
	"testing"

	"tilecache/internal/testkit/lambdatest"
)

// The tile function answers anyone through the CDN (render on miss), so
// its role reaches only what a render needs: tiles in the bucket, and the
// task table's items by partition key. TestPoliciesMatchRecordedCalls
// holds the role to the calls the tile program makes against the local
// stack (each DynamoDB call with its item's partition key);
// TestTemplateTileWritesLeadingKeys to those of renders the recording run
// does not reach. These tests check what the role must refuse.

// tileRoleWorlds are the deployments with the CDN (the tile function
// exists only with it), without and with a key prefix.
func tileRoleWorlds(t *testing.T) map[string]*world {
	tp := loadTemplate(t)
	return map[string]*world{
		"":      cdnWorld(tp, map[string]string{"EnableCdn": "true"}),
		"cache": cdnWorld(tp, map[string]string{"EnableCdn": "true", "KeyPrefix": "cache"}),
	}
}

// TestTemplateTileRoleWritesTilesOnly: the tile function writes and
// deletes tiles ({layer}/{gridSet}/{format}/{parameters}/{z}/{x}/{y}.{ext}
// under the key prefix), never a root document, an OGC API document, a
// tile set's documents, an object of the service's own (_tilecache/) or
// anything outside the key prefix; it still reads any object under the
// prefix (the requested one, parameters objects) but the service's own,
// which the function answers 404 without reading.
func TestTemplateTileRoleWritesTilesOnly(t *testing.T) {
	tiles := []string{
		"demo:world/EPSG:4326/png/default/2/5/2.png",
		"od:test/WebMercatorQuad/pbf/0123456789abcdef0123456789abcdef01234567/14/8192/5461.pbf",
		"topp:states/EPSG:900913/jpeg/default/0/0/0.jpeg",
	}
	documents := []string{
		"index.json", "index.html", "tms.xml", "WMTSCapabilities.xml", "ogcapi.json",
		"ogcapi/collections.json", "ogcapi/conformance.json", "ogcapi/tileMatrixSets/WebMercatorQuad.json",
		"ogcapi/collections/demo:world/map/tiles/WorldCRS84Quad.json",
		"ogcapi/collections/demo:world/styles/default/map/tiles/WorldCRS84Quad.json",
		"demo:world/EPSG:4326/png/default/tilejson.json", "demo:world/EPSG:4326/png/default/tilejson-xyz.json",
		"demo:world/EPSG:4326/png/default/tilemapresource.xml",
		"_tilecache/areas/3f2a9c", "_tilecache/x/EPSG:4326/png/default/0/0/0.png",
	}
	for prefix, w := range tileRoleWorlds(t) {
		stmts := roleStatements(t, w.tp, "TileFunction", w)
		can := func(action, key string) bool {
			c := lambdatest.Call{Action: action, Resource: "arn:aws:s3:::bkt/" + key, Op: action}
			return slices.ContainsFunc(stmts, func(s statement) bool { return s.allows(c) })
		}
		under := func(key string) string {
			if prefix == "" {
				return key
			}
			return prefix + "/" + key
		}
		for _, k := range tiles {
			for _, a := range []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject"} {
				if !can(a, under(k)) {
					t.Errorf("prefix %q: TileRole refuses %s of the tile %s", prefix, a, under(k))
				}
			}
		}
		for _, k := range documents {
			for _, a := range []string{"s3:PutObject", "s3:DeleteObject"} {
				if can(a, under(k)) {
					t.Errorf("prefix %q: TileRole allows %s of %s, which is not a tile", prefix, a, under(k))
				}
			}
			own := strings.HasPrefix(k, "_tilecache/")
			if got := can("s3:GetObject", under(k)); got == own {
				t.Errorf("prefix %q: TileRole allows s3:GetObject of %s: %v, want %v (the service's own objects are never served)", prefix, under(k), got, !own)
			}
		}
		if prefix != "" {
			for _, a := range []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject"} {
				if k := "other/" + tiles[0]; can(a, k) {
					t.Errorf("prefix %q: TileRole allows %s of %s, outside the key prefix", prefix, a, k)
				}
			}
		}
	}
}

// itemActions are the DynamoDB actions IAM authorizes item by item, with
// the items' partition keys as dynamodb:LeadingKeys. An action without
// items (Scan, DescribeTable) has no such key, and a ForAllValues
// condition on it holds: it must not be in a statement that relies on one.
var itemActions = []string{"dynamodb:GetItem", "dynamodb:BatchGetItem", "dynamodb:PutItem", "dynamodb:UpdateItem",
	"dynamodb:DeleteItem", "dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:Query"}

// TestTemplateTileRoleItemsByLeadingKeys: every statement of the tile
// function's role on the task table (not an index) holds its calls to
// item actions on partition keys that name a kind of item (a
// dynamodb:LeadingKeys condition without a pattern matching anything).
// The reads are those of the render path (meta: the quota
// configuration; claim#…: claims, render slots, remembered outcomes,
// truncation marks; job#…: the jobs of staged tasks the listing meets;
// config: the layer configuration managed at run time, whose upstreams a
// render asks); tasks, schedules (their requests), usage, pages and
// failures are out of reach.
func TestTemplateTileRoleItemsByLeadingKeys(t *testing.T) {
	for prefix, w := range tileRoleWorlds(t) {
		table := "arn:aws:dynamodb:us-east-1:000000000000:table/table"
		stmts := roleStatements(t, w.tp, "TileFunction", w)
		for _, s := range stmts {
			if !slices.Contains(s.resources, table) {
				continue
			}
			for _, a := range s.actions {
				if !slices.Contains(itemActions, a) {
					t.Errorf("TileRole statement %s allows %s on the table, which has no partition key to hold", s.sid, a)
				}
			}
			p := strs(m(s.condition, "ForAllValues:StringLike", "dynamodb:LeadingKeys"))
			p = append(p, strs(m(s.condition, "ForAllValues:StringEquals", "dynamodb:LeadingKeys"))...)
			if len(p) == 0 {
				t.Errorf("TileRole statement %s allows %v on any item of the table: want a dynamodb:LeadingKeys condition", s.sid, s.actions)
			}
			for _, pat := range p {
				if strings.Trim(pat, "*?") == "" {
					t.Errorf("TileRole statement %s: LeadingKeys pattern %q allows any item", s.sid, pat)
				}
			}
		}
		can := func(action, pk string) bool {
			c := lambdatest.Call{Action: action, Resource: table, Op: action, Keys: map[string]string{"dynamodb:LeadingKeys": pk}}
			return slices.ContainsFunc(stmts, func(s statement) bool { return s.allows(c) })
		}
		for _, pk := range []string{"meta", "claim#cache/demo:world/EPSG:4326/png/default/2/4/0.png#4x4", "claim#truncated#demo:world",
			"claim#upstream#demo:world#0", "job#8", "config"} {
			if !can("dynamodb:GetItem", pk) {
				t.Errorf("prefix %q: TileRole refuses GetItem of %s, which render on miss reads", prefix, pk)
			}
		}
		for _, pk := range []string{"task#1", "schedules", "usage", "pages#demo:world", "failures", "active", "finished", "configx", "jobs"} {
			for _, a := range itemActions {
				if a != "dynamodb:Query" && a != "dynamodb:UpdateItem" && a != "dynamodb:GetItem" && a != "dynamodb:BatchGetItem" {
					continue
				}
				if a == "dynamodb:UpdateItem" && (pk == "usage" || strings.HasPrefix(pk, "pages#")) {
					continue // the usage of the rendered tiles (TestTemplateTileWritesLeadingKeys)
				}
				if can(a, pk) {
					t.Errorf("prefix %q: TileRole allows %s of %s", prefix, a, pk)
				}
			}
		}
		for _, pk := range []string{"config", "meta", "job#1", "schedules"} {
			for _, a := range writeActions {
				if can(a, pk) {
					t.Errorf("prefix %q: TileRole allows %s of %s", prefix, a, pk)
				}
			}
		}
	}
}
