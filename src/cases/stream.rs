//! STREAM cases: the weight table, the inputs and the gold-value checks.
//!
//! | kernel | does | read | written | flops |
//! | --- | --- | --- | --- | --- |
//! | copy  | `b = a`         | 1 | 1 | 0 |
//! | scale | `b = s·a`       | 1 | 1 | 1 |
//! | add   | `c = a + b`     | 2 | 1 | 1 |
//! | triad | `c = a + s·b`   | 2 | 1 | 2 |
//! | dot   | `Σ a·b`         | 2 | 0 | 2 |
//! | read  | `Σ a`           | 1 | 0 | 1 |
//! | write | `a = s`         | 0 | 1 | 0 |
//!
//! (arrays of n elements per launch; the reductions' per-block partial sums are a few KiB and
//! are not counted). Copy of n f32 therefore moves 8n bytes.
//!
//! Inputs are chosen so that every gold value is exact, which lets the checks demand equality:
//! the map kernels read dyadic numbers in [1, 2) with 20 fractional bits and use the scalar 3,
//! so `3·a`, `a + b` and `a + 3·b` all fit in an f32 mantissa whether or not the multiply and add
//! are fused; the reductions read integers 1…4, whose sums and dot products stay exact while a
//! partial sum stays below 2^24 (f32) or 2^53 (f64). Past that bound the check allows the
//! rounding of the partial sums and says so.

use super::{input_bits, Case, Family, Precision, Verdict, Work};

/// The scalar of `scale` and `triad`.
pub const SCALAR: f64 = 3.0;
/// The value `write` fills with.
pub const FILL: f64 = 2.5;

/// One STREAM kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StreamKernel {
    Copy,
    Scale,
    Add,
    Triad,
    Dot,
    Read,
    Write,
}

impl StreamKernel {
    pub const ALL: [StreamKernel; 7] = [
        StreamKernel::Copy,
        StreamKernel::Scale,
        StreamKernel::Add,
        StreamKernel::Triad,
        StreamKernel::Dot,
        StreamKernel::Read,
        StreamKernel::Write,
    ];

    pub fn name(self) -> &'static str {
        match self {
            StreamKernel::Copy => "copy",
            StreamKernel::Scale => "scale",
            StreamKernel::Add => "add",
            StreamKernel::Triad => "triad",
            StreamKernel::Dot => "dot",
            StreamKernel::Read => "read",
            StreamKernel::Write => "write",
        }
    }

    pub fn from_name(name: &str) -> Option<StreamKernel> {
        StreamKernel::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Arrays read per element.
    pub fn inputs(self) -> u64 {
        match self {
            StreamKernel::Copy | StreamKernel::Scale | StreamKernel::Read => 1,
            StreamKernel::Add | StreamKernel::Triad | StreamKernel::Dot => 2,
            StreamKernel::Write => 0,
        }
    }

    /// Arrays written per element (0 for the reductions).
    pub fn outputs(self) -> u64 {
        match self {
            StreamKernel::Dot | StreamKernel::Read => 0,
            _ => 1,
        }
    }

    /// Arithmetic operations per element.
    pub fn flops_per_element(self) -> u64 {
        match self {
            StreamKernel::Copy | StreamKernel::Write => 0,
            StreamKernel::Scale | StreamKernel::Add | StreamKernel::Read => 1,
            StreamKernel::Triad | StreamKernel::Dot => 2,
        }
    }

    /// True for `dot` and `read`, which produce one sum instead of an array.
    pub fn is_reduction(self) -> bool {
        self.outputs() == 0
    }

    /// True when the kernel takes a scalar parameter.
    pub fn has_scalar(self) -> bool {
        matches!(
            self,
            StreamKernel::Scale | StreamKernel::Triad | StreamKernel::Write
        )
    }

    /// Arrays the case allocates (inputs + outputs).
    pub fn arrays(self) -> u64 {
        self.inputs() + self.outputs()
    }

    /// The work of one launch over `n` elements of `element_bytes` each.
    pub fn work(self, n: u64, element_bytes: u64) -> Work {
        Work {
            bytes_read: self.inputs() * n * element_bytes,
            bytes_written: self.outputs() * n * element_bytes,
            flops: self.flops_per_element() * n,
        }
    }

    /// The case for `n` elements of `precision` (f32 or f64).
    pub fn case(self, precision: Precision, n: u64) -> Case {
        let bytes = element_bytes(precision);
        Case {
            family: Family::Stream,
            kernel: self.name().to_string(),
            precision,
            param: None,
            elements: n,
            working_set_bytes: self.arrays() * n * bytes,
            work: self.work(n, bytes),
        }
    }
}

/// Bytes per element of a STREAM precision.
pub fn element_bytes(precision: Precision) -> u64 {
    match precision {
        Precision::F64 => 8,
        _ => 4,
    }
}

/// The STREAM precisions.
pub const PRECISIONS: [Precision; 2] = [Precision::F32, Precision::F64];

/// Every STREAM case at `n_for(precision)` elements.
pub fn cases(n_for: impl Fn(Precision) -> u64) -> Vec<Case> {
    PRECISIONS
        .into_iter()
        .flat_map(|p| {
            let n = n_for(p);
            StreamKernel::ALL.into_iter().map(move |k| k.case(p, n))
        })
        .collect()
}

/// The element types the STREAM kernels run in.
pub trait Element: Copy + Send + Sync + PartialEq + std::fmt::Debug + 'static {
    const PRECISION: Precision;
    /// Significand bits, hidden bit included (24 for f32, 53 for f64).
    const SIGNIFICAND_BITS: u32;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// A quiet NaN with a recognisable payload, written into outputs before a run.
    fn poison() -> Self;
}

impl Element for f32 {
    const PRECISION: Precision = Precision::F32;
    const SIGNIFICAND_BITS: u32 = 24;
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn poison() -> Self {
        f32::from_bits(0x7FC0_DEAD)
    }
}

impl Element for f64 {
    const PRECISION: Precision = Precision::F64;
    const SIGNIFICAND_BITS: u32 = 53;
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn poison() -> Self {
        f64::from_bits(0x7FF8_0000_DEAD_BEEF)
    }
}

/// Input element `i` of input array `array` (0 = a, 1 = b) of `kernel`.
pub fn input(kernel: StreamKernel, array: u64, i: u64) -> f64 {
    let bits = input_bits(array, i);
    if kernel.is_reduction() {
        (1 + bits % 4) as f64
    } else {
        1.0 + (bits >> 44) as f64 / (1u64 << 20) as f64
    }
}

/// The gold value of output element `i` of a map kernel (copy, scale, add, triad, write).
pub fn expected(kernel: StreamKernel, i: u64) -> f64 {
    let a = || input(kernel, 0, i);
    let b = || input(kernel, 1, i);
    match kernel {
        StreamKernel::Copy => a(),
        StreamKernel::Scale => SCALAR * a(),
        StreamKernel::Add => a() + b(),
        StreamKernel::Triad => a() + SCALAR * b(),
        StreamKernel::Write => FILL,
        StreamKernel::Dot | StreamKernel::Read => {
            unreachable!("reductions have no output array; use expected_sum")
        }
    }
}

/// [`expected`] as `(ka, kb, k0)`: output element i of a map kernel is `ka·a(i) + kb·b(i) + k0`
/// over its inputs a and b, computed in f64 (exact for these inputs) and rounded to the
/// kernel's precision. What a check on the device computes (kernels/prep.ptx, `check_<p>`);
/// `None` for a reduction.
pub fn gold_form(kernel: StreamKernel) -> Option<(f64, f64, f64)> {
    Some(match kernel {
        StreamKernel::Copy => (1.0, 0.0, 0.0),
        StreamKernel::Scale => (SCALAR, 0.0, 0.0),
        StreamKernel::Add => (1.0, 1.0, 0.0),
        StreamKernel::Triad => (1.0, SCALAR, 0.0),
        StreamKernel::Write => (0.0, 0.0, FILL),
        StreamKernel::Dot | StreamKernel::Read => return None,
    })
}

/// Terms a chunk of [`expected_sum`] adds on one host thread: the sums of integers are exact
/// in f64 in any order, so a sum over a DRAM array's billion elements may take every core.
const SUM_CHUNK: u64 = 1 << 22;

/// The exact gold value of a reduction (dot, read) over `n` elements (its terms are small
/// integers, so the chunked sum on every core is exact and the same as a serial one).
pub fn expected_sum(kernel: StreamKernel, n: u64) -> f64 {
    let term = |i: u64| match kernel {
        StreamKernel::Dot => input(kernel, 0, i) * input(kernel, 1, i),
        StreamKernel::Read => input(kernel, 0, i),
        _ => unreachable!("{} is not a reduction", kernel.name()),
    };
    let chunks = usize::try_from(n.div_ceil(SUM_CHUNK)).unwrap_or(usize::MAX);
    crate::cases::par_map_heavy(chunks, |c| {
        let start = c as u64 * SUM_CHUNK;
        (start..(start + SUM_CHUNK).min(n)).map(term).sum::<f64>()
    })
    .into_iter()
    .sum()
}

/// Checks the output array of a map kernel, element by element, against its gold values.
pub fn check_array<T: Element + Sync>(kernel: StreamKernel, out: &[T]) -> Verdict {
    crate::cases::check_elements(out.len(), "elements", |i| {
        wrong_element(kernel, i as u64, out[i])
    })
}

/// Why output element `i` of a map kernel, `got`, is wrong (`is …, should be …, diff …`), or
/// `None` where it is its gold value.
pub fn wrong_element<T: Element>(kernel: StreamKernel, i: u64, got: T) -> Option<String> {
    let want = T::from_f64(expected(kernel, i));
    (got != want).then(|| {
        format!(
            "is {:?}, should be {:?}, diff {:e}",
            got,
            want,
            got.to_f64() - want.to_f64()
        )
    })
}

/// Checks a reduction's total (the host's f64 sum of the partial sums it got back).
///
/// `largest_partial_terms` is the most elements any one partial sum (a GPU block, a host chunk)
/// added in the kernel's own precision; while those sums stay below 2^significand the result is
/// exact and must match exactly.
pub fn check_sum<T: Element>(
    kernel: StreamKernel,
    n: u64,
    got: f64,
    largest_partial_terms: u64,
) -> Verdict {
    check_sum_against::<T>(kernel, expected_sum(kernel, n), got, largest_partial_terms)
}

/// [`check_sum`] against a gold total `want` already known (the exact sum of the inputs as they
/// were generated, taken while they were written or read back whole).
pub fn check_sum_against<T: Element>(
    kernel: StreamKernel,
    want: f64,
    got: f64,
    largest_partial_terms: u64,
) -> Verdict {
    let max_term = if kernel == StreamKernel::Dot { 16 } else { 4 };
    let exact =
        (largest_partial_terms as f64) * (max_term as f64) < 2f64.powi(T::SIGNIFICAND_BITS as i32);
    // Beyond the exact range: each of up to `terms` additions rounds by at most half an ulp
    // of the running sum; allow that bound.
    let tolerance = if exact {
        0.0
    } else {
        want * largest_partial_terms as f64 * 2f64.powi(-(T::SIGNIFICAND_BITS as i32))
    };
    if !got.is_finite() || (got - want).abs() > tolerance {
        Verdict::invalid(format!(
            "sum is {got}, should be {want}, diff {:e} (tolerance {tolerance:e})",
            got - want
        ))
    } else {
        Verdict::valid()
    }
}

/// What output element `i` of a map kernel must be, from its inputs as read back (`a`, `b`; the
/// kernel reads those it has): the kernel's own arithmetic in `T`, which is exact on these
/// inputs whether or not it is fused (the module doc), so it equals [`expected`].
pub fn map_value<T: Element + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
    kernel: StreamKernel,
    a: T,
    b: T,
) -> T {
    let s = T::from_f64(SCALAR);
    match kernel {
        StreamKernel::Copy => a,
        StreamKernel::Scale => s * a,
        StreamKernel::Add => a + b,
        StreamKernel::Triad => a + s * b,
        StreamKernel::Write => T::from_f64(FILL),
        StreamKernel::Dot | StreamKernel::Read => {
            unreachable!("reductions have no output array")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The form a check on the device computes is every map kernel's gold value, bit for bit in
    /// both precisions; and the chunked sum of a reduction is the serial one.
    #[test]
    fn the_gold_form_is_the_gold_value_and_the_chunked_sum_the_serial_one() {
        for k in StreamKernel::ALL {
            let Some((ka, kb, k0)) = gold_form(k) else {
                assert!(k.is_reduction());
                let n = 3 * SUM_CHUNK + 17;
                let serial: f64 = (0..n)
                    .map(|i| match k {
                        StreamKernel::Dot => input(k, 0, i) * input(k, 1, i),
                        _ => input(k, 0, i),
                    })
                    .sum();
                assert_eq!(expected_sum(k, n), serial, "{}", k.name());
                continue;
            };
            for i in 0..10_000 {
                let form = ka * input(k, 0, i) + kb * input(k, 1, i) + k0;
                let want = expected(k, i);
                assert_eq!(form.to_bits(), want.to_bits(), "{} [{i}]", k.name());
                assert_eq!((form as f32).to_bits(), (want as f32).to_bits());
            }
        }
    }

    #[test]
    fn weight_table_matches_stream_convention() {
        // Copy of n f32 moves 8n bytes; triad of n f64 moves 24n bytes and does 2n flops.
        let n = 1000;
        assert_eq!(StreamKernel::Copy.work(n, 4).bytes(), 8 * n);
        let t = StreamKernel::Triad.work(n, 8);
        assert_eq!(
            (t.bytes_read, t.bytes_written, t.flops),
            (16 * n, 8 * n, 2 * n)
        );
        assert_eq!(StreamKernel::Dot.work(n, 4).bytes(), 8 * n);
        assert_eq!(StreamKernel::Write.work(n, 4).bytes_read, 0);
        assert_eq!(StreamKernel::Read.work(n, 8).bytes(), 8 * n);
        for k in StreamKernel::ALL {
            assert_eq!(StreamKernel::from_name(k.name()), Some(k));
        }
    }

    #[test]
    fn cases_cover_every_kernel_and_precision() {
        let cases = cases(|p| if p == Precision::F32 { 100 } else { 50 });
        assert_eq!(cases.len(), 14);
        let triad = cases.iter().find(|c| c.id() == "stream/triad/f64").unwrap();
        assert_eq!(triad.elements, 50);
        assert_eq!(triad.working_set_bytes, 3 * 50 * 8);
        assert_eq!(triad.work.bytes(), 3 * 50 * 8);
    }

    #[test]
    fn map_inputs_are_exact_in_f32_and_results_fit() {
        for i in 0..10_000 {
            for k in [
                StreamKernel::Copy,
                StreamKernel::Scale,
                StreamKernel::Add,
                StreamKernel::Triad,
            ] {
                let a = input(k, 0, i);
                assert!((1.0..2.0).contains(&a));
                assert_eq!(a as f32 as f64, a);
                let want = expected(k, i);
                assert_eq!(want as f32 as f64, want, "{k:?}[{i}] not exact in f32");
                // fused and unfused f32 arithmetic agree on these inputs
                if k == StreamKernel::Triad {
                    let (a, b, s) = (a as f32, input(k, 1, i) as f32, SCALAR as f32);
                    assert_eq!(s.mul_add(b, a), a + s * b);
                }
            }
        }
    }

    #[test]
    fn check_array_accepts_gold_and_names_the_first_failure() {
        let n = 37;
        let mut out: Vec<f32> = (0..n)
            .map(|i| expected(StreamKernel::Triad, i) as f32)
            .collect();
        assert!(check_array(StreamKernel::Triad, &out).valid);
        out[36] = f32::poison();
        out[5] += 1.0;
        let v = check_array(StreamKernel::Triad, &out);
        assert!(!v.valid);
        assert!(
            v.detail.starts_with("2 of 37 elements wrong: [5] is"),
            "{}",
            v.detail
        );
        assert!(v.detail.contains("[36]"));
    }

    #[test]
    fn check_sum_is_exact_in_range_and_tolerant_past_it() {
        let n = 1001;
        let want = expected_sum(StreamKernel::Dot, n);
        assert_eq!(want.fract(), 0.0);
        assert!(check_sum::<f32>(StreamKernel::Dot, n, want, 100).valid);
        // one element missing is caught
        let missing = want - input(StreamKernel::Dot, 0, 7) * input(StreamKernel::Dot, 1, 7);
        assert!(!check_sum::<f32>(StreamKernel::Dot, n, missing, 100).valid);
        assert!(!check_sum::<f64>(StreamKernel::Read, n, f64::NAN, 100).valid);
        // f32 partials of 2^21 terms of up to 16 are past 2^24: rounding is allowed
        let big = 1u64 << 21;
        assert!(check_sum::<f32>(StreamKernel::Dot, n, want * (1.0 + 1e-9), big).valid);
        assert!(!check_sum::<f32>(StreamKernel::Dot, n, want * 1.5, big).valid);
    }
}
