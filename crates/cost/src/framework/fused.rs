//! Operations per element of an op fused into a generated kernel (torch.compile's Inductor
//! names each kernel after the ops it fused: `cpp_fused_gelu_native_layer_norm_0`). The counts
//! are the ops' own models' (elementwise.rs, norm.rs): a fused kernel does the same arithmetic
//! in one pass, and its name is all that says which. Views, copies, fills and index arithmetic
//! do none; an op the models do not know counts one, as an element-wise op would.

/// Operations per element of `op` (a bare ATen name, as a fused kernel's name lists it).
pub fn fused_per_element(op: &str) -> u64 {
    let bare = op.trim_end_matches('_');
    match bare {
        "view" | "_unsafe_view" | "t" | "transpose" | "permute" | "expand" | "reshape"
        | "squeeze" | "unsqueeze" | "clone" | "copy" | "_to_copy" | "arange" | "full" | "zeros"
        | "ones" | "zeros_like" | "ones_like" | "full_like" | "fill" | "zero" | "embedding"
        | "index_select" | "select" | "slice" | "cat" | "constant_pad_nd" | "detach" | "alias"
        | "empty" | "split" | "unbind" | "stack" => 0,
        // 5 for the statistics and the normalising, 2 for weight and bias (norm.rs).
        "layer_norm" | "native_layer_norm" => 7,
        "native_layer_norm_backward" => 8,
        "softmax" | "_softmax" | "log_softmax" | "_log_softmax" => 5,
        "_softmax_backward_data" | "_log_softmax_backward_data" => 4,
        "embedding_dense_backward" => 1,
        b if b.ends_with("_backward") => 2,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_cost_nothing_norms_their_model_and_activations_one() {
        assert_eq!(fused_per_element("_unsafe_view"), 0);
        assert_eq!(fused_per_element("native_layer_norm"), 7);
        assert_eq!(fused_per_element("gelu"), 1);
        assert_eq!(fused_per_element("gelu_backward"), 2);
        assert_eq!(fused_per_element("add_"), 1);
    }
}
