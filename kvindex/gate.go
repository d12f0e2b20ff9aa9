package kvindex

import (
	"net/http"
	"strconv"
	"time"
)

// Error codes of the answers a Gate makes.
const (
	// CodeUnauthorized (401): security is on and the request carries no
	// valid credentials (HTTP Basic against the SCRAM users, or a client
	// certificate).
	CodeUnauthorized = 40101
	// CodeForbidden (403): the principal may not READ the topic (ACLs).
	CodeForbidden = 40301
	// CodeTooManyRequests (429): the principal's lookup quota is spent;
	// Retry-After says when to come back.
	CodeTooManyRequests = 42901
)

// Gate admits or refuses a lookup of topic before it is served: who the
// caller is, whether it may read the topic, whether its quota allows one
// more. It returns nil to admit. It runs first, before the topic is looked
// up, so a refused caller learns nothing of the topic.
type Gate func(r *http.Request, topic string) *Denial

// Denial is a Gate's refusal.
type Denial struct {
	// Status is 401, 403 or 429; Code one of CodeUnauthorized,
	// CodeForbidden, CodeTooManyRequests.
	Status, Code int
	// Message says why, naming the principal and topic but never a
	// credential.
	Message string
	// RetryAfter, for a 429, is when the quota has room again (sent in
	// whole seconds, at least 1).
	RetryAfter time.Duration
}

// deny writes d as an error answer: the JSON body of every error, with
// WWW-Authenticate on a 401 and Retry-After on a 429.
func deny(w http.ResponseWriter, d *Denial) int {
	switch d.Status {
	case http.StatusUnauthorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="floe", charset="UTF-8"`)
	case http.StatusTooManyRequests:
		secs := int((d.RetryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(max(secs, 1)))
	}
	writeError(w, newAPIError(d.Status, d.Code, d.Message))
	return d.Status
}
