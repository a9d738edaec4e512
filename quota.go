package listen

import (
	"context"
	"errors"
)

// ErrOverQuota matches the refusal of a listen over a quota (see Quota):
// transports answer it like a per-client limit (HTTP 429 with Retry-After).
var ErrOverQuota = errors.New("listen: over quota")

// Quota admits listens against shares that the server's own limits do not
// know, such as a tenant's share of a whole deployment (see the cluster
// package). The server calls Acquire once per listen, after its own limits
// admitted it and before the Source is opened, with the listen's context
// and request (Auth set). release, if the listen is admitted, is called
// exactly once, when its stream has ended. An error refuses the listen: a
// *jsonrpc.Error (or an error wrapping one) is sent as it is, and should
// wrap ErrOverQuota when it is a quota refusal; any other error is sent as
// -32603 "Internal error". Acquire must be safe for concurrent use and
// return quickly: it holds up the listen.
type Quota interface {
	Acquire(ctx context.Context, req *Request) (release func(), err error)
}
