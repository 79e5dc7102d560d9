"""PyTorch, CuPy and Numba on gpumem's pools, on a GPU (ctest label gpu).

    frameworks_gpu.py torch|cupy|numba     the checks of one framework (exit 77: skipped
                                           without the framework or without a GPU)
    frameworks_gpu.py child NAME [ARGS]    one program of the checks, run in a process of its own

torch: a 2-layer MLP trained 50 steps with a fixed seed gives the same losses with
gpumem.torch.use() as with PyTorch's own allocator (relative 1e-5), and
gpumem.torch.memory_stats() agrees with gpumem.stats(); a block released on one stream is
reused by that stream's next request and not by another stream's; a request the device cannot hold makes
PyTorch raise, and gpumem.last_error() then has gpumem's words; use() after CUDA is set up
is refused. cupy and numba: a program runs on
gpumem's pools, and gpumem.stats() shows its allocations. Each: a planted leak through the
framework is in gpumem's leak report at exit, with where it was made.

The leak is what a C extension does when it forgets a Py_DECREF: an object the framework made
whose reference count never falls to zero, so the framework never releases its memory.
"""
import ctypes
import importlib
import json
import os
import signal
import subprocess
import sys

SKIP = 77
HERE = os.path.abspath(__file__)


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def child(name, *args, env=None):
    full = dict(os.environ)
    full.update(env or {})
    r = subprocess.run([sys.executable, HERE, "child", name, *args], env=full,
                       capture_output=True, text=True, timeout=300)
    return r


def last_json(r, what):
    if r.returncode != 0:
        fail(f"{what} exited with {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def leak_forever(obj):
    """The reference a forgotten Py_DECREF leaves behind."""
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(obj))


# ---- children -------------------------------------------------------------------------------

def child_torch_train(mode):
    import torch
    if mode == "gpumem":
        import gpumem
        gpumem.torch.use()
    torch.manual_seed(1234)
    x = torch.randn(4096, 256, device="cuda")
    y = torch.randn(4096, 16, device="cuda")
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(),
                                torch.nn.Linear(512, 16)).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    losses = []
    for _ in range(50):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    torch.cuda.synchronize()
    out = {"losses": losses}
    if mode == "gpumem":
        import gpumem
        out["memory_stats"] = gpumem.torch.memory_stats()
        out["stats"] = gpumem.stats()["devices"][torch.cuda.current_device()]
        # Live now at least: x, y, and each parameter with its gradient and momentum buffer.
        params = sum(p.numel() for p in model.parameters())
        out["live_at_least"] = 4 * (x.numel() + y.numel() + 3 * params)
    print(json.dumps(out))


def child_torch_leak():
    import torch
    import gpumem
    gpumem.torch.use()
    t = torch.empty(1 << 20, dtype=torch.float32, device="cuda")   # 4 MiB
    leak_forever(t)
    del t
    torch.cuda.synchronize()


def child_too_late():
    import torch
    import gpumem
    torch.zeros(1, device="cuda")
    try:
        gpumem.torch.use()
    except gpumem.Error as e:
        print(e)


def child_torch_streams():
    import torch
    import gpumem
    gpumem.torch.use()
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.stream(s1):
        a = torch.ones(1 << 20, device="cuda")
        first = a.data_ptr()
        del a                       # back to s1's cache; s1 may still be writing ones
    with torch.cuda.stream(s2):
        b = torch.zeros(1 << 20, device="cuda")
    with torch.cuda.stream(s1):
        c = torch.empty(1 << 20, device="cuda")
    torch.cuda.synchronize()
    print(json.dumps({"first": first, "other_stream": b.data_ptr(), "same_stream": c.data_ptr()}))


def child_torch_oom():
    import torch
    import gpumem
    gpumem.torch.use()
    try:
        t = torch.empty(1 << 42, dtype=torch.uint8, device="cuda")   # 4 TiB
    except Exception as e:   # torch.OutOfMemoryError, a RuntimeError
        err = gpumem.last_error()
        print(json.dumps({"raised": type(e).__name__, "code": err.code, "message": str(err)}))
        return
    print(json.dumps({"raised": None, "data_ptr": t.data_ptr()}))


def child_cupy_program():
    import cupy
    import gpumem
    gpumem.cupy.use()
    before = gpumem.stats()["bytes"]["device"]
    a = cupy.arange(1 << 20, dtype=cupy.float32)
    b = a * 2
    total = float(b.sum())
    during = gpumem.stats()["bytes"]["device"]
    del a, b
    after = gpumem.stats()["bytes"]["device"]
    print(json.dumps({"total": total, "before": before, "during": during, "after": after,
                      "count": gpumem.stats()["count"]["device"]}))


def child_cupy_leak():
    import cupy
    import gpumem
    gpumem.cupy.use()
    a = cupy.zeros(3 << 18, dtype=cupy.float32)   # 3 MiB
    leak_forever(a)


def numba_add_kernel():
    from numba import cuda

    @cuda.jit
    def add(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = a[i] + b[i]
    return add


def child_numba_plain():
    """A Numba kernel without gpumem: whether this Numba can compile one here at all."""
    import numpy as np
    from numba import cuda
    out = cuda.device_array(256, dtype=np.float32)
    numba_add_kernel()[1, 256](cuda.to_device(np.ones(256, np.float32)),
                               cuda.to_device(np.ones(256, np.float32)), out)
    print(json.dumps({"ok": bool((out.copy_to_host() == 2).all())}))


def child_numba_program(kernel="1"):
    import numpy as np
    from numba import cuda
    import gpumem
    if not os.environ.get("NUMBA_CUDA_MEMORY_MANAGER"):
        cuda.set_memory_manager(gpumem.numba.MemoryManager)
    n = 1 << 20
    a = cuda.to_device(np.arange(n, dtype=np.float32))
    b = cuda.to_device(np.ones(n, dtype=np.float32))
    out = cuda.device_array(n, dtype=np.float32)
    if kernel == "1":
        numba_add_kernel()[(n + 255) // 256, 256](a, b, out)
    else:  # this Numba cannot compile kernels: the arrays' memory still goes through gpumem
        out.copy_to_device(a.copy_to_host() + b.copy_to_host())
    host = out.copy_to_host()
    during = gpumem.stats()["bytes"]["device"]
    ok = bool((host == np.arange(n, dtype=np.float32) + 1).all())
    info = cuda.current_context().get_memory_info()
    print(json.dumps({"ok": ok, "during": during, "count": gpumem.stats()["count"]["device"],
                      "free": info.free, "total": info.total}))


def child_numba_leak():
    import numpy as np
    from numba import cuda
    import gpumem
    cuda.set_memory_manager(gpumem.numba.MemoryManager)
    a = cuda.device_array(5 << 18, dtype=np.float32)   # 5 MiB
    leak_forever(a)
    # Numba's finalizers release arrays still referenced when the interpreter exits (seen on
    # the H200: nothing was live at exit), so a forgotten reference is found while the
    # program runs: gpumem's leak report of what is live now.
    gpumem.report(file=sys.stderr)


# ---- checks ---------------------------------------------------------------------------------

def check_leak(name, size_text, site_patterns, when="still live at exit"):
    r = child(name, env={"GPUMEM_LEAK_REPORT": "full", "GPUMEM_BACKTRACE": "1"})
    if r.returncode != 0:
        fail(f"{name} exited with {r.returncode}:\n{r.stderr}")
    lines = [line for line in r.stderr.splitlines() if f"{size_text} in 1 device allocation" in line]
    if when not in r.stderr or not lines:
        fail(f"{name}: the leak of {size_text} is not in the report:\n{r.stderr}")
    if not any(p in lines[0] for p in site_patterns):
        fail(f"{name}: the leak's site is none of {site_patterns}:\n{r.stderr}")
    print(f"{name}: reported:\n" + "\n".join(
        line for line in r.stderr.splitlines() if line.startswith(("gpumem:", "    ", "      "))))


def check_torch():
    native = last_json(child("torch_train", "native"), "the training loop with PyTorch's allocator")
    pooled = last_json(child("torch_train", "gpumem"), "the training loop with gpumem.torch.use()")
    for step, (a, b) in enumerate(zip(native["losses"], pooled["losses"])):
        if abs(a - b) > 1e-5 * max(abs(a), abs(b)):
            fail(f"step {step}: loss {b} with gpumem, {a} without")
    print(f"50 steps, same losses: first {native['losses'][0]:.6f}, last {native['losses'][-1]:.6f}")
    m, s = pooled["memory_stats"], pooled["stats"]
    # Counts are exact; gpumem.stats' bytes may lag by up to 4 MiB for each other thread that
    # allocated (PyTorch's backward thread): docs/leaks.md.
    if m["allocation.all.current"] != s["count"]["current"]:
        fail(f"allocation.all.current {m['allocation.all.current']} != {s['count']['current']}")
    if abs(m["requested_bytes.all.current"] - s["bytes"]["current"]) > 4 * (4 << 20):
        fail(f"requested_bytes.all.current {m['requested_bytes.all.current']} is far from "
             f"gpumem.stats' {s['bytes']['current']}")
    if not (m["requested_bytes.all.current"] <= m["allocated_bytes.all.current"]
            <= m["reserved_bytes.all.current"] <= m["reserved_bytes.all.peak"]):
        fail(f"requested <= allocated <= reserved <= peak reserved does not hold: {m}")
    if m["allocated_bytes.all.peak"] < m["allocated_bytes.all.current"] or s["count"]["total"] < 50:
        fail(f"peaks or totals disagree: {m} {s}")
    if m["requested_bytes.all.current"] < pooled["live_at_least"]:
        fail(f"the tensors alive hold {pooled['live_at_least']} bytes, gpumem counts fewer: {m}")
    print("memory_stats agrees with gpumem.stats:", json.dumps(m))
    st = last_json(child("torch_streams"), "the two-stream program")
    if st["other_stream"] == st["first"] or st["same_stream"] != st["first"]:
        fail(f"a block released on one stream: {st}")
    print("a block released on stream 1 went to stream 1's next request, not stream 2's")
    # PyTorch's pluggable allocator does not check for NULL (a tensor at address 0 follows):
    # the hook stops the process with gpumem's reason instead.
    r = child("torch_oom")
    if r.returncode != -signal.SIGABRT or "gpumem: error: out of memory: 4.0 TiB" not in r.stderr \
            or "PyTorch cannot be told that an allocation failed" not in r.stderr:
        fail(f"out of memory under gpumem.torch: status {r.returncode}, not SIGABRT with "
             f"gpumem's reason:\n{r.stdout}\n{r.stderr}")
    print("out of memory: stopped with SIGABRT and " + r.stderr.strip().splitlines()[0])
    r = child("too_late")
    if "gpumem.torch.use() comes too late" not in r.stdout:
        fail(f"too late was not said:\n{r.stdout}\n{r.stderr}")
    check_leak("torch_leak", "4.0 MiB", ["(gpumem_torch_alloc)", HERE])


def check_cupy():
    out = last_json(child("cupy_program"), "the CuPy program")
    if out["total"] != float(sum(range(1 << 20)) * 2):
        fail(f"wrong sum {out['total']}")
    grew = out["during"]["current"] - out["before"]["current"]
    if grew < 2 * (4 << 20) or out["after"]["current"] != out["before"]["current"]:
        fail(f"gpumem.stats does not show CuPy's arrays: {out}")
    print("CuPy on gpumem:", json.dumps(out))
    check_leak("cupy_leak", "3.0 MiB", [f"{HERE}:", "(gpumem_cupy_malloc)"])


def check_numba():
    probe = child("numba_plain")
    kernel = "1" if probe.returncode == 0 else "0"
    if kernel == "0":
        why = (probe.stderr.strip().splitlines() or ["?"])[-1]
        print(f"note: this Numba cannot compile a kernel even without gpumem ({why}); "
              "the arrays are checked without one")
    for env in ({}, {"NUMBA_CUDA_MEMORY_MANAGER": "gpumem.numba"}):
        out = last_json(child("numba_program", kernel, env=env), f"the Numba program {env}")
        if not out["ok"] or out["during"]["current"] < 3 * (4 << 20) or out["total"] <= 0:
            fail(f"Numba on gpumem {env}: {out}")
        print("Numba on gpumem", env, json.dumps(out))
    check_leak("numba_leak", "5.0 MiB", [f"{HERE}:"], when="still live, from 1 call site")


def have(framework):
    try:
        module = importlib.import_module(framework)
    except ImportError as e:
        print(f"{framework} is not installed ({e}): skipped")
        return False
    ok = {"torch": lambda: module.cuda.is_available(),
          "cupy": lambda: module.cuda.runtime.getDeviceCount() > 0,
          "numba": lambda: importlib.import_module("numba.cuda").is_available()}[framework]
    try:
        if ok():
            return True
    except Exception as e:  # no driver: the frameworks raise their own errors
        print(f"{framework}: no GPU ({e}): skipped")
        return False
    print(f"{framework}: no GPU: skipped")
    return False


def main():
    if sys.argv[1] == "child":
        globals()["child_" + sys.argv[2]](*sys.argv[3:])
        return 0
    framework = sys.argv[1]
    if not have(framework):
        return SKIP
    {"torch": check_torch, "cupy": check_cupy, "numba": check_numba}[framework]()
    print(f"{framework}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
