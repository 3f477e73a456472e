package layer

// LayersBuilt returns how many layer entries the package has built.
func LayersBuilt() int64 { return layersBuilt.Load() }
