package members

import (
	"reflect"
	"testing"
)

func TestPartitionsSet(t *testing.T) {
	ps := Partitions{}
	for _, p := range []int32{5, 1, 3, 1} {
		ps.Add(t1, p)
	}
	ps.Add(t2, 0)
	if want := (Partitions{t1: {1, 3, 5}, t2: {0}}); !ps.Equal(want) {
		t.Fatalf("after Add: %v, want %v", ps, want)
	}
	if ps.Count() != 4 || !ps.Has(t1, 3) || ps.Has(t1, 2) || ps.Has(t3, 0) {
		t.Fatalf("Count/Has wrong on %v", ps)
	}
	c := ps.Clone()
	c.Add(t1, 2)
	if ps.Has(t1, 2) {
		t.Fatal("Clone shares a list")
	}
	if !ps.SubsetOf(c) || c.SubsetOf(ps) || !(Partitions{}).SubsetOf(ps) {
		t.Fatal("SubsetOf wrong")
	}
	if !ps.Intersects(Partitions{t2: {0}}) || ps.Intersects(Partitions{t1: {2}, t3: {1}}) || (Partitions{}).Intersects(ps) {
		t.Fatal("Intersects wrong")
	}
	if ps.Equal(Partitions{t1: {1, 3, 5}, t2: {0}, t3: {}}) {
		t.Fatal("a topic with an empty list equals no topic")
	}
	if got, want := (Partitions{t3: {1}, t2: {1}, t1: {1}}).SortedIDs(), []TopicID{t1, t2, t3}; !reflect.DeepEqual(got, want) {
		t.Fatalf("SortedIDs: %x", got)
	}
}

func TestDescribeAssignment(t *testing.T) {
	ps := Partitions{t2: {4}, t1: {0, 1}}
	a := ps.DescribeAssignment(func(id TopicID) string {
		if id == t1 {
			return "one"
		}
		return ""
	})
	if len(a.TopicPartitions) != 2 {
		t.Fatalf("got %+v", a)
	}
	x, y := a.TopicPartitions[0], a.TopicPartitions[1]
	if x.TopicID != t1 || x.Topic != "one" || !reflect.DeepEqual(x.Partitions, []int32{0, 1}) ||
		y.TopicID != t2 || y.Topic != "" || !reflect.DeepEqual(y.Partitions, []int32{4}) {
		t.Fatalf("got %+v", a)
	}
	x.Partitions[0] = 9
	if ps[t1][0] != 0 {
		t.Fatal("the assignment shares a list with the set")
	}
	if a := (Partitions{}).DescribeAssignment(nil); a.TopicPartitions == nil {
		t.Fatal("no partitions: want [], not null")
	}
}
