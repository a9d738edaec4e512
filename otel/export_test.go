package otel

// Test-only views of unexported parts.

const (
	ClassComplete     = classComplete
	ClassCancelled    = classCancelled
	ClassDisconnected = classDisconnected
	ClassError        = classError
	ClassShutdown     = classShutdown
	ClassOther        = classOther
	ClassRevoked      = classRevoked
	ClassExpired      = classExpired
	ClassLifetime     = classLifetime
	ClassFellBehind   = classFellBehind

	CauseCapacity   = causeCapacity
	CauseShutdown   = causeShutdown
	CauseAuth       = causeAuth
	CauseValidation = causeValidation
	CauseError      = causeError
	CauseQuota      = causeQuota
)

var (
	RefusalCause         = refusalCause
	DefaultFanoutBuckets = defaultFanoutBuckets
)

// Transport is a transport kind's recorder.
type Transport = transport

// Transport returns the recorder of a transport kind.
func (m *Metrics) Transport(kind string) *Transport { return m.recorder(kind) }

// Kind returns the transport kind t records ("" for nil).
func (t *transport) Kind() string {
	if t == nil {
		return ""
	}
	return t.kind
}

// Enabled reports whether m records anything.
func (m *Metrics) Enabled() bool { return m != nil }

// Attribute keys (unexported: the package documentation names them).
const (
	AttrBroker           = attrBroker
	AttrBridgeOutcome    = attrBridgeOutcome
	AttrDropReason       = attrDropReason
	AttrResyncReason     = attrResyncReason
	AttrTransport        = attrTransport
	AttrNotificationKind = attrNotificationKind
	AttrCloseReason      = attrCloseReason
	AttrRefusalCause     = attrRefusalCause
	AttrTenant           = attrTenant
)
