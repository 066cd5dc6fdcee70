package ring

import (
	"reflect"
	"testing"
)

func TestRingKeepsNewestFirst(t *testing.T) {
	r := New[int](3)
	if got := r.List(); len(got) != 0 {
		t.Fatalf("empty ring lists %v", got)
	}
	r.Add(1)
	r.Add(2)
	if got := r.List(); !reflect.DeepEqual(got, []int{2, 1}) {
		t.Fatalf("got %v", got)
	}
	r.Add(3)
	r.Add(4)
	if got := r.List(); !reflect.DeepEqual(got, []int{4, 3, 2}) {
		t.Fatalf("after wrap got %v", got)
	}
	if got := New[int](0); len(got.buf) != 1 {
		t.Fatalf("size 0 gives %d slots", len(got.buf))
	}
}
