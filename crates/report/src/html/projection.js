"use strict";
// The what-if projections of the advice (`report --replay`), added to the advice section that
// report.js drew. A separate script, embedded only on pages whose advice has projections, so
// that every other page stays as it was. An error here reaches report.js's error handler.
(function () {
  const A = JSON.parse(document.getElementById("data").textContent).advice;
  const steps = A ? A.step_projections || [] : [];
  if (!A || !((A.projections || []).length || steps.length || (A.not_recommended || []).length)) return;
  const section = [...document.querySelectorAll("#app > section.card")]
    .find((s) => s.querySelector("h2")?.textContent?.startsWith("Advice"));
  if (!section) throw new Error("no advice section to add the projections to");
  const el = (tag, attrs, ...kids) => {
    const n = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "text") n.textContent = v;
      else n.setAttribute(k, v);
    }
    n.append(...kids.flat().filter((k) => k !== null && k !== undefined));
    return n;
  };
  // As the terminal prints them (crates/report/src/advice.rs, `Projected::factor`).
  const f3 = (v) => v.toFixed(3);
  const factor = (s) => s <= 1 && s > 0 ? `${(1 / s).toFixed(2)}× slower` : `${s.toFixed(2)}× faster`;
  const unit = (p) => p.per_iteration ? "ms per iteration" : "ms";
  // `Projected::headline`: no speed-up against a log whose timings look polluted.
  const headline = (p) => p.log_polluted ? `speed-up withheld: ${p.log_polluted}` : factor(p.speedup);
  const figures = (p) => {
    let t = `oneDNN ${f3(p.logged_onednn_ms)} → ${f3(p.projected_onednn_ms)} ${unit(p)} (${headline(p)})`;
    if (p.as_logged_replay_ms !== undefined && p.as_logged_replay_ms !== null)
      t += `; as-logged replay ${f3(p.as_logged_replay_ms)} ${unit(p)}, the change ${factor(p.speedup_vs_as_logged_replay)} against it`;
    return t + `; reorders ${f3(p.logged_reorder_ms)} → ${f3(p.projected_reorder_ms)} ${unit(p)}`;
  };
  const projected = (p) => el("div", { class: "projected", "data-transform": p.transform },
    `projected (\`${p.transform}\`, ${p.replay}): ${figures(p)}`);

  // Each finding whose gain stands on a projection: the figures under it (same order as drawn).
  const drawn = [...section.querySelectorAll(":scope > div.finding")];
  A.findings.forEach((f, i) => {
    if (f.projection && drawn[i]) drawn[i].append(projected(f.projection));
  });
  if ((A.not_recommended || []).length) {
    section.append(el("div", { id: "advice-not-recommended" },
      el("h3", { text: "Not recommended (projected slower on this machine)" }),
      A.not_recommended.map((n) => el("div", { class: "not-recommended", "data-id": n.id, style: "border-left:4px solid var(--bad);padding:6px 10px;margin:8px 0;background:#fff5f5" },
        el("div", { class: "id", style: "font-family:ui-monospace,monospace;font-size:12px;color:var(--bad)", text: n.id }),
        el("div", { text: n.why }),
        n.projection ? projected(n.projection) : null))));
  }
  // One headline per what-if, as the terminal lists them (crates/report/src/advice.rs,
  // `projection_lines`): the whole step where it was projected, the oneDNN-only figure of the
  // same change a labelled part under it.
  const onednn = (p) => `${f3(p.logged_onednn_ms)} → ${f3(p.projected_onednn_ms)} ${unit(p)} (${headline(p)}), replayed with ${p.replayed_with}`;
  const baselineName = (w) => w.baseline === "replayed_as_recorded" ? "the step replayed as recorded" : "the recorded step";
  const [lo, hi] = [0.5, 2.0]; // TRUSTED_DRIFT
  const stepLine = (w) => {
    const drift = w.baseline_step_ms / Math.max(w.logged_step_ms, 1e-9);
    const speedup = w.projected_step_ms > 0 ? w.baseline_step_ms / w.projected_step_ms : 1;
    let t = `Whole step \`${w.transform}\`, the headline (${w.replayed_with}): ${f3(w.baseline_step_ms)} → ${f3(w.projected_step_ms)} ms per iteration (${factor(speedup)}, against ${baselineName(w)}`;
    if (w.baseline === "replayed_as_recorded") t += `; recorded ${f3(w.logged_step_ms)} ms`;
    t += ")";
    if (!(w.logged_step_ms > 0 && drift >= lo && drift <= hi))
      t += `; the step replayed as recorded took ${drift.toFixed(2)}× the recorded one: no gain is taken from it`;
    return t;
  };
  const projections = A.projections || [];
  if (projections.length || steps.length) {
    section.append(el("div", { id: "advice-projections" },
      el("h3", { text: "What-if projections on this machine (the gains above use them)" }),
      el("ul", {},
        steps.map((w) => el("li", { class: "step-projection headline", "data-transform": w.transform },
          el("strong", { text: stepLine(w) }),
          el("ul", {}, projections.filter((p) => p.transform === w.transform).map((p) =>
            el("li", { class: "projection onednn-part" },
              `of which oneDNN (the log's primitives replayed alone; ${p.replay}): ${onednn(p)}`))))),
        projections.filter((p) => !steps.some((w) => w.transform === p.transform)).map((p) =>
          el("li", { class: "projection" }, `\`${p.transform}\` (${p.replay}): oneDNN ${onednn(p)}`)))));
  }
})();
