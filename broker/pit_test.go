package broker

import (
	"errors"
	"reflect"
	"testing"

	"github.com/quarrysearch/quarry/api"
	"github.com/quarrysearch/quarry/planner"
)

// A point in time's name decodes to what was encoded; anything else is a
// bad request, never a panic, and never a name whose ids could make a
// subject of more tokens than one.
func FuzzDecodePIT(f *testing.F) {
	f.Add(encodePIT("menu", &planner.PointInTime{ID: "TE6qJ5Jvz2gAa9qs3ieAKL", Replicas: map[int]string{0: "abc", 1: "def"}}))
	f.Add(encodePIT("menu", &planner.PointInTime{ID: "a.b", Replicas: map[int]string{0: ">"}}))
	f.Add("")
	f.Add("e30")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := decodePIT(s)
		if err != nil {
			if !errors.Is(err, api.ErrBadRequest) {
				t.Fatalf("error of the wrong kind: %v", err)
			}
			return
		}
		again, err := decodePIT(encodePIT(n.Index, &planner.PointInTime{ID: n.ID, Replicas: n.Replicas}))
		if err != nil || !reflect.DeepEqual(again, n) {
			t.Fatalf("%+v encoded and decoded is %+v, %v", n, again, err)
		}
	})
}

func TestDecodePIT(t *testing.T) {
	for _, bad := range []string{"nonsense", encodePIT("menu", &planner.PointInTime{ID: "a.b", Replicas: map[int]string{0: "abc"}}),
		encodePIT("menu", &planner.PointInTime{ID: "abc", Replicas: map[int]string{0: "x y"}}),
		encodePIT("menu", &planner.PointInTime{ID: "abc", Replicas: map[int]string{-1: "abc"}}), encodePIT("", &planner.PointInTime{ID: "abc"})} {
		if _, err := decodePIT(bad); !errors.Is(err, api.ErrBadRequest) {
			t.Errorf("%q: %v, want bad_request", bad, err)
		}
	}
	good := &planner.PointInTime{ID: "abc", Replicas: map[int]string{0: "r1", 3: "r2"}}
	if n, err := decodePIT(encodePIT("menu", good)); err != nil || n.Index != "menu" || n.ID != "abc" || !reflect.DeepEqual(n.Replicas, good.Replicas) {
		t.Fatalf("%+v, %v", n, err)
	}
}
