"""Tests of the Python client against a real Quarry server.

QUARRY_URL names the server (TestPythonClient, package node, long tier,
starts one and runs these); QUARRY_TEST_WASM, a rewriter module to push
(examples/plugins/wat/suffix.wat, built).
"""

import os
import secrets
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from quarry import Client, QuarryError  # noqa: E402


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = Client(os.environ["QUARRY_URL"], token=os.environ.get("QUARRY_TOKEN"))
        cls.name = "py-" + secrets.token_hex(4)
        cls.c.create_index(cls.name, shards=3)
        docs = [{"id": "d%03d" % i, "name": "dish %d" % i, "text": ["spicy noodles", "mild soup", "spicy soup"][i % 3],
                 "price": i % 7} for i in range(250)]
        res = cls.c.ingest(cls.name, docs)
        assert res["stored"] == 250 and res["searchable"], res

    @classmethod
    def tearDownClass(cls):
        for a in cls.c.aliases():
            if a["index"] == cls.name:
                cls.c.delete_alias(a["name"])
        cls.c.delete_index(cls.name)

    def test_search(self):
        r = self.c.search(self.name, q="noodles", size=3, fields=["name"])
        self.assertEqual(r["total"], 84)
        self.assertEqual(len(r["hits"]), 3)
        self.assertIn("name", r["hits"][0]["fields"])
        r = self.c.search(self.name, q="soup", size=2, from_=2)
        self.assertEqual(len(r["hits"]), 2)

    def test_cursor_paging(self):
        # Every hit once, in the order one page of them all has.
        whole = [h["id"] for h in self.c.search(self.name, query={"match_all": {}}, sort=["-price"], size=250)["hits"]]
        walked = [h["id"] for h in self.c.scan(self.name, ["-price"], page_size=17, query={"match_all": {}})]
        self.assertEqual(len(whole), 250)
        self.assertEqual(walked, whole)

    def test_cursor_paging_one_moment(self):
        # A write during the walk, sorting after every hit, is not seen:
        # the walk reads one point in time (without one it is the last).
        scan = self.c.scan(self.name, ["_id"], page_size=50, query={"match_all": {}})
        walked = [next(scan)["id"]]
        self.c.put(self.name, {"id": "d999-written-meanwhile", "name": "late", "price": 1})  # searchable when it returns
        walked += [h["id"] for h in scan]
        self.assertNotIn("d999-written-meanwhile", walked)
        self.assertEqual(walked, sorted(walked))
        self.c.delete(self.name, "d999-written-meanwhile")

    def test_documents(self):
        seq = self.c.put(self.name, {"id": "extra", "name": "extra dish", "text": "tofu", "price": 3})
        doc = self.c.get(self.name, "extra")
        self.assertEqual(doc["source"]["name"], "extra dish")
        self.assertEqual(doc["seq"], seq)
        self.c.patch(self.name, "extra", {"price": 4}, if_match=doc["seq"])
        self.assertEqual(self.c.get(self.name, "extra")["source"]["price"], 4)
        with self.assertRaises(QuarryError) as cm:
            self.c.patch(self.name, "extra", {"price": 5}, if_match=doc["seq"])  # changed since
        self.assertEqual(cm.exception.code, "conflict")
        self.c.delete(self.name, "extra")
        with self.assertRaises(QuarryError) as cm:
            self.c.get(self.name, "extra")
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))

    def test_errors(self):
        with self.assertRaises(QuarryError) as cm:
            self.c.search("py-no-such-index", q="x")
        self.assertEqual((cm.exception.code, cm.exception.status), ("not_found", 404))
        with self.assertRaises(QuarryError) as cm:
            self.c.create_index(self.name)
        self.assertEqual(cm.exception.code, "conflict")
        with self.assertRaises(QuarryError) as cm:
            self.c.search(self.name, q="x", bogus=1)
        self.assertEqual(cm.exception.code, "bad_request")
        self.assertIn("bogus", cm.exception.message)

    def test_alias(self):
        alias = self.name + "-a"
        self.c.create_alias(alias, self.name)
        r = self.c.search(alias, q="noodles", size=0)
        self.assertEqual((r["total"], r.get("index")), (84, self.name))
        self.c.delete_alias(alias)

    def test_push_plugin(self):
        # On an index of its own: the rewriter changes every search.
        name = self.name + "-p"
        self.c.create_index(name)
        try:
            self.c.ingest(name, [{"id": "1", "text": "spicy tofu"}, {"id": "2", "text": "mild tofu"}])
            with open(os.environ["QUARRY_TEST_WASM"], "rb") as f:
                wasm = f.read()
            v = self.c.push_plugin(name, "suffix", wasm, "rewriter", activate=True, budget_ms=50)
            self.assertTrue(v["valid"], v)
            self.assertEqual([s["plugin"] for s in self.c.pipeline(name)["rewriters"]], ["suffix"])
            # The rewriter appends " spicy": a search of tofu ranks the spicy one first.
            self.assertEqual(self.c.search(name, q="tofu")["hits"][0]["id"], "1")
            with self.assertRaises(QuarryError) as cm:
                self.c.push_plugin(name, "junk", b"junk", "rewriter")
            self.assertEqual(cm.exception.code, "bad_request")
        finally:
            self.c.delete_index(name)


if __name__ == "__main__":
    unittest.main()
