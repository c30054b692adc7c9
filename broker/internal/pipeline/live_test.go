package pipeline

import "testing"

// Live: a pipeline set is got back until set to nil, with the revision
// it was swapped in from; revisions are copied out, and nil until one is
// recorded.
func TestLive(t *testing.T) {
	var l Live
	if l.Get("a") != nil || l.Revisions() != nil {
		t.Fatal("the zero Live holds something")
	}
	p, q := &Pipeline{}, &Pipeline{}
	l.Swap("a", p, 3)
	l.Set("b", q)
	if pl, rev := l.Current("a"); pl != p || rev != 3 {
		t.Fatalf("Current(a) = %p, %d; want %p, 3", pl, rev, p)
	}
	if pl, rev := l.Current("b"); pl != q || rev != 0 {
		t.Fatalf("Current(b) = %p, %d; want %p, 0 (set outside the registry)", pl, rev, q)
	}
	if l.Get("a") != p || l.Get("b") != q {
		t.Fatal("Get does not return what Set set")
	}
	n := 0
	for index, pl := range l.All {
		if (index == "a") != (pl == p) {
			t.Fatalf("All yields %s with another's pipeline", index)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("All yields %d pipelines, want 2", n)
	}
	l.Swap("a", nil, 4)
	revs := l.Revisions()
	revs["b"] = 9
	if l.Get("a") != nil || l.Get("b") != q || len(l.Revisions()) != 1 || l.Revisions()["a"] != 4 {
		t.Fatalf("after deleting a: a %v, revisions %v", l.Get("a"), l.Revisions())
	}
}
