package listen

// Unexported helpers that the external tests exercise directly.
var (
	ValidateNotifications = validateNotifications
	Merge                 = merge
	Project               = project
	AbsoluteURI           = isAbsoluteURI
)

type CollisionError = collisionError

type EventError = eventError

type DisconnectedError = disconnectedError

type FailedError = failedError

// Exact event validation messages.
const (
	MsgEventParams        = msgEventParams
	MsgEventMetadata      = msgEventMetadata
	MsgEventAbsoluteURI   = msgEventAbsoluteURI
	MsgEventListURI       = msgEventListURI
	MsgEventCoreExtFields = msgEventCoreExtFields
	MsgEventExtID         = msgEventExtID
	MsgEventExtSelector   = msgEventExtSelector
	MsgEventExtCoreFields = msgEventExtCoreFields
	MsgEventInvalid       = msgEventInvalid
)
