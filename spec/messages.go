package spec

// Messages of the internal errors the core produces. They are exact: clients
// and tests may compare them.
const (
	MsgSourceFailed         = "Subscription source failed"
	MsgSourceFailedToOpen   = "Subscription source failed to open"
	MsgInvalidOpenResult    = "Subscription source returned an invalid open result"
	MsgSourceOverclaimed    = "Subscription source accepted notifications not requested"
	MsgCapacityExhausted    = "Server subscription capacity exhausted"
	MsgNoShaping            = "Protocol does not implement subscription wire shaping"
	MsgInvalidMessage       = "Protocol produced an invalid subscription message"
	MsgShapingFailed        = "Protocol failed to shape a subscription message"
	MsgExtNonJSONFilter     = "Extension returned a non-JSON subscription filter"
	MsgExtUnrequested       = "Extension accepted subscription filters not requested"
	MsgExtInvalidFilter     = "Extension returned an invalid subscription filter"
	MsgExtCallbackPanicked  = "Extension callback raised"
	MsgExtFiltersCollide    = "Extension subscription filters collide"
	MsgExtCollideWithCore   = "Extension subscription filters collide with core"
	MsgExtNonJSONEvent      = "Extension shaped a non-JSON subscription event"
	MsgExtInvalidEvent      = "Extension shaped an invalid subscription event"
	MsgDuplicateID          = "Duplicate in-flight request id"
	MsgMethodNotFoundListen = "Method not found: subscriptions/listen"
	MsgUnsupportedVersion   = "Unsupported protocol version"
)

// Exact -32602 messages of the listen params checks, in the order they run.
const (
	MsgNotificationsObject = "subscriptions/listen requires a notifications object"
	MsgNotificationsJSON   = "subscriptions/listen notifications must be a JSON object"
	MsgURIsList            = "subscriptions/listen resourceSubscriptions must be a list"
	MsgURIsTooMany         = "subscriptions/listen resourceSubscriptions accepts at most 1000 URIs"
	MsgURIsAbsolute        = "subscriptions/listen resourceSubscriptions must contain absolute URI strings"
	MsgMetaObject          = "subscriptions/listen requires a _meta object"
	MsgMetaProtocolVersion = "subscriptions/listen _meta requires io.modelcontextprotocol/protocolVersion as a string"
	MsgMetaCapabilities    = "subscriptions/listen _meta requires io.modelcontextprotocol/clientCapabilities as an object"
	MsgParamsObject        = "subscriptions/listen params must be an object"
	MsgParamsDuplicate     = "subscriptions/listen params, _meta and notifications must not repeat a member name"
	MsgURIsUnicode         = "subscriptions/listen resourceSubscriptions must not contain lone surrogates or invalid UTF-8"
)
