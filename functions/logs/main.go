// Command logs is the log function: access logs delivered to the log
// bucket (the CDN's standard logs, or the tile bucket's server access
// logs) are read into the disk quota's pages, so that its LRU and LFU
// clean-ups see the reads the CDN served.
package main

import (
	"os"

	"tilecache/internal/app"
	"tilecache/internal/config"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, config.Load, app.NewLogs, func(p *app.LogIngester) any { return p.HandleS3 })
}
