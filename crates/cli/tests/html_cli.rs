//! The HTML pages in a real headless browser (Debian's `chromium`): the page loads without
//! console errors, the charts hold the fixture's data, and a screenshot is not blank.
//!
//! Without a browser these tests say so and pass, unless `PROFILEDNN_REQUIRE_BROWSER=1`
//! (set by `.ci/run`, which installs chromium) makes a missing browser a failure.

mod common;
use common::{bin, failed, json_of, root, stdout_of, temp_dir};
use std::path::{Path, PathBuf};
use std::process::Command;

fn browser() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PROFILEDNN_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    if std::env::var_os("PROFILEDNN_REQUIRE_BROWSER").is_some() {
        panic!("PROFILEDNN_REQUIRE_BROWSER is set but no chromium was found (apt-get install chromium)");
    }
    eprintln!("SKIPPED: no chromium in PATH; `apt-get install chromium` to run the browser tests");
    None
}

/// The DOM after scripts ran, and the browser's log (console messages included).
fn load(browser: &Path, page: &Path) -> (String, String) {
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Loads the page, checks it rendered (`data-status="ok"`) with no console errors; the DOM.
fn load_ok(browser: &Path, page: &Path) -> String {
    let (dom, log_text) = load(browser, page);
    assert_eq!(
        attr(&dom, "data-status").as_deref(),
        Some("ok"),
        "{log_text}"
    );
    no_console_errors(&log_text);
    dom
}

fn attr(dom: &str, name: &str) -> Option<String> {
    let at = dom.find(&format!("{name}=\""))? + name.len() + 2;
    Some(dom[at..at + dom[at..].find('"')?].to_string())
}

fn no_console_errors(log: &str) {
    for l in log.lines().filter(|l| l.contains("CONSOLE")) {
        assert!(
            !l.contains("Uncaught") && !l.contains("Error"),
            "console: {l}"
        );
    }
}

/// A screenshot with real content: many colours, and a good share of non-background pixels.
fn screenshot_is_not_blank(browser: &Path, page: &Path, png: &Path) {
    let status = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--window-size=1280,1600",
        ])
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(png.exists(), "{}", String::from_utf8_lossy(&status.stderr));
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(png).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    let px = info.color_type.samples();
    let pixels: Vec<&[u8]> = buf[..info.buffer_size()].chunks(px).collect();
    let background = pixels[0];
    let mut colours = std::collections::HashSet::new();
    let mut content = 0usize;
    for p in &pixels {
        colours.insert(p[..3].to_vec());
        if p[..3] != background[..3] {
            content += 1;
        }
    }
    assert!(colours.len() > 50, "only {} colours", colours.len());
    assert!(
        content * 10 > pixels.len(),
        "mostly blank: {content} of {}",
        pixels.len()
    );
}

#[test]
fn report_page_renders_the_fixture_data() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("report.html");
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let json_out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--format",
            "json",
            "--top",
            "100000",
            "--machine",
            machine.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(json_out.status.success());
    let j: serde_json::Value = serde_json::from_slice(&json_out.stdout).unwrap();
    let unique = j["breakdowns"]["top_primitives"]["total_rows"]
        .as_u64()
        .unwrap();
    let dom = load_ok(&b, &page);
    // The table lists every unique primitive; the sunburst and roofline hold data.
    assert!(
        dom.contains(&format!("{unique} of {unique} unique primitives")),
        "table count"
    );
    let segments: usize = attr(&dom, "data-segments").unwrap().parse().unwrap();
    assert!(
        segments >= 2 + unique as usize / 4,
        "{segments} sunburst segments"
    );
    let points: usize = attr(&dom, "data-points").unwrap().parse().unwrap();
    assert!(points > 0);
    for kind in ["reorder", "convolution"] {
        assert!(dom.contains(kind));
    }
    assert!(dom.contains("reorder-overhead"), "advice section");
    screenshot_is_not_blank(&b, &page, &dir.join("report.png"));
}

#[test]
fn timeline_appears_for_timestamped_logs() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("ts.html");
    let log =
        root().join("fixtures/corpus/onednn/v3_14_benchdnn_level2_timestamp/level2_timestamp.log");
    bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ])
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    assert!(dom.contains("id=\"timeline\""));
    assert!(dom.matches("<rect").count() > 10, "timeline bars");
}

#[test]
fn diff_page_renders() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("diff.html");
    let before = root().join("fixtures/corpus/pytorch/resnet50_fp32.log.gz");
    let after = root().join("fixtures/corpus/pytorch/resnet50_bf16_cl.log.gz");
    let out = bin()
        .args([
            "diff",
            before.to_str().unwrap(),
            after.to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let dom = load_ok(&b, &page);
    assert!(dom.contains("id=\"diff-bars\"") && dom.contains("convolution"));
    screenshot_is_not_blank(&b, &page, &dir.join("diff.png"));
}

#[test]
fn pytorch_view_appears_with_a_trace() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("torch.html");
    let log = root().join("fixtures/torch/reference.log.gz");
    let trace = root().join("fixtures/torch/reference.trace.json.gz");
    bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--torch-trace",
            trace.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ])
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    assert!(dom.contains("id=\"torch-phases\"") && dom.contains("id=\"torch-ops\""));
    assert!(
        dom.contains("aten::conv2d") && dom.contains("628 of 628 primitive executions attributed")
    );
    // Each iteration's row, and modules with their backward.
    assert!(dom.contains("id=\"torch-iterations\"") && dom.contains("id=\"torch-modules\""));
    assert!(dom.contains("Net_0"));
}

/// A transformer's page with a machine profile: where the step runs, the whole step against
/// the roofline, the costed framework ops, and the framework ops on the roofline chart (as many
/// squares as costed rows outside oneDNN with a rate); a compiled run's page lists its
/// Inductor kernels and the iteration that compiled.
#[test]
fn framework_ops_on_the_page() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let torch = root().join("fixtures/torch");
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let page = |fixture: &str| {
        let page = dir.join(format!("{fixture}.html"));
        bin()
            .args([
                "report",
                torch.join(format!("{fixture}.log.gz")).to_str().unwrap(),
                "--torch-trace",
                torch
                    .join(format!("{fixture}.trace.json.gz"))
                    .to_str()
                    .unwrap(),
                "--machine",
                machine.to_str().unwrap(),
                "--html",
                page.to_str().unwrap(),
            ])
            .assert()
            .success();
        load_ok(&b, &page)
    };
    let dom = page("gpt-f32");
    for id in [
        "torch-runs-in",
        "torch-whole-step",
        "torch-lost",
        "torch-costed",
    ] {
        assert!(dom.contains(&format!("id=\"{id}\"")), "no {id}");
    }
    assert!(dom.contains("Where the step runs") && dom.contains("BLAS"));
    // The squares: one per costed framework op outside oneDNN with a rate, from the JSON.
    let j = common::json_of(&[
        "report",
        torch.join("gpt-f32.log.gz").to_str().unwrap(),
        "--torch-trace",
        torch.join("gpt-f32.trace.json.gz").to_str().unwrap(),
        "--machine",
        machine.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let want = j["torch"]["framework"]["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| {
            r["gflops"].as_f64().unwrap_or(0.0) > 0.0
                && r["bytes"].as_u64().unwrap_or(0) > 0
                && r["runs_in"] != "oneDNN"
        })
        .count();
    assert!(want > 0);
    assert_eq!(dom.matches("class=\"framework-point\"").count(), want);
    let dom = page("gpt-compiled");
    assert!(dom.contains("id=\"torch-kernels\"") && dom.contains("graph_0_cpp_fused_"));
    assert!(dom.contains("id=\"torch-compiling\""));
}

#[test]
fn diff_page_shows_both_pytorch_views() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("diff-torch.html");
    let f = |name: &str| root().join("fixtures/torch").join(name);
    bin()
        .args([
            "diff",
            f("retinanet-reference.log.gz").to_str().unwrap(),
            f("retinanet-fused.log.gz").to_str().unwrap(),
            "--ignore-dtype",
            "--torch-trace",
            f("retinanet-reference.trace.json.gz").to_str().unwrap(),
            f("retinanet-fused.trace.json.gz").to_str().unwrap(),
            "--format",
            "html",
            "-o",
            page.to_str().unwrap(),
        ])
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    assert!(dom.contains("id=\"diff-torch-phases\"") && dom.contains("id=\"diff-torch-ops\""));
    // The loss changed from torchvision's element-wise chain to ProfileDNN's fused op.
    assert!(dom.contains("_FocalLoss") && dom.contains("aten::binary_cross_entropy_with_logits"));
    screenshot_is_not_blank(&b, &page, &dir.join("diff-torch.png"));
}

/// Every `<path class="segment" …>` of the sunburst: its attributes, unescaped.
fn sunburst_segments(dom: &str) -> Vec<std::collections::HashMap<String, String>> {
    let unescape = |s: &str| {
        s.replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    };
    let mut out = Vec::new();
    for tag in dom.split("<path ").skip(1) {
        let tag = &tag[..tag.find('>').unwrap()];
        let mut attrs = std::collections::HashMap::new();
        let mut rest = tag;
        while let Some(eq) = rest.find("=\"") {
            let name = rest[..eq].trim().to_string();
            let v = &rest[eq + 2..];
            let end = v.find('"').unwrap();
            attrs.insert(name, unescape(&v[..end]));
            rest = &v[end + 1..];
        }
        if attrs.get("class").map(String::as_str) == Some("segment") {
            out.push(attrs);
        }
    }
    out
}

#[test]
fn sunburst_angles_match_the_json_shares() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("sunburst.html");
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    bin()
        .args(["report", log.to_str().unwrap(), "--html"])
        .arg(&page)
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    let segments = sunburst_segments(&dom);
    // Each kind has its colour, and every segment under it carries the same one.
    let fill_of = |kind: &str| {
        let mut fills: Vec<&str> = segments
            .iter()
            .filter(|s| s["data-path"].split(" › ").next() == Some(kind))
            .map(|s| s["fill"].as_str())
            .collect();
        fills.dedup();
        assert_eq!(fills.len(), 1, "{kind}: {fills:?}");
        fills[0].to_string()
    };
    let (conv, reorder) = (fill_of("convolution"), fill_of("reorder"));
    assert!(conv != reorder, "{conv} {reorder}");
    assert!(
        dom.contains(&format!("background:{conv}")),
        "the legend's convolution colour"
    );
    let levels = ["prim_kind", "prop_kind", "impl", "shapes"];
    let two_pi = 2.0 * std::f64::consts::PI;
    for depth in 1..=4usize {
        // The shares of the same grouping, from the JSON report (total oneDNN time = 1).
        let keys = levels[..depth].join(",");
        let j = common::json_of(&[
            "report",
            log.to_str().unwrap(),
            "--format",
            "json",
            "--by",
            &keys,
            "--top",
            "100000",
        ]);
        let rows = j["breakdowns"][&keys]["rows"].as_array().unwrap();
        let share: std::collections::HashMap<String, f64> = rows
            .iter()
            .map(|r| {
                let path: Vec<&str> = levels[..depth]
                    .iter()
                    .map(|k| r[*k].as_str().unwrap())
                    .collect();
                (path.join(" › "), r["share"].as_f64().unwrap())
            })
            .collect();
        let ring: Vec<_> = segments
            .iter()
            .filter(|s| s["data-depth"] == depth.to_string())
            .collect();
        assert!(!ring.is_empty(), "no segment at depth {depth}");
        let mut drawn = 0.0;
        for s in &ring {
            let a0: f64 = s["data-a0"].parse().unwrap();
            let a1: f64 = s["data-a1"].parse().unwrap();
            let path = &s["data-path"];
            let expected = share
                .get(path)
                .unwrap_or_else(|| panic!("{path} not in the JSON breakdown by {keys}"));
            assert!(
                ((a1 - a0) / two_pi - expected).abs() < 1e-5,
                "depth {depth}, {path}: drawn {:.6} of the circle, JSON share {expected:.6}",
                (a1 - a0) / two_pi
            );
            drawn += a1 - a0;
        }
        // The ring is full but for segments too thin to draw (under 0.002 rad each).
        let thin = share.len() - ring.len();
        assert!(
            drawn <= two_pi + 1e-4 && drawn >= two_pi - 0.002 * thin as f64 - 1e-4,
            "depth {depth}: {drawn} rad drawn of {two_pi}"
        );
    }
}

/// Measures the drawn labels in the browser (real text widths): each ring label of the
/// sunburst lies inside its ring (the "convolution" label once ran under the centre circle,
/// showing "onvolutio"), each label of the forward/backward bar inside its own segment.
/// Reports the failures in `data-labels`.
const LABEL_CHECK: &str = r#"<script>(function () {
  const bad = [];
  const sb = document.getElementById("sunburst");
  const S = sb.viewBox.baseVal.width, ring = (S / 2 - 4) / 5;
  let n = 0;
  for (const t of sb.querySelectorAll('text[style*="font-weight:600"]')) {
    n++;
    const m = t.transform.baseVal.consolidate();
    const M = m ? m.matrix : sb.createSVGMatrix();
    for (let i = 0; i < t.getNumberOfChars(); i++) {
      for (const p of [t.getStartPositionOfChar(i), t.getEndPositionOfChar(i)]) {
        const q = p.matrixTransform(M), r = Math.hypot(q.x - S / 2, q.y - S / 2);
        if (r < ring || r > 2 * ring) bad.push(`${t.textContent}: char ${i} at radius ${r.toFixed(1)}, ring ${ring.toFixed(1)}-${(2 * ring).toFixed(1)}`);
      }
    }
  }
  if (n === 0) bad.push("no ring labels");
  const split = document.getElementById("split");
  const rects = [...split.querySelectorAll("rect")];
  for (const t of split.querySelectorAll("text")) {
    const x = t.x.baseVal[0].value, len = t.getComputedTextLength();
    const r = rects.find((r) => r.x.baseVal.value <= x && x < r.x.baseVal.value + r.width.baseVal.value);
    if (!r || x + len > r.x.baseVal.value + r.width.baseVal.value) bad.push(`${t.textContent}: ${len.toFixed(1)} px from ${x.toFixed(1)} runs out of its segment`);
  }
  document.body.dataset.labels = bad.length ? bad.join("; ") : "ok";
})();</script>"#;

#[test]
fn html_labels_fit_their_segments() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("labels.html");
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--html",
            page.to_str().unwrap(),
        ])
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    std::fs::write(
        &page,
        html.replace("</body>", &format!("{LABEL_CHECK}</body>")),
    )
    .unwrap();
    let dom = load_ok(&b, &page);
    assert_eq!(attr(&dom, "data-labels").as_deref(), Some("ok"));
}

/// A kind has one colour in every report: the legend's swatch for `convolution` is the same in
/// a report where reorders come first and in one where convolutions do.
#[test]
fn html_kind_colours_are_the_same_in_every_report() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let swatch = |log: &str, name: &str| -> (String, String) {
        let page = dir.join(name);
        bin()
            .args([
                "report",
                root().join(log).to_str().unwrap(),
                "--html",
                page.to_str().unwrap(),
            ])
            .assert()
            .success();
        let dom = load_ok(&b, &page);
        // The sunburst legend: <span><i style="background:#…"></i>kind 54.6%</span>, largest first.
        let legend = &dom[dom.find("Where the time goes").unwrap()..];
        let colour_of = |kind: &str| {
            let at = legend.find(&format!("</i>{kind} ")).unwrap();
            let from = legend[..at].rfind("background:").unwrap() + "background:".len();
            legend[from..from + 7].to_string()
        };
        let first = legend[legend.find("</i>").unwrap() + 4..]
            .split(' ')
            .next()
            .unwrap()
            .to_string();
        (first, colour_of("convolution"))
    };
    let (first_a, conv_a) = swatch("examples/retinanet_rnx50_fp32.log.gz", "a.html");
    let (first_b, conv_b) = swatch("fixtures/advice/bf16_without_bf16_units.log", "b.html");
    assert_eq!(
        (first_a.as_str(), first_b.as_str()),
        ("reorder", "convolution")
    );
    assert_eq!(conv_a, conv_b);
}

#[test]
fn multi_rank_page_has_a_column_per_rank() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("ranks.html");
    let log = root().join("fixtures/multirank/torchrun_2ranks.log.gz");
    bin()
        .args(["report", log.to_str().unwrap(), "--html"])
        .arg(&page)
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    let at = dom.find("id=\"ranks\"").expect("the ranks table");
    let table = &dom[at..at + dom[at..].find("</table>").unwrap()];
    // A header cell per rank; the mini-batch row as the log's problems give it (16 and 32).
    assert!(
        table.contains(">rank 0<") && table.contains(">rank 1<"),
        "{table}"
    );
    assert!(!table.contains(">rank 2<"));
    let mb = &table[table.find(">mini-batch<").unwrap()..];
    let mb = &mb[..mb.find("</tr>").unwrap()];
    assert!(mb.contains(">16<") && mb.contains(">32<"), "{mb}");
    assert!(dom.contains("Straggler: rank 1"));
}

/// `s` with the entities a DOM dump writes in text back as characters.
fn unescape(s: &str) -> String {
    s.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// The DOM's text from `from` (an attribute such as `id="x"`) to the first of `to` after it.
fn part<'a>(dom: &'a str, from: &str, to: &[&str]) -> &'a str {
    let at = dom
        .find(from)
        .unwrap_or_else(|| panic!("{from} not in the page"));
    let end = to
        .iter()
        .filter_map(|t| dom[at..].find(t))
        .min()
        .unwrap_or(dom.len() - at);
    &dom[at..at + end]
}

/// `report --replay R.json --html`: the advice section states what `advise --replay R.json
/// --format json` states for the same log and replay — the bf16 rule not recommended with its
/// reason and the projected slow-down, the projection list — with the figures of that JSON.
#[test]
fn report_page_shows_the_replay_projections_of_the_advice() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("projected.html");
    let log = root().join("fixtures/whatif/f32-nchw-1t.log.gz");
    let log = log.to_str().unwrap();
    let replay = root().join("fixtures/whatif/replays/f32-nchw-1t.bf16-cl.json");
    let replay = replay.to_str().unwrap();
    let a = common::json_of(&["advise", log, "--replay", replay, "--format", "json"]);
    bin()
        .args(["report", log, "--replay", replay, "--html"])
        .arg(&page)
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    let nr = a["not_recommended"].as_array().expect("not_recommended");
    let n = nr
        .iter()
        .find(|n| n["id"] == "f32-on-bf16-hardware")
        .unwrap_or_else(|| panic!("the bf16 rule is not recommended: {a}"));
    let p = &n["projection"];
    let (logged, projected) = (
        p["logged_onednn_ms"].as_f64().unwrap(),
        p["projected_onednn_ms"].as_f64().unwrap(),
    );
    assert!(projected > logged, "a slow-down: {p}");
    let block = unescape(part(
        &dom,
        "id=\"advice-not-recommended\"",
        &["id=\"advice-projections\"", "</section>"],
    ));
    assert!(
        block.contains("Not recommended (projected slower on this machine)"),
        "{block}"
    );
    assert_eq!(block.matches("class=\"not-recommended\"").count(), nr.len());
    let rule = part(
        &block,
        "data-id=\"f32-on-bf16-hardware\"",
        &["class=\"not-recommended\" data-id=\"", "\u{0}"],
    );
    // The reason, word for word, and the figures: the times to the microsecond and the
    // slow-down as the terminal states it, worked out here from the two times.
    assert!(rule.contains(n["why"].as_str().unwrap()), "{rule}\n{n}");
    let figures = format!(
        "oneDNN {logged:.3} → {projected:.3} ms per iteration ({:.2}× slower)",
        projected / logged
    );
    assert_eq!(p["per_iteration"], true);
    let shown = part(rule, "class=\"projected\"", &["</div>"]);
    assert!(shown.contains(&figures), "{figures} not in {shown}");
    assert!(shown.contains(p["transform"].as_str().unwrap()), "{shown}");
    // The list of projections: one line per replay given.
    let list = unescape(part(&dom, "id=\"advice-projections\"", &["</section>"]));
    assert_eq!(
        list.matches("class=\"projection\"").count(),
        a["projections"].as_array().unwrap().len()
    );
    assert!(list.contains(&figures), "{list}");
    assert!(list.contains(replay), "{list}");

    // Without a replay: no projection script and nothing of the above.
    let plain = dir.join("plain.html");
    bin()
        .args(["report", log, "--html"])
        .arg(&plain)
        .assert()
        .success();
    let html = std::fs::read_to_string(&plain).unwrap();
    assert_eq!(html.matches("<script").count(), 2, "data and renderer only");
    let dom = load_ok(&b, &plain);
    assert!(!dom.contains("advice-not-recommended") && !dom.contains("advice-projections"));
}

/// `report --project` runs the what-if replays `advise --project` runs (the same code: the
/// same "replayed … for RULE" lines), and its page lists each projection with the figures of
/// its own JSON output.
#[test]
fn report_project_replays_what_advise_project_replays() {
    let Some(lib) = common::dnnl_lib_or_skip() else {
        return;
    };
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("project.html");
    let log = root().join("fixtures/whatif/f32-nchw-1t.log.gz");
    let out = bin()
        .args([
            "report",
            log.to_str().unwrap(),
            "--project",
            "--dnnl-lib",
            &lib,
        ])
        .args(["--no-progress", "--format", "json", "--html"])
        .arg(&page)
        .env_remove("OMP_NUM_THREADS")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    for line in [
        "replayed `--as bf16 --layout channels-last --threads 1` for f32-on-bf16-hardware in ",
        "replayed `--layout channels-last --threads 1` for reorder-overhead in ",
    ] {
        assert!(err.contains(line), "{err}");
    }
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &j["advice"];
    let projections = a["projections"].as_array().expect("projections");
    assert!(projections.len() >= 2, "{a}");
    let dom = load_ok(&b, &page);
    let list = unescape(part(&dom, "id=\"advice-projections\"", &["</section>"]));
    assert_eq!(
        list.matches("class=\"projection\"").count(),
        projections.len()
    );
    for p in projections {
        assert_eq!(p["replay"], "advise --project");
        let (l, r) = (
            p["logged_onednn_ms"].as_f64().unwrap(),
            p["projected_onednn_ms"].as_f64().unwrap(),
        );
        let factor = if r >= l {
            format!("{:.2}× slower", r / l)
        } else {
            format!("{:.2}× faster", l / r)
        };
        let want = format!(
            "`{}` (advise --project): oneDNN {l:.3} → {r:.3} ms per iteration ({factor})",
            p["transform"].as_str().unwrap()
        );
        assert!(list.contains(&want), "{want} not in {list}");
    }
    // The bf16 rule used its projection: a finding or not recommended, either way on the page.
    let bf16 = "f32-on-bf16-hardware";
    let finding = a["findings"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["id"] == bf16 && f["projection"].is_object());
    let not_recommended = a["not_recommended"]
        .as_array()
        .is_some_and(|v| v.iter().any(|n| n["id"] == bf16));
    assert!(finding != not_recommended, "{a}");
    assert_eq!(
        dom.contains(&format!("data-id=\"{bf16}\"")),
        not_recommended
    );
}

/// The primitives table gives no GFLOP/s to a primitive without operations (a reorder: the
/// terminal leaves it blank too; it used to read 0.0), and keeps two digits of a small rate.
#[test]
fn reorders_have_no_gflops_figure_in_the_table() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("report.html");
    let log = root().join("examples/retinanet_rnx50_fp32.log.gz");
    common::succeeded(
        bin()
            .args(["report", log.to_str().unwrap(), "--top", "100000", "--html"])
            .arg(&page)
            .output()
            .unwrap(),
    );
    let dom = load_ok(&b, &page);
    let rows: Vec<&str> = dom
        .split("<tr")
        .filter(|r| r.contains(">reorder<"))
        .collect();
    assert!(!rows.is_empty(), "reorder rows in the table");
    for r in rows {
        assert!(!r.contains(">0.0<"), "a reorder row with a 0.0 rate: {r}");
    }
}

/// A log of matmuls only (the bf16 transformer: every call `undef`, matmuls carry no
/// propagation kind) shows no forward/backward bar, which read 100 % "no direction", but says
/// the log carries no direction (issue 41).
#[test]
fn a_matmul_log_says_it_carries_no_direction_instead_of_a_bar() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let page = dir.join("matmul.html");
    let log = root().join("fixtures/corpus/pytorch/transformer_bf16.log.gz");
    report_html(&page, &[log.as_os_str()]);
    let dom = load_ok(&b, &page);
    assert!(!dom.contains("id=\"split\""), "a bar is drawn");
    assert!(
        dom.contains("This log carries no direction for 100.0% of oneDNN time"),
        "{dom}"
    );
}

/// The HTML page withholds a projected speed-up against a polluted log as the terminal does
/// (issue 41): the page computes its own factors from the advice JSON, so it must read
/// `log_polluted` too.
#[test]
fn report_page_withholds_a_speed_up_against_a_polluted_log() {
    let Some(b) = browser() else { return };
    let (log, _) = common::polluted_log();
    let page = log.with_extension("html");
    let replays = root().join("fixtures/whatif/replays");
    let cl = replays.join("f32-nchw-1t.cl.json");
    report_html(
        &page,
        &[log.as_os_str(), "--replay".as_ref(), cl.as_os_str()],
    );
    let dom = unescape(&load_ok(&b, &page));
    let list = part(&dom, "id=\"advice-projections\"", &["</ul>"]);
    assert!(
        list.contains("(speed-up withheld: the log's timings look polluted (timings-polluted:"),
        "{list}"
    );
    assert!(
        !list.contains("× faster") && !list.contains("× slower"),
        "{list}"
    );
}

/// `profilednn report ARGS --html PAGE`, which must succeed.
fn report_html(page: &Path, args: &[&std::ffi::OsStr]) {
    let mut all: Vec<&std::ffi::OsStr> = vec!["report".as_ref()];
    all.extend(args);
    all.extend([std::ffi::OsStr::new("--html"), page.as_os_str()]);
    common::stdout_of(&all);
}

#[test]
fn a_page_of_sixteen_ranks_shows_their_spread_and_the_slowest() {
    let Some(b) = browser() else { return };
    // Rank 0 of the real torchrun log given to 16 ranks, rank 9's times doubled, rank 12's
    // ×1.5.
    let mut log = String::new();
    for t in &rank0_lines() {
        for r in 0..16 {
            let scale = [(9, 2.0), (12, 1.5)].iter().find(|x| x.0 == r).map(|x| x.1);
            let line = match (t.rsplit_once(','), scale) {
                (Some((head, ms)), Some(k)) if t.contains(",exec,") => {
                    format!("{head},{}", k * ms.parse::<f64>().unwrap())
                }
                _ => t.to_string(),
            };
            log += &format!("[{r}]:{line}\n");
        }
    }
    let dir = temp_dir();
    let (path, page) = (dir.join("sixteen.log"), dir.join("sixteen.html"));
    std::fs::write(&path, log).unwrap();
    bin()
        .args(["report", path.to_str().unwrap(), "--html"])
        .arg(&page)
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    let at = dom.find("id=\"rank-spread\"").expect("the spread table");
    let table = &dom[at..at + dom[at..].find("</table>").unwrap()];
    let onednn = &table[table.find(">oneDNN ms<").unwrap()..];
    let onednn = &onednn[..onednn.find("</tr>").unwrap()];
    assert!(onednn.contains("(rank 9)<"), "{onednn}");
    // The slowest ranks, slowest first.
    let nine = dom.find("rank 9: ").expect("rank 9 among the slowest");
    let twelve = dom.find("rank 12: ").expect("rank 12 among the slowest");
    assert!(nine < twelve);
    // The column per rank is still there, folded.
    let details = dom.find("<details").expect("the per-rank table, folded");
    assert!(dom[details..].contains("id=\"ranks\""));
}

/// Rank 0's own lines of the real torchrun log, label removed.
fn rank0_lines() -> Vec<String> {
    use std::io::Read;
    let mut text = String::new();
    flate2::read::MultiGzDecoder::new(
        std::fs::File::open(root().join("fixtures/multirank/torchrun_2ranks.log.gz")).unwrap(),
    )
    .read_to_string(&mut text)
    .unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("[default0]:"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_page_of_two_nodes_names_the_slow_node() {
    let Some(b) = browser() else { return };
    // Two nodes' logs as `record --ranks` writes them, 2 ranks each; node1's times × 1.3.
    let dir = temp_dir();
    let lines = rank0_lines();
    let mut paths = Vec::new();
    for node in 0..2 {
        let mut log = format!(
            "profilednn,node,node{node},rank,{},host,h{node}\n",
            node * 2
        );
        for t in &lines {
            for local in 0..2 {
                let line = match t.rsplit_once(',') {
                    Some((head, ms)) if node == 1 && t.contains(",exec,") => {
                        format!("{head},{}", 1.3 * ms.parse::<f64>().unwrap())
                    }
                    _ => t.to_string(),
                };
                log += &format!("[default{local}]:{line}\n");
            }
        }
        let path = dir.join(format!("node{node}.log"));
        std::fs::write(&path, log).unwrap();
        paths.push(path);
    }
    let page = dir.join("nodes.html");
    bin()
        .arg("report")
        .args(&paths)
        .arg("--html")
        .arg(&page)
        .assert()
        .success();
    let dom = unescape(&load_ok(&b, &page));
    assert!(
        dom.contains("Nodes: node0 (2 ranks), node1 (2 ranks)."),
        "{dom}"
    );
    assert!(dom.contains("(on node node1)"));
    assert!(dom.contains("Slow node: node1: every one of its 2 ranks is slow"));
}

/// Suspect roofs on the page (issue 52): a profile far below what the bf16 log reached puts
/// the warning in the roofline card, above the chart whose shares it qualifies, gives no time
/// lost in the run-level line, and draws one roof per unit of the profile, named for the unit.
#[test]
fn suspect_roofs_are_flagged_next_to_the_roofline_with_a_roof_per_unit() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let m = dir.join("too-low.json");
    std::fs::write(
        &m,
        r#"{"schema":"profilednn.machine.v2","name":"too-low box","threads":2,
            "peak_gflops":{"f32":5,"bf16":8},
            "unit_gflops":{"bf16":{"amx":8,"avx512_bf16":6},"f32":{"avx512":5}},
            "memory_gbps":1000}"#,
    )
    .unwrap();
    let page = dir.join("suspect.html");
    report_html(
        &page,
        &[
            root().join("fixtures/whatif/bf16-cl.log.gz").as_os_str(),
            "--machine".as_ref(),
            m.as_os_str(),
        ],
    );
    let dom = load_ok(&b, &page);
    let card = part(&dom, "Roofline on too-low box", &["</section>"]);
    let warning = card
        .find("id=\"roofline-suspect\"")
        .expect("no warning in the roofline card");
    assert!(warning < card.find("id=\"roofline\"").unwrap());
    assert!(unescape(card).contains("The roofs are suspect"));
    assert!(card.contains("no time lost is given"), "{card}");
    assert_eq!(card.matches("class=\"roof\"").count(), 3);
    for label in [
        "bf16 AMX 8 GFLOP/s",
        "bf16 dot product 6 GFLOP/s",
        "f32 AVX-512 5 GFLOP/s",
    ] {
        assert!(card.contains(label), "no roof «{label}»");
    }
}

/// `report --replay R.json --html` of a replay with the whole step: the page's projection list
/// leads with the whole step, as the terminal does (`project_headline.rs`), and gives the
/// oneDNN-only figure as a labelled part under it, not as a what-if of its own.
#[test]
fn report_page_leads_with_the_whole_step() {
    let Some(b) = browser() else { return };
    let page = temp_dir().join("whole-step.html");
    let log = root().join("fixtures/torch/mlp-f32.log.gz");
    let replay = root().join("fixtures/replay/mlp-f32.torch.replay.json");
    let (log, replay) = (log.to_str().unwrap(), replay.to_str().unwrap());
    let text = common::stdout_of(&["report", log, "--replay", replay]);
    report_html(&page, &[log.as_ref(), "--replay".as_ref(), replay.as_ref()]);
    let list = unescape(part(
        &load_ok(&b, &page),
        "id=\"advice-projections\"",
        &["</section>"],
    ));
    let line = |start: &str| {
        text.lines()
            .map(str::trim)
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no «{start}» line in\n{text}"))
            .to_string()
    };
    // The terminal's two lines, word for word, the first as the list's headline item.
    let (headline, onednn) = (line("Whole step `"), line("of which oneDNN"));
    let item = part(
        &list,
        "class=\"step-projection headline\"",
        &["</li></ul></li>"],
    );
    assert!(
        item.contains(&format!("<strong>{headline}</strong>")),
        "{headline}\n{item}"
    );
    let sub = part(item, "class=\"projection onednn-part\"", &["</li>"]);
    assert!(sub.contains(&onednn), "{onednn}\n{sub}");
    assert_eq!(list.matches("class=\"projection\"").count(), 0, "{list}");
}

/// `project --to … --format html`: each target's row carries `--format json`'s figures (the
/// projected step, its band), its bar is split into the JSON's parts with the band as a
/// whisker, and the page draws without errors. HTML without `--to` is refused, saying why.
#[test]
fn machines_page_shows_each_target_with_its_band() {
    let p = common::repo;
    let (log, trace) = (
        p("fixtures/torch/gpt-bf16.log.gz"),
        p("fixtures/torch/gpt-bf16.trace.json.gz"),
    );
    let (from, to, spec) = (
        p("machines/epyc-zen4-25-17/profile.json"),
        p("machines/xeon-6-207-amx/profile.json"),
        p("machines/xeon-6-207-amx/spec.json"),
    );
    let args = |format: &'static str| {
        vec![
            "project",
            &log,
            "--torch-trace",
            &trace,
            "--from",
            &from,
            "--to",
            &to,
            "--to",
            &spec,
            "--format",
            format,
        ]
    };
    let err = failed(
        bin()
            .args(["project", &log, "--format", "html"])
            .output()
            .unwrap(),
    );
    assert!(err.contains("--to"), "{err}");
    let Some(b) = browser() else { return };
    let json = json_of(&args("json"));
    let dir = temp_dir();
    let page = dir.join("machines.html");
    std::fs::write(&page, stdout_of(&args("html"))).unwrap();
    let dom = load_ok(&b, &page);
    let targets = json["targets"].as_array().unwrap();
    assert_eq!(targets.len(), 2);
    let mut parts = 0;
    for t in targets {
        let name = t["target"].as_str().unwrap();
        let f = |k: &str| t[k].as_f64().unwrap();
        let (lo, hi) = (
            t["band"]["low_ms"].as_f64().unwrap(),
            t["band"]["high_ms"].as_f64().unwrap(),
        );
        let row = part(&dom, &format!("data-target=\"{name}\""), &["</tr>"]);
        assert!(
            row.contains(&format!("{:.3}", f("projected_step_ms"))),
            "{row}"
        );
        assert!(row.contains(&format!("{lo:.3}–{hi:.3} ms")), "{row}");
        parts += t["parts"].as_array().unwrap().len();
    }
    assert_eq!(dom.matches("class=\"part\"").count(), parts);
    assert_eq!(dom.matches("class=\"band\"").count(), targets.len());
    screenshot_is_not_blank(&b, &page, &dir.join("machines.png"));
}

/// A compiled run with no oneDNN line (fixtures/torch/gpt-compiled-code, its Inductor output
/// code beside the trace): the page leads with the trace's step and where it runs, shows no
/// oneDNN charts or zero figures, and its roofline has a square per costed framework op and
/// per kernel costed from the code, as the JSON lists them.
#[test]
fn a_run_without_onednn_leads_with_its_trace_and_its_kernels_on_the_roofline() {
    let Some(b) = browser() else { return };
    let dir = temp_dir();
    let p = common::repo;
    let (log, trace, machine) = (
        p("fixtures/torch/gpt-compiled-code.log.gz"),
        p("fixtures/torch/gpt-compiled-code.trace.json.gz"),
        p("fixtures/machine/xeon-8480-spec.json"),
    );
    let page = dir.join("compiled.html");
    let args = [
        "report",
        &log,
        "--torch-trace",
        &trace,
        "--machine",
        &machine,
    ];
    bin()
        .args(args)
        .args(["--html", page.to_str().unwrap()])
        .assert()
        .success();
    let dom = load_ok(&b, &page);
    assert!(dom.contains("id=\"no-onednn\""));
    assert!(dom.contains("whole step (steady iterations)") && dom.contains("runs most in"));
    // What the page drew (the embedded data repeats the advice's rule texts).
    let drawn = part(&dom, "id=\"app\"", &["<script id=\"data\""]);
    for absent in ["oneDNN time", "of the bound reached"] {
        assert!(!drawn.contains(absent), "{absent} on a page without oneDNN");
    }
    let j = json_of(&[&args[..], &["--format", "json"]].concat());
    let f = &j["torch"]["framework"];
    // The sunburst holds the Inductor kernels alone (no oneDNN primitive ran): one ring-1
    // segment, and a ring-4 segment per kernel of a visible share (an arc above 0.002 rad),
    // each named by its path graph › bound › kernel as the JSON gives them.
    let all: Vec<&serde_json::Value> = f["inductor_kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["time_ms"].as_f64().unwrap_or(0.0) > 0.0)
        .collect();
    let total: f64 = all.iter().map(|k| k["time_ms"].as_f64().unwrap()).sum();
    let segs = sunburst_segments(drawn);
    let ring = |d: &str| {
        segs.iter()
            .filter(|s| s["data-depth"] == d)
            .collect::<Vec<_>>()
    };
    assert_eq!(ring("1").len(), 1);
    assert_eq!(ring("1")[0]["data-path"], "Inductor kernels");
    assert_eq!(ring("1")[0]["fill"], "#48bb78");
    let visible: Vec<String> = all
        .iter()
        .filter(|k| 2.0 * std::f64::consts::PI * k["time_ms"].as_f64().unwrap() / total > 0.002)
        .map(|k| {
            format!(
                "Inductor kernels › graph {} › {}-bound › {}",
                k["graph"],
                k["bound"].as_str().unwrap(),
                k["name"].as_str().unwrap()
            )
        })
        .collect();
    let mut drawn_paths: Vec<String> = ring("4").iter().map(|s| s["data-path"].clone()).collect();
    let mut want = visible.clone();
    drawn_paths.sort();
    want.sort();
    assert_eq!(drawn_paths, want);
    let rated = |r: &&serde_json::Value| {
        r["gflops"].as_f64().unwrap_or(0.0) > 0.0 && r["bytes"].as_u64().unwrap_or(0) > 0
    };
    let rows = f["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(rated)
        .filter(|r| r["runs_in"] != "oneDNN")
        .count();
    let kernels = f["inductor_kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["cost"] == "estimated from Inductor's code")
        .filter(rated)
        .count();
    assert!(kernels > 0, "{f}");
    assert_eq!(
        dom.matches("class=\"framework-point\"").count(),
        rows + kernels
    );
    assert!(dom.contains("costed, estimated from Inductor's code"));
}
