// Package core is the shared core every assembly of tilecache is built
// from: the logger, the metrics' exporters, the AWS clients' settings,
// the layer registry, the CDN's invalidator and the tile token keys;
// beside it, package backends (the ports' adapters) and package sources
// (the layers' sources and render on miss). None of them links the seed
// engine, the administration interface or the embedded database, so that
// an assembly (the tile origin, the log ingest, the API, the worker, the
// maintenance, and `tilecache serve`, which composes them) links only what
// it uses.
package core
