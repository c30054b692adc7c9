package subject

import (
	"testing"
)

func TestDocSubjectRoundTrip(t *testing.T) {
	for _, id := range []string{"a", "r0042-i07", "with space.and.dots>*", "ünïcode/ℵ", string(make([]byte, MaxIDBytes))} {
		s := Doc("menu", 3, id)
		idx, sh, got, err := ParseDoc(s)
		if err != nil || idx != "menu" || sh != 3 || got != id {
			t.Fatalf("ParseDoc(%q) = %q %d %q %v", s, idx, sh, got, err)
		}
	}
}

func TestShardOfStable(t *testing.T) {
	// Fixed values: changing the hash would move every stored document.
	cases := []struct {
		id     string
		shards int
		want   int
	}{{"a", 4, 0}, {"r0001-i01", 4, 3}, {"hello", 7, 2}}
	for _, c := range cases {
		if got := ShardOf(c.id, c.shards); got != c.want {
			t.Errorf("ShardOf(%q,%d) = %d, want %d", c.id, c.shards, got, c.want)
		}
	}
}

func TestValidIndexName(t *testing.T) {
	for _, n := range []string{"menu", "a", "team-a_products2"} {
		if err := ValidIndexName(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", "Menu", "-a", "a.b", "a b", "a*", string(make([]byte, 65))} {
		if err := ValidIndexName(n); err == nil {
			t.Errorf("%q accepted", n)
		}
	}
}

func FuzzParseDoc(f *testing.F) {
	f.Add("quarry.v1.docs.menu.1.YQ")
	f.Add("quarry.v1.docs..x.")
	f.Fuzz(func(t *testing.T, s string) {
		idx, sh, id, err := ParseDoc(s)
		if err == nil && Doc(idx, sh, id) != s && sh >= 0 {
			// Non-canonical encodings (e.g. "+1" shard) may parse; they must
			// at least decode to something that re-encodes to a valid subject.
			if _, _, _, err := ParseDoc(Doc(idx, sh, id)); err != nil {
				t.Fatalf("re-encode of %q fails: %v", s, err)
			}
		}
	})
}

func TestParseShard(t *testing.T) {
	if idx, sh, ok := ParseShard(Shard("menu", 12)); !ok || idx != "menu" || sh != 12 {
		t.Fatalf("got %q %d %v", idx, sh, ok)
	}
	for _, s := range []string{"quarry.v1.shard.menu", "quarry.v1.shard.menu.x", "quarry.v1.shard.menu.-1", "other.menu.1", "quarry.v1.shard..1"} {
		if _, _, ok := ParseShard(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
}

func TestReplicaSubject(t *testing.T) {
	r, idx, sh, ok := ParseReplica(Replica("abc", "menu", 3))
	if !ok || r != "abc" || idx != "menu" || sh != 3 {
		t.Fatalf("got %q %q %d %v", r, idx, sh, ok)
	}
	for _, s := range []string{"quarry.v1.replica.a.b", "quarry.v1.replica..menu.1", "quarry.v1.replica.a.menu.x"} {
		if _, _, _, ok := ParseReplica(s); ok {
			t.Errorf("%q parsed", s)
		}
	}
}
