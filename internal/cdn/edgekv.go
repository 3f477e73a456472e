package cdn

import "fmt"

// The limits of one entry of the CDN's edge key-value store, from which
// the edge path function reads each grid set's levels (a CloudFront
// KeyValueStore: a key of at most 512 bytes, a value of at most 1,024). An
// update holding one entry over them is refused whole, with every other
// key of its batch.
const (
	EdgeKeyMax   = 512
	EdgeValueMax = 1024
)

// CheckEdgeEntry returns an error naming the limit when key or value is
// too long to be stored in the edge key-value store, nil otherwise.
func CheckEdgeEntry(key, value string) error {
	switch {
	case len(key) > EdgeKeyMax:
		return fmt.Errorf("key of %d bytes is over the edge key-value store's limit of %d bytes", len(key), EdgeKeyMax)
	case len(value) > EdgeValueMax:
		return fmt.Errorf("value of %d characters is over the edge key-value store's limit of 1,024 characters", len(value))
	}
	return nil
}
