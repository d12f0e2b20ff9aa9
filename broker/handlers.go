package broker

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handlerFunc serves one request and returns its response. A nil response
// means "send nothing" (Produce with acks=0). A non-nil error means the
// connection is broken and is closed; Kafka-level problems are error codes in
// the response, never errors.
type handlerFunc func(b *Broker, ctx context.Context, r *request) (kmsg.Response, error)

// stagedFunc serves a request in two steps: the first runs on the
// connection's read loop, in request order (Produce appends its batches to the
// object buffer here, so one producer's batches keep their order); the
// returned func waits for the outcome, on the connection's write loop, in
// request order (the answers go out in that order anyway), while the read
// loop goes on with the next requests.
type stagedFunc func(b *Broker, ctx context.Context, r *request) func() (kmsg.Response, error)

// api is one Kafka API that floe serves.
type api struct {
	key      int16
	min, max int16
	fn       handlerFunc
	staged   stagedFunc
}

// maxAPIKey bounds the API keys floe knows.
const maxAPIKey = 128

// apis is the table of served APIs, indexed by key. It is filled by the init
// funcs of the handler files and never changes after, so ApiVersions is built
// from what really exists.
var apis [maxAPIKey]*api

func register(key kmsg.Key, min, max int16, fn handlerFunc) {
	apis[key] = &api{key: int16(key), min: min, max: max, fn: fn}
}

func registerStaged(key kmsg.Key, min, max int16, fn stagedFunc) {
	apis[key] = &api{key: int16(key), min: min, max: max, staged: fn}
}

// lookupAPI returns the served API for key, or nil.
func lookupAPI(key int16) *api {
	if key < 0 || int(key) >= len(apis) {
		return nil
	}
	return apis[key]
}
