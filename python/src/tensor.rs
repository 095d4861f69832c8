//! Tensors as the kernels see them, read from the `torch.Tensor` objects themselves.
//!
//! The kernels take slices. An earlier binding took `data_ptr()` integers from the Python
//! wrappers, so any caller could crash the interpreter with a wrong integer. Here every slice
//! comes from a tensor object whose device, dtype, shape and strides are checked first, and the
//! tensors one call writes must not overlap any other tensor of the call (a Rust `&mut` slice
//! aliasing another slice would be undefined behaviour).

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

/// The element types the kernels take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dtype {
    F32,
    Bf16,
    I64,
    I16,
}

impl Dtype {
    fn size(self) -> usize {
        match self {
            Dtype::F32 => 4,
            Dtype::Bf16 | Dtype::I16 => 2,
            Dtype::I64 => 8,
        }
    }
}

/// A dense CPU tensor's storage span: `n` elements of `dtype` from `ptr`, in the order of
/// memory (the layout, `strides`, is only compared between the tensors of one update).
#[derive(Clone, Debug)]
pub struct Dense {
    ptr: usize,
    pub n: usize,
    pub dtype: Dtype,
    pub shape: Vec<i64>,
    pub strides: Vec<i64>,
    pub what: String,
}

/// torch's dtype and layout objects, looked up once: a tensor's are compared by identity,
/// which keeps reading a tensor cheap (an optimizer step reads four tensors per parameter).
struct Torch {
    dtypes: [(Py<PyAny>, Dtype); 4],
    strided: Py<PyAny>,
    /// `torch.Tensor` and `torch.nn.Parameter`: the only types taken. A subclass (or any object
    /// with the same attribute names) can override `data_ptr()` or run Python code between the
    /// checks, and so hand the kernels memory that is not the tensor's.
    types: [Py<PyAny>; 2],
}

static TORCH: GILOnceCell<Torch> = GILOnceCell::new();

fn torch(py: Python<'_>) -> PyResult<&Torch> {
    TORCH.get_or_try_init(py, || {
        let t = py.import("torch")?;
        let get = |n: &str| t.getattr(n).map(|o| o.unbind());
        Ok(Torch {
            dtypes: [
                (get("float32")?, Dtype::F32),
                (get("bfloat16")?, Dtype::Bf16),
                (get("int64")?, Dtype::I64),
                (get("int16")?, Dtype::I16),
            ],
            strided: get("strided")?,
            types: [
                get("Tensor")?,
                t.getattr("nn")?.getattr("Parameter")?.unbind(),
            ],
        })
    })
}

/// Reads `t` (a `torch.Tensor`) as a dense CPU tensor, or says what it is instead.
pub fn dense(t: &Bound<'_, PyAny>, what: &str) -> PyResult<Dense> {
    let py = t.py();
    let err = |m: String| PyValueError::new_err(format!("{what}: {m}"));
    let torch = torch(py)?;
    let ty = t.get_type();
    if !torch.types.iter().any(|k| ty.is(k)) {
        return Err(PyTypeError::new_err(format!(
            "{what}: expected a torch.Tensor (or nn.Parameter), got {}",
            ty.name()?
        )));
    }
    let is_cpu: bool = t.getattr(intern!(py, "is_cpu"))?.extract()?;
    if !is_cpu {
        let device = t.getattr(intern!(py, "device"))?.str()?;
        return Err(err(format!("expected a CPU tensor, got device {device}")));
    }
    let layout = t.getattr(intern!(py, "layout"))?;
    if !layout.is(&torch.strided) {
        return Err(err(format!(
            "expected a dense (strided) tensor, got {}",
            layout.str()?
        )));
    }
    // The negative bit (a lazy negation, `torch._neg_view`) would make the storage hold minus
    // the values; real dtypes never carry the conjugate bit.
    if t.call_method0(intern!(py, "is_neg"))?.extract::<bool>()? {
        return Err(err("is_neg() is set: call .resolve_neg() first".into()));
    }
    let dt = t.getattr(intern!(py, "dtype"))?;
    let Some(dtype) = torch.dtypes.iter().find(|(o, _)| dt.is(o)).map(|d| d.1) else {
        return Err(err(format!("dtype {} is not supported", dt.str()?)));
    };
    let shape: Vec<i64> = t.getattr(intern!(py, "shape"))?.extract()?;
    let strides: Vec<i64> = t.call_method0(intern!(py, "stride"))?.extract()?;
    let n = shape
        .iter()
        .try_fold(1usize, |n, &s| n.checked_mul(usize::try_from(s).ok()?));
    let Some(n) = n else {
        return Err(err(format!("shape {shape:?} has no element count")));
    };
    if !is_dense(&shape, &strides) {
        return Err(err(format!(
            "expected a dense tensor (contiguous or channels-last), got shape {shape:?} \
             strides {strides:?}: call .contiguous()"
        )));
    }
    let ptr: usize = t.call_method0(intern!(py, "data_ptr"))?.extract()?;
    if n > 0 && (ptr == 0 || !ptr.is_multiple_of(dtype.size())) {
        return Err(err(format!("storage at {ptr:#x} is not usable")));
    }
    Ok(Dense {
        ptr,
        n,
        dtype,
        shape,
        strides,
        what: what.to_string(),
    })
}

/// Whether a tensor of `shape` and `strides` covers exactly its `numel` elements from its
/// first one, in some order of dimensions: then its storage is one slice.
pub fn is_dense(shape: &[i64], strides: &[i64]) -> bool {
    if shape.len() != strides.len() || shape.iter().any(|&s| s < 0) {
        return false;
    }
    if shape.contains(&0) {
        return true;
    }
    let mut dims: Vec<(i64, i64)> = shape
        .iter()
        .zip(strides)
        .filter(|(&size, _)| size > 1)
        .map(|(&size, &stride)| (stride, size))
        .collect();
    dims.sort_unstable();
    let mut expected = 1i64;
    for (stride, size) in dims {
        if stride != expected {
            return false;
        }
        expected = match expected.checked_mul(size) {
            Some(e) => e,
            None => return false,
        };
    }
    true
}

impl Dense {
    /// Requires `dtype`.
    pub fn of(self, dtype: Dtype) -> PyResult<Self> {
        if self.dtype != dtype {
            return Err(PyTypeError::new_err(format!(
                "{}: expected {dtype:?}, got {:?}",
                self.what, self.dtype
            )));
        }
        Ok(self)
    }

    /// Requires the element count and layout of `like` (tensors updated element by element
    /// together must index the same elements at the same offsets). A size-1 dimension's stride
    /// never moves an element (its index is always 0), so it is left out: a depthwise
    /// convolution's `[96, 1, 7, 7]` weight may have strides `[49, 49, 7, 1]` and its
    /// gradient `[49, 1, 7, 1]`, one layout.
    pub fn like(self, like: &Dense) -> PyResult<Self> {
        if self.shape != like.shape || !same_layout(&self.shape, &self.strides, &like.strides) {
            return Err(PyValueError::new_err(format!(
                "{}: shape {:?} strides {:?} differ from {}'s {:?} {:?}",
                self.what, self.shape, self.strides, like.what, like.shape, like.strides
            )));
        }
        Ok(self)
    }

    /// Requires row-major order (the kernels index rows of the last dimension).
    pub fn contiguous(self) -> PyResult<Self> {
        let mut expected = 1i64;
        for (&size, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if size > 1 && stride != expected {
                return Err(PyValueError::new_err(format!(
                    "{}: expected a contiguous tensor (call .contiguous())",
                    self.what
                )));
            }
            expected *= size.max(1);
        }
        Ok(self)
    }

    fn span(&self) -> (usize, usize) {
        (self.ptr, self.ptr + self.n * self.dtype.size())
    }

    /// # Safety
    /// The tensor stays alive and unwritten for `'a`, and `T` is its element type.
    pub unsafe fn slice<'a, T>(&self) -> &'a [T] {
        debug_assert_eq!(std::mem::size_of::<T>(), self.dtype.size());
        if self.n == 0 {
            return &[];
        }
        std::slice::from_raw_parts(self.ptr as *const T, self.n)
    }

    /// # Safety
    /// As [`Dense::slice`], and nothing else reads or writes the tensor for `'a`
    /// ([`check_disjoint`] has passed for the call).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn slice_mut<'a, T>(&self) -> &'a mut [T] {
        debug_assert_eq!(std::mem::size_of::<T>(), self.dtype.size());
        if self.n == 0 {
            return &mut [];
        }
        std::slice::from_raw_parts_mut(self.ptr as *mut T, self.n)
    }
}

/// Errors when a written tensor (`writes`) overlaps any other tensor of the call.
pub fn check_disjoint(writes: &[&Dense], reads: &[&Dense]) -> PyResult<()> {
    let mut spans: Vec<(usize, usize, bool, &str)> = writes
        .iter()
        .map(|d| (d, true))
        .chain(reads.iter().map(|d| (d, false)))
        .filter(|(d, _)| d.n > 0)
        .map(|(d, w)| {
            let (a, b) = d.span();
            (a, b, w, d.what.as_str())
        })
        .collect();
    spans.sort_unstable_by_key(|s| s.0);
    // Sweep in order of start: each span against the one reaching furthest so far, and
    // against the furthest-reaching written span (reads may overlap each other).
    let mut furthest: Option<(usize, &str)> = None;
    let mut furthest_write: Option<(usize, &str)> = None;
    for &(a, b, w, what) in &spans {
        let clash = if w { furthest } else { furthest_write };
        if let Some((end, other)) = clash {
            if a < end {
                return Err(PyValueError::new_err(format!(
                    "{what} and {other} share memory: the kernels write one of them, so they \
                     must be distinct tensors"
                )));
            }
        }
        if furthest.is_none_or(|(e, _)| b > e) {
            furthest = Some((b, what));
        }
        if w && furthest_write.is_none_or(|(e, _)| b > e) {
            furthest_write = Some((b, what));
        }
    }
    Ok(())
}

/// Whether two tensors of `shape` put every element at the same offset: their strides agree
/// on every dimension longer than 1.
pub fn same_layout(shape: &[i64], a: &[i64], b: &[i64]) -> bool {
    a.len() == b.len()
        && shape
            .iter()
            .zip(a.iter().zip(b))
            .all(|(&size, (x, y))| size <= 1 || x == y)
}

#[cfg(test)]
mod tests {
    use super::{is_dense, same_layout};

    #[test]
    fn layouts_differing_only_in_a_size_1_stride_are_the_same() {
        // A depthwise weight and the gradient the convolution's backward gives it.
        assert!(same_layout(&[96, 1, 7, 7], &[49, 49, 7, 1], &[49, 1, 7, 1]));
        // Channels-last against contiguous: another element order.
        assert!(!same_layout(&[8, 3, 2, 2], &[12, 4, 2, 1], &[12, 1, 6, 3]));
        // A transposed matrix against a row-major one.
        assert!(!same_layout(&[2, 3], &[1, 2], &[3, 1]));
        assert!(same_layout(&[1, 1], &[5, 9], &[1, 1]));
    }

    #[test]
    fn contiguous_and_channels_last_are_dense_views_are_not() {
        assert!(is_dense(&[2, 3, 4, 5], &[60, 20, 5, 1]));
        assert!(is_dense(&[2, 3, 4, 5], &[60, 1, 15, 3])); // channels-last
        assert!(is_dense(&[3, 1], &[1, 7])); // size-1 dims have any stride
        assert!(is_dense(&[2, 3], &[1, 2])); // a transposed 3 x 2
        assert!(!is_dense(&[4, 2], &[4, 1])); // every other row: a gap
        assert!(!is_dense(&[4], &[0])); // expanded
        assert!(!is_dense(&[4], &[2])); // strided slice
        assert!(is_dense(&[0, 5], &[5, 1]));
    }
}
