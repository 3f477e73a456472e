// Command logs is the log function: access logs delivered to the log
// bucket (the CDN's standard logs, or the tile bucket's server access
// logs) are read into the disk quota's pages, so that its LRU and LFU
// clean-ups see the reads the CDN served. Its program is the log ingest's
// assembly (package logingest), which links no administration interface,
// seed engine or image code.
package main

import (
	"os"

	"tilecache/internal/app/logingest"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, logingest.Load, logingest.New, func(li *logingest.Ingester) any { return li.HandleS3 })
}
