// Command tile is the tile function: CloudFront's failover origin when a
// tile is missing from the bucket. Lambda function URL events (payload
// 2.0) for key paths are answered from the bucket or rendered on miss
// (layers with renderOnMiss), through the same code as `tilecache serve`.
package main

import (
	"os"

	"tilecache/internal/app"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, app.NewTile, func(p *app.Program) any { return p.HandleTile })
}
