//! Issue 17: a problem too large to count is reported as uncosted with the reason, through the
//! real binary's JSON, never as a wrapped number.

mod common;
use common::*;

const HUGE_IP: &str = "onednn_verbose,v1,primitive,exec,cpu,inner_product,brgemm:avx512_core,forward_training,src:f32::blocked:abcd::f0 wei:f32::blocked:abcd::f0 dst:f32::blocked:ab::f0,,,mb1048576ic1048576ih1024iw1024oc1048576,1.5\n";
const SMALL_IP: &str = "onednn_verbose,v1,primitive,exec,cpu,inner_product,brgemm:avx512_core,forward_training,src:f32::blocked:ab::f0 wei:f32::blocked:ab::f0 dst:f32::blocked:ab::f0,,,mb2ic2048oc1000,0.5\n";

#[test]
fn a_huge_inner_product_is_uncosted_not_wrapped() {
    let dir = temp_dir();
    let log = dir.join("huge.log");
    std::fs::write(&log, format!("{HUGE_IP}{SMALL_IP}")).unwrap();
    let machine = root().join("fixtures/machine/xeon-8480-spec.json");
    let j = json_of(&[
        "report",
        log.to_str().unwrap(),
        "--machine",
        machine.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let e = &j["efficiency"];
    let rows = e["primitives"].as_array().unwrap();
    assert!(
        rows.iter()
            .all(|r| r["shapes"] != "mb1048576ic1048576ih1024iw1024oc1048576"),
        "the huge problem has no (wrapped) flops or bytes: {rows:?}"
    );
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["flops_per_call"], 2 * 2 * 2048 * 1000);
    let uncosted = e["uncosted"].as_array().unwrap();
    assert_eq!(uncosted.len(), 1, "{uncosted:?}");
    assert_eq!(uncosted[0]["prim_kind"], "inner_product");
    assert_eq!(
        uncosted[0]["reason"],
        "too large to count: the operation count overflows 64 bits"
    );
    // The per-primitive breakdown has no flops for it either.
    let top = &j["breakdowns"]["top_primitives"]["rows"];
    let huge = top
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["shapes"] == "mb1048576ic1048576ih1024iw1024oc1048576")
        .unwrap();
    assert!(huge["flops_per_call"].is_null() && huge["bytes_per_call"].is_null());
    std::fs::remove_dir_all(dir).ok();
}
