#!/usr/bin/env python3
"""Writes docs/images/pools.svg, the picture of a device pool's design in docs/pools.md.

Run from anywhere: python3 docs/images/pools.py. The picture is drawn from the description
below (which blocks and pages are where), not by hand, so that it can be changed and drawn
again."""
import os

W, H = 920, 460
LEFT = 150          # x of the address ranges' start
SCALE = 34          # pixels per MiB
PAGE = 2            # MiB per page

# Stream S1's large arena: (MiB from the start, MiB, state, label)
S1_BLOCKS = [(0, 5, "used", "5 MiB"), (5, 6, "free", "free 6 MiB"), (11, 7, "used", "7 MiB"),
             (18, 2, "retiring", "old"), (20, 2.5, "free", "")]
# Pages of S1's range: mapped, unmapped, or retiring (its memory serves S2 already)
S1_PAGES = ["mapped"] * 9 + ["retiring", "unmapped"]
# Stream S2's large arena
S2_BLOCKS = [(0, 9, "used", "9 MiB (S2)"), (9, 13.5, "free", "")]
S2_PAGES = ["mapped"] * 5 + ["unmapped"] * 6

FILL = {"used": "#4c78a8", "free": "#ffffff", "retiring": "#f2cf5b"}
PAGE_FILL = {"mapped": "#9ecae9", "unmapped": "#eeeeee", "retiring": "#f2cf5b"}


def rect(x, y, w, h, fill, stroke="#333", dash=None):
    d = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" fill="{fill}" '
            f'stroke="{stroke}"{d}/>')


def text(x, y, s, size=13, anchor="start", color="#222", weight="normal"):
    return (f'<text x="{x:.1f}" y="{y:.1f}" font-family="sans-serif" font-size="{size}" '
            f'text-anchor="{anchor}" fill="{color}" font-weight="{weight}">{s}</text>')


def arena(y, name, blocks, pages):
    out = [text(LEFT - 12, y + 24, name, 14, "end", weight="bold"),
           text(LEFT - 12, y + 70, "pages", 12, "end", "#555")]
    for start, size, state, label in blocks:
        x, w = LEFT + start * SCALE, size * SCALE
        out.append(rect(x, y, w, 40, FILL[state], dash="4,3" if state == "free" else None))
        if label:
            color = "#fff" if state == "used" else "#222"
            out.append(text(x + w / 2, y + 25, label, 12, "middle", color))
    for i, state in enumerate(pages):
        x = LEFT + i * PAGE * SCALE
        out.append(rect(x + 2, y + 56, PAGE * SCALE - 4, 22, PAGE_FILL[state], "#777"))
    return out


def main():
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'viewBox="0 0 {W} {H}">', rect(0, 0, W, H, "#fafafa", "#fafafa"),
           text(20, 28, "A device pool: an address range per stream (here two streams' "
                "large arenas), physical pages only under blocks", 15, weight="bold")]
    out += arena(60, "stream S1", S1_BLOCKS, S1_PAGES)
    out += arena(230, "stream S2", S2_BLOCKS, S2_PAGES)
    # The page that moves: S1's page 9 (no block needs it) now also backs S2's page 4.
    x1 = LEFT + 9 * PAGE * SCALE + PAGE * SCALE / 2
    x2 = LEFT + 4 * PAGE * SCALE + PAGE * SCALE / 2
    out.append(f'<path d="M {x1:.1f} 140 C {x1:.1f} 190, {x2:.1f} 180, {x2:.1f} 228" '
               f'fill="none" stroke="#c0392b" stroke-width="2" marker-end="url(#a)"/>')
    out.insert(1, '<defs><marker id="a" markerWidth="10" markerHeight="8" refX="9" refY="4" '
                  'orient="auto"><path d="M0,0 L10,4 L0,8 z" fill="#c0392b"/></marker></defs>')
    out.append(text(LEFT, 168, "memory no block needs moves to where a block needs it;",
                    12, "start", "#c0392b"))
    out.append(text(LEFT, 184, "its old mapping goes once S1's work before it is done",
                    12, "start", "#c0392b"))
    legend = [("used", FILL["used"], "block in use (or in a thread cache)"),
              ("free", FILL["free"], "free block: address space, merged with free neighbours"),
              ("retiring", FILL["retiring"], "page whose old mapping waits for its stream"),
              ("mapped", PAGE_FILL["mapped"], "mapped page: what the pool reserves"),
              ("unmapped", PAGE_FILL["unmapped"], "unmapped page: holds nothing")]
    y = 350
    for i, (_, fill, label) in enumerate(legend):
        x = 40 + (i % 2) * 440
        yy = y + (i // 2) * 30
        out.append(rect(x, yy, 26, 16, fill, dash="4,3" if fill == "#ffffff" else None))
        out.append(text(x + 36, yy + 13, label, 12))
    out.append("</svg>")
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pools.svg")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
