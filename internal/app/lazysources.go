package app

import (
	"errors"

	"tilecache/internal/layer"
)

// checkBuilt builds the source of every layer cat built when it was
// loaded (the layer file's), reporting every failure: what a program
// checks as it starts. The stored configuration's layers are built on
// first use, and their sources were checked when they were saved
// (Registry.Validate runs check).
func (c *sourceCache) checkBuilt(cat *layer.Catalogue) error {
	var errs []error
	for _, name := range cat.BuiltNames() {
		l, ok := cat.Layer(name)
		if !ok {
			continue
		}
		if _, err := c.of(l); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
