"""A trace of a program's memory (GPUMEM_TRACE, or `gpumem check --trace`) in the viewers people
already use: PyTorch's memory viewer and Perfetto.

    import gpumem.views
    gpumem.views.memory_viz("trace.json", "snapshot.pickle")   # pytorch.org/memory_viz
    gpumem.views.perfetto("trace.json", "trace.pftrace")       # ui.perfetto.dev

Each runs `gpumem report` (--memory-viz, --perfetto), the one writer of these formats, and
returns the output's path. docs/timeline.md says what each shows.
"""
import os
import shutil
import subprocess

__all__ = ["ViewError", "command", "memory_viz", "perfetto"]


class ViewError(Exception):
    """gpumem report could not be run, or could not make the file: its message says why."""


def command():
    """The gpumem command these use: $GPUMEM_COMMAND, else the one installed with the library
    this package loads (PREFIX/bin/gpumem), else the first on PATH."""
    env = os.environ.get("GPUMEM_COMMAND")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        from . import _location  # written at install: where the library lies
        lib = os.path.normpath(os.path.join(here, _location.LIBRARY_DIR))
        for up in ("..", os.path.join("..", "..")):
            cand = os.path.normpath(os.path.join(lib, up, "bin", "gpumem"))
            if os.access(cand, os.X_OK):
                return cand
    except ImportError:
        pass
    found = shutil.which("gpumem")
    if not found:
        raise ViewError("the gpumem command was not found (not installed beside this package, "
                        "not on PATH); set GPUMEM_COMMAND to its path, or install gpumem with "
                        "scripts/install")
    return found


def _report(args, out):
    run = subprocess.run([command(), "report"] + args, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    if run.returncode != 0:
        raise ViewError(run.stdout.decode("utf-8", "replace").strip())
    return out


def memory_viz(trace, out, max_entries=None):
    """Writes PyTorch's memory snapshot of trace to out (what torch.cuda.memory._dump_snapshot
    writes): drag it onto pytorch.org/memory_viz, or read it with torch.cuda._memory_viz.
    max_entries keeps the last that many entries of each device, as PyTorch's record does."""
    args = ["--memory-viz", os.fspath(trace), "-o", os.fspath(out)]
    if max_entries is not None:
        args += ["--max-entries", str(int(max_entries))]
    return _report(args, out)


def perfetto(traces, out):
    """Writes Perfetto's protobuf trace of one trace, or of several (a job's ranks, side by
    side), to out: open it in ui.perfetto.dev."""
    if isinstance(traces, (str, bytes, os.PathLike)):
        traces = [traces]
    args = []
    for t in traces:
        args += ["--perfetto", os.fspath(t)]
    return _report(args + ["-o", os.fspath(out)], out)
