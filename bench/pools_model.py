"""Models of pool designs on synthetic allocation traces: how much memory each holds for
what is live, before one is built (docs/pools.md, "Design"; docs/perf/pools-2026-12-04-cpu.md).

    python3 bench/pools_model.py

Traces: a transformer encoder layer's training steps (forward, loss, backward) with batches
of random sequence lengths (16 to 1024 tokens), the same with fixed ones (700), and random
sizes of 1 KiB to 64 MiB with random lifetimes. Designs: a block per size class cached by
class (the earlier gpumem pool), one segment per size that grows by 2 MiB pages and never
gives them back (PyTorch's expandable segments), and address ranges whose 2 MiB pages are
mapped under blocks and move to where they are needed ("vmm"; alpha: how much spare memory
a pool keeps before it moves pages rather than map new ones). Peak reserved over peak
requested, and how many pages moved."""
import bisect
import math
import random

def gen(steps=300, seed=1, fixed=None):
    r = random.Random(seed)
    ev = []; nid = [0]
    def a(sz):
        nid[0] += 1; ev.append(('a', nid[0], int(sz))); return nid[0]
    def f(i): ev.append(('f', i))
    B, D, F, H = 8, 512, 2048, 8
    # params + grads + adam states, allocated once
    params = [D*3*D, 3*D, D*D, D, D, D, F*D, F, D*F, D, D, D]
    for s in params:
        for _ in range(4): a(s*4)
    for step in range(steps):
        L = fixed or r.randint(16, 1024); N = B*L
        act, ffn, ma, mf, st = N*D*4, N*F*4, N*D, N*F, N*4*2
        saved = []
        x = a(act); saved.append(x)
        qkv = a(3*act)
        q = a(act); k = a(act); v = a(act); f(qkv); saved += [q, k, v]
        o = a(act); lse = a(B*H*L*4); saved += [o, lse]
        ot = a(act); saved.append(ot)
        p = a(act)
        d1 = a(act); m1 = a(ma); f(p); saved.append(m1)
        r1 = a(act); f(d1)
        n1 = a(act); s1 = a(st); saved += [r1, s1, n1]
        l1 = a(ffn)
        re = a(ffn); f(l1); saved.append(re)
        d2 = a(ffn); m2 = a(mf); saved += [m2, d2]
        l2 = a(act)
        d3 = a(act); m3 = a(ma); f(l2); saved.append(m3)
        r2 = a(act); f(d3); saved.append(r2)
        n2 = a(act); s2 = a(st); saved += [s2]
        loss = a(512); f(n2)
        # backward
        g = a(act); f(loss)
        def bw(outsz, frees):
            nonlocal g
            ng = a(outsz)
            tmp = a(outsz) if outsz > 4096 else None
            f(g); g = ng
            if tmp: f(tmp)
            for fr in frees: f(fr)
        bw(act, [s2, r2])
        bw(act, [m3])
        gw = a(D*F*4); bw(ffn, [d2]); f(gw)
        bw(ffn, [m2]); bw(ffn, [re])
        gw = a(F*D*4); bw(act, [n1]); f(gw)
        bw(act, [s1, r1])
        bw(act, [m1])
        gw = a(D*D*4); bw(act, [ot]); f(gw)
        bw(act, [o, lse])
        dq = a(act); dk = a(act); dv = a(act); f(q); f(k); f(v)
        dqkv = a(3*act); f(dq); f(dk); f(dv)
        gw = a(3*D*D*4); bw(act, []); f(gw); f(dqkv)
        f(g); f(x)
    return ev

def gen_random(n=20000, seed=2, target=500 << 20):
    import math
    r = random.Random(seed); ev = []; live = []; tot = 0; nid = 0
    for _ in range(n):
        if tot < target and (not live or r.random() < 0.55):
            sz = int(math.exp(r.uniform(math.log(1024), math.log(64 << 20))))
            nid += 1; ev.append(('a', nid, sz)); live.append((nid, sz)); tot += sz
        else:
            i = r.randrange(len(live)); live[i], live[-1] = live[-1], live[i]
            j, sz = live.pop(); ev.append(('f', j)); tot -= sz
    return ev

PAGE = 2 << 20
def rnd(n, q): return (n + q - 1) // q * q
def class_of(n):
    m = rnd(n, 256)
    if m <= 2048: return m
    e = m.bit_length() - 1
    if (1 << e) == m: e -= 1
    step = 1 << (e - 3 + 0)
    return rnd(m, step)

class Arena:
    """VA best-fit allocator with coalescing. free: dict start->size, sorted starts."""
    def __init__(s):
        s.free = {}; s.starts = []; s.end = 0
    def _ins(s, st, sz):
        s.free[st] = sz; bisect.insort(s.starts, st)
    def _rm(s, st):
        del s.free[st]; s.starts.pop(bisect.bisect_left(s.starts, st))
    def fits(s, n):
        return [(sz, st) for st, sz in s.free.items() if sz >= n]
    def take(s, st, n):
        sz = s.free[st]; s._rm(st)
        if sz > n: s._ins(st + n, sz - n)
        return st
    def grow(s, n):
        # extend from the last free range touching the end
        if s.starts and s.starts[-1] + s.free[s.starts[-1]] == s.end:
            st = s.starts[-1]; have = s.free[st]; s._rm(st)
            s.end = st + n
            return st
        st = s.end; s.end += n; return st
    def release(s, st, n):
        i = bisect.bisect_left(s.starts, st)
        if i < len(s.starts) and s.starts[i] == st + n:
            nx = st + n; n += s.free[nx]; s._rm(nx)
        if i > 0:
            p = s.starts[i - 1]
            if p + s.free[p] == st:
                st = p; n += s.free[p]; s._rm(p)
        s._ins(st, n)

def run_class(ev):
    live = {}; cached = {}; reserved = peak = 0; req = preq = 0
    for e in ev:
        if e[0] == 'a':
            c = class_of(e[2])
            if cached.get(c, 0): cached[c] -= 1
            else: reserved += c
            live[e[1]] = (c, e[2]); req += e[2]
        else:
            c, n = live.pop(e[1]); cached[c] = cached.get(c, 0) + 1; req -= n
        peak = max(peak, reserved); preq = max(preq, req)
    return peak, preq, 0

def run_expand(ev, small_max=1 << 20, q=512):
    ar = {0: Arena(), 1: Arena()}
    live = {}; req = preq = 0; peak = 0
    def resv(): return sum(rnd(a.end, PAGE) for a in ar.values())
    for e in ev:
        if e[0] == 'a':
            n = rnd(e[2], q); which = 0 if n <= small_max else 1
            a = ar[which]; f = a.fits(n)
            st = a.take(min(f)[1], n) if f else a.grow(n)
            live[e[1]] = (which, st, n, e[2]); req += e[2]
        else:
            w, st, n, r = live.pop(e[1]); ar[w].release(st, n); req -= r
        peak = max(peak, resv()); preq = max(preq, req)
    return peak, preq, 0

def run_remap(ev, small_max=1 << 20, q=256, small_cls=True, minmap=True):
    # small: expandable arena (pages counted by end); large: VA arena with page mapping
    sm = Arena(); la = Arena()
    mapped = set(); need = {}  # page -> live block count
    phys = 0; peak = 0; req = preq = 0; live = {}; remaps = 0; news = 0
    def pages(st, n): return range(st // PAGE, (st + n - 1) // PAGE + 1)
    for e in ev:
        if e[0] == 'a':
            if e[2] <= small_max:
                n = class_of(e[2]) if small_cls else rnd(e[2], q)
                f = sm.fits(n); st = sm.take(min(f)[1], n) if f else sm.grow(n)
                live[e[1]] = (0, st, n, e[2])
            else:
                n = rnd(e[2], q)
                f = la.fits(n)
                if f:
                    if minmap:
                        best = None
                        for sz, st in f:
                            # place at start of the range; count missing pages
                            miss = sum(1 for p in pages(st, n) if p not in mapped)
                            key = (miss, sz)
                            if best is None or key < best[0]: best = (key, st)
                        st = la.take(best[1], n)
                    else:
                        st = la.take(min(f)[1], n)
                else:
                    st = la.grow(n)
                for p in pages(st, n):
                    need[p] = need.get(p, 0) + 1
                    if p not in mapped:
                        # steal an unneeded mapped page
                        victim = next((x for x in mapped if need.get(x, 0) == 0), None)
                        if victim is not None:
                            mapped.discard(victim); remaps += 1
                        else:
                            phys += 1; news += 1
                        mapped.add(p)
                live[e[1]] = (1, st, n, e[2])
            req += e[2]
        else:
            w, st, n, r = live.pop(e[1]); req -= r
            if w == 0: sm.release(st, n)
            else:
                la.release(st, n)
                for p in pages(st, n): need[p] -= 1
        cur = phys * PAGE + rnd(sm.end, PAGE)
        peak = max(peak, cur); preq = max(preq, req)
    return peak, preq, remaps




def cls16(n):
    m = rnd(n, 256)
    if m <= 4096: return m
    e = m.bit_length() - 1
    if (1 << e) == m: e -= 1
    return rnd(m, 1 << (e - 4))

class Phys:
    def __init__(s, alpha):
        s.n = 0; s.peak = 0; s.alpha = alpha; s.needed = 0; s.steals = 0; s.news = 0
class VA(Arena):
    def __init__(s, phys):
        super().__init__(); s.ph = phys; s.mapped = set(); s.need = {}
    def pages(s, st, n): return range(st // PAGE, (st + n - 1) // PAGE + 1)
    def place(s, n, minmap):
        f = s.fits(n)
        if not f: return s.grow(n)
        if not minmap: return s.take(min(f)[1], n)
        best = None
        for sz, st in f:
            miss = sum(1 for p in s.pages(st, n) if p not in s.mapped)
            key = (miss, sz)
            if best is None or key < best[0]: best = (key, st)
        return s.take(best[1], n)
    def alloc(s, n, minmap, arenas):
        st = s.place(n, minmap)
        for p in s.pages(st, n):
            c = s.need.get(p, 0); s.need[p] = c + 1
            if c == 0: s.ph.needed += 1
            if p in s.mapped: continue
            ph = s.ph
            victim = None
            if ph.n >= (1 + ph.alpha) * ph.needed:
                for a in arenas:
                    victim = next((x for x in a.mapped if a.need.get(x, 0) == 0), None)
                    if victim is not None: a.mapped.discard(victim); break
            if victim is not None: ph.steals += 1
            else: ph.n += 1; ph.news += 1; ph.peak = max(ph.peak, ph.n)
            s.mapped.add(p)
        return st
    def dealloc(s, st, n):
        s.release(st, n)
        for p in s.pages(st, n):
            s.need[p] -= 1
            if s.need[p] == 0: s.ph.needed -= 1

def run_vmm(ev, small_max=1 << 20, small_round=class_of, large_round=lambda n: rnd(n, 256), alpha=0.0, minmap=True):
    ph = Phys(alpha); sm = VA(ph); la = VA(ph); ars = [sm, la]
    live = {}; req = preq = 0
    for e in ev:
        if e[0] == 'a':
            if e[2] <= small_max: a = sm; n = small_round(e[2])
            else: a = la; n = large_round(e[2])
            st = a.alloc(n, minmap, ars); live[e[1]] = (a, st, n, e[2]); req += e[2]
        else:
            a, st, n, r = live.pop(e[1]); a.dealloc(st, n); req -= r
        preq = max(preq, req)
    return ph.peak * PAGE, preq, ph.steals



if __name__ == "__main__":
    M = 1 << 20
    traces = {"varlen": gen(300, 1), "fixed": gen(300, 1, 700), "random": gen_random()}
    variants = [
        ("class per block", run_class),
        ("expandable", run_expand),
        ("vmm alpha 0", lambda e: run_vmm(e)),
        ("vmm alpha 0.05", lambda e: run_vmm(e, alpha=0.05)),
        ("vmm alpha 0.25", lambda e: run_vmm(e, alpha=0.25)),
        ("vmm, classes to 4 MiB", lambda e: run_vmm(
            e, alpha=0.05, large_round=lambda n: class_of(n) if n <= 4 << 20 else rnd(n, 256))),
    ]
    for name, ev in traces.items():
        print(name)
        for label, fn in variants:
            peak, requested, moved = fn(ev)
            print(f"  {label:24s} peak {peak / M:8.1f} MiB for {requested / M:7.1f} MiB "
                  f"({peak / requested:.3f}x), {moved} pages moved")
