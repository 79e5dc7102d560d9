#!/usr/bin/env python3
"""gpumem.views: the Python package's way to PyTorch's memory viewer and to Perfetto, through
the gpumem command (GPUMEM_COMMAND names the one built here).

usage: GPUMEM_COMMAND=GPUMEM test_views.py TRACE   (a trace from tests/report/make_trace.c)
"""
import os
import pickle
import sys
import tempfile
import unittest

import gpumem.views

TRACE = None


class Views(unittest.TestCase):
    def test_memory_viz(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "s.pickle")
            self.assertEqual(gpumem.views.memory_viz(TRACE, out), out)
            with open(out, "rb") as f:
                snap = pickle.load(f)
            self.assertIn("segments", snap)
            self.assertGreater(len(snap["device_traces"][0]), 4)
            gpumem.views.memory_viz(TRACE, out, max_entries=3)
            with open(out, "rb") as f:
                self.assertLessEqual(len(pickle.load(f)["device_traces"][0]), 3)

    def test_perfetto(self):
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "t.pftrace")
            self.assertEqual(gpumem.views.perfetto(TRACE, out), out)
            self.assertGreater(os.path.getsize(out), 100)
            gpumem.views.perfetto([TRACE, TRACE], out)

    def test_errors_say_why(self):
        with tempfile.TemporaryDirectory() as d:
            with self.assertRaises(gpumem.views.ViewError) as e:
                gpumem.views.memory_viz(os.path.join(d, "none.json"), os.path.join(d, "s"))
            self.assertIn("cannot read the trace", str(e.exception))
            old = os.environ.get("GPUMEM_COMMAND")
            os.environ["GPUMEM_COMMAND"] = os.path.join(d, "no-gpumem")
            try:
                with self.assertRaises(OSError):
                    gpumem.views.perfetto(TRACE, os.path.join(d, "t.pftrace"))
            finally:
                os.environ["GPUMEM_COMMAND"] = old


if __name__ == "__main__":
    TRACE = sys.argv.pop(1)
    unittest.main()
