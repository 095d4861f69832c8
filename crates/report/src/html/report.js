"use strict";
// ProfileDNN's self-contained report renderer: reads the embedded JSON, draws SVG and tables.
(function () {
  const status = (s) => { document.body.dataset.status = s; };
  window.addEventListener("error", (e) => status("error: " + e.message));
  const D = JSON.parse(document.getElementById("data").textContent);
  const app = document.getElementById("app");
  const SVG = "http://www.w3.org/2000/svg";

  function el(tag, attrs, ...kids) {
    const n = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "text") n.textContent = v;
      else if (k.startsWith("on")) n.addEventListener(k.slice(2), v);
      else n.setAttribute(k, v);
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined) n.append(k.nodeType ? k : document.createTextNode(String(k)));
    return n;
  }
  const ms = (v) => v >= 100 ? v.toFixed(1) : v >= 0.01 || v === 0 ? v.toFixed(3) : v.toExponential(2);
  const pct = (v) => (100 * v).toFixed(1) + "%";
  const num = (v) => v === null || v === undefined ? "" : v >= 1e4 ? v.toExponential(3) : (+v).toFixed(v % 1 ? 2 : 0);
  // Where a step's time runs (torch view): one colour per class, the same in every chart.
  const RUNS_IN = { "oneDNN": "#2b6cb0", "BLAS": "#805ad5", "ATen": "#dd6b20", "inductor": "#38a169", "other ops": "#d69e2e", "Python/dispatch": "#a0aec0" };
  const PALETTE = ["#2b6cb0", "#dd6b20", "#38a169", "#d53f8c", "#805ad5", "#d69e2e", "#319795", "#e53e3e", "#718096", "#3182ce", "#b7791f", "#2c7a7b"];
  // One colour per primitive kind, the same in every report: fixed for oneDNN's kinds, a hash
  // of the name for any other (not the order in which a report happens to meet them).
  const KIND_COLOR = {
    convolution: "#dd6b20", deconvolution: "#b7791f", reorder: "#2b6cb0", inner_product: "#38a169", matmul: "#2c7a7b",
    batch_normalization: "#805ad5", layer_normalization: "#d53f8c", group_normalization: "#9f7aea", eltwise: "#d69e2e",
    binary: "#319795", pooling: "#e53e3e", softmax: "#718096", logsoftmax: "#4a5568", lrn: "#c05621", sum: "#3182ce",
    concat: "#2f855a", shuffle: "#b83280", resampling: "#6b46c1", prelu: "#c53030", reduction: "#975a16", rnn: "#276749",
    gemm: "#285e61", graph: "#553c9a", "Inductor kernels": "#48bb78",
  };
  const color = (k) => {
    if (KIND_COLOR[k]) return KIND_COLOR[k];
    let h = 0;
    for (const c of String(k)) h = (h * 31 + c.codePointAt(0)) >>> 0;
    return PALETTE[h % PALETTE.length];
  };
  // A label that fits `room` px (11 px text, ~6.6 px a character): whole, cut with "…", or null.
  const fitLabel = (text, room, charW = 6.6) => {
    if (text.length * charW <= room) return text;
    const n = Math.floor(room / charW) - 1;
    return n >= 3 ? text.slice(0, n) + "…" : null;
  };
  const tip = el("div", { id: "tooltip" });
  document.body.append(tip);
  function tooltip(node, text) {
    node.addEventListener("mousemove", (e) => { tip.style.display = "block"; tip.textContent = text; tip.style.left = (e.clientX + 14) + "px"; tip.style.top = (e.clientY + 10) + "px"; });
    node.addEventListener("mouseleave", () => { tip.style.display = "none"; });
    return node;
  }
  const card = (title, ...kids) => el("section", { class: "card" }, title ? el("h2", { text: title }) : null, ...kids);

  // A run that never called oneDNN (an f32 transformer, a compiled model): its trace is the run,
  // and the page leads with what that holds instead of zero oneDNN figures and empty charts.
  const NO_ONEDNN = D.calls === 0 && !!D.torch;

  function torchFacts() {
    const T = D.torch, classes = (T.runs_in || []).filter((c) => c.time_ms > 0);
    const step = classes.reduce((a, c) => a + c.time_ms, 0);
    const top = classes.slice().sort((a, b) => b.time_ms - a.time_ms)[0];
    const kernels = (T.framework && T.framework.inductor_kernels) || [];
    const facts = [];
    if (step > 0) facts.push([(T.compiling || []).length ? "whole step (steady iterations)" : "whole step per iteration", ms(step) + " ms"]);
    if (top) facts.push(["runs most in", `${top.class} (${pct(top.share)})`]);
    if (T.framework && T.framework.costed_share != null) facts.push(["framework-op time costed", pct(T.framework.costed_share)]);
    if (kernels.length) facts.push(["Inductor kernels", `${kernels.length} (${kernels.filter((k) => k.cost).length} costed)`]);
    for (const c of T.compiling || []) facts.push([`iteration ${c.index} compiled`, (c.compile_ms / 1e3).toFixed(1) + " s"]);
    return facts;
  }

  function header() {
    const md = D.metadata || {};
    if (NO_ONEDNN) {
      return card(null, el("h1", { text: "ProfileDNN report" }),
        el("div", { class: "muted", text: D.sources.join(", ") }),
        el("div", { class: "muted", id: "no-onednn", text: "No oneDNN primitive ran in this log: the PyTorch trace is the run, shown below." }),
        el("div", { class: "facts" }, torchFacts().map(([k, v]) => el("div", { class: "fact" }, el("b", { text: v }), el("span", { text: k })))));
    }
    const facts = [
      ["oneDNN time", ms(D.total_time_ms) + " ms"],
      ["executions", D.calls],
      ["unique primitives", D.primitives.length],
    ];
    if (D.iterations) facts.push(["per iteration (" + D.iterations.count + " iterations)", ms(D.per_iteration_time_ms) + " ms"]);
    if (D.iterations && D.iterations.before_first_ms >= 0.0005) facts.push(["before the first marker (not averaged in)", ms(D.iterations.before_first_ms) + " ms"]);
    if (D.wall_span_ms) facts.push(["wall-clock span", ms(D.wall_span_ms) + " ms"]);
    if (D.create_calls) facts.push(["creations", D.create_calls + " (" + ms(D.create_time_ms) + " ms)"]);
    const meta = [].concat(md.versions || [], md.formats || [], md.runtimes || [], md.isa || []).join(" · ");
    return card(null,
      el("h1", { text: "ProfileDNN report" }),
      el("div", { class: "muted", text: D.sources.join(", ") }),
      meta ? el("div", { class: "muted", text: meta }) : null,
      el("div", { class: "facts" }, facts.map(([k, v]) => el("div", { class: "fact" }, el("b", { text: v }), el("span", { text: k })))));
  }

  // Forward / backward-data / backward-weights split, as one stacked bar.
  function split() {
    const groups = { "forward": 0, "backward data": 0, "backward weights": 0, "no direction": 0 };
    for (const p of D.primitives) {
      const g = p.prop.startsWith("forward") ? "forward" : p.prop === "backward_weights" || p.prop === "backward_bias" ? "backward weights"
        : p.prop.startsWith("backward") ? "backward data" : "no direction";
      groups[g] += p.time_ms;
    }
    const total = Object.values(groups).reduce((a, b) => a + b, 0) || 1;
    // Matmuls (like reorders) are logged without a propagation kind: on a log whose compute is
    // mostly matmuls, a bar that is mostly "no direction" (97 % on a transformer) says nothing
    // of forward against backward. Reorders alone do not count: they never carry one.
    const compute = D.primitives.filter((p) => p.kind !== "reorder");
    const computeMs = compute.reduce((a, p) => a + p.time_ms, 0);
    const undirectedMs = compute.filter((p) => !p.prop.startsWith("forward") && !p.prop.startsWith("backward")).reduce((a, p) => a + p.time_ms, 0);
    const undirected = groups["no direction"] / total;
    if (computeMs > 0 && undirectedMs / computeMs >= 0.5) {
      return card("Forward / backward-data / backward-weights",
        el("p", { id: "split-none", class: "muted", text: `This log carries no direction for ${pct(undirected)} of oneDNN time: matmuls and reorders are logged without a propagation kind, so forward and backward cannot be told apart from it. The PyTorch view (report --torch-trace) splits the step by phase.` }));
    }
    const W = 600, svg = el("svg:svg", { viewBox: `0 0 ${W} 44`, width: "100%", id: "split" });
    let x = 0;
    const cols = ["#2b6cb0", "#dd6b20", "#c53030", "#a0aec0"];
    Object.entries(groups).forEach(([k, v], i) => {
      const w = v / total * W;
      if (w <= 0) return;
      svg.append(tooltip(el("svg:rect", { x, y: 4, width: w, height: 24, fill: cols[i], "data-group": k }), `${k}: ${ms(v)} ms (${pct(v / total)})`));
      // The label inside its segment, never running under the next one.
      const t = [`${k} ${pct(v / total)}`, pct(v / total)].find((s) => s.length * 6.6 + 8 <= w);
      if (t) svg.append(el("svg:text", { x: x + 4, y: 20, fill: "#fff", style: "fill:#fff", "data-room": w - 4, text: t }));
      x += w;
    });
    return card("Forward / backward-data / backward-weights", svg,
      el("div", { class: "legend" }, Object.entries(groups).map(([k, v], i) => el("span", {}, el("i", { style: `background:${cols[i]}` }), `${k} ${ms(v)} ms`))));
  }

  // Sunburst: kind -> propagation -> implementation -> shape; click to zoom, centre to go up.
  // torch.compile's kernels join the oneDNN primitives as one more kind: graph -> bound ->
  // kernel (their time is the trace's, of the same run).
  const KERNELS = "Inductor kernels";
  const inductorKernels = () => (D.torch && D.torch.framework ? D.torch.framework.inductor_kernels || [] : []).filter((k) => k.time_ms > 0);
  function hierarchy() {
    const root = { name: "all", value: 0, children: new Map() };
    const items = D.primitives.map((p) => ({ time_ms: p.time_ms, levels: [p.kind, p.prop, p.impl, p.shapes] }))
      .concat(inductorKernels().map((k) => ({ time_ms: k.time_ms, levels: [KERNELS, k.graph != null ? `graph ${k.graph}` : "graph ?", k.bound ? `${k.bound}-bound` : "not costed", k.name] })));
    for (const p of items) {
      let n = root;
      root.value += p.time_ms;
      for (const level of p.levels) {
        if (!n.children.has(level)) n.children.set(level, { name: level, value: 0, children: new Map(), parent: n, kind: p.levels[0], trail: [...(n.trail || []), level] });
        n = n.children.get(level);
        n.value += p.time_ms;
      }
    }
    return root;
  }
  function sunburst() {
    const root = hierarchy();
    const S = 460, R = S / 2 - 4, ring = R / 5;
    const svg = el("svg:svg", { viewBox: `0 0 ${S} ${S}`, width: S, height: S, id: "sunburst" });
    const label = el("div", { class: "muted", id: "sunburst-path" });
    function arc(a0, a1, r0, r1) {
      a1 = Math.min(a1, a0 + 2 * Math.PI - 1e-6);
      const p = (a, r) => [S / 2 + r * Math.sin(a), S / 2 - r * Math.cos(a)];
      const big = a1 - a0 > Math.PI ? 1 : 0;
      const [x0, y0] = p(a0, r1), [x1, y1] = p(a1, r1), [x2, y2] = p(a1, r0), [x3, y3] = p(a0, r0);
      return `M${x0},${y0}A${r1},${r1} 0 ${big} 1 ${x1},${y1}L${x2},${y2}A${r0},${r0} 0 ${big} 0 ${x3},${y3}Z`;
    }
    function draw(focus) {
      svg.replaceChildren();
      const path = [];
      for (let n = focus; n && n.parent; n = n.parent) path.unshift(n.name);
      label.textContent = path.length ? "Zoomed: " + path.join(" › ") + " (click the centre to go up)" : "Click a segment to zoom in.";
      let count = 0;
      function walk(n, a0, a1, depth) {
        if (depth > 4) return;
        let a = a0;
        const kids = [...n.children.values()].sort((x, y) => y.value - x.value);
        const sum = kids.reduce((s, k) => s + k.value, 0);
        for (const c of kids) {
          // Each child's share of its parent's arc: of [a0, a1], not of what is left of it.
          const span = sum > 0 ? (a1 - a0) * c.value / sum : 0;
          const b = a + span;
          if (b - a > 0.002) {
            const seg = el("svg:path", { d: arc(a, b, ring * depth, ring * (depth + 1) - 1), fill: color(c.kind), "fill-opacity": 1 - 0.17 * (depth - 1), stroke: "#fff", "stroke-width": 0.7, class: "segment", "data-depth": depth, "data-a0": a.toFixed(6), "data-a1": b.toFixed(6), "data-path": c.trail.join(" › "), onclick: () => draw(c) });
            tooltip(seg, `${[...path, c.name].join(" › ")}\n${ms(c.value)} ms (${pct(c.value / root.value)} of all)`);
            svg.append(seg);
            count++;
            if (b - a > 0.25 && depth === 1) {
              // Along the ring (tangent at the middle of the arc, never upside down), cut to the
              // arc's length and to the straight length that stays inside the ring.
              const m = (a + b) / 2, r = ring * 1.5, x = S / 2 + r * Math.sin(m), y = S / 2 - r * Math.cos(m);
              let deg = m * 180 / Math.PI;
              if (deg > 90 && deg < 270) deg -= 180;
              const room = Math.min(r * (b - a), Math.sqrt(8 * r * (ring / 2 - 4))) - 8;
              const t = fitLabel(c.name, room * 0.92);
              if (t) svg.append(el("svg:text", { x, y: y + 4, transform: `rotate(${deg.toFixed(2)} ${x} ${y})`, "text-anchor": "middle", class: "ring-label", "data-full": c.name, "data-room": room.toFixed(1), style: "fill:#fff;font-weight:600", text: t }));
            }
            walk(c, a, b, depth + 1);
          }
          a = b;
        }
      }
      walk(focus, 0, 2 * Math.PI, 1);
      const centre = el("svg:circle", { cx: S / 2, cy: S / 2, r: ring - 2, fill: "#f0f3f7", onclick: () => draw(focus.parent || root), style: "cursor:pointer" });
      svg.append(centre, el("svg:text", { x: S / 2, y: S / 2 + 4, "text-anchor": "middle", text: ms(focus.value) + " ms" }));
      svg.dataset.segments = count;
    }
    draw(root);
    const kinds = [...root.children.values()].sort((a, b) => b.value - a.value);
    return card("Where the time goes: kind › propagation › implementation › shape" + (inductorKernels().length ? ` (${KERNELS}: graph › bound › kernel, their time the trace's, without its compiling iterations)` : ""), label, svg,
      el("div", { class: "legend" }, kinds.map((k) => el("span", {}, el("i", { style: `background:${color(k.name)}` }), `${k.name} ${pct(k.value / (root.value || 1))}`))));
  }

  // Sortable, filterable table of unique primitives.
  function table() {
    const cols = [
      ["kind", "kind"], ["prop", "propagation"], ["impl", "implementation"], ["dtype", "dtype"], ["shapes", "shapes"],
      ["calls", "calls", "n"], ["time_ms", "time ms", "n"], ["share", "share", "n"], ["mean_ms", "mean ms", "n"], ["median_ms", "median ms", "n"], ["p90_ms", "p90 ms", "n"], ["gflops", "GFLOP/s", "n"],
    ];
    const total = D.total_time_ms || 1;
    const rows = D.primitives.map((p) => Object.assign({}, p, {
      share: p.time_ms / total, mean_ms: p.calls ? p.time_ms / p.calls : 0,
      // No figure for a primitive without operations (reorders), as the terminal leaves it blank.
      gflops: p.flops !== null && p.flops > 0 && p.time_ms > 0 ? p.flops * p.calls / (p.time_ms * 1e6) : null,
    }));
    let sortKey = "time_ms", desc = true, filter = "";
    const tbody = el("tbody");
    const ths = cols.map(([k, label]) => el("th", { text: label, "data-key": k, onclick: () => { if (sortKey === k) desc = !desc; else { sortKey = k; desc = true; } render(); } }));
    function render() {
      const f = filter.toLowerCase();
      const shown = rows.filter((r) => !f || [r.kind, r.prop, r.impl, r.dtype, r.shapes, r.mds, r.exts, r.aux].join(" ").toLowerCase().includes(f));
      shown.sort((a, b) => { const x = a[sortKey], y = b[sortKey]; const c = typeof x === "number" || x === null ? (x ?? -1) - (y ?? -1) : String(x).localeCompare(String(y)); return desc ? -c : c; });
      tbody.replaceChildren(...shown.map((r) => el("tr", {},
        cols.map(([k, , cls]) => {
          const v = r[k];
          const text = k === "share" ? pct(v) : k.endsWith("ms") ? (v === null ? "" : ms(v)) : k === "gflops" ? (v === null ? "" : v >= 1 ? v.toFixed(1) : v.toPrecision(2)) : String(v);
          const td = el("td", { class: cls || (k === "shapes" ? "shape" : null), text });
          if (k === "impl" && r.ref) td.append(" ", el("span", { class: "tag ref", text: "ref" }));
          if (k === "shapes") tooltip(td, `${r.mds}\n${r.exts} ${r.aux}`.trim());
          return td;
        }))));
      ths.forEach((th) => { th.className = th.dataset.key === sortKey ? (desc ? "sorted-desc" : "sorted-asc") : ""; });
      count.textContent = `${shown.length} of ${rows.length} unique primitives`;
    }
    const count = el("div", { class: "muted", id: "table-count" });
    const search = el("input", { type: "search", placeholder: "Filter: kind, implementation, shape, layout, attribute…", oninput: (e) => { filter = e.target.value; render(); } });
    const t = el("table", { id: "primitives" }, el("thead", {}, el("tr", {}, ths)), tbody);
    render();
    return card("Unique primitives", search, count, el("div", { class: "tablewrap" }, t));
  }

  // The units a machine profile measures, as a reader knows them (issue 52): one roof each.
  const UNIT = { amx: "AMX", avx512_bf16: "dot product", avx512_vnni: "dot product (VNNI)", avx512_fp16: "AVX512-FP16", avx512: "AVX-512", avx2: "AVX2", sse: "SSE" };
  // One roof per precision and unit the profile has (`unit_gflops`), and the precision's own
  // peak for a precision without units (a spec sheet).
  function roofsOf(E) {
    const out = [];
    const units = E.unit_gflops || {};
    for (const [prec, peak] of Object.entries(E.peak_gflops)) {
      const u = Object.entries(units[prec] || {}).filter(([, g]) => g > 0);
      if (!u.length) out.push({ label: prec, peak });
      for (const [unit, g] of u) out.push({ label: `${prec} ${UNIT[unit] || unit}`, peak: g });
    }
    return out.sort((a, b) => b.peak - a.peak);
  }
  const WITHHELD = "no time lost is given: the roofs are suspect";
  const lostText = (v) => v != null ? `, ${ms(v)} ms lost` : ` (${WITHHELD})`;
  // Where roof-derived figures are shown: why the roofs cannot be trusted, or nothing.
  const suspectBox = (list, id) => list && list.length ? el("div", { class: "suspect", id },
    el("strong", { text: "⚠ The roofs are suspect: the shares of the bound below are not to be trusted, and no time lost is given." }),
    el("ul", {}, list.map((s) => el("li", { text: s })))) : null;

  // Roofline: achieved GFLOP/s against arithmetic intensity, log-log, with each unit's roof.
  function roofline() {
    const E = D.efficiency;
    if (!E) return card("Roofline", el("p", { class: "muted", text: "No machine profile: run `profilednn peak` (or pass --machine FILE) to see how far each primitive is from the hardware." }));
    const pts = E.primitives.filter((r) => r.intensity > 0 && r.gflops > 0);
    // The framework's own ops (with --torch-trace): squares, coloured by where they run.
    // torch.compile's kernels costed from Inductor's code join them, as `inductor` squares.
    const K = D.torch && D.torch.framework ? (D.torch.framework.inductor_kernels || []).filter((k) => k.cost && k.gflops > 0 && k.bytes > 0)
      .map((k) => ({ ...k, runs_in: "inductor", extra_flops: 0, name: `${k.name} (${k.cost})` })) : [];
    const F = (D.torch && D.torch.framework ? D.torch.framework.rows.filter((r) => r.gflops > 0 && r.bytes > 0 && r.runs_in !== "oneDNN") : []).concat(K);
    const W = 620, H = 380, L = 56, B = 40;
    const xs = pts.map((r) => r.intensity).concat(F.map((r) => (r.flops + r.extra_flops) / r.bytes)), ys = pts.map((r) => r.gflops).concat(F.map((r) => r.gflops));
    const roofs = roofsOf(E);
    const peaks = roofs.map((r) => r.peak);
    const x0 = Math.log10(Math.min(0.01, ...xs)), x1 = Math.log10(Math.max(1000, ...xs) * 2);
    const y0 = Math.log10(Math.min(0.1, ...ys)), y1 = Math.log10(Math.max(...peaks, ...ys) * 2);
    const X = (v) => L + (Math.log10(v) - x0) / (x1 - x0) * (W - L - 10), Y = (v) => H - B - (Math.log10(v) - y0) / (y1 - y0) * (H - B - 10);
    const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", id: "roofline" });
    for (let e = Math.ceil(x0); e <= x1; e++) svg.append(el("svg:line", { x1: X(10 ** e), x2: X(10 ** e), y1: 10, y2: H - B, stroke: "#eef1f4" }), el("svg:text", { x: X(10 ** e), y: H - B + 14, "text-anchor": "middle", text: "1e" + e }));
    for (let e = Math.ceil(y0); e <= y1; e++) svg.append(el("svg:line", { x1: L, x2: W - 10, y1: Y(10 ** e), y2: Y(10 ** e), stroke: "#eef1f4" }), el("svg:text", { x: L - 4, y: Y(10 ** e) + 4, "text-anchor": "end", text: "1e" + e }));
    svg.append(el("svg:text", { x: W / 2, y: H - 6, "text-anchor": "middle", text: "arithmetic intensity (flop/byte)" }), el("svg:text", { x: 12, y: H / 2, transform: `rotate(-90 12 ${H / 2})`, "text-anchor": "middle", text: "achieved GFLOP/s" }));
    roofs.forEach(({ label, peak }, i) => {
      const ridge = peak / E.memory_gbps;
      const a = 10 ** x0, b = 10 ** x1;
      const d = `M${X(a)},${Y(Math.max(a * E.memory_gbps, 10 ** y0))}L${X(Math.min(ridge, b))},${Y(Math.min(peak, b * E.memory_gbps))}L${X(b)},${Y(peak)}`;
      svg.append(el("svg:path", { d, fill: "none", stroke: PALETTE[(i + 4) % PALETTE.length], "stroke-width": 2, class: "roof" }), el("svg:text", { x: W - 14, y: Y(peak) - 4, "text-anchor": "end", class: "roof-label", text: `${label} ${num(peak)} GFLOP/s` }));
    });
    const tmax = Math.max(...pts.map((r) => r.time_ms), 1e-9);
    for (const r of pts) {
      const c = el("svg:circle", { cx: X(r.intensity), cy: Y(r.gflops), r: 3 + 9 * Math.sqrt(r.time_ms / tmax), fill: color(r.prim_kind), "fill-opacity": 0.65, stroke: "#fff", class: "point" });
      svg.append(tooltip(c, `${r.prim_kind} ${r.prop_kind} ${r.precision} ${r.impl}\n${r.shapes}\n${num(r.gflops)} GFLOP/s, ${num(r.gbps)} GB/s, ${pct(r.efficiency)} of the roofline` + lostText(r.lost_ms)));
    }
    svg.dataset.points = pts.length;
    const fmax = Math.max(...F.map((r) => r.time_ms), 1e-9);
    for (const r of F) {
      const x = X((r.flops + r.extra_flops) / r.bytes), y = Y(r.gflops), h = 3 + 8 * Math.sqrt(r.time_ms / fmax);
      const q = el("svg:rect", { x: x - h, y: y - h, width: 2 * h, height: 2 * h, fill: RUNS_IN[r.runs_in] || "#718096", "fill-opacity": 0.6, stroke: "#fff", class: "framework-point" });
      svg.append(tooltip(q, `${r.name} (${r.runs_in}, ${r.precision})\n${num(r.gflops)} GFLOP/s, ${num(r.gbps)} GB/s` + (r.efficiency != null ? `, ${pct(r.efficiency)} of the roofline` + lostText(r.lost_ms) : "")));
    }
    svg.dataset.frameworkPoints = F.length;
    return card(`Roofline on ${E.machine}`,
      F.length ? el("div", { class: "legend" }, el("span", {}, "circles: oneDNN primitives; squares: framework ops in"),
        ...Object.entries(RUNS_IN).filter(([k]) => F.some((r) => r.runs_in === k)).map(([k, c]) => el("span", {}, el("i", { style: `background:${c}` }), k))) : null,
      suspectBox(E.suspect, "roofline-suspect"),
      NO_ONEDNN ? el("div", { class: "muted", text: `Framework ops and compiled kernels against ${E.machine}'s roofs (memory roof ${num(E.memory_gbps)} GB/s); no oneDNN primitive ran.` }) : el("div", { class: "muted", text: `run level: ${pct(E.ratio)} of the bound reached (${ms(E.roofline_ms)} ms roofline / ${ms(E.measured_ms)} ms measured; ${pct(E.coverage)} of oneDNN time has a cost)` + (E.lost_ms != null ? `, ${ms(E.lost_ms)} ms lost against the roofline` : `; ${WITHHELD}`) + `. Memory roof ${num(E.memory_gbps)} GB/s.` }),
      svg, el("div", { class: "muted", text: E.caveat }));
  }

  // Busy time per bin and kind, from the log's timestamps.
  function timeline() {
    const T = D.timeline;
    if (!T) return null;
    const W = 1200, H = 220, B = 26;
    const totals = T.bins.map((b) => b.reduce((x, y) => x + y, 0));
    const ymax = Math.max(T.bin_ms, ...totals) || 1;
    const bw = (W - 40) / T.bins.length;
    const svg = el("svg:svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", id: "timeline" });
    T.bins.forEach((b, i) => {
      let y = H - B;
      b.forEach((v, k) => {
        if (v <= 0) return;
        const h = v / ymax * (H - B - 10);
        y -= h;
        svg.append(tooltip(el("svg:rect", { x: 40 + i * bw, y, width: Math.max(bw - 0.5, 0.5), height: h, fill: color(T.kinds[k]) }), `${ms(i * T.bin_ms)}–${ms((i + 1) * T.bin_ms)} ms: ${T.kinds[k]} ${ms(v)} ms`));
      });
    });
    svg.append(el("svg:line", { x1: 40, x2: W, y1: H - B - (T.bin_ms / ymax) * (H - B - 10), y2: H - B - (T.bin_ms / ymax) * (H - B - 10), stroke: "#c53030", "stroke-dasharray": "4 3" }));
    for (const m of T.markers_ms) svg.append(el("svg:line", { x1: 40 + m / T.bin_ms * bw, x2: 40 + m / T.bin_ms * bw, y1: 0, y2: H - B, stroke: "#718096", "stroke-dasharray": "2 2" }));
    svg.append(el("svg:text", { x: 40, y: H - 6, text: "0 ms" }), el("svg:text", { x: W - 4, y: H - 6, "text-anchor": "end", text: ms(T.bin_ms * T.bins.length) + " ms" }));
    return card(`Timeline${T.of ? " of " + T.of : ""} (oneDNN busy time per bin; dashed red: 100% busy; grey: iteration markers)`, svg,
      el("div", { class: "legend" }, T.kinds.map((k) => el("span", {}, el("i", { style: `background:${color(k)}` }), k))));
  }

  // The PyTorch view: phases and framework ops, oneDNN time vs time outside oneDNN.
  function torchView() {
    const T = D.torch;
    if (!T) return null;
    const per = T.iterations || 1;
    const phases = T.phases.slice().sort((a, b) => b.time_ms - a.time_ms);
    const max = Math.max(...phases.map((p) => p.time_ms), 1e-9);
    const W = 900, rowH = 26;
    const svg = el("svg:svg", { viewBox: `0 0 ${W} ${rowH * phases.length + 6}`, width: "100%", id: "torch-phases" });
    phases.forEach((p, i) => {
      const y = 3 + i * rowH, w = (v) => v / max * (W - 260);
      svg.append(el("svg:text", { x: 0, y: y + 15, text: p.name }),
        tooltip(el("svg:rect", { x: 110, y, width: w(p.onednn_ms), height: 18, fill: "#2b6cb0" }), `${p.name}: ${ms(p.onednn_ms / per)} ms in oneDNN per iteration`),
        tooltip(el("svg:rect", { x: 110 + w(p.onednn_ms), y, width: w(p.outside_ms), height: 18, fill: "#dd6b20" }), `${p.name}: ${ms(p.outside_ms / per)} ms outside oneDNN per iteration`),
        el("svg:text", { x: W - 140, y: y + 15, text: `${ms(p.time_ms / per)} ms/iter` }));
    });
    const rows = T.ops.slice(0, 25).map((o) => el("tr", {},
      el("td", { class: "shape", text: o.name }), el("td", { text: o.phase }),
      el("td", { class: "n", text: (o.calls / per).toFixed(1) }), el("td", { class: "n", text: ms(o.time_ms / per) }),
      el("td", { class: "n", text: ms(o.onednn_ms / per) }), el("td", { class: "n", text: ms(o.outside_ms / per) })));
    const order = ["data", "forward", "loss", "backward", "zero_grad", "optimizer"];
    const its = T.per_iteration || [];
    const cols = order.filter((c) => its.some((it) => it.phases.some((p) => p.name === c)));
    const iterTable = its.length ? el("div", { class: "tablewrap" }, el("table", { id: "torch-iterations" },
      el("thead", {}, el("tr", {}, ["iteration", "wall ms", "oneDNN ms", ...cols.map((c) => c + " ms")].map((h) => el("th", { text: h })))),
      el("tbody", {}, its.map((it) => el("tr", {},
        el("td", { class: "n", text: String(it.index) + ((T.compiling || []).some((c) => c.index === it.index) ? " (compiling)" : "") }), el("td", { class: "n", text: ms(it.time_ms) }), el("td", { class: "n", text: ms(it.onednn_ms) }),
        ...cols.map((c) => { const p = it.phases.find((q) => q.name === c); return el("td", { class: "n", text: ms(p ? p.time_ms : 0) }); })))))) : null;
    const bwd = new Map((T.module_backward || []).map((m) => [m.name, m]));
    const mods = (T.modules || []).slice(0, 25);
    const modTable = mods.length ? el("div", { class: "tablewrap" }, el("table", { id: "torch-modules" },
      el("thead", {}, el("tr", {}, ["nn.Module (children included)", "forward ms", "fwd oneDNN ms", "backward ms", "bwd oneDNN ms"].map((h) => el("th", { text: h })))),
      el("tbody", {}, mods.map((m) => { const b = bwd.get(m.name) || { time_ms: 0, onednn_ms: 0 }; return el("tr", {},
        el("td", { class: "shape", text: m.name }), el("td", { class: "n", text: ms(m.time_ms / per) }), el("td", { class: "n", text: ms(m.onednn_ms / per) }),
        el("td", { class: "n", text: ms(b.time_ms / per) }), el("td", { class: "n", text: ms(b.onednn_ms / per) })); })))) : null;
    // The steady step by where it runs: one stacked bar.
    const classes = (T.runs_in || []).filter((c) => c.time_ms > 0);
    let where = null;
    if (classes.length) {
      // "Steady" only when compiling iterations were set apart (an eager run's are all in).
      const per = (T.compiling || []).length ? "per steady iteration" : "per iteration";
      const bar = el("svg:svg", { viewBox: `0 0 ${W} 30`, width: "100%", id: "torch-runs-in" });
      let x = 0;
      for (const c of classes) {
        const w = c.share * W;
        bar.append(tooltip(el("svg:rect", { x, y: 2, width: Math.max(w, 0.5), height: 24, fill: RUNS_IN[c.class] || "#718096" }), `${c.class}: ${ms(c.time_ms)} ms ${per} (${pct(c.share)})`));
        if (w > 70) bar.append(el("svg:text", { x: x + 4, y: 19, fill: "#fff", text: `${c.class} ${pct(c.share)}` }));
        x += w;
      }
      where = [el("h3", { text: `Where the step runs (${per})` }), bar,
        el("div", { class: "legend" }, classes.map((c) => el("span", {}, el("i", { style: `background:${RUNS_IN[c.class] || "#718096"}` }), `${c.class} ${ms(c.time_ms)} ms`)))];
    }
    const compiled = (T.compiling || []).length ? el("p", { class: "muted", id: "torch-compiling",
      text: `torch.compile: iteration ${T.compiling.map((c) => `${c.index} (${(c.compile_ms / 1e3).toFixed(1)} s)`).join(", ")} compiled; the figures are over the ${T.iterations} other (steady) iterations.` }) : null;
    const ws = T.whole_step;
    const partLost = (p) => p.lost_ms != null ? ` (${ms(p.lost_ms)} lost)` : "";
    const whole = ws ? [suspectBox(ws.suspect, "torch-whole-step-suspect"), el("p", { id: "torch-whole-step", text: `Whole step against the roofline: ${ms(ws.step_ms)} ms a step, ${ms(ws.onednn.roofline_ms + ws.framework.roofline_ms)} ms at the roofs (${pct(ws.efficiency)}): ${NO_ONEDNN ? "" : `oneDNN primitives ${ms(ws.onednn.measured_ms)} ms${partLost(ws.onednn)}, `}framework ops ${ms(ws.framework.measured_ms)} ms${partLost(ws.framework)}, the rest ${ms(ws.rest_ms)} ms at no roof.` + ((ws.suspect || []).length ? ` ${WITHHELD}.` : "") })] : null;
    const lostTable = ws && ws.lost.length ? el("div", { class: "tablewrap" }, el("table", { id: "torch-lost" },
      el("thead", {}, el("tr", {}, ["time lost ms", "runs in", "efficiency", "primitive or framework op"].map((h) => el("th", { text: h })))),
      el("tbody", {}, ws.lost.map((l) => el("tr", {}, el("td", { class: "n", text: ms(l.lost_ms) }), el("td", { text: l.runs_in }),
        el("td", { class: "n", text: pct(l.efficiency) }), el("td", { class: "shape", text: l.name })))))) : null;
    const costed = T.framework ? T.framework.rows.filter((r) => r.costed_calls > 0).slice(0, 25) : [];
    const costTable = costed.length ? el("div", { class: "tablewrap" }, el("table", { id: "torch-costed" },
      el("thead", {}, el("tr", {}, ["framework op", "runs in", "calls", "ms", "GFLOP", "GFLOP/s", "GB/s", "lost ms"].map((h) => el("th", { text: h })))),
      el("tbody", {}, costed.map((r) => el("tr", {}, el("td", { class: "shape", text: r.name }),
        el("td", {}, el("i", { class: "swatch", style: `background:${RUNS_IN[r.runs_in] || "#718096"}` }), " " + r.runs_in),
        el("td", { class: "n", text: (r.calls / per).toFixed(1) }), el("td", { class: "n", text: ms(r.time_ms / per) }),
        el("td", { class: "n", text: ((r.flops + r.extra_flops) / per / 1e9).toFixed(3) }), el("td", { class: "n", text: r.gflops != null ? num(r.gflops) : "" }),
        el("td", { class: "n", text: r.gbps != null ? num(r.gbps) : "" }), el("td", { class: "n", text: r.lost_ms != null ? ms(r.lost_ms / per) : "" })))))) : null;
    const kernels = T.framework ? T.framework.inductor_kernels || [] : [];
    const kernelTable = kernels.length ? el("div", { class: "tablewrap" }, el("table", { id: "torch-kernels" },
      el("thead", {}, el("tr", {}, ["Inductor kernel", "calls", "ms", "GFLOP/s", "GB/s", "% of roof", "fused ops"].map((h) => el("th", { text: h })))),
      el("tbody", {}, kernels.slice(0, 25).map((k) => el("tr", { title: k.cost || (k.uncosted ? `not costed: ${k.uncosted}` : "") }, el("td", { class: "shape", text: k.name }),
        el("td", { class: "n", text: (k.calls / per).toFixed(1) }), el("td", { class: "n", text: ms(k.time_ms / per) }),
        el("td", { class: "n", text: k.gflops != null ? num(k.gflops) : "" }), el("td", { class: "n", text: k.gbps != null ? num(k.gbps) : "" }),
        el("td", { class: "n", text: k.efficiency != null ? pct(k.efficiency) : "" }), el("td", { text: k.fused.join(", ") })))))) : null;
    const costedKernels = kernels.filter((k) => k.cost).length;
    return card(NO_ONEDNN ? "PyTorch view (per iteration)" : `PyTorch view (per iteration; ${T.attributed_calls} of ${T.attributed_calls + T.unattributed_calls} primitive executions attributed)`,
      compiled, where, whole, lostTable,
      el("div", { class: "legend" }, el("span", {}, el("i", { style: "background:#2b6cb0" }), "in oneDNN"), el("span", {}, el("i", { style: "background:#dd6b20" }), "outside oneDNN")),
      svg,
      costTable ? el("h3", { text: `Framework ops' cost (${pct(T.framework.costed_share || 0)} of framework-op time costed)` }) : null, costTable,
      kernelTable ? el("h3", { text: "Inductor kernels (torch.compile's generated code)" + (costedKernels ? `: ${costedKernels} of ${kernels.length} costed, ${kernels.find((k) => k.cost).cost}` : "") }) : null, kernelTable,
      iterTable ? el("h3", { text: "Each iteration" }) : null, iterTable,
      el("h3", { text: "Framework ops, most time outside oneDNN first" }),
      el("div", { class: "tablewrap" }, el("table", { id: "torch-ops" },
        el("thead", {}, el("tr", {}, ["framework op", "phase", "calls", "time ms", "oneDNN ms", "outside ms"].map((h) => el("th", { text: h })))),
        el("tbody", {}, rows))),
      modTable ? el("h3", { text: "Modules (backward: the autograd nodes their forward ops created)" }) : null, modTable);
  }

  // Both runs' PyTorch views in the diff page (compared in Rust: torch_compare.rs).
  function torchDiff(T) {
    if (!T) return null;
    const max = Math.max(...T.phases.map((p) => Math.max(p.before.time_ms, p.after.time_ms)), 1e-9);
    const W = 1100, rowH = 36;
    const svg = el("svg:svg", { viewBox: `0 0 ${W} ${rowH * T.phases.length + 6}`, width: "100%", id: "diff-torch-phases" });
    T.phases.forEach((p, i) => {
      const y = 3 + i * rowH, w = (v) => v / max * (W - 320);
      const bar = (r, dy, label) => [
        tooltip(el("svg:rect", { x: 120, y: y + dy, width: w(r.onednn_ms), height: 14, fill: "#2b6cb0" }), `${p.name} ${label}: ${ms(r.onednn_ms)} ms in oneDNN`),
        tooltip(el("svg:rect", { x: 120 + w(r.onednn_ms), y: y + dy, width: w(r.outside_ms), height: 14, fill: "#dd6b20" }), `${p.name} ${label}: ${ms(r.outside_ms)} ms outside oneDNN`)];
      svg.append(el("svg:text", { x: 0, y: y + 20, text: p.name }), ...bar(p.before, 0, "before"), ...bar(p.after, 16, "after"),
        el("svg:text", { x: W - 190, y: y + 20, text: `${ms(p.before.time_ms)} → ${ms(p.after.time_ms)} ms` }));
    });
    return card("PyTorch view, per iteration (each phase: upper bar before, lower bar after)",
      el("div", { class: "legend" }, el("span", {}, el("i", { style: "background:#2b6cb0" }), "in oneDNN"), el("span", {}, el("i", { style: "background:#dd6b20" }), "outside oneDNN")),
      svg,
      el("div", { class: "tablewrap" }, el("table", { id: "diff-torch-ops" },
        el("thead", {}, el("tr", {}, ["framework op that changed most", "phase", "before ms", "after ms"].map((h) => el("th", { text: h })))),
        el("tbody", {}, T.ops.slice(0, 25).map((o) => el("tr", {},
          el("td", { class: "shape", text: o.name }), el("td", { text: o.phase }), el("td", { class: "n", text: ms(o.before_ms) }),
          el("td", { class: "n " + (o.after_ms > o.before_ms ? "bad" : "good"), text: ms(o.after_ms) })))))));
  }

  function advice() {
    const A = D.advice;
    if (!A) return null;
    if (!A.findings.length) return card("Advice", el("p", { class: "muted", text: `No rule fired (${A.rules.length} checked).` }));
    return card("Advice (largest estimated gain first)", A.findings.map((f) => el("div", { class: "finding" },
      el("div", { class: "id", text: f.id }), el("b", { text: f.title }),
      el("div", { text: f.gain_ms === null ? "gain: not estimable from the log" : `gain: up to ${ms(f.gain_ms)} ms` + (f.gain_ms_per_iteration !== null ? ` (${ms(f.gain_ms_per_iteration)} ms per iteration)` : "") + ` — ${f.gain_basis}` }),
      el("div", { text: "try: " + f.action }))));
  }

  // Ranks of multi-rank logs: a column per rank (its figures, each iteration, the time per kind
  // and propagation), and the straggler.
  function ranks() {
    if (!D.ranks || !D.ranks.length) return null;
    const fmt = (v) => v === null || v === undefined ? "–" : ms(v);
    return D.rank_logs.map((L) => {
      const R = D.ranks.filter((r) => r.log === L.log);
      const row = (name, f) => el("tr", {}, el("td", { text: name }), R.map((r) => el("td", { class: "num", text: f(r) })));
      const iters = Math.max(0, ...R.map((r) => r.per_iteration.length));
      const body = [
        row("executions", (r) => r.calls),
        row("oneDNN ms", (r) => ms(r.total_time_ms)),
        row("oneDNN ms / iteration", (r) => fmt(r.time_ms_per_iteration)),
        row("wall ms / iteration", (r) => fmt(r.wall_ms_per_iteration)),
        row("outside oneDNN ms / iteration", (r) => fmt(r.outside_ms_per_iteration)),
        row("threads", (r) => r.threads ?? "–"),
        row("mini-batch", (r) => r.mini_batch ?? "–"),
        row("stopped early", (r) => r.stopped_early || "no"),
      ];
      for (let i = 0; i < iters; i++) {
        body.push(row(`iteration ${i}: oneDNN / wall / outside ms`, (r) => {
          const t = r.per_iteration[i];
          return t ? `${ms(t.onednn_ms)} / ${fmt(t.wall_ms)} / ${fmt(t.outside_ms)}` : "(stopped)";
        }));
      }
      const groups = (D.rank_groups || []).filter((g) => g.per_rank[L.log]);
      for (const g of groups) {
        const per = g.per_rank[L.log];
        body.push(el("tr", {}, el("td", { text: g.group + " ms" }), R.map((r) => el("td", { class: "num", text: ms(per[r.rank] || 0) }))));
      }
      const im = L.imbalance;
      const perRank = el("div", { class: "tablewrap" }, el("table", { id: "ranks" },
        el("thead", {}, el("tr", {}, el("th", { text: "" }), R.map((r) => el("th", { class: "num", text: "rank " + r.rank })))),
        el("tbody", {}, body)));
      // Beyond 8 ranks a column per rank is pages wide: the distribution over the ranks
      // first, the slowest ranks and why, the ranks that stopped early; the columns folded.
      const many = R.length > 8;
      const sp = L.spread || {};
      const spreadRow = (name, s) => el("tr", {}, el("td", { text: name }), s
        ? [`${ms(s.min)} (rank ${s.min_rank})`, ms(s.median), ms(s.p95), `${ms(s.max)} (rank ${s.max_rank})`].map((t) => el("td", { class: "num", text: t }))
        : el("td", { text: "–" }));
      const spread = many ? el("table", { id: "rank-spread" },
        el("thead", {}, el("tr", {}, ["per iteration, over ranks", "min", "median", "p95", "max"].map((t) => el("th", { text: t })))),
        el("tbody", {}, [spreadRow("oneDNN ms", sp.onednn_ms), spreadRow("wall ms", sp.wall_ms), spreadRow("outside oneDNN ms", sp.outside_ms)])) : null;
      const slow = many && im && im.slowest && im.slowest.length > 1 ? el("ul", {}, im.slowest.map((r) => el("li", { text:
        `rank ${r.rank}${r.node ? ` (${r.node})` : ""}: ${ms(r.ms_per_iteration)} ms of oneDNN time per iteration, ${r.ratio.toFixed(2)}× the median rank's` +
        (r.differences.length ? "; more time in " + r.differences.map((d) => `${d.group} (+${ms(d.difference_ms_per_iteration)} ms)`).join(", ") : "") }))) : null;
      const stopped = many ? R.filter((r) => r.stopped_early) : [];
      // Nodes, when the launcher or the logs' layout named them; a slow node (every one of its
      // ranks slow: the machine) is told apart from a slow rank (its own work).
      const nodes = L.nodes && L.nodes.length ? el("p", { text: "Nodes: " + L.nodes.slice(0, 16).map((n) => `${n.node} (${n.ranks.length} ranks)`).join(", ") + (L.nodes.length > 16 ? ` and ${L.nodes.length - 16} more` : "") + "." }) : null;
      const nodeVerdict = im && im.slow_node
        ? el("p", { class: "bad", text: `Slow node: ${im.slow_node.node}: every one of its ${im.slow_node.ranks.length} ranks is slow, its fastest ${ms(im.slow_node.fastest_ms_per_iteration)} ms of oneDNN time per iteration, ${im.slow_node.ratio.toFixed(2)}× the other nodes' median rank's ${ms(im.slow_node.others_median_ms_per_iteration)} ms: the machine, not the ranks' work` + (im.slow_node.ranks.length === 1 ? " (one rank per node: a slow rank and a slow node look the same)." : ".") })
        : im && im.straggler_node && L.nodes && L.nodes.length ? el("p", { text: `A slow rank, not a slow node: the straggler's node ${im.straggler_node} is not slow as a whole.` }) : null;
      return card(`Ranks of ${L.log} (${L.ranks}, told apart by ${L.launcher})`,
        nodes,
        spread,
        slow,
        stopped.length ? el("p", { text: `Stopped early: ${stopped.map((r) => `rank ${r.rank} (${r.stopped_early})`).join("; ")}.` }) : null,
        many ? el("details", {}, el("summary", { text: `Every rank, a column each (${R.length})` }), perRank) : perRank,
        im ? el("p", { text: `Straggler: rank ${im.straggler}, ${ms(im.straggler_ms_per_iteration)} ms of oneDNN time per iteration, ${im.ratio.toFixed(2)}× the median rank's ${ms(im.median_ms_per_iteration)} ms` +
          (im.straggler_node ? ` (on node ${im.straggler_node})` : "") +
          (im.mini_batch ? `; mini-batch ${im.mini_batch[0]} against ${im.mini_batch[1]}` : "") + "." }) : null,
        nodeVerdict,
        im && im.differences.length ? el("ul", {}, im.differences.map((d) => el("li", { text: `${d.group}: +${ms(d.difference_ms_per_iteration)} ms per iteration (${ms(d.straggler_ms_per_iteration)} against ${ms(d.median_ms_per_iteration)})` }))) : null);
    });
  }

  function lines() {
    const l = D.lines;
    const skipped = Object.entries(l.skipped || {}).map(([k, v]) => `${v} ${k}`).join(", ") || "none";
    const diag = Object.entries(D.diagnostics || {}).map(([k, v]) => `${v} ${k}`).join(", ");
    return card("Lines read",
      el("p", { text: `${l.total} lines: ${l.exec} executions, ${l.create} creations, ${l.info} info, ${l.diagnostics} diagnostics, ${l.malformed} malformed. Skipped: ${skipped}.` }),
      diag ? el("p", { text: "oneDNN diagnostics: " + diag }) : null,
      D.malformed.length ? el("ul", {}, D.malformed.slice(0, 20).map((m) => el("li", { text: `line ${m.line}${m.count > 1 ? ` (and ${m.count - 1} more)` : ""}: ${m.expected} — ${m.text.slice(0, 160)}` }))) : null,
      D.read_errors.map((e) => el("p", { class: "bad", text: e })));
  }

  function diffPage() {
    const d = D.diff;
    const speed = (s) => s === null ? "" : s === 1 ? "no change" : Math.abs(s - 1) < 0.005 ? `within 0.5% (${s > 1 ? "faster" : "slower"})` : s >= 1 ? `${s.toFixed(2)}× faster` : `${(1 / s).toFixed(2)}× slower`;
    const head = card(null, el("h1", { text: "ProfileDNN diff" }),
      el("div", { class: "muted", text: `before: ${d.before}` }), el("div", { class: "muted", text: `after: ${d.after}` }),
      el("div", { class: "facts" },
        [["before", ms(d.before_time_ms) + " ms"], ["after", ms(d.after_time_ms) + " ms"], ["speed-up", speed(d.speedup)],
          ["matched / appeared / disappeared", `${d.matched} / ${d.appeared_total} / ${d.disappeared_total}`]]
          .map(([k, v]) => el("div", { class: "fact" }, el("b", { text: v }), el("span", { text: k })))),
      el("div", { class: "muted", text: d.scale === "per_iteration" ? `per iteration (${d.before_iterations} vs ${d.after_iterations})` : "whole logs" }));
    const max = Math.max(...d.groups.map((g) => Math.max(g.before.time_ms, g.after.time_ms)), 1e-9);
    const W = 1100, rowH = 34;
    const svg = el("svg:svg", { viewBox: `0 0 ${W} ${rowH * d.groups.length + 10}`, width: "100%", id: "diff-bars" });
    d.groups.forEach((g, i) => {
      const y = 5 + i * rowH, w = (v) => v / max * (W - 420);
      svg.append(el("svg:text", { x: 0, y: y + 17, text: `${g.prim_kind} ${g.prop_kind}` }),
        tooltip(el("svg:rect", { x: 240, y, width: w(g.before.time_ms), height: 13, fill: "#a0aec0" }), `before ${ms(g.before.time_ms)} ms`),
        tooltip(el("svg:rect", { x: 240, y: y + 15, width: w(g.after.time_ms), height: 13, fill: "#2b6cb0" }), `after ${ms(g.after.time_ms)} ms`),
        el("svg:text", { x: W - 170, y: y + 17, text: speed(g.speedup) }));
    });
    const list = (title, rows, total) => rows.length ? card(`${title} (${rows.length} of ${total})`, el("div", { class: "tablewrap" }, el("table", {},
      el("thead", {}, el("tr", {}, ["primitive", "before ms", "after ms", "Δ ms", "calls", "implementation"].map((h) => el("th", { text: h })))),
      el("tbody", {}, rows.map((r) => el("tr", {},
        el("td", { class: "shape", text: `${r.prim_kind} ${r.prop_kind} ${r.dtype} ${r.shapes}` }),
        el("td", { class: "n", text: ms(r.before.time_ms) }), el("td", { class: "n", text: ms(r.after.time_ms) }),
        el("td", { class: "n " + (r.delta_ms > 0 ? "bad" : "good"), text: r.delta_ms.toFixed(3) }),
        el("td", { class: "n", text: `${num(r.before.calls)} → ${num(r.after.calls)}` }),
        el("td", { text: r.implementation_changed ? `${r.before.implementations.join(" ")} → ${r.after.implementations.join(" ")}` : (r.before.implementations[0] || r.after.implementations[0] || "") }))))))) : null;
    app.append(...[head, card("By kind and propagation (grey: before, blue: after)", svg), torchDiff(D.torch),
      list("Largest changes", d.changes, d.changes_total), list("Appeared (only after)", d.appeared, d.appeared_total), list("Disappeared (only before)", d.disappeared, d.disappeared_total),
      list("Implementation changed", d.implementation_changes, d.implementation_changes_total), list("Call count changed", d.call_changes, d.call_changes_total)].filter(Boolean));
  }

  try {
    app.replaceChildren();
    if (D.page === "diff") diffPage();
    else if (D.page === "machines") return; // machines.js draws it, and says when it is done
    else if (NO_ONEDNN) app.append(...[header(), torchView(), advice(), inductorKernels().length ? sunburst() : null, roofline(), lines()].flat().filter(Boolean));
    else app.append(...[header(), advice(), el("div", { class: "row" }, sunburst(), el("div", { style: "flex:1 1 420px;display:flex;flex-direction:column;gap:14px" }, split(), roofline())), timeline(), ranks(), torchView(), table(), lines()].flat().filter(Boolean));
    if (!document.body.dataset.status.startsWith("error")) status("ok");
  } catch (e) {
    status("error: " + e.message);
    app.append(el("pre", { class: "bad", text: "Report rendering failed: " + e.stack }));
  }
})();
