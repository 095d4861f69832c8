//! Property: however a log is cut into chunks and in whatever order the chunks are merged,
//! the profile is exactly the serial one (sums are integer picoseconds, so no float drift).

use profilednn_analysis::profile::ProfileOptions;
use profilednn_analysis::{Profile, Tally};
use proptest::prelude::*;

fn lines() -> Vec<&'static str> {
    vec![
        "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32::blocked:abcd::f0 dst:f32::blocked:Acdb16a::f0,attr-scratchpad:user,,64x3x7x7,0.0820312",
        "onednn_verbose,v1,primitive,exec,cpu,convolution,jit:avx512_core,forward_training,src:f32:a:blocked:abcd::f0 wei:f32:a:blocked:Acdb16a::f0 bia:undef::undef::: dst:f32:a:blocked:aBcd16b::f0,attr-scratchpad:user,alg:convolution_direct,mb2_ic3oc64_ih256oh128kh7sh2dh0ph3_iw256ow128kw7sw2dw0pw3,4.36499",
        "onednn_verbose,1795970299585.599121,exec,cpu,convolution,jit:avx512_core,backward_data,src_f32:p:blocked:aBcd16b::f0 wei_f32:p:blocked:ABcd16a16b::f0 bia_undef::undef::: dst_f32::blocked:aBcd16b::f0,,alg:convolution_direct,mb8_ic3oc16_ih32oh32kh3sh1dh0ph1_iw32ow32kw3sw1dw0pw1,1e-05",
        "dnnl_verbose,create:cache_miss,cpu,eltwise,jit:avx512_common,forward_training,data_f32::blocked:aBcd16b:f0 diff_undef::undef::f0,,alg:eltwise_relu alpha:0 beta:0,8x16x32x32,0.333008",
        "mkldnn_verbose,exec,reorder,jit:uni,undef,in:f32_oihw out:f32_Ohwi16o,num:1,96x3x11x11,4.98096",
        "onednn_verbose,v1,info,oneDNN v3.14.0 (commit 3f27bec21fdce6b550f233bf6e0afd086ee8d543)",
        "onednn_verbose,v1,info,cpu,runtime:OpenMP,nthr:2",
        "### ITER 1 BEGIN",
        "application says hello",
        "onednn_verbose,v1,primitive,exec,cpu,convolution,jit",
        "onednn_verbose,v1,primitive,create:dispatch,convolution,bad flags,src/x.cpp:1",
        "",
        "torn onednn_verbose,exec,cpu,x,1",
    ]
}

fn profile(bytes: &[u8], cuts: &[usize], order: &[usize]) -> Profile {
    // Cut after the newline that follows each cut point.
    let mut bounds = vec![0];
    for &c in cuts {
        let c = c % (bytes.len() + 1);
        let end = match bytes[c..].iter().position(|&b| b == b'\n') {
            Some(p) => c + p + 1,
            None => bytes.len(),
        };
        if end > *bounds.last().unwrap() {
            bounds.push(end);
        }
    }
    if *bounds.last().unwrap() != bytes.len() {
        bounds.push(bytes.len());
    }
    let chunks: Vec<(usize, &[u8])> = bounds
        .windows(2)
        .map(|w| &bytes[w[0]..w[1]])
        .enumerate()
        .collect();
    let n = chunks.len();
    let mut tallies: Vec<Tally> = chunks
        .iter()
        .map(|(i, c)| {
            let mut t = Tally::default();
            t.consume_chunk(*i as u32, c, *i == n - 1);
            t
        })
        .collect();
    let mut acc = Tally::default();
    // Merge in a permuted order.
    let mut idx: Vec<usize> = (0..n).collect();
    for (k, o) in order.iter().enumerate() {
        if k < n {
            idx.swap(k, o % n);
        }
    }
    let mut taken: Vec<Option<Tally>> = tallies.drain(..).map(Some).collect();
    for i in idx {
        acc.merge(taken[i].take().unwrap());
    }
    Profile::from_tally("p".into(), &acc, &ProfileOptions::default())
}

fn fingerprint(p: &Profile) -> String {
    let mut s = format!(
        "{:?}|{:?}|{:?}|",
        p.lines,
        p.iterations
            .as_ref()
            .map(|i| (i.count, &i.per_iteration_ms)),
        p.metadata.versions
    );
    for e in &p.entries {
        s += &format!(
            "{}:{}:{}:{}:{}:{};",
            e.event.label(),
            e.calls,
            e.time_ps,
            e.min_ps,
            e.max_ps,
            e.first_line
        );
    }
    for m in &p.malformed {
        s += &format!("{}:{}:{};", m.line, m.count, m.expected);
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn chunked_parse_equals_serial(
        picks in proptest::collection::vec(0usize..13, 1..200),
        cuts in proptest::collection::vec(any::<usize>(), 0..12),
        order in proptest::collection::vec(any::<usize>(), 0..12),
        final_newline in any::<bool>(),
    ) {
        let all = lines();
        let mut text = picks.iter().map(|&i| all[i]).collect::<Vec<_>>().join("\n");
        if final_newline {
            text.push('\n');
        }
        let bytes = text.as_bytes();
        let serial = profile(bytes, &[], &[]);
        let mut sorted = cuts.clone();
        sorted.iter_mut().for_each(|c| *c %= bytes.len() + 1);
        sorted.sort();
        let chunked = profile(bytes, &sorted, &order);
        prop_assert_eq!(fingerprint(&serial), fingerprint(&chunked));
        let expected_lines = bytes.iter().filter(|&&b| b == b'\n').count() + usize::from(!bytes.is_empty() && !text.ends_with('\n'));
        prop_assert_eq!(serial.lines.total as usize, expected_lines);
    }
}
