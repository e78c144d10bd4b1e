// Line charts in SVG for troupe's pages (the dashboard and the board),
// served at /chart.js: round ticks, a grid, axis labels with units, a
// legend, each line's nearest point read out under the pointer, a drag
// zooms into an x range and a double-click zooms out.
"use strict";
const NS = "http://www.w3.org/2000/svg";

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function clear(svg) { while (svg.firstChild) svg.removeChild(svg.firstChild); }

// Round ticks covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
function niceTicks(lo, hi, target) {
  if (!isFinite(lo) || !isFinite(hi)) return [0, 1];
  if (hi - lo <= Math.abs(hi) * 1e-12) { const pad = lo ? Math.abs(lo) * 0.1 : 1; lo -= pad; hi += pad; }
  const raw = (hi - lo) / (target || 5), p = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * p).find(v => v >= raw * (1 - 1e-9));
  const first = Math.floor(lo / step + 1e-9) * step, ticks = [];
  for (let i = 0; ticks.length < 2 || ticks[ticks.length - 1] < hi - step * 1e-9; i++) {
    ticks.push(first + i * step);
    if (i > 100) break;
  }
  return ticks;
}
function tickLabel(v, step) {
  const m = Math.max(Math.abs(v), Math.abs(step));
  if (m > 0 && m < 1e-3) { // 2e-5 rather than 0.00002: narrow ticks
    const e = Math.floor(Math.log10(m)), p = Math.pow(10, e), s = step / p;
    const d = s >= 1 ? 0 : Math.min(6, Math.ceil(-Math.log10(s) - 1e-9));
    const out = (v / p).toFixed(d);
    return /^-?[0.]*$/.test(out) ? "0" : out + "e" + e;
  }
  const [scale, suffix] = m >= 1e10 ? [1e9, "G"] : m >= 1e7 ? [1e6, "M"] : m >= 1e4 ? [1e3, "k"] : [1, ""];
  const s = step / scale, d = s >= 1 ? 0 : Math.min(9, Math.ceil(-Math.log10(s) - 1e-9));
  const out = (v / scale).toFixed(d);
  return (/^-[0.]*$/.test(out) ? out.slice(1) : out) + suffix;
}
function short(v) { return Number(v).toPrecision(4).replace(/\.?0+(e|$)/, "$1"); }

// Per chart (by its svg's id): the zoomed x range, the drag under way and
// the pointer's x; the listeners are set once, the chart redrawn on each.
const chartViews = {};
function chartState(svg) {
  if (chartViews[svg.id]) return chartViews[svg.id];
  const st = chartViews[svg.id] = { zoom: null, drag: null, hover: null };
  const px = ev => ev.clientX - svg.getBoundingClientRect().left;
  const redraw = () => { if (st.redraw) st.redraw(); };
  svg.addEventListener("mousedown", ev => { st.drag = [px(ev), px(ev)]; ev.preventDefault(); });
  svg.addEventListener("mousemove", ev => { st.hover = px(ev); if (st.drag) st.drag[1] = px(ev); redraw(); });
  svg.addEventListener("mouseleave", () => { st.hover = null; st.drag = null; redraw(); });
  svg.addEventListener("mouseup", () => {
    const d = st.drag; st.drag = null;
    if (d && Math.abs(d[1] - d[0]) > 6 && st.invert)
      st.zoom = [st.invert(Math.min(d[0], d[1])), st.invert(Math.max(d[0], d[1]))];
    redraw();
  });
  svg.addEventListener("dblclick", () => { st.zoom = null; redraw(); });
  return st;
}

// lines: [{name, colour, points: [[x, y], ...]}]; opts: {x: label with
// unit, y: label, limits: [lo, hi] for the y axis}.
function drawChart(svg, lines, opts) {
  const st = chartState(svg);
  st.redraw = () => drawChart(svg, lines, opts);
  clear(svg);
  const count = lines.reduce((n, l) => n + l.points.length, 0);
  svg.setAttribute("data-points", count);
  const w = svg.clientWidth || 400, h = svg.clientHeight || 190;
  const L = 48, R = 10, T = 8, B = 34, pw = w - L - R, ph = h - T - B;
  const inZoom = p => !st.zoom || (p[0] >= st.zoom[0] && p[0] <= st.zoom[1]);
  const shown = lines.map(l => ({ ...l, points: l.points.filter(p => inZoom(p) && isFinite(p[0]) && isFinite(p[1])) }));
  const all = shown.flatMap(l => l.points);
  if (!all.length) {
    el("text", { x: L, y: h / 2 }, svg, count ? "no data in the zoomed range (double-click)" : "no data yet");
    return;
  }
  const xs = all.map(p => p[0]), ys = all.map(p => p[1]);
  const xt = niceTicks(st.zoom ? st.zoom[0] : Math.min(...xs), st.zoom ? st.zoom[1] : Math.max(...xs), Math.max(2, Math.floor(pw / 70)));
  let yt = niceTicks(Math.min(...ys), Math.max(...ys), Math.max(2, Math.floor(ph / 30)));
  if (opts.limits) {
    const k = yt.filter(t => t >= opts.limits[0] - 1e-12 && t <= opts.limits[1] + 1e-12);
    if (k.length >= 2) yt = k;
  }
  const x0 = xt[0], x1 = xt[xt.length - 1], y0 = yt[0], y1 = yt[yt.length - 1];
  const X = x => L + (x - x0) / (x1 - x0) * pw, Y = y => T + ph - (y - y0) / (y1 - y0) * ph;
  st.invert = p => x0 + (p - L) / pw * (x1 - x0);
  el("rect", { x: L, y: T, width: pw, height: ph, fill: "#fcfcfd", stroke: "#c9ced6" }, svg);
  for (const t of xt) {
    el("line", { x1: X(t), x2: X(t), y1: T, y2: T + ph, stroke: "#eceef2" }, svg);
    el("text", { x: X(t), y: T + ph + 13, "text-anchor": "middle", class: "tick" }, svg, tickLabel(t, xt[1] - xt[0]));
  }
  for (const t of yt) {
    el("line", { x1: L, x2: L + pw, y1: Y(t), y2: Y(t), stroke: "#eceef2" }, svg);
    el("text", { x: L - 4, y: Y(t) + 3, "text-anchor": "end", class: "tick" }, svg, tickLabel(t, yt[1] - yt[0]));
  }
  el("text", { x: L + pw / 2, y: h - 4, "text-anchor": "middle" }, svg,
     opts.x + (st.zoom ? " · zoomed, double-click to reset" : ""));
  el("text", { transform: `translate(10,${T + ph / 2}) rotate(-90)`, "text-anchor": "middle" }, svg, opts.y);
  const clip = "clip-" + svg.id;
  el("rect", { x: L, y: T, width: pw, height: ph }, el("clipPath", { id: clip }, el("defs", {}, svg)));
  const g = el("g", { "clip-path": `url(#${clip})` }, svg);
  shown.forEach(l => {
    if (l.points.length > 1)
      el("polyline", { points: l.points.map(p => X(p[0]) + "," + Y(p[1])).join(" "), class: "line",
                       "data-name": l.name, fill: "none", stroke: l.colour, "stroke-width": 1.5 }, g);
    else if (l.points.length)
      el("circle", { cx: X(l.points[0][0]), cy: Y(l.points[0][1]), r: 4, fill: l.colour, class: "line", "data-name": l.name }, g);
  });
  if (lines.length > 1)
    lines.forEach((l, k) => {
      const ly = T + 12 + 13 * k, lx = L + pw - 150;
      el("line", { x1: lx, x2: lx + 14, y1: ly - 3, y2: ly - 3, stroke: l.colour, "stroke-width": 2 }, svg);
      el("text", { x: lx + 18, y: ly, class: "legend" }, svg, l.name.length > 22 ? l.name.slice(0, 21) + "…" : l.name);
    });
  if (st.drag) {
    const a = Math.min(...st.drag), b = Math.max(...st.drag);
    el("rect", { x: a, y: T, width: b - a, height: ph, fill: "#3b6fd8", "fill-opacity": 0.12 }, svg);
  } else if (st.hover !== null && st.hover >= L && st.hover <= L + pw) {
    const x = st.invert(st.hover);
    el("line", { x1: st.hover, x2: st.hover, y1: T, y2: T + ph, stroke: "#9aa1ad", "stroke-dasharray": "3 3" }, svg);
    shown.forEach((l, k) => {
      if (!l.points.length) return;
      const p = l.points.reduce((best, q) => Math.abs(q[0] - x) < Math.abs(best[0] - x) ? q : best);
      el("circle", { cx: X(p[0]), cy: Y(p[1]), r: 4, fill: "none", stroke: l.colour }, svg);
      const label = (lines.length > 1 ? l.name + ": " : "") + `${short(p[0])} · ${short(p[1])}`;
      const lx = Math.max(L + 4, Math.min(X(p[0]) + 6, L + pw - 6 * label.length));
      el("text", { x: lx, y: T + ph - 6 - 13 * k, class: "readout" }, svg, label);
    });
  }
}
