#!/usr/bin/env python3
"""Draws the docs' diagrams of how gpumem works, as SVG, from the descriptions below: each box
is a part of the code (its file is named under it) and each arrow a call or a hand-over between
them, as the sources' opening comments describe. Regenerate after changing one:

    python3 docs/images/diagrams.py          (writes docs/images/*.svg)
    python3 docs/images/diagrams.py --check  (exit 1 when a committed SVG differs)

Plain Python, no packages: the SVG is written by hand, so the output is the same everywhere.
"""
import os
import sys
from xml.sax.saxutils import escape

HERE = os.path.dirname(os.path.abspath(__file__))
FONT = "DejaVu Sans, Helvetica, Arial, sans-serif"
MONO = "DejaVu Sans Mono, Menlo, Consolas, monospace"
COLORS = {"api": "#e8f0fe", "lib": "#e6f4ea", "cuda": "#fef7e0", "tool": "#f3e8fd",
          "prog": "#fce8e6", "out": "#f1f3f4"}
STROKE = {"api": "#4285f4", "lib": "#34a853", "cuda": "#f9ab00", "tool": "#a142f4",
          "prog": "#ea4335", "out": "#80868b"}
LINE = 15  # px between text lines


class Box:
    def __init__(self, key, x, y, w, title, lines=(), file=None, kind="lib", h=None):
        self.key, self.x, self.y, self.w, self.kind = key, x, y, w, kind
        self.title, self.lines, self.file = title, list(lines), file
        self.h = h or 30 + LINE * len(self.lines) + (LINE if file else 0)

    def anchor(self, side):
        return {"top": (self.x + self.w / 2, self.y), "bottom": (self.x + self.w / 2, self.y + self.h),
                "left": (self.x, self.y + self.h / 2), "right": (self.x + self.w, self.y + self.h / 2)}[side]

    def svg(self):
        out = ['<rect x="%g" y="%g" width="%g" height="%g" rx="8" fill="%s" stroke="%s" '
               'stroke-width="1.5"/>' % (self.x, self.y, self.w, self.h, COLORS[self.kind],
                                         STROKE[self.kind])]
        cx, y = self.x + self.w / 2, self.y + 20
        out.append('<text x="%g" y="%g" text-anchor="middle" font-family="%s" font-size="13" '
                   'font-weight="bold">%s</text>' % (cx, y, FONT, escape(self.title)))
        for line in self.lines:
            y += LINE
            out.append('<text x="%g" y="%g" text-anchor="middle" font-family="%s" font-size="11.5">'
                       '%s</text>' % (cx, y, FONT, escape(line)))
        if self.file:
            y += LINE
            out.append('<text x="%g" y="%g" text-anchor="middle" font-family="%s" font-size="10.5" '
                       'fill="#5f6368">%s</text>' % (cx, y, MONO, escape(self.file)))
        return out


def arrow(boxes, a, b, label="", sides=("bottom", "top"), dashed=False, dx=0, label_at=0.5,
          label_dx=6, anchor="start", label_dy=4):
    x1, y1 = boxes[a].anchor(sides[0])
    x2, y2 = boxes[b].anchor(sides[1])
    x1, x2 = x1 + dx, x2 + dx
    style = ' stroke-dasharray="5,4"' if dashed else ""
    out = ['<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#3c4043" stroke-width="1.4" '
           'marker-end="url(#head)"%s/>' % (x1, y1, x2, y2, style)]
    if label:
        lx, ly = x1 + (x2 - x1) * label_at + label_dx, y1 + (y2 - y1) * label_at + label_dy
        for i, part in enumerate(label.split("\n")):
            out.append('<text x="%g" y="%g" text-anchor="%s" font-family="%s" font-size="11" '
                       'fill="#3c4043">%s</text>' % (lx, ly + i * 13, anchor, FONT, escape(part)))
    return out


def frame(x, y, w, h, label):
    return ['<rect x="%g" y="%g" width="%g" height="%g" rx="10" fill="none" stroke="#9aa0a6" '
            'stroke-dasharray="6,4"/>' % (x, y, w, h),
            '<text x="%g" y="%g" font-family="%s" font-size="11.5" fill="#5f6368">%s</text>'
            % (x + 10, y + 16, FONT, escape(label))]


def document(width, height, title, parts):
    head = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" '
            'role="img" aria-label="%s">' % (width, height, width, height, escape(title)),
            '<title>%s</title>' % escape(title),
            '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
            'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" '
            'fill="#3c4043"/></marker></defs>',
            '<rect width="100%" height="100%" fill="#ffffff"/>']
    return "\n".join(head + parts + ["</svg>"]) + "\n"


def pools():
    """docs/pools.md: an allocation's way through a thread cache, the pool's arena and CUDA."""
    b = {x.key: x for x in [
        Box("call", 215, 20, 370, "gpumem_pool_alloc(pool, n, stream)", kind="api",
            lines=["gpumem_free(p) releases a block like any allocation"]),
        Box("tc", 215, 130, 370, "thread cache", file="src/tcache.c",
            lines=["a bin per (pool, stream) of the calling thread:",
                   "a stack of free blocks per size class; no lock"]),
        Box("arena", 215, 270, 370, "the pool: an arena per stream", file="src/pool.c, src/pool_arena.c",
            lines=["small (up to 1 MiB) and large; one mutex;",
                   "free blocks in bins by size class: a block is",
                   "carved at the start of one, the rest stays free;",
                   "a released block merges with free neighbours"]),
        Box("pages", 40, 475, 350, "device pool: pages", kind="cuda", file="src/pool_pages.c",
            lines=["an address range as large as the device;",
                   "2 MiB pages mapped (cuMemCreate, cuMemMap)",
                   "only under blocks in use; a spare page moves"]),
        Box("segs", 410, 475, 350, "segments", kind="cuda", file="src/pool_arena.c",
            lines=["where pages cannot be mapped, and pinned:",
                   "2 MiB, 20 MiB or the block's size from CUDA;",
                   "pinned: cudaMallocHost chunks (16 MiB)"]),
        Box("reg", 615, 20, 165, "the registry", file="src/registry.c",
            lines=["a record per block:", "reports, leak and", "double-free checks"]),
    ]}
    parts = []
    for box in b.values():
        parts += box.svg()
    down = dict(dx=-80, label_dx=-8, anchor="end")
    back = dict(dx=80, label_dx=8, dashed=True)
    parts += arrow(b, "call", "tc", "1. pop from the\nthread's bin", **down)
    parts += arrow(b, "call", "tc", "release: push onto the\nreleasing thread's bin", **back)
    parts += arrow(b, "tc", "arena", "2. empty: take a batch\n(one lock for several)", **down)
    parts += arrow(b, "tc", "arena", "stack full: half goes\nback, one locked call", **back)
    parts += arrow(b, "arena", "pages", "3. no free block fits:\nmap pages under it",
                   sides=("bottom", "top"), dx=-60, label_dx=-18, anchor="end", label_at=0.45)
    parts += arrow(b, "arena", "segs", "3. no free block fits:\na new segment",
                   sides=("bottom", "top"), dx=60, label_dx=18, label_at=0.45)
    parts += arrow(b, "call", "reg", "", sides=("right", "left"), dashed=True)
    parts += ['<text x="400" y="610" text-anchor="middle" font-family="%s" font-size="11.5" '
              'fill="#5f6368">A block is reused on the stream it was released on; '
              'gpumem_pool_trim gives what no block needs back to CUDA</text>' % FONT]
    return document(800, 625, "How a pool allocation is served (docs/pools.md)", parts)


def copies():
    """docs/copies.md: a staged copy from pageable memory to the device, through the ring."""
    b = {x.key: x for x in [
        Box("call", 230, 20, 340, "gpumem_copy(dst, src, bytes)", kind="api",
            lines=["direction from both pointers: the registry,",
                   "else cudaPointerGetAttributes; bounds checked"], file="src/copy.c"),
        Box("direct", 20, 150, 220, "straight to CUDA", kind="cuda",
            lines=["pinned or device at both", "ends, or under 16 MiB", "(GPUMEM_COPY_STAGE_MIN)"]),
        Box("reg", 290, 150, 220, "registration cache", file="src/regcache.c",
            lines=["large pageable buffers,", "registered at the first copy,", "then at pinned speed"]),
        Box("ring", 560, 150, 220, "staging ring", file="src/copy.c",
            lines=["per device and direction:", "pinned slots, worker threads,", "an event per slot"]),
        Box("src", 560, 300, 220, "pageable source", kind="prog",
            lines=["malloc'd host memory"]),
        Box("slots", 560, 385, 220, "slot k, slot k+1, ...", kind="cuda",
            lines=["workers memcpy into slot k+1", "while the DMA engine reads k"]),
        Box("gpu", 290, 385, 220, "device memory", kind="cuda",
            lines=["cudaMemcpyAsync per slot,", "on the caller's stream"]),
        Box("hooks", 20, 300, 220, "release hooks", file="src/reghooks.c",
            lines=["free, munmap, madvise ...", "drop registrations first"]),
    ]}
    parts = []
    for box in b.values():
        parts += box.svg()
    parts += arrow(b, "call", "direct", "", sides=("bottom", "top"))
    parts += arrow(b, "call", "reg", "", sides=("bottom", "top"))
    parts += arrow(b, "call", "ring", "", sides=("bottom", "top"))
    parts += arrow(b, "ring", "src", "", sides=("bottom", "top"))
    parts += arrow(b, "src", "slots", "copy in parallel", sides=("bottom", "top"), label_dx=8)
    parts += arrow(b, "slots", "gpu", "DMA", sides=("left", "right"), label_at=0.5, label_dx=0,
                   anchor="middle", label_dy=-6)
    parts += arrow(b, "reg", "gpu", "DMA from the\nregistered pages", sides=("bottom", "top"),
                   label_dx=8)
    parts += arrow(b, "hooks", "reg", "", sides=("right", "left"), dashed=True)
    parts += ['<text x="400" y="485" text-anchor="middle" font-family="%s" font-size="11.5" '
              'fill="#5f6368">From the device it runs the other way: transfers into slots are '
              'queued ahead, each drained once its event says it landed</text>' % FONT]
    return document(800, 500, "How gpumem_copy moves pageable memory (docs/copies.md)", parts)


def check():
    """docs/check.md: how gpumem check attaches to an unmodified program."""
    b = {x.key: x for x in [
        Box("cmd", 40, 20, 300, "gpumem check -- ./app", kind="tool", file="tools/check/launch.c",
            lines=["sets CUDA_INJECTION64_PATH and LD_PRELOAD", "to libgpumem_check.so, runs ./app"]),
        Box("status", 460, 20, 300, "exit status, report", kind="out",
            lines=["the program's own, or --error-exitcode", "when something was found"]),
        Box("app", 40, 150, 300, "./app (unmodified)", kind="prog",
            lines=["calls cudaMalloc, cudaFree, cuMemCreate,", "free(), delete ... as it always does"]),
        Box("cuda", 40, 270, 300, "CUDA runtime and driver", kind="cuda",
            lines=["loads the library named by", "CUDA_INJECTION64_PATH at its start"]),
        Box("cupti", 40, 380, 300, "CUPTI callbacks", kind="tool", file="tools/check/cupti.c",
            lines=["every allocation and release call of the", "runtime and driver APIs, with its stack"]),
        Box("preload", 460, 150, 300, "free(), realloc(), delete", kind="tool",
            file="tools/check/preload.c",
            lines=["LD_PRELOAD: CUDA host memory given to", "free() is reported and released rightly"]),
        Box("engine", 460, 300, 300, "the engine", kind="tool", file="tools/check/engine.c",
            lines=["the library's registry: one record per", "allocation; a release is right, mismatched,",
                   "double, interior or unknown"]),
        Box("out", 460, 450, 300, "the report at exit", kind="out", file="tools/check/render_text.c",
            lines=["leaks with their stacks, peaks;", "--json, --trace (gpumem report)"]),
    ]}
    parts = frame(20, 125, 760, 410, "the checked process")
    for box in b.values():
        parts += box.svg()
    parts += arrow(b, "cmd", "app", "starts", sides=("bottom", "top"))
    parts += arrow(b, "app", "cuda", "CUDA calls", sides=("bottom", "top"))
    parts += arrow(b, "cuda", "cupti", "each memory call", sides=("bottom", "top"))
    parts += arrow(b, "app", "preload", "free(p)", sides=("right", "left"), label_dx=0,
                   anchor="middle", label_dy=-8)
    parts += arrow(b, "cupti", "engine", "events", sides=("right", "left"), label_at=0.5,
                   label_dx=0, anchor="middle", label_dy=-10)
    parts += arrow(b, "preload", "engine", "events", sides=("bottom", "top"))
    parts += arrow(b, "engine", "out", "", sides=("bottom", "top"))
    parts += arrow(b, "out", "status", "a status file per process", sides=("right", "right"),
                   dashed=True, dx=12, label_at=0.9, label_dx=-8, anchor="end")
    return document(800, 555, "How gpumem check attaches to a program (docs/check.md)", parts)


DIAGRAMS = {"pools-flow.svg": pools, "copies.svg": copies, "check.svg": check}


def main(argv):
    stale = []
    for name, draw in DIAGRAMS.items():
        path = os.path.join(HERE, name)
        text = draw()
        if "--check" in argv:
            old = open(path, encoding="utf-8").read() if os.path.exists(path) else None
            if old != text:
                stale.append(name)
            continue
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print("wrote", path)
    if stale:
        print("not as diagrams.py draws them (run python3 docs/images/diagrams.py): "
              + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
