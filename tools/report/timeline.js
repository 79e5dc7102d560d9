/* gpumem timeline page: draws the trace's data (the JSON in #gpumem-data) on canvases.
 *
 * Events are never drawn one by one: for the range on screen, every pixel column gets the
 * moment of its largest total (so no peak falls between columns) and the live bytes of each
 * call site group then. That is one pass over the events per redraw, whatever their count. */
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("gpumem-data").textContent);
  const TOP = 8; /* call sites drawn on their own; the rest is "other" */
  const COLORS = ["#3b6fb6", "#e3812b", "#3a9a5b", "#c94a53", "#8b63b8", "#8c6d4f", "#d36fae",
    "#5aa7b8"];
  const OTHER = "#b4bac2";
  const PEAK = "#c8102e";
  const $ = (id) => document.getElementById(id);

  /* Events as typed arrays, times made absolute (ns since the trace began). */
  const n = D.ev.dt.length;
  const T = new Float64Array(n);
  const B = new Float64Array(n);
  const GRP = new Uint8Array(n);
  const K = new Uint16Array(n);
  {
    let acc = 0;
    const dt = D.ev.dt, b = D.ev.b, s = D.ev.s, k = D.ev.k;
    for (let i = 0; i < n; i++) {
      acc += dt[i];
      T[i] = acc;
      B[i] = b[i];
      GRP[i] = s[i] < TOP ? s[i] : TOP;
      K[i] = k[i];
    }
  }
  const nTop = Math.min(TOP, D.sites.length);
  const hasOther = D.sites.length > TOP;
  const G = nTop + (hasOther ? 1 : 0);
  const NT = D.tracks.length;
  const groupName = (g) => g < nTop ? D.sites[g].name :
    "other (" + (D.sites.length - TOP) + " call sites)";
  const groupColor = (g) => g < nTop ? COLORS[g % COLORS.length] : OTHER;
  const full = { t0: 0, t1: Math.max(D.duration, 1) };
  let view = { t0: full.t0, t1: full.t1 };

  function fmtBytes(v) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let u = 0;
    v = Math.max(0, v);
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return (u === 0 ? v.toFixed(0) : v.toFixed(1)) + " " + units[u];
  }
  function fmtTime(ns) {
    const a = Math.abs(ns);
    if (a < 1e3) return ns.toFixed(0) + " ns";
    if (a < 1e6) return (ns / 1e3).toPrecision(4) + " \u00b5s";
    if (a < 1e9) return (ns / 1e6).toPrecision(4) + " ms";
    return (ns / 1e9).toPrecision(4) + " s";
  }
  function text(id, s) {
    $(id).textContent = s;
  }

  /* One pass: per column c of W, the largest total (max), the groups' bytes at that moment
   * (snap, G per column) and each track's largest live bytes (tmax, W per track). */
  function aggregate(W, t0, t1) {
    const max = new Float64Array(W), snap = new Float64Array(W * G);
    const tmax = new Float64Array(W * NT);
    const live = new Float64Array(G), tl = new Float64Array(NT);
    let total = 0, col = -1;
    const span = t1 - t0 || 1;
    const fill = (upto) => {
      for (let c = col + 1; c <= upto; c++) {
        max[c] = total;
        snap.set(live, c * G);
        for (let k = 0; k < NT; k++) tmax[k * W + c] = tl[k];
      }
      col = upto;
    };
    for (let i = 0; i < n; i++) {
      const t = T[i];
      if (t > t1) break;
      if (t >= t0) {
        let c = Math.floor((t - t0) / span * W);
        if (c >= W) c = W - 1;
        if (c > col) fill(c);
        live[GRP[i]] += B[i];
        total += B[i];
        tl[K[i]] += B[i];
        if (total > max[c]) {
          max[c] = total;
          snap.set(live, c * G);
        }
        const ti = K[i] * W + c;
        if (tl[K[i]] > tmax[ti]) tmax[ti] = tl[K[i]];
      } else {
        live[GRP[i]] += B[i];
        total += B[i];
        tl[K[i]] += B[i];
      }
    }
    fill(W - 1);
    return { max, snap, tmax, W };
  }

  const chart = $("chart");
  const ML = 72, MR = 12, MT = 16, MB = 24; /* plot margins, CSS px */
  let agg = null, plotW = 0, plotH = 0, drag = null, pinned = -1;

  function niceStep(maxv, ticks) {
    const raw = maxv / ticks;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
  }
  function byteStep(maxv) {
    let unit = 1;
    while (maxv / unit >= 1024 * 4) unit *= 1024;
    return niceStep(maxv / unit, 4) * unit;
  }

  function setupCanvas(c, cssH) {
    const dpr = window.devicePixelRatio || 1;
    const w = c.clientWidth || 800;
    c.width = Math.round(w * dpr);
    c.height = Math.round(cssH * dpr);
    c.style.height = cssH + "px";
    const ctx = c.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { ctx, w };
  }

  const xOf = (t) => ML + (t - view.t0) / (view.t1 - view.t0) * plotW;

  function drawChart() {
    const { ctx, w } = setupCanvas(chart, 360);
    plotW = Math.max(50, Math.floor(w - ML - MR));
    plotH = 360 - MT - MB;
    agg = aggregate(plotW, view.t0, view.t1);
    let ymax = 0;
    for (let c = 0; c < plotW; c++) if (agg.max[c] > ymax) ymax = agg.max[c];
    ymax = ymax > 0 ? ymax * 1.08 : 1;
    ctx.clearRect(0, 0, w, 360);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(ML, MT, plotW, plotH);
    /* Grid and y labels. */
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#67707c";
    ctx.strokeStyle = "#e6e9ed";
    ctx.lineWidth = 1;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    const ys = byteStep(ymax);
    for (let v = 0; v <= ymax; v += ys) {
      const y = MT + plotH - v / ymax * plotH;
      ctx.beginPath();
      ctx.moveTo(ML, Math.round(y) + 0.5);
      ctx.lineTo(ML + plotW, Math.round(y) + 0.5);
      ctx.stroke();
      ctx.fillText(fmtBytes(v), ML - 6, y);
    }
    ctx.textAlign = "center";
    ctx.textBaseline = "top";
    const span = view.t1 - view.t0;
    const xs = niceStep(span, 6);
    for (let t = Math.ceil(view.t0 / xs) * xs; t <= view.t1; t += xs) {
      const x = xOf(t);
      ctx.fillText(fmtTime(t), x, MT + plotH + 6);
    }
    /* Stacked columns, largest group at the bottom. */
    for (let g = 0; g < G; g++) {
      ctx.fillStyle = groupColor(g);
      for (let c = 0; c < plotW; c++) {
        let below = 0;
        for (let h = 0; h < g; h++) below += agg.snap[c * G + h];
        const v = agg.snap[c * G + g];
        if (v <= 0) continue;
        const y0 = MT + plotH - below / ymax * plotH;
        const hgt = v / ymax * plotH;
        ctx.fillRect(ML + c, y0 - hgt, 1, Math.max(hgt, 0.5));
      }
    }
    /* Checkpoints and failed allocations. */
    ctx.strokeStyle = "#8a939e";
    ctx.setLineDash([2, 3]);
    for (const t of D.checkpoints) {
      if (t < view.t0 || t > view.t1) continue;
      ctx.beginPath();
      ctx.moveTo(Math.round(xOf(t)) + 0.5, MT);
      ctx.lineTo(Math.round(xOf(t)) + 0.5, MT + plotH);
      ctx.stroke();
    }
    ctx.setLineDash([]);
    ctx.fillStyle = PEAK;
    for (const f of D.failures) {
      if (f.t < view.t0 || f.t > view.t1) continue;
      const x = xOf(f.t);
      ctx.beginPath();
      ctx.moveTo(x - 5, MT);
      ctx.lineTo(x + 5, MT);
      ctx.lineTo(x, MT + 8);
      ctx.fill();
    }
    /* The peak. */
    if (D.peak.bytes > 0 && D.peak.t >= view.t0 && D.peak.t <= view.t1) {
      const x = Math.round(xOf(D.peak.t)) + 0.5;
      ctx.strokeStyle = PEAK;
      ctx.setLineDash([4, 3]);
      ctx.beginPath();
      ctx.moveTo(x, MT);
      ctx.lineTo(x, MT + plotH);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = PEAK;
      ctx.font = "bold 11px system-ui, sans-serif";
      ctx.textAlign = x > ML + plotW - 120 ? "right" : "left";
      ctx.textBaseline = "top";
      ctx.fillText("peak " + fmtBytes(D.peak.bytes), x + (ctx.textAlign === "left" ? 4 : -4), MT + 2);
    }
    if (pinned >= 0 && pinned < plotW) {
      ctx.strokeStyle = "#1d232b";
      ctx.beginPath();
      ctx.moveTo(ML + pinned + 0.5, MT);
      ctx.lineTo(ML + pinned + 0.5, MT + plotH);
      ctx.stroke();
    }
    if (drag && drag.moved) {
      ctx.fillStyle = "rgba(59, 111, 182, 0.15)";
      const a = Math.min(drag.x0, drag.x1), b = Math.max(drag.x0, drag.x1);
      ctx.fillRect(a, MT, b - a, plotH);
    }
    ctx.strokeStyle = "#c3c9d0";
    ctx.strokeRect(ML + 0.5, MT + 0.5, plotW - 1, plotH - 1);
    text("range", view.t0 === full.t0 && view.t1 === full.t1 ? "whole trace, " + fmtTime(span)
      : fmtTime(view.t0) + " \u2013 " + fmtTime(view.t1));
    drawTracks();
  }

  /* A small chart per memory kind and device, on the same time axis. */
  const trackCanvases = [];
  function buildTracks() {
    const box = $("tracks");
    D.tracks.forEach((tr) => {
      const div = document.createElement("div");
      div.className = "track";
      const name = document.createElement("div");
      name.className = "name";
      name.textContent = tr.name + ": peak " + fmtBytes(tr.peak) + " at " + fmtTime(tr.peak_t);
      const c = document.createElement("canvas");
      div.appendChild(name);
      div.appendChild(c);
      box.appendChild(div);
      trackCanvases.push(c);
    });
  }
  function drawTracks() {
    trackCanvases.forEach((c, k) => {
      const { ctx, w } = setupCanvas(c, 46);
      ctx.clearRect(0, 0, w, 46);
      let ymax = 0;
      for (let x = 0; x < plotW; x++) ymax = Math.max(ymax, agg.tmax[k * plotW + x]);
      ctx.fillStyle = "#f6f7f9";
      ctx.fillRect(ML, 2, plotW, 42);
      ctx.fillStyle = "#67707c";
      ctx.font = "10px system-ui, sans-serif";
      ctx.textAlign = "right";
      ctx.textBaseline = "top";
      ctx.fillText(fmtBytes(ymax), ML - 6, 2);
      if (ymax <= 0) return;
      ctx.fillStyle = "#5b7fa8";
      for (let x = 0; x < plotW; x++) {
        const v = agg.tmax[k * plotW + x];
        if (v <= 0) continue;
        const h = v / ymax * 40;
        ctx.fillRect(ML + x, 44 - h, 1, Math.max(h, 0.5));
      }
    });
  }

  function columnAt(ev) {
    const r = chart.getBoundingClientRect();
    return Math.floor(ev.clientX - r.left - ML);
  }
  function columnTime(c) {
    return view.t0 + (c + 0.5) / plotW * (view.t1 - view.t0);
  }
  function columnRows(c) {
    const rows = [];
    for (let g = 0; g < G; g++) {
      const v = agg.snap[c * G + g];
      if (v > 0) rows.push([g, v]);
    }
    return rows;
  }
  function showTip(ev) {
    const c = columnAt(ev), tip = $("tip");
    if (!agg || c < 0 || c >= plotW) {
      tip.hidden = true;
      return;
    }
    const rows = columnRows(c);
    tip.textContent = "";
    const head = document.createElement("div");
    head.textContent = fmtTime(columnTime(c)) + ": " + fmtBytes(agg.max[c]) + " live";
    tip.appendChild(head);
    rows.slice(0, 9).forEach(([g, v]) => {
      const d = document.createElement("div");
      d.textContent = fmtBytes(v) + "  " + groupName(g);
      d.style.borderLeft = "8px solid " + groupColor(g);
      d.style.paddingLeft = "4px";
      tip.appendChild(d);
    });
    tip.hidden = false;
    const r = chart.getBoundingClientRect();
    let x = ev.clientX - r.left + 14;
    if (x > r.width - 320) x = ev.clientX - r.left - 330;
    tip.style.left = Math.max(0, x) + "px";
    tip.style.top = Math.max(0, ev.clientY - r.top - 10) + "px";
  }

  function stackText(site) {
    if (!site.stack || !site.stack.length) return "(no stack: record with GPUMEM_BACKTRACE=1, or run gpumem check)";
    return site.stack.map((f, i) => (i ? "by " : "at ") + f).join("\n");
  }

  function pin(c) {
    pinned = c;
    const rows = columnRows(c);
    text("details-at", "at " + fmtTime(columnTime(c)));
    const box = $("details");
    box.textContent = "";
    const p = document.createElement("p");
    p.textContent = fmtBytes(agg.max[c]) + " live";
    box.appendChild(p);
    const tbl = document.createElement("table");
    rows.forEach(([g, v]) => {
      const tr = tbl.insertRow();
      const sw = tr.insertCell();
      sw.style.background = groupColor(g);
      sw.style.width = "8px";
      tr.insertCell().textContent = fmtBytes(v);
      tr.insertCell().textContent = groupName(g);
    });
    box.appendChild(tbl);
    if (rows.length && rows[0][0] < nTop) {
      const pre = document.createElement("pre");
      pre.textContent = stackText(D.sites[rows[0][0]]);
      box.appendChild(pre);
    }
    drawChart();
  }

  chart.addEventListener("mousedown", (ev) => {
    const r = chart.getBoundingClientRect();
    drag = { x0: ev.clientX - r.left, x1: ev.clientX - r.left, moved: false };
  });
  chart.addEventListener("mousemove", (ev) => {
    if (drag) {
      const r = chart.getBoundingClientRect();
      drag.x1 = ev.clientX - r.left;
      if (Math.abs(drag.x1 - drag.x0) > 3) {
        drag.moved = true;
        drawChart();
      }
    }
    showTip(ev);
  });
  chart.addEventListener("mouseleave", () => {
    $("tip").hidden = true;
  });
  window.addEventListener("mouseup", (ev) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    if (d.moved) {
      const a = Math.max(0, Math.min(d.x0, d.x1) - ML), b = Math.min(plotW, Math.max(d.x0, d.x1) - ML);
      if (b - a >= 2) {
        const span = view.t1 - view.t0;
        view = { t0: view.t0 + a / plotW * span, t1: view.t0 + b / plotW * span };
        pinned = -1;
      }
      drawChart();
    } else {
      const c = columnAt(ev);
      if (c >= 0 && c < plotW) pin(c);
    }
  });
  const reset = () => {
    view = { t0: full.t0, t1: full.t1 };
    pinned = -1;
    drawChart();
  };
  chart.addEventListener("dblclick", reset);
  $("reset").addEventListener("click", reset);
  window.addEventListener("resize", () => drawChart());

  /* The facts in text. */
  function fillText() {
    text("process", D.process || "");
    text("version", D.version);
    text("total-peak", fmtBytes(D.peak.bytes));
    text("total-peak-at", "at " + fmtTime(D.peak.t));
    text("total-leaked", fmtBytes(D.leaked.bytes) + " in " + D.leaked.count + " allocation" +
      (D.leaked.count === 1 ? "" : "s"));
    text("total-allocs", String(D.allocations));
    text("total-span", "over " + fmtTime(D.duration));
    text("total-failed", String(D.failures.length));
    if (!D.complete) {
      $("warning").hidden = false;
      text("warning", "The trace ends early (the program crashed, was killed, or was still " +
        "running): this is what it recorded until then.");
    }
    const legend = $("legend");
    for (let g = 0; g < G; g++) {
      const s = document.createElement("span");
      const sw = document.createElement("span");
      sw.className = "sw";
      sw.style.background = groupColor(g);
      s.appendChild(sw);
      s.appendChild(document.createTextNode(groupName(g)));
      legend.appendChild(s);
    }
    const atPeak = D.sites.filter((s) => s.at_peak > 0);
    if (atPeak.length) {
      text("peak-site", atPeak[0].name);
      text("peak-site-bytes", fmtBytes(atPeak[0].at_peak) + " in " + atPeak[0].count_at_peak +
        " " + atPeak[0].kind + " allocation" + (atPeak[0].count_at_peak === 1 ? "" : "s"));
      const ol = $("peak-list");
      atPeak.slice(0, 8).forEach((s) => {
        const li = document.createElement("li");
        li.textContent = fmtBytes(s.at_peak) + " \u2014 " + s.name + " (" + s.count_at_peak + ")";
        ol.appendChild(li);
      });
      text("peak-stack", stackText(atPeak[0]));
    } else {
      text("peak-site", "(nothing allocated)");
    }
    const body = $("sites").tBodies[0];
    D.sites.slice(0, 100).forEach((s, i) => {
      const tr = body.insertRow();
      [s.name, s.kind, fmtBytes(s.at_peak), fmtBytes(s.peak), String(s.count), fmtBytes(s.total),
        s.leaked_count ? fmtBytes(s.leaked) + " (" + s.leaked_count + ")" : "\u2014"]
        .forEach((v) => {
          tr.insertCell().textContent = v;
        });
      tr.addEventListener("click", () => {
        for (const r of body.rows) r.classList.remove("sel");
        tr.classList.add("sel");
        text("details-at", "call site #" + (i + 1));
        const box = $("details");
        box.textContent = "";
        const p = document.createElement("p");
        p.textContent = s.name + ": " + s.count + " allocations, " + fmtBytes(s.total) +
          " in all, at most " + fmtBytes(s.peak) + " live";
        const pre = document.createElement("pre");
        pre.textContent = stackText(s);
        box.appendChild(p);
        box.appendChild(pre);
      });
    });
  }

  fillText();
  buildTracks();
  drawChart();
  const ms = performance.now();
  text("render-info", n + " events, " + D.sites.length + " call sites");
  text("render-ms", "(page ready " + ms.toFixed(0) + " ms after it began loading)");
  document.body.dataset.drawn = "1";
  document.body.dataset.renderMs = ms.toFixed(0);
})();
