package cluster

// Defaults the external tests wait on.
const (
	DefaultResyncInterval = defaultResyncInterval
	DefaultFreshness      = defaultFreshness
)
