"""The Python package's mirrors of the C API against the C API itself: the ctypes structs of
python/gpumem/_lib.py (size and offsets), the constants it copies, and the memory kinds of
src/kinds.def (the library's names for them, and every one in docs/check.md's list of the JSON's
memory kinds).

    python3 test_mirror.py LAYOUT_PROGRAM SOURCE_DIR
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import unittest

LAYOUT, SOURCE = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(SOURCE, "python"))
from gpumem import _lib  # noqa: E402  (after the path)

C = json.loads(subprocess.run([LAYOUT], capture_output=True, text=True, check=True).stdout)


class Mirror(unittest.TestCase):
    def test_constants(self):
        self.assertEqual(_lib.KIND_COUNT, C["kind_count"])
        self.assertEqual(_lib.STATS_DEVICES, C["stats_devices"])
        self.assertEqual(_lib.POOL_SIZE_RANGES, C["pool_size_ranges"])

    def check_struct(self, py, name):
        self.assertEqual(ctypes.sizeof(py), C[name]["size"], f"sizeof {name}")
        for field, offset in C[name].get("fields", {}).items():
            self.assertEqual(getattr(py, field).offset, offset, f"{name}.{field}")

    def test_structs(self):
        self.check_struct(_lib.Stats, "Stats")
        self.check_struct(_lib.PoolStats, "PoolStats")
        self.check_struct(_lib.Checkpoint, "Checkpoint")
        self.check_struct(_lib.Failure, "Failure")

    def test_kinds_in_the_definition_and_the_docs(self):
        rows = re.findall(r'^KIND\((\w+), (\d+), "([^"]+)"\)', open(
            os.path.join(SOURCE, "src", "kinds.def")).read(), re.M)
        self.assertEqual(len(rows) + 1, C["kind_count"])
        docs = open(os.path.join(SOURCE, "docs", "check.md")).read()
        listed = docs[docs.index("Memory kinds: `device`"):]
        listed = listed[:listed.index("\n\n")]
        for ident, value, name in rows:
            self.assertEqual(C["kinds"][value], name, ident)
            self.assertIn(f"`{name}`", listed, f"docs/check.md does not list the kind {name}")


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
