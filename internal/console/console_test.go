package console

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, p string) (*http.Response, string) {
	t.Helper()
	w := httptest.NewRecorder()
	Handler().ServeHTTP(w, httptest.NewRequest("GET", p, nil))
	resp := w.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The page, its modules and its style sheet are served with their types
// and the content security policy; anything else is a 404.
func TestHandler(t *testing.T) {
	resp, body := get(t, "/")
	if resp.StatusCode != 200 || !strings.Contains(body, `<script type="module" src="/console/app.js">`) {
		t.Fatalf("GET /: %d %.200s", resp.StatusCode, body)
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("GET /: Content-Security-Policy %q", csp)
	}
	for p, typ := range map[string]string{"/console/app.js": "text/javascript", "/console/pages/playground.js": "text/javascript", "/console/style.css": "text/css"} {
		if resp, _ := get(t, p); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), typ) {
			t.Errorf("GET %s: %d %s, want 200 %s", p, resp.StatusCode, resp.Header.Get("Content-Type"), typ)
		}
	}
	for _, p := range []string{"/index.html", "/console/", "/console/index.html", "/console/nothing.js", "/app.js", "/v1/nothing"} {
		if resp, _ := get(t, p); resp.StatusCode != 404 {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
}

// Every module a page imports is embedded, and no page reaches beyond
// its own files (no CDN) or writes markup from strings.
func TestModules(t *testing.T) {
	imports := regexp.MustCompile(`(?m)^import .* from '([^']+)';`)
	n := 0
	err := fs.WalkDir(assets, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") && !strings.HasSuffix(p, ".html") && !strings.HasSuffix(p, ".css") {
			return err
		}
		b, err := assets.ReadFile(p)
		if err != nil {
			return err
		}
		src := string(b)
		for _, bad := range []string{"http://", "https://", "innerHTML", "outerHTML =", "insertAdjacentHTML", "document.write", "eval("} {
			if strings.Contains(src, bad) && !(bad == "http://" && strings.Contains(src, "http://www.w3.org/2000/svg")) {
				t.Errorf("%s has %q", p, bad)
			}
		}
		for _, m := range imports.FindAllStringSubmatch(src, -1) {
			n++
			target := path.Join(path.Dir(p), m[1])
			if _, err := fs.Stat(assets, target); err != nil {
				t.Errorf("%s imports %s: not embedded", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("found %d imports: the pattern no longer matches the modules", n)
	}
}
