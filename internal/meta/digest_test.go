package meta

import (
	"strings"
	"testing"

	"github.com/quarrysearch/quarry/api"
)

// A version is named by any unique prefix of its digest, with or without
// "sha256:"; an ambiguous or unknown prefix is refused, saying why.
func TestMatchDigest(t *testing.T) {
	a := "sha256:ab12" + strings.Repeat("0", 60)
	b := "sha256:ab34" + strings.Repeat("1", 60)
	c := "sha256:cd56" + strings.Repeat("2", 60)
	versions := []api.PluginVersion{{Name: "ltr", Digest: a}, {Name: "ltr", Digest: b}, {Name: "other", Digest: c}}
	cases := []struct {
		prefix, want string
		code         api.Code
		msg          string
	}{
		{"ab12", a, "", ""},
		{"sha256:ab3", b, "", ""},
		{"AB12", a, "", ""},
		{b, b, "", ""},
		{"ab", "", api.CodeBadRequest, "ambiguous: it starts 2 digests"},
		{"cd56", "", api.CodeNotFound, "plugin ltr has no version cd56"},
		{"ff", "", api.CodeNotFound, "no version ff"},
	}
	for _, c := range cases {
		got, err := matchDigest(versions, "menu", "ltr", c.prefix)
		if c.code != "" {
			if api.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("%s: %v, want %s %q", c.prefix, err, c.code, c.msg)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %s %v, want %s", c.prefix, got, err, c.want)
		}
	}
	for _, d := range []string{a, "sha256:" + strings.Repeat("0", 64)} {
		if !fullDigest(d) {
			t.Errorf("%s is a full digest", d)
		}
	}
	for _, d := range []string{"ab12", "sha256:ab12", strings.Repeat("0", 64), "sha256:" + strings.Repeat("z", 64)} {
		if fullDigest(d) {
			t.Errorf("%s is not a full digest", d)
		}
	}
}
