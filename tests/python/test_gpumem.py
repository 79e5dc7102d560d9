"""The gpumem Python package on the simulated device (GPUMEM_BACKEND=sim, 1 GiB): statistics,
reports, errors as gpumem.Error with the library's words, how the library is found, and the
framework glue against small stand-ins for torch, cupy and numba written by the test (the
real frameworks are exercised by the gpu tests)."""
import contextlib
import ctypes
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

import gpumem

HERE = os.path.abspath(__file__)


def line_of(marker):
    """The line of this file that holds marker (in a comment)."""
    with open(HERE, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if marker in text and "line_of(" not in text:
                return number
    raise AssertionError(marker)


def run_python(code, **env):
    full = dict(os.environ, **env)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full,
                          capture_output=True, text=True, timeout=60)


def write_tree(root, files):
    for name, text in files.items():
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))


class StatsAndReport(unittest.TestCase):
    def test_stats_exact(self):
        before = gpumem.stats()
        a = gpumem.alloc(1000)
        b = gpumem.alloc(3 << 20, stream=0x1000)
        s = gpumem.stats()
        dev = s["bytes"]["device"]
        self.assertEqual(dev["current"], before["bytes"]["device"]["current"] + 1000 + (3 << 20))
        self.assertEqual(s["count"]["device"]["current"], before["count"]["device"]["current"] + 2)
        self.assertEqual(s["count"]["all"]["total"], before["count"]["all"]["total"] + 2)
        self.assertEqual(s["devices"][0]["bytes"]["current"], dev["current"])
        self.assertEqual(s["bytes"]["pinned"]["current"], 0)
        gpumem.free(a)
        gpumem.free(b, stream=0x1000)
        s = gpumem.stats()
        self.assertEqual(s["bytes"]["device"]["current"], before["bytes"]["device"]["current"])
        self.assertGreaterEqual(s["bytes"]["device"]["peak"], 1000 + (3 << 20))
        self.assertEqual(gpumem.alloc(0), 0)

    def test_report_names_the_python_line(self):
        p = gpumem.alloc(1000)  # report-site
        text = gpumem.report()
        gpumem.free(p)
        self.assertIn("1 allocation (1000 B) still live", text)
        self.assertIn(f"1000 B in 1 device allocation at {HERE}:{line_of('# report-site')} "
                      "(test_report_names_the_python_line)", text)
        self.assertEqual(gpumem.report(), "")
        self.assertEqual(gpumem.report(full=False), "")

    def test_site_skips_installed_packages(self):
        with tempfile.TemporaryDirectory() as d:
            write_tree(d, {"site-packages/framework/__init__.py": """
                import gpumem
                def make(n):
                    return gpumem.alloc(n)
                """, "site-packages/main.py": """
                import framework, gpumem
                p = framework.make(800)
                print(gpumem.report(), end="")
                """})
            sys.path.insert(0, os.path.join(d, "site-packages"))
            try:
                import framework
                p = framework.make(700)  # through-framework
            finally:
                sys.path.pop(0)
            text = gpumem.report()
            gpumem.free(p)
            self.assertIn(f"700 B in 1 device allocation at {HERE}:"
                          f"{line_of('# through-framework')} (test_site_skips_installed_packages)",
                          text)
            # Every frame is in installed packages: the innermost is named.
            main = os.path.join(d, "site-packages", "main.py")
            r = subprocess.run([sys.executable, main], capture_output=True, text=True,
                               timeout=60)
            self.assertIn("800 B in 1 device allocation at " +
                          os.path.join(d, "site-packages", "framework", "__init__.py") +
                          ":4 (make)", r.stdout, r.stderr)

    def test_site_names_made_visible(self):
        # A file named with a terminal escape: the report names it with the escape written out.
        with tempfile.TemporaryDirectory() as d:
            script = os.path.join(d, "\x1b[2Jrun\u009b.py")
            with open(script, "w", encoding="utf-8") as f:
                f.write("import gpumem\np = gpumem.alloc(900)\nprint(gpumem.report(), end='')\n")
            r = subprocess.run([sys.executable, script], capture_output=True, text=True,
                               timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("\x1b", r.stdout + r.stderr)
        self.assertNotIn("\u009b", r.stdout + r.stderr)
        self.assertIn("\\x1b[2Jrun\\xc2\\x9b.py:2 (<module>)", r.stdout)

    def test_report_json_and_file(self):
        p = gpumem.alloc(4096)
        with tempfile.TemporaryFile("w+") as f:
            text = gpumem.report(json=True, file=f)
            f.seek(0)
            self.assertEqual(f.read(), text)
        gpumem.free(p)
        self.assertIn('"gpumem.report"', text)

    def test_leak_at_exit(self):
        r = run_python("""
            import gpumem
            def keep():
                return gpumem.alloc(12345)  # the leak
            kept = keep()
        """, GPUMEM_LEAK_REPORT="full")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("1 allocation (12.1 KiB) still live at exit", r.stderr)
        self.assertIn("12.1 KiB in 1 device allocation at <string>:4 (keep)", r.stderr)

    def test_no_leak_summary_for_what_exit_frees(self):
        # What a program leaves to the interpreter's exit (module globals, the framework's
        # caches) is not a leak: the default summary says nothing of it.
        r = run_python("""
            import gpumem
            kept = gpumem.alloc(12345)
        """)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertNotIn("still live at exit", r.stderr)


    def test_trace_names_the_python_line(self):
        with tempfile.TemporaryDirectory() as d:
            trace = os.path.join(d, "trace.json")
            r = run_python("""
                import gpumem
                def step():
                    p = gpumem.alloc(5000)
                    gpumem.free(p)
                step()
            """, GPUMEM_TRACE=trace)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(trace, encoding="utf-8") as f:
                events = json.load(f)["traceEvents"]
        made = [e for e in events if e.get("ph") == "b"]
        gone = [e for e in events if e.get("ph") == "e"]
        self.assertEqual([(e["name"], e["args"]["bytes"]) for e in made], [("<string>:4 (step)", 5000)])
        self.assertEqual([e["args"]["released_at"] for e in gone], ["<string>:5 (step)"])


class Errors(unittest.TestCase):
    def test_out_of_memory(self):
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.alloc(2 << 30)  # oom-site
        e = cm.exception
        self.assertEqual((e.code, e.name), (-1, "GPUMEM_ENOMEM"))
        self.assertTrue(str(e).startswith(
            "gpumem: error: out of memory: 2.0 GiB device memory requested from a device pool "
            f"at {HERE}:{line_of('# oom-site')} (test_out_of_memory)\n"), str(e))

    def test_said_once(self):
        # Raised, not also printed by the library's handler.
        r = run_python("""
            import sys, gpumem
            try:
                gpumem.alloc(5 << 30)
            except gpumem.Error as e:
                print(e, end="")
        """)
        self.assertTrue(r.stdout.startswith("gpumem: error: out of memory: 5.0 GiB"), r.stdout)
        self.assertEqual(r.stderr, "")

    def test_no_device_said_once_in_python_words(self):
        r = run_python("""
            import gpumem
            gpumem.alloc(1024)
        """, GPUMEM_BACKEND="cuda", GPUMEM_LIBCUDA="/nonexistent/libcuda.so.1")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("no usable CUDA device"), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("Traceback"), r.stderr)
        self.assertIn("gpumem.Error: gpumem: error: gpumem.alloc() at <string>:3 (<module>): "
                      "no usable CUDA device\n", r.stderr)
        self.assertIn("hint: for tests without a GPU, choose the simulated device with "
                      "GPUMEM_BACKEND=sim", r.stderr)
        self.assertNotIn("hooks.c", r.stderr)

    def test_printed_when_the_program_asks_to_abort(self):
        r = run_python("""
            import gpumem
            try:
                gpumem.alloc(5 << 30)
            except gpumem.Error:
                pass
        """, GPUMEM_ABORT_ON_ERROR="1")
        self.assertEqual(r.returncode, -6)
        self.assertIn("gpumem: error: out of memory: 5.0 GiB", r.stderr)

    def test_status_from_the_failing_call(self):
        # A finalizer that frees a block (which succeeds, and resets the thread's last error)
        # may run between the failing call and the moment its error is read: the collector
        # is made to run at nearly every allocation of a Python object.
        r = run_python("""
            import gc, gpumem
            class Holder:
                def __init__(self):
                    self.p = gpumem.alloc(256)
                    self.me = self   # a cycle: only the collector frees it
                def __del__(self):
                    gpumem.free(self.p)
            gc.set_threshold(1, 1, 1)
            codes = []
            for _ in range(100):
                for _ in range(3):
                    Holder()
                try:
                    gpumem.alloc(4 << 30)
                except gpumem.Error as e:
                    codes.append((e.code, e.name, str(e)[:30]))
            gc.collect()
            bad = [c for c in codes if c[0] != -1]
            print(len(codes), len(bad), bad[:1])
        """)
        self.assertEqual(r.stdout.strip(), "100 0 []", r.stderr)

    def test_python_words(self):
        p = gpumem.alloc(256)
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.free(p + 16)
        self.assertIn("gpumem.free() of ", str(cm.exception))
        self.assertIn("hint: pass the address gpumem.alloc() returned", str(cm.exception))
        gpumem.free(p)
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.free(p)
        self.assertIn("set what held it to None there", str(cm.exception))
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.alloc(3 << 30)
        self.assertIn("hint: drop tensors and arrays still referenced (gpumem.report() lists "
                      "what is live by Python line)", str(cm.exception))
        self.assertNotIn("NULL", str(cm.exception))
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.alloc(256, device=7)  # the simulated machine has one device
        self.assertTrue(str(cm.exception).startswith(
            "gpumem: error: gpumem.alloc(): making the device pool (device 7) failed at "
            f"{HERE}:"), str(cm.exception))

    def test_double_free(self):
        p = gpumem.alloc(256)
        gpumem.free(p)
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.free(p)  # second-free
        self.assertEqual(cm.exception.name, "GPUMEM_EDOUBLEFREE")
        self.assertIn(f"released again at  {HERE}:{line_of('# second-free')}", str(cm.exception))

    def test_foreign_pointer(self):
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.free(0x12345600)
        self.assertEqual(cm.exception.name, "GPUMEM_EFOREIGN")

    def test_negative_size(self):
        with self.assertRaises(ValueError):
            gpumem.alloc(-1)


class Arguments(unittest.TestCase):
    """Every integer is checked before ctypes sees it: ctypes would keep its low bits."""

    def live(self):
        s = gpumem.stats()
        return s["count"]["device"]["current"], s["bytes"]["device"]["current"]

    def test_sizes(self):
        before = self.live()
        for n in (2**64 + 16, 2**64, 2**70):
            with self.assertRaises(ValueError) as cm:
                gpumem.alloc(n)
            self.assertIn(f"nbytes must be at most {2**64 - 1} (2**64 - 1), not {n}",
                          str(cm.exception))
        for n in (1.0, "16", None):
            with self.assertRaises(TypeError):
                gpumem.alloc(n)
        self.assertEqual(self.live(), before)

        class Index:   # what numpy's integers and others offer
            def __index__(self):
                return 300
        p = gpumem.alloc(Index())
        self.assertEqual(self.live(), (before[0] + 1, before[1] + 300))
        gpumem.free(p)

    def test_addresses(self):
        q = gpumem.alloc(512)
        before = self.live()
        for bad in (q + 2**64, -q):
            with self.assertRaises(ValueError):
                gpumem.free(bad)
        with self.assertRaises(ValueError):
            gpumem.alloc(16, stream=2**64 + 0x1000)
        with self.assertRaises(ValueError):
            gpumem.free(q, stream=-1)
        self.assertEqual(self.live(), before)  # q is still live
        gpumem.free(q)
        gpumem.free(0)
        gpumem.free(None)

    def test_devices(self):
        before = self.live()
        for bad in (2**32 + 1, 2**31, -1, "cuda:01", "cuda:", "cpu", "cuda:0 ", "0"):
            with self.assertRaises(ValueError, msg=repr(bad)):
                gpumem.alloc(16, device=bad)
        with self.assertRaises(TypeError):
            gpumem.alloc(16, device=0.0)
        self.assertEqual(self.live(), before)

    def test_pytorch_forms(self):
        class Device:   # torch.device's attributes
            def __init__(self, type_, index):
                self.type, self.index = type_, index

        class Stream:   # torch.cuda.Stream's
            cuda_stream = 0x3000
        for device in (0, "cuda", "cuda:0", Device("cuda", 0), Device("cuda", None), None):
            p = gpumem.alloc(100, device=device, stream=Stream())
            self.assertEqual(gpumem.pool_stats(device)["blocks_in_use"],
                             gpumem.pool_stats(0)["blocks_in_use"])
            gpumem.free(p, stream=Stream())
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.alloc(100, device="cuda:1")   # one simulated device
        self.assertEqual(cm.exception.name, "GPUMEM_ECUDA")
        with self.assertRaises(ValueError):
            gpumem.alloc(100, device=Device("cpu", None))
        with self.assertRaises(ValueError):
            gpumem.pool_stats(2**32)


class Subinterpreters(unittest.TestCase):
    """Once a subinterpreter exists, CPython answers PyGILState_Check() with 1 on every thread:
    the hooks must still touch no Python object on a thread that does not hold the GIL (every
    PyTorch allocation comes so). Each case in a process of its own: the fault was a crash."""

    def run_case(self, code):
        r = run_python(textwrap.dedent("""
            import ctypes, sys, threading, time
            try:
                import _interpreters as interpreters
            except ImportError:
                import _xxsubinterpreters as interpreters
            import gpumem
            held = gpumem._lib.lib.held          # PyDLL: called with the GIL held
            free = gpumem._lib.lib.load()._lib   # CDLL: the GIL is released around the call
            def site(p):
                info = [l for l in gpumem.report().splitlines() if " at " in l and "B in 1" in l]
                return info[-1].split(" at ", 1)[1] if info else None  # FILE:LINE (FUNCTION)...
            interpreters.create()
        """) + textwrap.dedent(code))
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stdout

    def test_hook_without_the_gil(self):
        out = self.run_case("""
            p = free.gpumem_python_alloc(1000, 0, None)
            print(site(p))
            free.gpumem_python_free(p, None)
        """)
        self.assertRegex(out, r"hooks\.c:\d+ \(gpumem_python_alloc\)")

    def test_hook_while_another_thread_holds_the_gil(self):
        # The main thread holds the GIL (a loop that makes no call that releases it) while a
        # thread calls the hook without it: the site must not be the main thread's line.
        out = self.run_case("""
            done = []
            def worker():
                done.append(free.gpumem_python_alloc(2000, 0, None))
            t = threading.Thread(target=worker)
            t.start()
            end = time.monotonic() + 5
            while not done and time.monotonic() < end:
                pass  # the main thread's line
            t.join()
            print(site(done[0]))
            free.gpumem_python_free(done[0], None)
        """)
        self.assertRegex(out, r"hooks\.c:\d+ \(gpumem_python_alloc\)")
        self.assertNotIn("<string>", out)

    def test_with_the_gil_the_python_line(self):
        out = self.run_case("""
            p = gpumem.alloc(3000); line = sys._getframe().f_lineno
            print(site(p), line)
            gpumem.free(p)
        """)
        where, line = out.rsplit(" ", 1)
        self.assertTrue(where.startswith(f"<string>:{line.strip()} (<module>)"), out)

    def test_inside_the_subinterpreter(self):
        out = self.run_case("""
            sub = interpreters.create()
            interpreters.run_string(sub, "import gpumem; p = gpumem.alloc(4000); gpumem.free(p)")
            print("ran")
        """)
        self.assertEqual(out.strip(), "ran")


class Finding(unittest.TestCase):
    def test_missing_library(self):
        r = run_python("""
            import gpumem
            try:
                gpumem.stats()
            except gpumem.Error as e:
                print(e)
        """, GPUMEM_LIBRARY="/nonexistent/libgpumem_python.so")
        self.assertIn("gpumem: error: cannot load libgpumem_python.so; tried:\n"
                      "    /nonexistent/libgpumem_python.so (GPUMEM_LIBRARY):", r.stdout)
        self.assertIn("hint: set GPUMEM_LIBRARY to the path of libgpumem_python.so", r.stdout)

    def test_library_beside_libgpumem(self):
        with tempfile.TemporaryDirectory() as d:
            os.symlink(gpumem.library_path(), os.path.join(d, "libgpumem_python.so"))
            os.symlink(gpumem.library_path(), os.path.join(d, "libgpumem.so"))
            r = run_python("import gpumem; print(gpumem.library_path())",
                           GPUMEM_LIBRARY=os.path.join(d, "libgpumem.so"))
            self.assertEqual(r.stdout.strip(), os.path.join(d, "libgpumem_python.so"), r.stderr)

    def test_loader_search_path(self):
        r = run_python("import gpumem; print(gpumem.library_path()); print(gpumem.version())",
                       GPUMEM_LIBRARY="",
                       LD_LIBRARY_PATH=os.path.dirname(gpumem.library_path()))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.split()
        self.assertEqual(os.path.realpath(lines[0]), os.path.realpath(gpumem.library_path()))
        self.assertRegex(lines[1], r"^\d+\.\d+\.\d+$")

    def test_import_loads_no_framework(self):
        r = run_python("import sys, gpumem; print(sorted(m for m in ('torch', 'cupy', 'numba') "
                       "if m in sys.modules))")
        self.assertEqual(r.stdout.strip(), "[]", r.stderr)


FAKE_TORCH = {
    "torch/__init__.py": "from . import cuda\n",
    "torch/cuda/__init__.py": """
        from . import memory
        initialized = False
        def is_initialized():
            return initialized
        def current_device():
            return 0
    """,
    "torch/cuda/memory.py": """
        calls = []
        swap_error = None
        class CUDAPluggableAllocator:
            def __init__(self, path, alloc_fn_name, free_fn_name):
                self.args = (path, alloc_fn_name, free_fn_name)
        def change_current_allocator(allocator):
            if swap_error:
                raise RuntimeError(swap_error)
            calls.append(allocator.args)
    """,
}


class Torch(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        write_tree(cls.tmp.name, FAKE_TORCH)
        sys.path.insert(0, cls.tmp.name)
        import torch
        cls.torch = torch

    @classmethod
    def tearDownClass(cls):
        sys.path.remove(cls.tmp.name)
        for name in [m for m in sys.modules if m == "torch" or m.startswith("torch.")]:
            del sys.modules[name]
        cls.tmp.cleanup()

    def setUp(self):
        gpumem.torch._installed = None
        self.torch.cuda.initialized = False
        self.torch.cuda.memory.calls.clear()
        self.torch.cuda.memory.swap_error = None

    def test_use_passes_the_library_and_hooks(self):
        allocator = gpumem.torch.use()
        self.assertEqual(self.torch.cuda.memory.calls,
                         [(gpumem.library_path(), "gpumem_torch_alloc", "gpumem_torch_free")])
        self.assertTrue(os.path.isabs(allocator.args[0]))
        lib = ctypes.CDLL(allocator.args[0])   # what PyTorch will dlopen and look up
        self.assertTrue(lib.gpumem_torch_alloc and lib.gpumem_torch_free)
        self.assertIs(gpumem.torch.use(), allocator)    # a second call does nothing
        self.assertEqual(len(self.torch.cuda.memory.calls), 1)

    def test_too_late(self):
        self.torch.cuda.initialized = True
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.torch.use()
        self.assertIn("gpumem: error: gpumem.torch.use() comes too late: PyTorch has already "
                      "set up its CUDA allocator", str(cm.exception))
        self.assertIn("call gpumem.torch.use() right after `import torch`, before the first "
                      "CUDA tensor", str(cm.exception))
        self.assertEqual(self.torch.cuda.memory.calls, [])

    def test_too_late_said_by_pytorch(self):
        self.torch.cuda.memory.swap_error = "Can't swap an already initialized allocator"
        with self.assertRaises(gpumem.Error) as cm:
            gpumem.torch.use()
        self.assertIn("comes too late", str(cm.exception))
        self.assertIsNone(gpumem.torch._installed)

    def test_other_errors_pass_through(self):
        self.torch.cuda.memory.swap_error = "something else"
        with self.assertRaises(RuntimeError):
            gpumem.torch.use()

    def test_memory_stats_device_forms(self):
        class Device:
            type, index = "cuda", 0
        p = gpumem.alloc(2000)
        want = gpumem.torch.memory_stats(0)
        for device in (None, "cuda", "cuda:0", Device()):
            self.assertEqual(gpumem.torch.memory_stats(device), want, device)
        self.assertEqual(gpumem.torch.memory_stats("cuda:1")["allocated_bytes.all.current"], 0)
        gpumem.free(p)
        for bad in ("cpu", "cuda:x", 2**32 + 1, -1):
            with self.assertRaises(ValueError, msg=repr(bad)):
                gpumem.torch.memory_stats(bad)

    def test_memory_stats(self):
        held = gpumem._lib.lib.held
        held.gpumem_torch_alloc.restype = ctypes.c_void_p
        held.gpumem_torch_alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
        held.gpumem_torch_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int,
                                           ctypes.c_void_p]
        base = gpumem.torch.memory_stats()
        p = held.gpumem_torch_alloc(1000, 0, 0x5000)
        m = gpumem.torch.memory_stats()
        self.assertEqual(m["requested_bytes.all.current"], base["requested_bytes.all.current"] + 1000)
        self.assertEqual(m["requested_bytes.all.current"], gpumem.stats()["devices"][0]["bytes"]["current"])
        self.assertEqual(m["allocated_bytes.all.current"], base["allocated_bytes.all.current"] + 1024)
        self.assertEqual(m["allocation.all.current"], base["allocation.all.current"] + 1)
        self.assertEqual(m["allocation.all.allocated"], base["allocation.all.allocated"] + 1)
        self.assertGreaterEqual(m["reserved_bytes.all.current"], m["allocated_bytes.all.current"])
        self.assertGreaterEqual(m["allocated_bytes.all.peak"], m["allocated_bytes.all.current"])
        held.gpumem_torch_free(p, 1000, 0, 0x5000)
        m = gpumem.torch.memory_stats()
        self.assertEqual(m["allocated_bytes.all.current"], base["allocated_bytes.all.current"])
        self.assertEqual(m["allocation.all.freed"], base["allocation.all.freed"] + 1)
        # (through the generic hook: PyTorch's own stops the process on failure)
        self.assertIsNone(held.gpumem_python_alloc(4 << 30, 0, 0x5000))
        e = gpumem.last_error()   # what PyTorch's out-of-memory error does not say
        self.assertEqual((e.code, e.name), (-1, "GPUMEM_ENOMEM"))
        self.assertIn("gpumem: error: out of memory: 4.0 GiB device memory requested from a "
                      "device pool", str(e))
        m = gpumem.torch.memory_stats()
        self.assertEqual(m["num_ooms"], base["num_ooms"] + 1)
        self.assertEqual(m["num_alloc_retries"], base["num_alloc_retries"] + 1)


FAKE_CUPY = {
    "cupy/__init__.py": "from . import cuda\n",
    "cupy/cuda/__init__.py": """
        from . import memory
        current = None
        def set_allocator(fn):
            global current
            current = fn
    """,
    "cupy/cuda/memory.py": """
        class CFunctionAllocator:
            def __init__(self, param, malloc_func, free_func, owner):
                self.args = (param, malloc_func, free_func, owner)
            def malloc(self, size):
                return size
    """,
}

FAKE_NUMBA = {
    "numba/__init__.py": "from . import cuda\n",
    "numba/cuda/__init__.py": """
        import collections, contextlib
        from .cudadrv import driver
        MemoryInfo = collections.namedtuple("MemoryInfo", "free total")
        class HostOnlyCUDAMemoryManager:
            def __init__(self, context):
                self.context = context
                self.reset_calls = 0
            def reset(self):
                self.reset_calls += 1
            @contextlib.contextmanager
            def defer_cleanup(self):
                yield
        class MemoryPointer:
            def __init__(self, context, pointer, size, owner=None, finalizer=None):
                self.context, self.device_pointer, self.size = context, pointer, size
                self.finalizer = finalizer
    """,
    "numba/cuda/cudadrv/__init__.py": "",
    "numba/cuda/cudadrv/driver.py": "USE_NV_BINDING = False\n",
}


class CupyAndNumba(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        write_tree(cls.tmp.name, {**FAKE_CUPY, **FAKE_NUMBA})
        sys.path.insert(0, cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        sys.path.remove(cls.tmp.name)
        cls.tmp.cleanup()

    def test_cupy_use(self):
        import cupy
        gpumem.cupy.use()
        allocator = gpumem.cupy.allocator()
        self.assertEqual(cupy.cuda.current, allocator.malloc)
        param, malloc, free, owner = allocator.args
        lib = ctypes.CDLL(gpumem.library_path())
        self.assertEqual(malloc, ctypes.cast(lib.gpumem_cupy_malloc, ctypes.c_void_p).value)
        self.assertEqual(free, ctypes.cast(lib.gpumem_cupy_free, ctypes.c_void_p).value)
        # Called as CuPy calls them: malloc(param, size, device), free(param, ptr, device).
        c_malloc = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t,
                                     ctypes.c_int)(malloc)
        c_free = ctypes.PYFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)(free)
        before = gpumem.stats()["count"]["device"]["current"]
        p = c_malloc(param, 5000, 0)  # cupy-site
        self.assertIn(f"at {HERE}:{line_of('# cupy-site')} (test_cupy_use)", gpumem.report())
        self.assertEqual(gpumem.stats()["count"]["device"]["current"], before + 1)
        c_free(param, p, 0)
        self.assertEqual(gpumem.stats()["count"]["device"]["current"], before)
        self.assertIsNone(c_malloc(param, 3 << 30, 0))

    def test_numba_plugin(self):
        import numba.cuda
        import gpumem.numba as plugin
        self.assertIs(plugin._numba_memory_manager, plugin.MemoryManager)
        self.assertTrue(issubclass(plugin.MemoryManager, numba.cuda.HostOnlyCUDAMemoryManager))

        class Context:
            class device:
                id = 0
        mm = plugin.MemoryManager(Context())
        self.assertEqual(mm.interface_version, 1)
        mm.initialize()
        before = gpumem.stats()["bytes"]["device"]["current"]
        mp = mm.memalloc(4000)  # numba-site
        self.assertIsInstance(mp.device_pointer, ctypes.c_uint64)
        self.assertEqual(mp.size, 4000)
        self.assertEqual(gpumem.stats()["bytes"]["device"]["current"], before + 4000)
        self.assertIn(f"at {HERE}:{line_of('# numba-site')} (test_numba_plugin)", gpumem.report())
        mp.finalizer()
        self.assertEqual(gpumem.stats()["bytes"]["device"]["current"], before)
        said = io.StringIO()
        with contextlib.redirect_stderr(said):
            mp.finalizer()   # a finalizer has no caller to raise to: it says why
        self.assertIn("gpumem: error: double free of 3.9 KiB device memory", said.getvalue())
        empty = mm.memalloc(0)
        self.assertEqual(empty.device_pointer.value, 0)
        self.assertIsNone(empty.finalizer)
        with self.assertRaises(gpumem.Error) as cm:
            mm.memalloc(3 << 30)
        self.assertEqual(cm.exception.name, "GPUMEM_ENOMEM")
        info = mm.get_memory_info()
        self.assertEqual(info.total, 1 << 30)
        self.assertLessEqual(info.free, info.total)
        Context.device.id = 7   # the simulated machine has one device
        with self.assertRaises(gpumem.Error) as cm:
            mm.get_memory_info()
        self.assertEqual(str(cm.exception), "gpumem: error: the free and total memory of "
                         "device 7 cannot be read (cudaMemGetInfo failed, or there is no such "
                         "device)")
        Context.device.id = 0
        with self.assertRaises(gpumem.Error) as cm:
            mm.get_ipc_handle(mp)
        self.assertIn("IPC handle of gpumem pool memory is not supported", str(cm.exception))
        with mm.defer_cleanup():
            pass
        mm.reset()
        self.assertEqual(mm.reset_calls, 1)

    def test_numba_by_environment(self):
        r = run_python("""
            import importlib, os
            mod = importlib.import_module(os.environ["NUMBA_CUDA_MEMORY_MANAGER"])
            print(mod._numba_memory_manager.__name__)
        """, NUMBA_CUDA_MEMORY_MANAGER="gpumem.numba",
            PYTHONPATH=os.pathsep.join([self.tmp.name, os.environ.get("PYTHONPATH", "")]))
        self.assertEqual(r.stdout.strip(), "MemoryManager", r.stderr)


class Replay(unittest.TestCase):
    """PyTorch's side of gpumem bench --replay against a stand-in for torch's allocator calls."""

    class FakeTorch:
        class cuda:
            live = {}
            next_ptr = [0x1000]

            @classmethod
            def caching_allocator_alloc(cls, size, stream=None):
                cls.next_ptr[0] += 4096
                cls.live[cls.next_ptr[0]] = size
                return cls.next_ptr[0]

            @classmethod
            def caching_allocator_delete(cls, ptr):
                del cls.live[ptr]

            @classmethod
            def memory_reserved(cls):
                return sum(cls.live.values())

            @staticmethod
            def synchronize():
                pass

            @staticmethod
            def empty_cache():
                pass

    class Touch:
        """Counts the writes `cold[::64] += 1` makes."""
        def __init__(self):
            self.writes = 0

        def __getitem__(self, index):
            return self

        def __iadd__(self, value):
            self.writes += 1
            return self

        def __setitem__(self, index, value):
            pass

    def test_replay_measures_and_colds(self):
        from gpumem import replay
        with tempfile.TemporaryDirectory() as d:
            log = os.path.join(d, "r.log")
            with open(log, "w") as f:
                f.write("gpumem-replay 1\na 1 1000 0 1 0\na 2 3000 0 1 5\nf 1 1 9\n"
                        "a 3 500 0 1 12\nf 2 1 20\nf 3 1 30\n")
            ops = replay.load(log)
        self.assertEqual(len(ops), 6)
        torch = self.FakeTorch
        peak, at_peak, _, oom = replay.replay(torch, ops, {0: None}, True)
        self.assertEqual((peak, at_peak, oom), (4000, 4000, -1))
        self.assertEqual(torch.cuda.live, {})
        touch = self.Touch()
        _, _, ns, oom = replay.replay(torch, ops, {0: None}, False, touch)
        self.assertEqual(touch.writes, 6)  # once before each operation
        self.assertEqual(oom, -1)
        self.assertGreater(ns, 0)


if __name__ == "__main__":
    unittest.main()
