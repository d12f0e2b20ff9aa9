package kvindex

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
)

// pathPrefix is where the lookup handler is mounted.
const pathPrefix = "/kv/"

// request is a parsed GET /kv/{topic}/{key} request.
type request struct {
	topic     string
	key       []byte
	partition int32 // -1: derive it from the key
}

// parseRequest parses the path and query of a lookup: path and rawPath are the request
// URL's Path and RawPath (set only when the path's escaping is not the default one, for
// example with %2F), rawQuery its RawQuery. It checks syntax only; whether the topic
// exists and the partition is in range is the handler's business.
func parseRequest(path, rawPath, rawQuery string) (request, *apiError) {
	req := request{partition: -1}
	p, escaped := path, false
	if rawPath != "" {
		p, escaped = rawPath, true
	}
	rest, ok := strings.CutPrefix(p, pathPrefix)
	if !ok {
		return req, errBadPath
	}
	topic, key, ok := strings.Cut(rest, "/")
	switch {
	case topic == "":
		return req, errNoTopic
	case !ok || key == "":
		return req, errEmptyKey
	case strings.IndexByte(key, '/') >= 0:
		return req, errSlashInKey
	}
	if escaped {
		var err1, err2 error
		topic, err1 = url.PathUnescape(topic)
		key, err2 = url.PathUnescape(key)
		if err1 != nil || err2 != nil {
			return req, errBadEscape
		}
	}
	req.topic = topic

	base64Key := false
	seenPartition, seenEncoding := false, false
	for q := rawQuery; q != ""; {
		var kv string
		kv, q, _ = strings.Cut(q, "&")
		name, value, _ := strings.Cut(kv, "=")
		if strings.ContainsAny(value, "%+") {
			v, err := url.QueryUnescape(value)
			if err != nil {
				return req, errBadEscape
			}
			value = v
		}
		switch name {
		case "partition":
			if seenPartition { // the first one counts, as with url.Values.Get
				continue
			}
			seenPartition = true
			n, err := strconv.ParseInt(value, 10, 32)
			if err != nil || n < 0 {
				return req, errBadPartition
			}
			req.partition = int32(n)
		case "key_encoding":
			if seenEncoding {
				continue
			}
			seenEncoding = true
			if value != "base64url" {
				return req, errBadEncodingArg
			}
			base64Key = true
		}
	}

	if !base64Key {
		req.key = []byte(key)
		return req, nil
	}
	b, err := decodeBase64URL(key)
	if err != nil {
		return req, errBadBase64
	}
	if len(b) == 0 {
		return req, errEmptyKey
	}
	req.key = b
	return req, nil
}

// decodeBase64URL decodes s in RFC 4648's URL-safe alphabet, padded or not.
// encoding/base64 skips '\r' and '\n'; a key must not contain them.
func decodeBase64URL(s string) ([]byte, error) {
	if strings.ContainsAny(s, "\r\n") {
		return nil, base64.CorruptInputError(strings.IndexAny(s, "\r\n"))
	}
	if strings.HasSuffix(s, "=") {
		return base64.URLEncoding.DecodeString(s)
	}
	return base64.RawURLEncoding.DecodeString(s)
}
