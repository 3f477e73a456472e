package worker

import (
	"tilecache/internal/archive/rangeread"
	"tilecache/internal/config"
	"tilecache/internal/source/tilearchive"
	"tilecache/internal/source/upstream"
)

// archiveOpener is what opens the archives imports copy: s3:// objects
// through the tile store where it is a bucket, https:// PMTiles held to
// the upstreams' address policy, and MBTiles files with the SQLite
// driver. A file path only where the tile store is no bucket (the
// embedded backend): there the process that takes an import request
// works it too, on the operator's machine, while on the AWS backend a
// file path would name a file of whichever function or host happens to
// run the API or the lane.
func archiveOpener(tiles any, u config.Upstream) tilearchive.Opener {
	objs, inBucket := tiles.(rangeread.Objects)
	return tilearchive.Opener{
		Access: tilearchive.Access{Objects: objs, OpenMBTiles: openMBTiles},
		Shared: upstream.Shared{Allow: u.UpstreamAllow},
		Files:  !inBucket,
	}
}
