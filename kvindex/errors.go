package kvindex

import (
	"net/http"
	"strconv"
	"unicode/utf8"
)

// Error codes of the lookup endpoint's JSON error bodies; see the table in the package
// documentation.
const (
	// CodeBadRequest (400): malformed path, empty key, or a literal '/' in a raw key.
	CodeBadRequest = 40001
	// CodeBadKeyEncoding (400): key_encoding other than base64url, or invalid base64url.
	CodeBadKeyEncoding = 40002
	// CodeBadPartition (400): ?partition= not an integer, negative, or out of range.
	CodeBadPartition = 40003
	// CodeTopicNotFound (404): no topic has the name; Redpanda's topic_not_found.
	CodeTopicNotFound = 40401
	// CodePartitionNotFound (404): the Service reported ErrUnknownPartition; Redpanda's
	// partition_not_found.
	CodePartitionNotFound = 40402
	// CodeTopicNotIndexed (404): the topic exists without kv.index.enabled.
	CodeTopicNotIndexed = 40403
	// CodeKeyNotFound (404): no live record with the key (see the package documentation).
	CodeKeyNotFound = 40404
	// CodeRecordOnlyTiered (404): the key's record lives only in tiered storage and
	// remote reads are disabled (HandlerOptions.RemoteReadDisabled).
	CodeRecordOnlyTiered = 40405
	// CodeMethodNotAllowed (405): a method other than GET.
	CodeMethodNotAllowed = 40501
	// CodeInternal (500): a Service or storage failure, logged.
	CodeInternal = 50001
	// CodeIndexNotReady (503): the topic's index is being rebuilt; retry after a second.
	CodeIndexNotReady = 50301
)

// ErrorBody is the JSON body of every error answer, for clients and tests to decode.
type ErrorBody struct {
	// ErrorCode is one of the Code constants.
	ErrorCode int `json:"error_code"`
	// Message says what went wrong in English, naming the topic when it is the cause.
	Message string `json:"message"`
}

// apiError is an error answer: an HTTP status and an ErrorBody.
type apiError struct {
	status int
	code   int
	msg    string
	body   []byte // the encoded ErrorBody, precomputed for the fixed errors
	length string // len(body), for Content-Length
}

// newAPIError returns an apiError with its body encoded.
func newAPIError(status, code int, msg string) *apiError {
	body := appendErrorBody(nil, code, msg)
	return &apiError{status: status, code: code, msg: msg, body: body, length: strconv.Itoa(len(body))}
}

// The fixed errors, encoded once.
var (
	errBadPath        = newAPIError(http.StatusBadRequest, CodeBadRequest, "path must be /kv/{topic}/{key}")
	errNoTopic        = newAPIError(http.StatusBadRequest, CodeBadRequest, "missing topic: path must be /kv/{topic}/{key}")
	errEmptyKey       = newAPIError(http.StatusBadRequest, CodeBadRequest, "empty key")
	errSlashInKey     = newAPIError(http.StatusBadRequest, CodeBadRequest, "key contains '/': send it as %2F or use key_encoding=base64url")
	errBadEscape      = newAPIError(http.StatusBadRequest, CodeBadRequest, "invalid percent-encoding in path")
	errBadEncodingArg = newAPIError(http.StatusBadRequest, CodeBadKeyEncoding, "unknown key_encoding: the only encoding is base64url")
	errBadBase64      = newAPIError(http.StatusBadRequest, CodeBadKeyEncoding, "key is not valid base64url (RFC 4648 URL-safe alphabet)")
	errBadPartition   = newAPIError(http.StatusBadRequest, CodeBadPartition, "partition must be a non-negative integer")
	errPartitionRange = newAPIError(http.StatusBadRequest, CodeBadPartition, "partition out of range for the topic")
	errNoPartition    = newAPIError(http.StatusNotFound, CodePartitionNotFound, "partition not found")
	errKeyNotFound    = newAPIError(http.StatusNotFound, CodeKeyNotFound, "key not found")
	errTombstone      = newAPIError(http.StatusNotFound, CodeKeyNotFound, "key not found: deleted (tombstone)")
	errPastHWM        = newAPIError(http.StatusNotFound, CodeKeyNotFound, "key not found: its record is not committed yet")
	errStale          = newAPIError(http.StatusNotFound, CodeKeyNotFound, "key not found: its record was compacted away")
	errGone           = newAPIError(http.StatusNotFound, CodeKeyNotFound, "key not found: its record was deleted from the log")
	errRemote         = newAPIError(http.StatusNotFound, CodeRecordOnlyTiered, "record only available in tiered storage")
	errMethod         = newAPIError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "method not allowed: use GET")
	errInternal       = newAPIError(http.StatusInternalServerError, CodeInternal, "internal error")
	errNotReady       = newAPIError(http.StatusServiceUnavailable, CodeIndexNotReady, "the topic's key index is being built: retry later")
)

// topicError returns the error naming topic for code: unknown or not indexed.
func topicError(code int, topic string) *apiError {
	if code == CodeTopicNotFound {
		return newAPIError(http.StatusNotFound, code, "topic "+quote(topic)+" not found")
	}
	return newAPIError(http.StatusNotFound, code, "topic "+quote(topic)+" is not key-indexed (kv.index.enabled=false)")
}

// quote returns s in double quotes, escaped like a JSON string, for messages.
func quote(s string) string { return string(appendJSONString(nil, s)) }

// writeError answers e. Its headers' values share one allocation.
func writeError(w http.ResponseWriter, e *apiError) {
	vals := make([]string, 3)
	vals[0], vals[1] = "application/json", e.length
	h := w.Header()
	h["Content-Type"] = vals[0:1:1]
	h["Content-Length"] = vals[1:2:2]
	switch e.status {
	case http.StatusMethodNotAllowed:
		vals[2] = "GET"
		h["Allow"] = vals[2:3:3]
	case http.StatusServiceUnavailable:
		vals[2] = "1"
		h["Retry-After"] = vals[2:3:3]
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(e.body)
}

// appendErrorBody appends the JSON ErrorBody of code and msg, with a newline.
func appendErrorBody(dst []byte, code int, msg string) []byte {
	dst = append(dst, `{"error_code":`...)
	dst = strconv.AppendInt(dst, int64(code), 10)
	dst = append(dst, `,"message":`...)
	dst = appendJSONString(dst, msg)
	return append(dst, "}\n"...)
}

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; '<', '>' and '&' are left alone (bodies are not HTML).
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
