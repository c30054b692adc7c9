package querystats

import (
	"fmt"
	"strings"
	"testing"
)

// TestLevAutomaton: an automaton matches the words within its distance
// (a transposition one edit, as scorch's), is built once for a (term,
// distance) while the cache keeps it, the cache keeps at most
// maxCachedAutomata, and a distance over 2 is refused as scorch refuses
// it.
func TestLevAutomaton(t *testing.T) {
	a, err := levAutomaton("noodles", 1)
	if err != nil {
		t.Fatal(err)
	}
	for w, want := range map[string]struct {
		ok bool
		d  uint8
	}{"noodles": {true, 0}, "noodels": {true, 1}, "nodles": {true, 1}, "noodlez": {true, 1}, "nodels": {false, 0}, "soup": {false, 0}} {
		if ok, d := a.MatchAndDistance(w); ok != want.ok || ok && d != want.d {
			t.Errorf("noodles~1 against %q: %v %d, want %v %d", w, ok, d, want.ok, want.d)
		}
	}
	automata.mu.Lock()
	built := automata.built
	automata.mu.Unlock()
	if b, _ := levAutomaton("noodles", 1); b != a {
		t.Error("the same term and distance built again")
	}
	if b, _ := levAutomaton("noodles", 2); b == a {
		t.Error("distance 2 got distance 1's automaton")
	}
	for i := range 2 * maxCachedAutomata {
		if _, err := levAutomaton(fmt.Sprintf("word%03d", i), 1+i%2); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("x", maxCachedTermBytes+1)
	for range 2 {
		if _, err := levAutomaton(long, 1); err != nil {
			t.Fatal(err)
		}
	}
	automata.mu.Lock()
	n, order, builtNow := len(automata.byKey), len(automata.order), automata.built
	automata.mu.Unlock()
	if n != maxCachedAutomata || order != n {
		t.Errorf("the cache holds %d automata (%d in order), want %d", n, order, maxCachedAutomata)
	}
	if want := built + 1 + 2*maxCachedAutomata + 2; builtNow != want {
		t.Errorf("%d automata built, want %d (a long term's each time)", builtNow, want)
	}
	if _, err := levAutomaton("noodles", 3); err == nil || err.Error() != "fuzziness exceeds the max limit" {
		t.Errorf("distance 3: %v", err)
	}
}
