package coordapi

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/uuid"
)

func TestSplitViewName(t *testing.T) {
	for _, tc := range []struct {
		name, base, key string
		ok              bool
	}{
		{"telemetry/CC54 RYD", "telemetry", "CC54 RYD", true},
		{"a/b/c", "a", "b/c", true}, // the first '/' splits
		{"t/ü", "t", "ü", true},
		{"telemetry", "", "", false},
		{"/key", "", "", false},
		{"base/", "", "", false},
		{"", "", "", false},
	} {
		base, key, ok := SplitViewName(tc.name)
		if base != tc.base || string(key) != tc.key || ok != tc.ok {
			t.Errorf("SplitViewName(%q) = %q, %q, %v; want %q, %q, %v", tc.name, base, key, ok, tc.base, tc.key, tc.ok)
		}
	}
}

func TestViewTopicID(t *testing.T) {
	base := TopicID(uuid.New())
	a, b := ViewTopicID(base, []byte("CC54 RYD")), ViewTopicID(base, []byte("NN03 RYB"))
	if a == b || a != ViewTopicID(base, []byte("CC54 RYD")) || a == ViewTopicID(TopicID(uuid.New()), []byte("CC54 RYD")) {
		t.Fatal("view ids are not stable and distinct per base and key")
	}
	if !IsViewTopicID(a) || IsViewTopicID(base) {
		t.Fatalf("IsViewTopicID: view %v, base %v", IsViewTopicID(a), IsViewTopicID(base))
	}
}

// FuzzSplitViewName: a split joins back to the name, the base has no '/',
// and neither part is empty.
func FuzzSplitViewName(f *testing.F) {
	for _, s := range []string{"telemetry/CC54 RYD", "a/b/c", "/", "x", "/y", "y/", "\x00/\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		base, key, ok := SplitViewName(name)
		if !ok {
			if base != "" || key != nil {
				t.Fatalf("not a view name %q, yet %q, %q", name, base, key)
			}
			return
		}
		if base == "" || len(key) == 0 || strings.Contains(base, "/") || base+"/"+string(key) != name {
			t.Fatalf("SplitViewName(%q) = %q, %q", name, base, key)
		}
		if ViewTopicID(TopicID{}, key) != ViewTopicID(TopicID{}, bytes.Clone(key)) || !IsViewTopicID(ViewTopicID(TopicID{}, key)) {
			t.Fatal("view id not a function of the key bytes, or not marked as a view's")
		}
	})
}
