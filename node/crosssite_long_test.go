//go:build long

package node

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/quarrysearch/quarry/broker"
)

// A page of another origin, in Chromium, tries what issue 34's did
// against the open loopback API (quarry serve's defaults): create an
// index and write a document with every kind of request a page may send
// (a text/plain fetch and a form, which need no CORS preflight; a JSON
// fetch, which does). None gets through: the index is never created.
// TestHTTPCrossSiteRefused (fast tier) sends the same requests without a
// browser.
func TestCrossSitePageRefused(t *testing.T) {
	exe := chromium(t)
	n := startConfig(t, Config{Broker: &broker.Config{}})
	api := "http://" + n.HTTPAddr
	// The other site: another port of 127.0.0.1, so another origin.
	page := fmt.Sprintf(`<!doctype html><body>
<form id="f" method="POST" action="%[1]s/v1/indexes/evilform" enctype="text/plain" target="sink"><input name='{"shards":1,"mapping":{"type_field":"' value='_type"}}'></form>
<iframe name="sink"></iframe>
<script>
window.attack = async () => {
  const out = [];
  const tries = [
    ['text/plain', () => fetch('%[1]s/v1/indexes/evil', {method: 'POST', mode: 'no-cors', body: '{"shards":1}'})],
    ['no type', () => fetch('%[1]s/v1/indexes/evil', {method: 'POST', mode: 'no-cors', body: new Blob(['{"shards":1}'])})],
    ['json', () => fetch('%[1]s/v1/indexes/evil', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: '{"shards":1}'})],
    ['document', () => fetch('%[1]s/v1/indexes/evil/documents', {method: 'POST', mode: 'no-cors', body: '{"id":"x"}\n'})],
  ];
  for (const [name, f] of tries) {
    try { const r = await f(); out.push(name + ': ' + r.type + ' ' + r.status); } catch (e) { out.push(name + ': ' + e); }
  }
  document.getElementById('f').submit();
  return out.join('; ');
};
</script></body>`, api)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, page) }))
	defer evil.Close()

	ctx := context.Background()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.DisableGPU)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses root without it
	}
	browser, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	b := openTab(t, browser, evil.URL, t.TempDir())
	b.do(chromedp.Navigate(evil.URL + "/"))
	t.Logf("the page's requests: %s", eval[string](b, `window.attack()`))
	// The form's answer lands in the frame; then every request has been
	// answered.
	b.until(`(() => { try { return frames.sink.location.href !== 'about:blank'; } catch (e) { return true; } })()`)
	for _, index := range []string{"evil", "evilform"} {
		if code, body := httpDo(t, n, "GET", "/v1/indexes/"+index, ""); code != 404 {
			t.Errorf("index %s after the page's requests: %d %s, want 404: a page of another origin created it", index, code, body)
		}
	}
	if got := counter(t, n, "quarry_http_requests_refused_total", map[string]string{"reason": "origin"}); got < 4 {
		t.Errorf("quarry_http_requests_refused_total{reason=\"origin\"} = %v, want at least 4 (the text/plain, untyped and document fetches, the form)", got)
	}
}
