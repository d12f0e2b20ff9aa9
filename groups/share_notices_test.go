package groups

import "testing"

// TestCommitNoticesOnlyWithShareGroups: the group coordinator subscribes
// to commit notices (which only wake held share fetches) once a share
// group exists: at its first heartbeat, or at Open when one was kept.
func TestCommitNoticesOnlyWithShareGroups(t *testing.T) {
	h, st := newShareHarness(t)
	subscribed := func() bool {
		st.mu.Lock()
		defer st.mu.Unlock()
		return st.notify != nil
	}
	st.set("t", 1)
	if subscribed() {
		t.Fatal("subscribed to commit notices with no share group")
	}
	h.restart()
	if subscribed() {
		t.Fatal("subscribed at Open with no share group")
	}
	h.shareJoin("g", "m1", "t")
	if !subscribed() {
		t.Fatal("not subscribed once a share group has a member")
	}
	st.mu.Lock()
	st.notify = nil
	st.mu.Unlock()
	h.restart()
	if !subscribed() {
		t.Fatal("not subscribed at Open with a share group kept")
	}
}
