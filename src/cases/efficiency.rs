//! Size-dependent efficiency: STREAM copy and triad at array sizes from 1 MiB up, fitted as
//! `time = a + bytes / BW`.
//!
//! A case is `efficiency/<kernel>/f32/<KiB per array>`: the STREAM kernel (`copy` or `triad`,
//! the same kernels, work table and gold-value checks as the `stream` family: see
//! [`super::stream`]) on arrays of that many KiB each, so its working set is 2 (copy) or 3
//! (triad) times that. Sizes double from [`MIN_ARRAY_BYTES`] up to a cap each backend sets from
//! its free memory and its time (see [`array_sizes`]); the case id carries the size, so no
//! column was added.
//!
//! The fit ([`crate::stats::fit::two_stage`]): per kernel, over its valid rows, the median time per launch `t` against
//! the bytes the launch moves `x` (STREAM counting), `t = a + x / BW`, in two stages. `BW` is
//! the slope of ordinary least squares over every size: the sizes double, so the largest ones,
//! far beyond any cache, decide it, which is what an asymptotic bandwidth is (a fit weighted to
//! the small sizes would take the cache's bandwidth for it). `a` is then the least-squares
//! constant on the relative residuals `(t − a − x/BW) / t` with that `BW`, which weighs every
//! size alike (the small sizes are where a constant shows; in absolute terms the largest sizes'
//! noise would swamp it). Where that constant is negative (small arrays that a cache serves run
//! faster than the DRAM line, and no launch cost shows past it) it is 0, and the fit says so.
//! The fit's residual is the root-mean-square relative residual over the sizes.
//!
//! The efficiency curve is each size's bandwidth (`x / t`) over the fit's asymptotic bandwidth
//! (not over the spec sheet's peak): 1 where a size runs at the asymptote, below 1 where the
//! constant still costs, above 1 where a cache serves the arrays.
//!
//! This module must not launch or time anything.

use super::stream::{self, StreamKernel};
use super::{Case, Family, Param, Precision};

/// The kernels the sweep runs: copy (read 1 : write 1) and triad (read 2 : write 1).
pub const KERNELS: [StreamKernel; 2] = [StreamKernel::Copy, StreamKernel::Triad];

/// The one precision: the bandwidth does not depend on it, and one halves the cases.
pub const PRECISION: Precision = Precision::F32;

/// The smallest array: 1 MiB.
pub const MIN_ARRAY_BYTES: u64 = 1 << 20;

/// Samples kept per size (the runner's fewest, with a warm-up of one sample): every size costs
/// its arrays' preparation and a few launches, and the fit, not one point, carries the figure.
pub const SAMPLES: u32 = 3;

/// Whether a case's kernel is one of the sweep's.
pub fn kernel_of(case_kernel: &str) -> Option<StreamKernel> {
    StreamKernel::from_name(case_kernel).filter(|k| KERNELS.contains(k))
}

/// Array sizes in bytes: powers of two from [`MIN_ARRAY_BYTES`] up to `max_array_bytes`
/// (empty where that is below 1 MiB).
pub fn array_sizes(max_array_bytes: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut bytes = MIN_ARRAY_BYTES;
    while bytes <= max_array_bytes {
        out.push(bytes);
        bytes *= 2;
    }
    out
}

/// The case of `kernel` on arrays of `array_bytes` each: a STREAM case of the same kernel and
/// size, in this family, with the KiB per array as its parameter.
pub fn case(kernel: StreamKernel, array_bytes: u64) -> Case {
    let n = array_bytes / stream::element_bytes(PRECISION);
    Case {
        family: Family::Efficiency,
        param: Some(Param::Count(
            u32::try_from(array_bytes >> 10).unwrap_or(u32::MAX),
        )),
        ..kernel.case(PRECISION, n)
    }
}

/// Every case: per kernel, every size of [`array_sizes`] up to `max_array_bytes`.
pub fn cases(max_array_bytes: u64) -> Vec<Case> {
    KERNELS
        .into_iter()
        .flat_map(|k| {
            array_sizes(max_array_bytes)
                .into_iter()
                .map(move |b| case(k, b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_double_from_one_mib_to_the_cap() {
        assert_eq!(array_sizes(1 << 19), Vec::<u64>::new());
        assert_eq!(array_sizes(1 << 20), vec![1 << 20]);
        assert_eq!(
            array_sizes((8 << 20) + 5),
            vec![1 << 20, 2 << 20, 4 << 20, 8 << 20]
        );
        let cases = cases(4 << 20);
        let ids: Vec<String> = cases.iter().map(Case::id).collect();
        assert_eq!(
            ids,
            [
                "efficiency/copy/f32/1024",
                "efficiency/copy/f32/2048",
                "efficiency/copy/f32/4096",
                "efficiency/triad/f32/1024",
                "efficiency/triad/f32/2048",
                "efficiency/triad/f32/4096",
            ]
        );
        // the STREAM work table: triad of 1 MiB arrays reads 2 MiB and writes 1 MiB
        let triad = &cases[3];
        assert_eq!(triad.elements, 1 << 18);
        assert_eq!(triad.working_set_bytes, 3 << 20);
        assert_eq!(
            (triad.work.bytes_read, triad.work.bytes_written),
            (2 << 20, 1 << 20)
        );
        assert_eq!(kernel_of("triad"), Some(StreamKernel::Triad));
        assert_eq!(kernel_of("dot"), None);
    }
}
