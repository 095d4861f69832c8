//! The operation counts benchdnn 3.14 printed for 85 convolution, inner-product, matmul and RNN
//! problems of the corpus logs (`fixtures/corpus/onednn/flops_reference.tsv`, produced by
//! benchdnn itself, see the corpus README) must be matched exactly.

use profilednn_cost::cost;
use profilednn_verbose::{parse_primitive, Syntax};

#[test]
fn every_benchdnn_count_is_matched_exactly() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/corpus/onednn/flops_reference.tsv"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split('\t').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (kind, prop, shapes, mds, ops, aux, attrs) = (
        col("prim_kind"),
        col("prop_kind"),
        col("shapes"),
        col("mds"),
        col("benchdnn_ops"),
        col("aux"),
        col("attrs"),
    );
    let mut checked = 0;
    let mut failures = Vec::new();
    for (i, line) in lines.enumerate() {
        let f: Vec<&str> = line.split('\t').collect();
        let body = format!(
            "cpu,{},any,{},{},{},{},{}",
            f[kind], f[prop], f[mds], f[attrs], f[aux], f[shapes]
        );
        let p = parse_primitive(
            &body,
            Syntax {
                v1_descriptors: true,
                graph: false,
            },
            true,
        )
        .unwrap_or_else(|e| panic!("row {}: {e}: {body}", i + 2));
        let expected: u64 = f[ops].parse().unwrap();
        match cost(&p) {
            Ok(c) if c.flops == expected => {}
            Ok(c) => failures.push(format!(
                "row {} {} {} {}: ours {} benchdnn {}",
                i + 2,
                f[kind],
                f[prop],
                f[shapes],
                c.flops,
                expected
            )),
            Err(e) => failures.push(format!("row {}: unknown: {e}", i + 2)),
        }
        checked += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, 85, "the reference holds 85 problems");
    eprintln!("matched {checked} benchdnn operation counts exactly");
}
