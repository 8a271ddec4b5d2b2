package hub

import (
	"slices"
	"testing"
)

// A topic counts as carried only once Redis confirmed its subscription, and
// no longer once the connection is to give it up or was lost.
func TestChannelSet_CarriedOnlyWhenConfirmed(t *testing.T) {
	c := newChannelSet()
	if c.add(42) {
		t.Fatal("a new topic carried before any subscription")
	}
	add, drop := c.diff(10)
	if !slices.Equal(add, []int64{42}) || len(drop) != 0 {
		t.Fatalf("diff %v %v, want 42 to add", add, drop)
	}
	c.carry(add)
	if c.carried(42) {
		t.Fatal("carried before Redis confirmed")
	}
	c.confirm(42)
	if !c.carried(42) || !c.add(42) {
		t.Fatal("not carried once confirmed")
	}
	if add, drop := c.diff(10); len(add)+len(drop) != 0 {
		t.Fatalf("diff %v %v, want nothing", add, drop)
	}
	c.remove(42)
	if add, drop := c.diff(10); len(add) != 0 || !slices.Equal(drop, []int64{42}) {
		t.Fatalf("diff %v %v, want 42 to drop", add, drop)
	}
	if c.carried(42) { // its UNSUBSCRIBE is about to go: a publish may already reach no one
		t.Fatal("carried once it is to be dropped")
	}
	c.confirm(42) // a late confirmation of what was given up
	if c.carried(42) {
		t.Fatal("carried after it was given up")
	}
	c.add(7)
	c.carry([]int64{7})
	c.confirm(7)
	c.reset()
	if c.carried(7) {
		t.Fatal("carried after the connection was lost")
	}
	if add, _ := c.diff(1); !slices.Equal(add, []int64{7}) {
		t.Fatalf("after a reset the wanted topic is to add again, got %v", add)
	}
}
