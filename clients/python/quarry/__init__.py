"""A small client for Quarry's HTTP API (docs/api.md; the OpenAPI document
at GET /openapi.json describes every route). Standard library only.

    from quarry import Client
    c = Client("http://localhost:7700")
    r = c.search("menu", q="pad thai", size=5)
    for hit in r["hits"]:
        print(hit["id"], hit["score"])

Every error the API answers is raised as QuarryError, with the API's
code (bad_request, not_found, conflict, ...), the HTTP status and the
message.
"""

import json
import urllib.error
import urllib.parse
import urllib.request

__all__ = ["Client", "QuarryError"]
__version__ = "0.1.0"


class QuarryError(Exception):
    """An error the API answered with: code, HTTP status and message."""

    def __init__(self, code, status, message, body=None):
        super().__init__(f"{code} ({status}): {message}")
        self.code = code
        self.status = status
        self.message = message
        self.body = body


class Client:
    """A client of one Quarry HTTP endpoint.

    base_url is the server's (http://localhost:7700 for `quarry serve`);
    token, if set, is sent as a bearer token (`quarry token create`);
    timeout is each request's, in seconds.
    """

    def __init__(self, base_url="http://localhost:7700", token=None, timeout=30.0):
        self.base_url = base_url.rstrip("/")
        self.token = token
        self.timeout = timeout

    # The wire.

    def _request(self, method, path, body=None, content_type="application/json", params=None, headers=None):
        url = self.base_url + path
        if params:
            query = {k: _param(v) for k, v in params.items() if v is not None}
            if query:
                url += "?" + urllib.parse.urlencode(query)
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", content_type)
        if self.token:
            req.add_header("Authorization", "Bearer " + self.token)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                raw = resp.read()
                out = json.loads(raw) if raw else None
                return out, resp.headers
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                body = json.loads(raw)
            except ValueError:
                raise QuarryError("http_error", e.code, raw.decode(errors="replace")) from None
            err = (body or {}).get("error") or {}
            raise QuarryError(err.get("code", "http_error"), e.code, err.get("message", ""), body) from None

    def _json(self, method, path, body=None, **kw):
        return self._request(method, path, body, **kw)[0]

    # Indexes and aliases (operators).

    def create_index(self, name, shards=1, team=None, mapping=None, query=None, documents=None):
        """Creates an index; returns its definition as stored."""
        body = {"shards": shards}
        for k, v in (("team", team), ("mapping", mapping), ("query", query), ("documents", documents)):
            if v is not None:
                body[k] = v
        return self._json("POST", _idx(name), body)

    def index(self, name):
        """An index's definition, live document count and snapshot."""
        return self._json("GET", _idx(name))

    def indexes(self):
        """Every index's definition."""
        return self._json("GET", "/v1/indexes")["indexes"]

    def delete_index(self, name):
        """Deletes an index and everything kept under its name."""
        self._json("DELETE", _idx(name))

    def create_alias(self, name, index):
        """Makes the alias name point at index."""
        return self._json("POST", "/v1/aliases/" + _seg(name), {"index": index})

    def switch_alias(self, name, index):
        """Points the alias name at another index of its team, at once."""
        return self._json("PUT", "/v1/aliases/" + _seg(name), {"index": index})

    def delete_alias(self, name):
        """Removes an alias; its index stays."""
        self._json("DELETE", "/v1/aliases/" + _seg(name))

    def aliases(self):
        """Every alias."""
        return self._json("GET", "/v1/aliases")["aliases"]

    # Documents.

    def ingest(self, index, docs, wait=True, snapshot=False):
        """Bulk-loads documents: an iterable of dicts (or NDJSON text).

        With wait (the default), it returns once a search finds every
        document stored. Returns the bulk result ({"lines", "stored",
        "failed", "errors", "last_seq", ...}); a refused document is in
        its errors, not raised.
        """
        if isinstance(docs, (str, bytes)):
            body = docs.encode() if isinstance(docs, str) else docs
        else:
            body = "".join(json.dumps(d) + "\n" for d in docs).encode()
        params = {"wait": "searchable" if wait else None, "snapshot": "true" if snapshot else None}
        out, _ = self._request("POST", _idx(index) + "/documents", body, "application/x-ndjson", params)
        return out

    def put(self, index, doc, wait=True):
        """Upserts one document (a dict with an "id"); returns its sequence."""
        res = self.ingest(index, [doc], wait=wait)
        if res.get("failed"):
            e = (res.get("errors") or [{}])[0]
            raise QuarryError("bad_request", 400, e.get("error", "refused"), res)
        return res["last_seq"]

    def get(self, index, id):
        """A document as written: {"id", "seq", "source"} (seq: the stream
        sequence that stored this version, what patch's if_match takes)."""
        source, headers = self._request("GET", _idx(index) + "/documents", params={"id": id})
        return {"id": id, "seq": int(headers["Quarry-Seq"]), "source": source}

    def delete(self, index, id):
        """Deletes a document; returns the tombstone's sequence."""
        return self._json("DELETE", _idx(index) + "/documents", params={"id": id})["seq"]

    def patch(self, index, id, patch, if_match=None):
        """Applies a JSON merge patch to one document, atomically.

        if_match, a sequence (as get returns), makes it refused with
        conflict if the document changed since.
        """
        headers = {"If-Match": '"%d"' % if_match} if if_match is not None else None
        out, _ = self._request("PATCH", _idx(index) + "/documents", patch, "application/merge-patch+json",
                               {"id": id}, headers)
        return out["seq"]

    def delete_by_query(self, index, q=None, query=None, filter=None, max=None):
        """Deletes every document a query finds; returns {"deleted", ...}."""
        body = {k: v for k, v in (("q", q), ("query", query), ("filter", filter), ("max", max)) if v is not None}
        return self._json("POST", _idx(index) + "/delete-by-query", body)

    # Search.

    def search(self, index, **request):
        """Searches an index (or alias): the request's members as keywords.

        q, query, filter, size, from_ (from is a Python keyword), sort,
        fields, facets, highlight, search_after, context... (docs/api.md).
        Returns the response as a dict.
        """
        if "from_" in request:
            request["from"] = request.pop("from_")
        return self._json("POST", _idx(index) + "/search", request)

    def scan(self, index, sort, page_size=100, keep_alive="1m", **request):
        """Yields every hit of a sorted search, page by page with its cursor.

        sort is required (a cursor continues a sorted search): e.g.
        ["-price"], or ["_id"]. Every page reads one point in time, the
        index as of the first page, whatever is written meanwhile; it is
        held keep_alive between pages ("1m", "30s"; None: no point in
        time, so later pages see later writes) and ended when the walk
        ends, or is left.
        """
        request = dict(request, sort=list(sort), size=page_size)
        if keep_alive is not None:
            request["pit"] = {"keep_alive": keep_alive}
        pit = None
        try:
            while True:
                resp = self.search(index, **request)
                pit = resp.get("pit") or pit
                yield from resp["hits"]
                if not resp.get("next"):
                    return
                request["search_after"] = resp["next"]
                if pit:
                    request["pit"] = {"id": pit, "keep_alive": keep_alive}
        finally:
            if pit:
                try:
                    self.search(index, query={"match_all": {}}, size=1, pit={"id": pit, "close": True})
                except QuarryError:
                    pass  # ended already: its keep-alive, or its searcher

    # Plugins.

    def push_plugin(self, index, name, wasm, kind, activate=False, fields=None, config=None, budget_ms=None):
        """Pushes a plugin version (the module's bytes); returns the version.

        kind is "rewriter" or "ranker"; activate puts it live (through the
        index's relevance gate).
        """
        params = {"kind": kind, "activate": "true" if activate else None,
                  "fields": ",".join(fields) if fields else None,
                  "config": json.dumps(config) if config is not None else None, "budget_ms": budget_ms}
        out, _ = self._request("POST", _idx(index) + "/plugins/" + _seg(name), bytes(wasm), "application/wasm", params)
        return out

    def pipeline(self, index):
        """The index's live pipeline."""
        return self._json("GET", _idx(index) + "/pipeline")


def _seg(s):
    return urllib.parse.quote(s, safe="")


def _idx(name):
    return "/v1/indexes/" + _seg(name)


def _param(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
