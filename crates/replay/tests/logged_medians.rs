//! The logged figure `project` compares with: each problem's median call after its warm-up
//! (the first third of its calls, rounded up), worked out by hand for a small log.

use profilednn_replay::logged::{logged_steady, warm_up_calls};
use profilednn_verbose::LogInput;

const RELU: &str = "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx2,forward_training,data:f32::blocked:abcd::f0 diff:undef::undef:::,,alg:eltwise_relu alpha:0 beta:0,8x16x32x32,";
const POOL: &str = "onednn_verbose,v1,primitive,exec,cpu,pooling,jit:avx2,forward_training,src:f32::blocked:aBcd8b::f0 dst:f32::blocked:aBcd8b::f0 ws:undef::undef:::,,alg:pooling_max,mb8ic16_ih32oh16kh2sh2dh0ph0_iw32ow16kw2sw2dw0pw0,";

#[test]
fn warm_up_is_the_first_third_rounded_up() {
    assert_eq!(
        [0, 1, 2, 3, 4, 5, 6, 12, 300].map(warm_up_calls),
        [0, 0, 1, 1, 2, 2, 2, 4, 100]
    );
}

#[test]
fn a_short_logs_slow_first_calls_are_left_out_of_the_median() {
    // Five iterations of a ReLU whose first two calls are the slow warm-up ones (as in a
    // PyTorch run), and a pooling called once.
    let mut log = String::from("profilednn,iteration,0\n");
    for (i, ms) in [10.0, 9.0, 1.0, 5.0, 6.0].iter().enumerate() {
        log += &format!("{RELU}{ms}\nprofilednn,iteration,{}\n", i + 1);
    }
    log += &format!("{POOL}7.5\n");
    let path = std::env::temp_dir().join(format!("logged-medians-{}.log", std::process::id()));
    std::fs::write(&path, log).unwrap();
    let medians = logged_steady(LogInput::open(&path).unwrap(), true).medians;
    std::fs::remove_file(&path).ok();
    let mut v: Vec<(String, f64)> = medians.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(v.len(), 2, "{v:?}");
    let relu = v.iter().find(|(k, _)| k.contains("eltwise")).unwrap().1;
    let pool = v.iter().find(|(k, _)| k.contains("pooling")).unwrap().1;
    // 2 of 5 calls are warm-up: the median of 1, 5, 6 is 5 (of all five it would be 6; so
    // would it after 1 or 3 warm-up calls).
    assert_eq!(relu, 5.0);
    // A single call is its own figure.
    assert_eq!(pool, 7.5);
}
