package cluster

// Defaults and limits the external tests use.
const (
	DefaultResyncInterval = defaultResyncInterval
	DefaultFreshness      = defaultFreshness
	MinMaxMessageBytes    = minMaxMessageBytes
)
