//! oneDNN's answers read into the replay's reasons for not replaying a problem
//! ([`profilednn_replay::skip`]): a status code into a [`Status`], and an unimplemented bf16
//! problem blamed on the CPU where oneDNN's instruction set has no bf16.

use crate::api::{cpu_isa, status as s};
use profilednn_replay::skip::{SkipReason, Status};
use std::ffi::c_int;

/// The status of a C API call; `None` for `dnnl_success`.
pub fn status(code: c_int) -> Option<Status> {
    Some(match code {
        s::SUCCESS => return None,
        s::OUT_OF_MEMORY => Status::OutOfMemory,
        s::INVALID_ARGUMENTS => Status::InvalidArguments,
        s::UNIMPLEMENTED => Status::Unimplemented,
        other => Status::Other(other),
    })
}

/// `Err` with the step's status unless `code` is `dnnl_success`.
pub fn check(code: c_int, step: &'static str) -> Result<(), SkipReason> {
    match status(code) {
        None => Ok(()),
        Some(status) => Err(SkipReason::Refused { step, status }),
    }
}

/// `reason`, or [`SkipReason::NoBf16OnThisCpu`] when oneDNN found no implementation of a
/// problem with bf16 tensors and its instruction set `isa` has none for bf16.
pub fn on_this_cpu(reason: SkipReason, isa: c_int, has_bf16_tensor: bool) -> SkipReason {
    match reason {
        SkipReason::Refused {
            step,
            status: Status::Unimplemented,
        } if has_bf16_tensor && !cpu_isa::has_bf16(isa) => SkipReason::NoBf16OnThisCpu {
            step,
            isa: cpu_isa::name(isa),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::cpu_isa;
    use profilednn_replay::skip::{SkipReason, Status};

    /// Regression (main was red on an AMD EPYC Zen 3, AVX2 only: its bf16 problems were
    /// "unimplemented" like an unknown problem): an unimplemented bf16 problem is blamed on the
    /// CPU only where oneDNN's level has no bf16 — not on AVX-512, not for f32 problems.
    #[test]
    fn unimplemented_bf16_is_blamed_on_an_avx2_only_cpu_only() {
        let refused = || SkipReason::Refused {
            step: "matmul",
            status: Status::Unimplemented,
        };
        assert_eq!(
            on_this_cpu(refused(), cpu_isa::AVX2, true).to_string().as_str(),
            "matmul: oneDNN has no bf16 implementation on this CPU (its instruction set here is avx2; bf16 needs avx512_core or avx2_vnni_2): replay it on a machine that has them"
        );
        assert_eq!(on_this_cpu(refused(), cpu_isa::AVX2, false), refused());
        // Recognised again when a results file is read back, v2 by its kind, v1 by its text.
        let r = on_this_cpu(refused(), cpu_isa::AVX2, true);
        let v2 = serde_json::to_value(&r).unwrap();
        assert!(serde_json::from_value::<SkipReason>(v2)
            .unwrap()
            .cpu_lacks_bf16());
        assert!(SkipReason::from_v1(r.to_string()).cpu_lacks_bf16());
        assert!(!refused().cpu_lacks_bf16());
        for isa in [
            cpu_isa::AVX512_CORE,
            cpu_isa::AVX512_CORE_VNNI,
            cpu_isa::AVX512_CORE_AMX,
            cpu_isa::AVX2_VNNI_2,
        ] {
            assert_eq!(on_this_cpu(refused(), isa, true), refused(), "{isa:#x}");
        }
        let invalid = SkipReason::Refused {
            step: "matmul",
            status: Status::InvalidArguments,
        };
        assert_eq!(on_this_cpu(invalid.clone(), cpu_isa::AVX2, true), invalid);
        assert_eq!(cpu_isa::name(cpu_isa::AVX512_CORE_BF16), "avx512_core_bf16");
        assert_eq!(cpu_isa::name(cpu_isa::AVX2_VNNI), "avx2_vnni");
        assert_eq!(cpu_isa::name(0x3), "below avx2");
    }

    /// The messages as the replay printed them before the reasons were typed (copied from the
    /// format strings of the untyped version): the output must not change.
    #[test]
    fn messages_are_the_ones_users_have_seen() {
        let cases: Vec<(SkipReason, &str)> = vec![
            (
                SkipReason::Refused { step: "convolution forward", status: Status::Unimplemented },
                "convolution forward: oneDNN has no implementation for this problem (unimplemented)",
            ),
            (
                SkipReason::Refused { step: "memory descriptor", status: Status::InvalidArguments },
                "memory descriptor: oneDNN rejected the arguments (invalid_arguments)",
            ),
            (
                SkipReason::Refused { step: "post-ops", status: Status::OutOfMemory },
                "post-ops: out of memory",
            ),
            (
                SkipReason::Refused { step: "sum", status: Status::Other(5) },
                "sum: oneDNN status 5",
            ),
            (SkipReason::UnknownDataType("f8".into()), "data type 'f8' is not known to this oneDNN"),
            (SkipReason::UnknownTag("ABcd64a".into()), "layout tag 'ABcd64a' is not known to this oneDNN"),
            (SkipReason::UnknownPostOp("eltwise_x".into()), "post-op eltwise_x unknown to this oneDNN"),
            (
                SkipReason::StridesMismatch { strides: "1x2".into(), dims: 3 },
                "strides '1x2' do not match 3 dims",
            ),
            (SkipReason::Missing("algorithm"), "no algorithm"),
            (
                SkipReason::NeedsOneDnn { what: "group normalization", version: "3.3" },
                "group normalization needs oneDNN 3.3 or newer: point --dnnl-lib (or PROFILEDNN_DNNL_LIB) at one",
            ),
            (SkipReason::QuantArgument("msrc0".into()), "quantization of argument 'msrc0' is not replayed"),
            (SkipReason::Unrecognised("binary"), "binary descriptor not recognised"),
            (
                SkipReason::PropagationNotReplayed { family: "inner-product", prop: "backward".into() },
                "inner-product propagation 'backward' not replayed",
            ),
            (SkipReason::KindNotReplayed("rnn".into()), "replay of 'rnn' primitives is not implemented"),
            (SkipReason::Allocation { arg: 64, bytes: 128 }, "cannot allocate argument 64 (128 bytes)"),
            (SkipReason::Execution(2), "execution failed (status 2)"),
            (SkipReason::Interrupted, "interrupted before it was replayed (Ctrl-C)"),
            (SkipReason::NotInIteration, "not in the steady-state iteration replayed"),
        ];
        for (r, text) in cases {
            assert_eq!(r.to_string(), text);
        }
    }

    #[test]
    fn statuses_come_from_the_codes() {
        assert_eq!(status(0), None);
        assert_eq!(status(1), Some(Status::OutOfMemory));
        assert_eq!(status(2), Some(Status::InvalidArguments));
        assert_eq!(status(3), Some(Status::Unimplemented));
        assert_eq!(status(7), Some(Status::Other(7)));
        assert_eq!(crate::status::check(0, "x"), Ok(()));
        assert_eq!(
            crate::status::check(3, "x"),
            Err(SkipReason::Refused {
                step: "x",
                status: Status::Unimplemented
            })
        );
    }

    #[test]
    fn equal_reasons_are_counted_together_in_message_order() {
        let unimpl = |step| SkipReason::Refused {
            step,
            status: Status::Unimplemented,
        };
        let reasons = [
            unimpl("pooling forward"),
            SkipReason::Interrupted,
            unimpl("convolution forward"),
            unimpl("pooling forward"),
            SkipReason::Interrupted,
            SkipReason::Interrupted,
            // Same step, another status: another reason.
            SkipReason::Refused {
                step: "pooling forward",
                status: Status::InvalidArguments,
            },
        ];
        let t = SkipReason::tally(&reasons);
        let got: Vec<(String, usize)> = t.iter().map(|(r, n)| (r.to_string(), *n)).collect();
        assert_eq!(
            got,
            vec![
                ("convolution forward: oneDNN has no implementation for this problem (unimplemented)".to_string(), 1),
                ("interrupted before it was replayed (Ctrl-C)".to_string(), 3),
                ("pooling forward: oneDNN has no implementation for this problem (unimplemented)".to_string(), 2),
                ("pooling forward: oneDNN rejected the arguments (invalid_arguments)".to_string(), 1),
            ]
        );
        assert!(SkipReason::tally(&[]).is_empty());
    }

    #[test]
    fn a_results_file_keeps_kind_and_message() {
        // Written as {kind, message} (profilednn.replay.v2)…
        assert_eq!(
            serde_json::to_string(&SkipReason::RmsNorm).unwrap(),
            r#"{"kind":"rms_norm","message":"RMS normalization (flags M) is not replayed"}"#
        );
        let refused = SkipReason::Refused {
            step: "reorder",
            status: Status::Unimplemented,
        };
        let v2 = serde_json::to_value(&refused).unwrap();
        assert_eq!(v2["kind"], "refused");
        // …read back: reasons without fields as themselves, the others as kind and text.
        let back = serde_json::from_value::<SkipReason>(v2).unwrap();
        assert_eq!(back.kind(), "refused");
        assert_eq!(back.to_string(), refused.to_string());
        let unit = serde_json::to_value(SkipReason::Interrupted).unwrap();
        assert_eq!(
            serde_json::from_value::<SkipReason>(unit).unwrap(),
            SkipReason::Interrupted
        );
        // A v1 file's bare message is migrated: unit reasons by their text, the bf16 one by
        // its words, the rest `unknown`.
        let read = |s: &str| serde_json::from_value::<SkipReason>(s.into()).unwrap();
        assert_eq!(
            read("interrupted before it was replayed (Ctrl-C)"),
            SkipReason::Interrupted
        );
        assert_eq!(read(&refused.to_string()).kind(), "unknown");
        let bf16 = SkipReason::NoBf16OnThisCpu {
            step: "matmul",
            isa: "avx2",
        };
        let old = read(&bf16.to_string());
        assert!(old.cpu_lacks_bf16() && bf16.cpu_lacks_bf16());
        assert_eq!(old.to_string(), bf16.to_string());
        // v2's kind decides, not the text.
        let v2 = serde_json::json!({"kind": "refused", "message": bf16.to_string()});
        assert!(!serde_json::from_value::<SkipReason>(v2)
            .unwrap()
            .cpu_lacks_bf16());
        assert!(
            serde_json::from_str::<SkipReason>("3").is_err(),
            "a reason is an object or a string"
        );
    }
}
