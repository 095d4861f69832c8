"use strict";
// `project --to --format html`: the step of one log on machines not at hand, side by side
// (crates/project/src/target, docs/machines.md). The same figures as the terminal
// (crates/report/src/machine_projection.rs), drawn: one bar per target, split into its parts,
// with its error band as a whisker, the logged step as the first bar.
(function () {
  const D = JSON.parse(document.getElementById("data").textContent);
  if (D.page !== "machines") return;
  const P = D.projection;
  const app = document.getElementById("app");
  const SVG = "http://www.w3.org/2000/svg";
  const el = (tag, attrs, ...kids) => {
    const n = tag.startsWith("svg:") ? document.createElementNS(SVG, tag.slice(4)) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "text") n.textContent = v;
      else n.setAttribute(k, v);
    }
    for (const k of kids.flat()) if (k !== null && k !== undefined) n.append(k.nodeType ? k : document.createTextNode(String(k)));
    return n;
  };
  const f3 = (v) => v.toFixed(3);
  const card = (title, ...kids) => el("section", { class: "card" }, title ? el("h2", { text: title }) : null, ...kids);
  const unit = P.per_iteration ? "ms per iteration" : "ms (whole log)";
  const PART_COLOR = { "oneDNN": "#2b6cb0", "framework ops (costed)": "#dd6b20" };
  const partColor = (name) => PART_COLOR[name] || "#a0aec0";
  const band = (t) => `${f3(t.band.low_ms)}–${f3(t.band.high_ms)} ms (±${(t.band.relative * 100).toFixed(0)} %${t.band.measured ? ", measured" : ", not yet measured"})`;

  const head = card(null, el("h1", { text: "ProfileDNN: the step on other machines" }),
    el("div", { class: "muted", text: `log: ${P.log}${P.trace ? ` with ${P.trace}` : ""}` }),
    el("div", { class: "muted", text: `source: ${P.source.name} (${P.source.profile})${P.log_threads ? `, ${P.log_threads} thread(s) per rank` : ""}` }));

  // One row per target, as ordered (cheapest per epoch first when priced).
  const cols = ["target", "profile", "threads", `logged (${unit})`, `projected (${unit})`, "×", "band"];
  const epoch = P.targets.some((t) => t.epoch);
  if (epoch) cols.push("epoch s (band)", "cost per epoch (band)");
  const rows = P.targets.map((t) => el("tr", { class: "target-row", "data-target": t.target },
    el("td", { text: t.target }), el("td", { text: `${t.profile} (${t.profile_kind.replace("_", " ")})` }),
    el("td", { class: "n", text: t.threads }), el("td", { class: "n", text: f3(t.logged_step_ms) }),
    el("td", { class: "n projected", text: f3(t.projected_step_ms) }), el("td", { class: "n", text: t.ratio.toFixed(2) }),
    el("td", { class: "n", text: band(t) }),
    epoch ? el("td", { class: "n", text: t.epoch ? `${t.epoch.epoch_s.toFixed(1)} (${t.epoch.epoch_s_low.toFixed(1)}–${t.epoch.epoch_s_high.toFixed(1)})` : "" }) : null,
    epoch ? el("td", { class: "n", text: t.epoch && t.epoch.cost !== undefined && t.epoch.cost !== null ? `${t.epoch.cost.toFixed(2)} (${t.epoch.cost_low.toFixed(2)}–${t.epoch.cost_high.toFixed(2)}) at ${t.epoch.price_per_hour}/h` : "" }) : null));
  const table = card("Targets", el("div", { class: "tablewrap" }, el("table", { id: "targets" },
    el("thead", {}, el("tr", {}, cols.map((h) => el("th", { text: h })))), el("tbody", {}, rows))));

  // Bars: the logged step, then each target's projected parts, the band as a whisker.
  const max = Math.max(...P.targets.map((t) => Math.max(t.band.high_ms, t.logged_step_ms)), 1e-9);
  const W = 1100, left = 300, rowH = 30, room = W - left - 100;
  const x = (v) => left + v / max * room;
  const svg = el("svg:svg", { viewBox: `0 0 ${W} ${rowH * (P.targets.length + 1) + 30}`, width: "100%", id: "machine-bars" });
  const logged = P.targets[0] ? P.targets[0].logged_step_ms : 0;
  const label = (t) => t.length > 46 ? t.slice(0, 45) + "…" : t;
  svg.append(el("svg:text", { x: 0, y: 19, text: label(`${P.source.name} (logged)`) }),
    el("svg:rect", { x: left, y: 6, width: x(logged) - left, height: 18, fill: "#718096" }),
    el("svg:text", { x: x(logged) + 6, y: 19, text: `${f3(logged)} ms` }));
  P.targets.forEach((t, i) => {
    const y = 6 + (i + 1) * rowH;
    svg.append(el("svg:text", { x: 0, y: y + 13, text: label(t.target) }));
    let at = 0;
    for (const p of t.parts) {
      const r = el("svg:rect", { x: x(at), y, width: Math.max(0, x(at + p.projected_ms) - x(at)), height: 18, fill: partColor(p.name), class: "part", "data-part": p.name });
      r.append(el("svg:title", { text: `${p.name}: ${f3(p.logged_ms)} → ${f3(p.projected_ms)} ms` }));
      svg.append(r);
      at += p.projected_ms;
    }
    svg.append(el("svg:line", { x1: x(t.band.low_ms), x2: x(t.band.high_ms), y1: y + 9, y2: y + 9, stroke: "#1d2430", "stroke-width": 1.5, class: "band" }),
      el("svg:line", { x1: x(t.band.low_ms), x2: x(t.band.low_ms), y1: y + 3, y2: y + 15, stroke: "#1d2430" }),
      el("svg:line", { x1: x(t.band.high_ms), x2: x(t.band.high_ms), y1: y + 3, y2: y + 15, stroke: "#1d2430" }),
      el("svg:text", { x: x(t.band.high_ms) + 6, y: y + 13, text: `${f3(t.projected_step_ms)} ms` }));
  });
  const names = [...new Set(P.targets.flatMap((t) => t.parts.map((p) => p.name)))];
  const legend = el("div", { class: "legend" }, names.map((n) => el("span", {}, el("i", { style: `background:${partColor(n)}` }), n)),
    el("span", { text: "whisker: the error band" }));
  const bars = card(`The step, ${unit}`, svg, legend);

  // Each target's families, phases and what the projection assumed.
  const detail = (t) => card(`${t.target}`,
    el("p", { class: "muted", text: `band: ${t.band.basis}` }),
    t.emulated.length ? el("div", { class: "suspect" }, el("b", { text: "emulated there" }), el("ul", {}, t.emulated.map((e) => el("li", { text: e })))) : null,
    el("div", { class: "tablewrap" }, el("table", { class: "families" },
      el("thead", {}, el("tr", {}, ["part", "family", "logged ms", "projected ms", "bound"].map((h) => el("th", { text: h })))),
      el("tbody", {}, t.families.filter((f) => f.logged_ms > 0).map((f) => el("tr", {},
        el("td", { text: f.part }), el("td", { text: f.family }), el("td", { class: "n", text: f3(f.logged_ms) }),
        el("td", { class: "n", text: f3(f.projected_ms) }), el("td", { text: f.memory_bound_ms > 0.5 * f.logged_ms ? "memory" : (f.scaled_by ? "" : "compute") })))))),
    t.phases.length ? el("p", { text: "phases: " + t.phases.map((p) => `${p.name} ${f3(p.logged_ms)} → ${f3(p.projected_ms)}`).join(" · ") }) : null,
    el("details", {}, el("summary", { text: `assumptions (${t.assumptions.length}) and what is not modelled (${t.not_modelled.length})` }),
      el("ul", {}, t.assumptions.map((a) => el("li", { text: a }))), el("ul", {}, t.not_modelled.map((a) => el("li", { text: a })))));
  app.replaceChildren(head, bars, table, ...P.targets.map(detail));
  if (!document.body.dataset.status.startsWith("error")) document.body.dataset.status = "ok";
})();
