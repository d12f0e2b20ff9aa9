package broker

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions: v0-v4. v3+ flexible. Its response header is always v0.
// A request newer than v4 is answered at v0 with UNSUPPORTED_VERSION and our
// range for ApiVersions (KIP-511), which the server loop handles.
func init() { register(kmsg.ApiVersions, 0, 4, (*Broker).handleAPIVersions) }

func (b *Broker) handleAPIVersions(_ context.Context, r *request) (kmsg.Response, error) {
	req := r.req.(*kmsg.ApiVersionsRequest)
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	fillServedAPIVersions(resp, b.apiHidden)
	return resp, nil
}

// fillAPIVersions lists every registered API with its version range.
func fillAPIVersions(resp *kmsg.ApiVersionsResponse) { fillServedAPIVersions(resp, nil) }

// fillServedAPIVersions lists every registered API with its version range,
// but those hidden reports (nil: none).
func fillServedAPIVersions(resp *kmsg.ApiVersionsResponse, hidden func(key int16) bool) {
	for _, a := range apis {
		if a == nil || hidden != nil && hidden(a.key) {
			continue
		}
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
}

// unsupportedAPIVersions is the v0 answer to an ApiVersions request of a
// version we do not serve.
func unsupportedAPIVersions() *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = 0
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	a := apis[kmsg.ApiVersions]
	k := kmsg.NewApiVersionsResponseApiKey()
	k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
	resp.ApiKeys = append(resp.ApiKeys, k)
	return resp
}

// errAPIDisabled closes the connection of a client that sends a request
// of an API this broker leaves out of ApiVersions (apiHidden), as Kafka
// closes one whose API is not enabled.
var errAPIDisabled = errors.New("the API is disabled on this broker")

// shareAPIs are the share group APIs Options.ShareGroupsDisabled hides
// (--share-groups-enabled=false).
var shareAPIs = map[int16]bool{int16(kmsg.ShareGroupHeartbeat): true, int16(kmsg.ShareGroupDescribe): true,
	int16(kmsg.ShareFetch): true, int16(kmsg.ShareAcknowledge): true,
	int16(kmsg.DescribeShareGroupOffsets): true, int16(kmsg.AlterShareGroupOffsets): true, int16(kmsg.DeleteShareGroupOffsets): true}

// apiHidden reports whether this broker leaves key out of ApiVersions and
// refuses it when it comes anyway (conn.go, before any handler).
func (b *Broker) apiHidden(key int16) bool {
	return b.opts.ShareGroupsDisabled && shareAPIs[key]
}
