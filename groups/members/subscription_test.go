package members

import (
	"slices"
	"testing"
	"unsafe"
)

func TestSubscription(t *testing.T) {
	buf := []byte("topic-btopic-a")
	names := []string{unsafe.String(&buf[0], 7), unsafe.String(&buf[7], 7), "topic-b"}
	got := Subscription(names)
	if want := []string{"topic-a", "topic-b"}; !slices.Equal(got, want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	copy(buf, "XXXXXXXXXXXXXX")
	if got[0] != "topic-a" || got[1] != "topic-b" {
		t.Fatalf("the subscription shares the request's buffer: %q", got)
	}
	if got := Subscription(nil); got == nil || len(got) != 0 {
		t.Fatalf("no names: got %#v, want an empty subscription", got)
	}
}
