// Command tile is the tile function: CloudFront's failover origin when a
// tile is missing from the bucket. Lambda function URL events (payload
// 2.0) for key paths are answered from the bucket or rendered on miss
// (layers with renderOnMiss), through the same code as `tilecache serve`.
// Its program is the tile origin's assembly (package tileorigin), which
// links no seed engine, administration interface or embedded database.
package main

import (
	"os"

	"tilecache/internal/app/tileorigin"
	"tilecache/internal/lambdamain"
)

func main() {
	lambdamain.Run(os.LookupEnv, tileorigin.Load, tileorigin.New, func(o *tileorigin.Origin) any { return o.HandleTile })
}
