// Package tileserve serves the public side of the cache over HTTP, without
// authentication: stored tiles by layer name (Tiles, /tiles/…) and the
// tile store's objects by key path as the CDN serves them (Objects), a
// missing tile rendered on miss where its layer does (MissRenderer). The
// administration interface (package rest) is no part of it, so the tile
// origin function links none of it. Failures are answered from the one
// error table (package httperr).
package tileserve
