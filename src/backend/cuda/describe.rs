//! Each case's launch described as data ([`launch`]): the kernel's entry, its grid and block,
//! every array (role, size, initial contents), the exact argument list, the check of its output
//! and the work its block records must count. The backend allocates and pushes exactly what is
//! described; the tests check the descriptions against the PTX `.param` lists and run them under
//! the PTX interpreter, with no driver. Pure: it must not call the driver.

use super::args::*;
use crate::cases::stream::{self, StreamKernel};
use crate::cases::{
    arith, cache, gemm, intensity, latency, peak, tensor, wgmma, Case, Family, Precision,
};
/// The entry a case runs, or why this build has none for it.
pub fn entry(case: &Case) -> Result<Entry, String> {
    let p = case.precision;
    let none = || format!("the CUDA backend has no kernel for {}", case.id());
    match case.family {
        Family::Gemm => {
            if case.kernel == gemm::GPU_WGMMA && gemm::WGMMA_PRECISIONS.contains(&p) {
                return Ok(Entry {
                    module: ModuleId::GemmWgmma(p),
                    name: gemm::wgmma_entry_name(p),
                });
            }
            if let Some(cluster) = gemm::tma_kernel(&case.kernel) {
                if gemm::TMA_PRECISIONS.contains(&p) {
                    return Ok(Entry {
                        module: ModuleId::GemmTma(p, cluster),
                        name: gemm::tma_entry_name(p, cluster),
                    });
                }
            }
            if case.kernel != gemm::GPU_OURS || !gemm::GPU_PRECISIONS.contains(&p) {
                return Err(none());
            }
            Ok(Entry {
                module: if p == gemm::SIMT_PRECISION {
                    ModuleId::GemmSimt
                } else {
                    ModuleId::Gemm(p)
                },
                name: gemm::entry_name(p),
            })
        }
        // the size sweep runs the STREAM kernels themselves (copy and triad)
        Family::Stream | Family::Efficiency => {
            let kernel = StreamKernel::from_name(&case.kernel).ok_or_else(none)?;
            let swept = case.family == Family::Stream
                || crate::cases::efficiency::kernel_of(&case.kernel).is_some();
            if !stream::PRECISIONS.contains(&p) || !swept {
                return Err(none());
            }
            Ok(Entry {
                module: ModuleId::Stream,
                name: format!("{}_{p}", kernel.name()),
            })
        }
        Family::Peak => {
            if case.kernel != peak::KERNEL || !peak::PRECISIONS.contains(&p) {
                return Err(none());
            }
            Ok(Entry {
                module: ModuleId::Peak,
                name: format!("{}_{p}", peak::KERNEL),
            })
        }
        Family::Tensor => {
            if wgmma::source_of(p, &case.kernel).is_some() {
                return Ok(Entry {
                    module: ModuleId::Wgmma,
                    name: wgmma::entry_name(p, wgmma::source_of(p, &case.kernel).expect("above")),
                });
            }
            let mma = tensor::Mma::of_case(case).map_err(|_| none())?;
            Ok(Entry {
                module: if mma.needs_sm90() {
                    ModuleId::MmaSm90
                } else if tensor::needs_sm89(p) {
                    ModuleId::MmaSm89
                } else {
                    ModuleId::Mma
                },
                name: tensor::entry_name(mma),
            })
        }
        Family::Intensity => {
            let k = case
                .count()
                .ok_or_else(|| format!("{} has no k", case.id()))?;
            if case.kernel != intensity::KERNEL
                || !intensity::PRECISIONS.contains(&p)
                || !intensity::KS.contains(&k)
            {
                return Err(none());
            }
            Ok(Entry {
                module: ModuleId::Sweep(p, k),
                name: intensity::entry_name(p, k),
            })
        }
        Family::Cache => {
            // The GPU has an L1 and an L2 kernel; an `l3` case is the host's.
            // The sweep reads with `ld.global.cg`, past L1: where the SMs' L1s together hold
            // as much as the L2 or more (33 MiB against an H100's 50, 10.25 against an RTX
            // 3090's 6), caching loads would keep hitting each SM's L1 and the curve would show
            // no L2 at all. The L1 ceiling is the fixed-size `l1` cases'.
            let kernel = match case.kernel.as_str() {
                cache::SWEEP => "l2",
                k @ ("l1" | "l2") => k,
                _ => return Err(none()),
            };
            if p != cache::PRECISION {
                return Err(none());
            }
            Ok(Entry {
                module: ModuleId::Cache,
                name: format!("{kernel}_{p}"),
            })
        }
        Family::Latency => {
            if !matches!(case.kernel.as_str(), "ca" | "cg") || p != latency::PRECISION {
                return Err(none());
            }
            Ok(Entry {
                module: ModuleId::Latency,
                name: format!("{}_{p}", case.kernel),
            })
        }
        // a capacity case is driver calls, no kernel (`CudaBackend::prepare` runs it); so is a
        // link case (copies)
        Family::Capacity | Family::Link => Err(none()),
        // the timer's row records events and launches nothing; the host's row is the host's
        Family::Launch => {
            if case.kernel != crate::cases::launch::What::Empty.as_str()
                || p != crate::cases::launch::PRECISION
            {
                return Err(none());
            }
            Ok(Entry {
                module: ModuleId::Launch,
                name: format!("{}_{p}", case.kernel),
            })
        }
    }
}

/// The shared-memory carveout an entry's function asks for
/// (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`, percent of the unified L1/shared
/// storage given to shared memory), where it matters: the L1 cache kernel asks for 0, so the L1
/// is as large as the device allows and its working sets, sized to half of it, stay in it.
/// `None` leaves the driver's default.
pub fn shared_carveout_percent(entry: &Entry) -> Option<i32> {
    (entry.module == ModuleId::Cache && entry.name.starts_with("l1_")).then_some(0)
}

/// Whether `family`'s launches take the one-wave grid (the driver's occupancy of the kernel in
/// blocks of [`BLOCK`] threads): not a GEMM, whose grid and block are its shape's and its
/// kernel's (Hopper's TMA kernel declares `.reqntid 384` and runs in clusters), nor the latency
/// chase or the empty kernel, one block each. Their occupancy is not asked for: a query for
/// blocks the kernel cannot run need not answer at all.
pub fn grid_is_one_wave(family: Family) -> bool {
    !matches!(family, Family::Gemm | Family::Latency | Family::Launch)
}

/// The launch of `case` on a grid of `grid` blocks of [`BLOCK`] threads, or why it cannot be
/// launched (a case this build did not plan, a grid the driver refuses, a peak or tensor case
/// planned for another grid).
///
/// `grid` is the grid that fills the device once (every SM at the kernel's occupancy). The
/// STREAM and sweep kernels stride over any n with it; a peak or tensor case was planned for
/// exactly that many threads (one wave, no grid stride) and must match it. A GEMM's grid is
/// its shape's (one block of [`gemm::GPU_BLOCK`] threads per 128 × 128 tile of C), whatever
/// `grid` says.
pub fn launch(case: &Case, grid: u32) -> Result<Launch, String> {
    if grid == 0 || grid > MAX_GRID {
        return Err(format!(
            "{}: a grid of {grid} blocks is outside 1 ..= {MAX_GRID}",
            case.id()
        ));
    }
    let context = Context {
        entry: entry(case)?,
        case,
        precision: case.precision,
        grid,
        threads: grid as u64 * BLOCK as u64,
    };
    let p = case.precision;
    match case.family {
        Family::Gemm => gemm_launch(&context),
        Family::Stream | Family::Efficiency => stream_launch(&context),
        Family::Peak => peak_launch(&context),
        Family::Tensor if wgmma::source_of(p, &case.kernel).is_some() => wgmma_launch(&context),
        Family::Tensor => tensor_launch(&context),
        Family::Intensity => sweep_launch(&context),
        Family::Cache => cache_launch(&context),
        Family::Latency => chase_launch(&context),
        Family::Capacity => Err(format!("{}: a capacity case launches no kernel", case.id())),
        Family::Launch => empty_launch(&context),
        Family::Link => Err(format!(
            "{}: a link case copies, it launches no kernel",
            case.id()
        )),
    }
}

/// Bytes of a case's arrays from which a STREAM, size-sweep or intensity-sweep case is filled
/// and checked on the device ([`device_prep`]) rather than on the host. On a GPU the device is
/// faster at any size (a few launches of microseconds against the host's generation at a few
/// GB/s and a copy), but below this the host's is cheap too, and it keeps the path the
/// interpreter runs quickly (a simulated device's arrays are far smaller): the two paths check
/// alike.
pub const DEVICE_PREP_FROM_BYTES: u64 = 16 << 20;

/// Whether `case`'s arrays are filled and its output checked on the device
/// ([`device_prep`]) where they take `from_bytes` or more ([`DEVICE_PREP_FROM_BYTES`] unless
/// a test says otherwise): the DRAM-sized families, STREAM and the two sweeps.
pub fn prepared_on_device(case: &Case, from_bytes: u64) -> bool {
    matches!(
        case.family,
        Family::Stream | Family::Efficiency | Family::Intensity
    ) && case.working_set_bytes >= from_bytes
}

/// The fills and the check on the device of `launch`, on its grid: for a STREAM kernel (the
/// STREAM and size-sweep cases), every input from the generator its [`Buffer::word`] uses, the
/// output's poison, and for a map kernel the check of every output element against
/// [`stream::gold_form`]; for an intensity-sweep point, its input words
/// ([`intensity::input_form`]), the output's poison, and the check of every output word against
/// the case's [`intensity::Gold`] table (its block records stay the host's). `None` for any other
/// launch.
pub fn device_prep(launch: &Launch) -> Option<DevicePrep> {
    match launch.check {
        Check::StreamArray { kernel, precision }
        | Check::StreamSum {
            kernel, precision, ..
        } => stream_prep(launch, kernel, precision),
        Check::Sweep { precision, k } => sweep_prep(launch, precision, k),
        _ => None,
    }
}

/// A launch of kernels/prep.ptx on `launch`'s grid.
fn prep_launch(
    launch: &Launch,
    name: String,
    buffers: Vec<Buffer>,
    params: Vec<Param>,
    check: Check,
) -> Launch {
    Launch {
        entry: Entry {
            module: ModuleId::Prep,
            name,
        },
        grid: launch.grid,
        block: launch.block,
        dynamic_shared_bytes: 0,
        buffers,
        params,
        check,
        iterations: None,
        owed: None,
        work: crate::cases::Work::default(),
        rotation: None,
    }
}

/// The fill of array `b` with `kind`'s words from `key` (`fill_b<w>`).
fn fill(launch: &Launch, b: &Buffer, kind: FillKind, key: u64) -> Launch {
    prep_launch(
        launch,
        format!("fill_b{}", 8 * b.word_bytes),
        vec![b.clone()],
        vec![
            param("a", Arg::Buffer(b.role)),
            param("n", Arg::U64(b.words)),
            param("key", Arg::U64(key)),
            param("kind", Arg::U32(kind as u32)),
        ],
        Check::Filled,
    )
}

/// The tally a check on the device counts into ([`TALLY_START`]).
fn tally_buffer() -> Buffer {
    Buffer {
        role: Role::Tally,
        words: 2,
        word_bytes: 8,
        init: Init::Words(TALLY_START.to_vec()),
    }
}

/// A STREAM kernel's preparation on the device ([`device_prep`]).
fn stream_prep(launch: &Launch, kernel: StreamKernel, precision: Precision) -> Option<DevicePrep> {
    let mut fills = Vec::new();
    for b in &launch.buffers {
        let (kind, key) = match b.init {
            Init::Stream { array, .. } => (
                if kernel.is_reduction() {
                    FillKind::SumInput
                } else {
                    FillKind::MapInput
                },
                crate::cases::input_key(array),
            ),
            Init::Poison => (FillKind::Constant, poison(b.word_bytes)),
            _ => return None,
        };
        fills.push(fill(launch, b, kind, key));
    }
    let check = stream::gold_form(kernel).and_then(|(ka, kb, k0)| {
        let out = launch.buffer(Role::Output)?.clone();
        let n = out.words;
        Some(prep_launch(
            launch,
            format!("check_{precision}"),
            vec![out, tally_buffer()],
            vec![
                param("out", Arg::Buffer(Role::Output)),
                param("n", Arg::U64(n)),
                param("key_a", Arg::U64(crate::cases::input_key(0))),
                param("key_b", Arg::U64(crate::cases::input_key(1))),
                param("ka", Arg::F64(ka)),
                param("kb", Arg::F64(kb)),
                param("k0", Arg::F64(k0)),
                param("tally", Arg::Buffer(Role::Tally)),
            ],
            Check::Tally {
                of: Tallied::Stream(kernel),
                precision,
                n,
            },
        ))
    });
    Some(DevicePrep { fills, check })
}

/// An intensity-sweep point's preparation on the device ([`device_prep`]): the input words by
/// `fill_sweep_b<w>` in [`intensity::input_form`], the output's poison by `fill_b<w>`, and the
/// check by `check_sweep_b<w>` against the gold table of (precision, k) (i32: its affine map).
/// The block records (zeros, a few words per block) are the host's, as before.
fn sweep_prep(launch: &Launch, precision: Precision, k: u32) -> Option<DevicePrep> {
    let wide = precision == Precision::F64;
    let form = intensity::input_form(precision);
    let input = launch.buffer(Role::Input(0))?;
    let out = launch.buffer(Role::Output)?.clone();
    if input.init != Init::Sweep(precision) || out.init != Init::Poison {
        return None;
    }
    let w = 8 * input.word_bytes;
    let mut input_params = vec![
        param("a", Arg::Buffer(Role::Input(0))),
        param("n", Arg::U64(input.words)),
        param("key", Arg::U64(form.key)),
        param("one", Arg::bits(form.one_bits, wide)),
        param("mask", Arg::bits(form.index_mask, wide)),
        param("shift", Arg::U32(form.index_shift)),
    ];
    if !wide {
        input_params.push(param("lanes", Arg::U32(form.lanes)));
    }
    let fills = vec![
        prep_launch(
            launch,
            format!("fill_sweep_b{w}"),
            vec![input.clone()],
            input_params,
            Check::Filled,
        ),
        fill(launch, &out, FillKind::Constant, poison(out.word_bytes)),
    ];
    let gold = intensity::Gold::new(precision, k);
    let table = gold.device_table();
    let gold_buffer = Buffer {
        role: Role::Gold,
        words: table.len() as u64,
        word_bytes: out.word_bytes,
        init: Init::Words(table),
    };
    let n = out.words;
    let mut params = vec![
        param("out", Arg::Buffer(Role::Output)),
        param("n", Arg::U64(n)),
        param("key", Arg::U64(form.key)),
        param("mask", Arg::bits(form.index_mask, wide)),
    ];
    if !wide {
        // lanes gathered from the table: none for i32, whose gold map is affine in its word
        let (mul, add) = gold.affine();
        let lanes = if precision == Precision::I32 {
            0
        } else {
            form.lanes
        };
        params.push(param("lanes", Arg::U32(lanes)));
        params.push(param("gold", Arg::Buffer(Role::Gold)));
        params.push(param("mul", Arg::B32(mul)));
        params.push(param("add", Arg::B32(add)));
    } else {
        params.push(param("gold", Arg::Buffer(Role::Gold)));
    }
    params.push(param("tally", Arg::Buffer(Role::Tally)));
    let check = prep_launch(
        launch,
        format!("check_sweep_b{w}"),
        vec![out, gold_buffer, tally_buffer()],
        params,
        Check::Tally {
            of: Tallied::Sweep { k },
            precision,
            n,
        },
    );
    Some(DevicePrep {
        fills,
        check: Some(check),
    })
}

/// What every family's launch is planned from: the case, its entry, and the grid.
struct Context<'a> {
    case: &'a Case,
    entry: Entry,
    precision: Precision,
    grid: u32,
    /// Threads of the whole grid.
    threads: u64,
}

impl Context<'_> {
    /// The launch of `grid` blocks of [`BLOCK`] threads, with the case's work and no shared
    /// memory or rotation (a family that differs says so on the result).
    fn launch(
        &self,
        buffers: Vec<Buffer>,
        params: Vec<Param>,
        check: Check,
        iterations: Option<u32>,
        owed: Option<Owed>,
    ) -> Launch {
        Launch {
            entry: self.entry.clone(),
            grid: self.grid,
            block: BLOCK,
            dynamic_shared_bytes: 0,
            buffers,
            params,
            check,
            iterations,
            owed,
            work: self.case.work,
            rotation: None,
        }
    }

    /// The block records: each block's clocks and the work it counted.
    fn clocks(&self) -> Buffer {
        Buffer {
            role: Role::Clocks,
            words: self.grid as u64 * BLOCK_RECORD_WORDS as u64,
            word_bytes: 8,
            init: Init::Zero,
        }
    }

    /// A loop's trip count as the kernels' `.u32`.
    fn trips(&self, i: u64) -> Result<u32, String> {
        u32::try_from(i)
            .map_err(|_| format!("{}: {i} loop trips do not fit in .u32", self.case.id()))
    }
}

/// One kernel parameter by name.
fn param(name: &'static str, arg: Arg) -> Param {
    Param { name, arg }
}

/// A GEMM: A and B (or their tensor maps), C; one block per tile of C, the kernel's own
/// block and shared memory.
fn gemm_launch(c: &Context) -> Result<Launch, String> {
    let (case, p) = (c.case, c.precision);
    // One block per 128 × 128 tile of C: the grid is the shape's, not `grid`.
    let shape = gemm::shape_of(case)?;
    let (lda, ldb) = (
        gemm::gpu_leading_dimension(p, shape.k),
        gemm::gpu_leading_dimension(p, shape.k),
    );
    gemm::check_operands(p, shape, lda, ldb)?;
    let operand = |i: u8, matrix: u64, rows: u64, ld: u64| Buffer {
        role: Role::Input(i),
        // two 16-bit elements or one f32 per word; ld is even
        words: gemm::operand_words(p, rows, ld),
        word_bytes: 4,
        init: Init::GemmOperand {
            precision: p,
            shape,
            matrix,
            ld,
        },
    };
    let buffers = vec![
        operand(0, 0, shape.m, lda),
        operand(1, 1, shape.n, ldb),
        Buffer {
            role: Role::Output,
            words: shape.m * shape.n,
            word_bytes: 4,
            init: Init::Poison,
        },
    ];
    let dim = |v: u64| Arg::U32(v as u32); // check_operands: all fit
    let tma = gemm::tma_kernel(&case.kernel);
    let params = if let Some(cluster) = tma {
        // A and B through tensor maps (their row strides are in the maps)
        let map = |i: u8, matrix: u64, rows: u64, ld: u64| {
            Arg::TensorMap(TensorMap {
                role: Role::Input(i),
                precision: p,
                dims: [shape.k, rows],
                row_bytes: ld * gemm::input_bytes(p),
                box_dims: gemm::tma_box(p, matrix, cluster),
                swizzle_bytes: gemm::TMA_SWIZZLE_BYTES,
            })
        };
        vec![
            param("tmap_a", map(0, 0, shape.m, lda)),
            param("tmap_b", map(1, 1, shape.n, ldb)),
            param("c", Arg::Buffer(Role::Output)),
            param("m", dim(shape.m)),
            param("n", dim(shape.n)),
            param("k", dim(shape.k)),
        ]
    } else {
        vec![
            param("a", Arg::Buffer(Role::Input(0))),
            param("b", Arg::Buffer(Role::Input(1))),
            param("c", Arg::Buffer(Role::Output)),
            param("m", dim(shape.m)),
            param("n", dim(shape.n)),
            param("k", dim(shape.k)),
            param("lda", dim(lda)),
            param("ldb", dim(ldb)),
        ]
    };
    // Hopper's kernels have their own tile, block and shared memory
    let (blocks, block, dynamic_shared_bytes) = if let Some(cluster) = tma {
        (
            gemm::tma_blocks(shape, cluster),
            gemm::TMA_BLOCK,
            gemm::TMA_SHARED_BYTES + gemm::HOPPER_SHARED_SLACK,
        )
    } else if case.kernel == gemm::GPU_WGMMA {
        (
            gemm::wgmma_blocks(shape),
            gemm::WGMMA_BLOCK,
            gemm::WGMMA_SHARED_BYTES + gemm::HOPPER_SHARED_SLACK,
        )
    } else {
        (
            gemm::gpu_blocks(shape),
            gemm::GPU_BLOCK,
            gemm::gpu_dynamic_shared_bytes(p),
        )
    };
    Ok(Launch {
        entry: c.entry.clone(),
        grid: blocks as u32,
        block,
        dynamic_shared_bytes,
        buffers,
        params,
        check: Check::Gemm {
            precision: p,
            shape,
        },
        iterations: None,
        owed: None,
        work: case.work,
        // a decode step's weight in copies, one per launch (gemm::rotate_weights)
        rotation: match gemm::weight_copies(case) {
            1 => None,
            copies => Some(Rotation {
                role: Role::Input(1),
                copies,
            }),
        },
    })
}

/// A STREAM kernel: its input arrays, its output (one partial sum per block for a
/// reduction), `n` and its scalar, in kernels/README.md's order.
fn stream_launch(c: &Context) -> Result<Launch, String> {
    let (case, p, grid, threads) = (c.case, c.precision, c.grid, c.threads);
    let kernel = StreamKernel::from_name(&case.kernel).ok_or("unreachable")?;
    let n = case.elements;
    let word_bytes = stream::element_bytes(p);
    let mut buffers: Vec<Buffer> = (0..kernel.inputs())
        .map(|array| Buffer {
            role: Role::Input(array as u8),
            words: n,
            word_bytes,
            init: Init::Stream {
                kernel,
                array,
                precision: p,
            },
        })
        .collect();
    // A reduction writes one partial sum per block: `partials[blockIdx.x]`.
    let out_words = if kernel.is_reduction() {
        grid as u64
    } else {
        n
    };
    buffers.push(Buffer {
        role: Role::Output,
        words: out_words,
        word_bytes,
        init: Init::Poison,
    });
    // kernels/README.md: inputs (`a`, `b`), then the output (`partials` of a
    // reduction; else the next letter), then `n`, then the scalar.
    const LETTERS: [&str; 3] = ["a", "b", "c"];
    let mut params: Vec<Param> = (0..kernel.inputs() as usize)
        .map(|i| param(LETTERS[i], Arg::Buffer(Role::Input(i as u8))))
        .collect();
    let out_name = if kernel.is_reduction() {
        "partials"
    } else {
        LETTERS[kernel.inputs() as usize]
    };
    params.push(param(out_name, Arg::Buffer(Role::Output)));
    params.push(param("n", Arg::U64(n)));
    if kernel.has_scalar() {
        let s = if kernel == StreamKernel::Write {
            stream::FILL
        } else {
            stream::SCALAR
        };
        params.push(param(
            "scalar",
            if p == Precision::F64 {
                Arg::F64(s)
            } else {
                Arg::F32(s as f32)
            },
        ));
    }
    let check = if kernel.is_reduction() {
        Check::StreamSum {
            kernel,
            precision: p,
            n,
            largest_block_terms: largest_block_terms(n, word_bytes, threads),
        }
    } else {
        Check::StreamArray {
            kernel,
            precision: p,
        }
    };
    Ok(c.launch(buffers, params, check, None, None))
}

/// An FMA peak: one output word per thread, the block records, and the chain's map.
fn peak_launch(c: &Context) -> Result<Launch, String> {
    let (case, p, threads) = (c.case, c.precision, c.threads);
    if threads != case.elements {
        return Err(format!(
            "{} was planned for {} threads, this device runs {threads}",
            case.id(),
            case.elements
        ));
    }
    let iterations = c.trips(peak::iterations_of(case, peak::GPU_FMAS_PER_ITERATION)?)?;
    let wide = p == Precision::F64;
    let map = peak::map(p);
    let buffers = vec![
        Buffer {
            role: Role::Output,
            words: threads,
            word_bytes: arith::word_bytes(p),
            init: Init::Poison,
        },
        c.clocks(),
    ];
    let params = vec![
        param("out", Arg::Buffer(Role::Output)),
        param("clocks", Arg::Buffer(Role::Clocks)),
        param("n", Arg::U64(threads)),
        param("iterations", Arg::U32(iterations)),
        param("x0", Arg::bits(peak::x0(p), wide)),
        param("a", Arg::bits(map.a, wide)),
        param("b", Arg::bits(map.b, wide)),
    ];
    let check = Check::Peak {
        precision: p,
        steps: iterations as u64 * peak::GPU_UNROLL,
    };
    let owed = Owed::PeakTrips {
        precision: p,
        trips: iterations as u64,
    };
    Ok(c.launch(buffers, params, check, Some(iterations), Some(owed)))
}

/// A Hopper `wgmma` peak: A (in shared memory or registers), B's image, C, D per warpgroup.
fn wgmma_launch(c: &Context) -> Result<Launch, String> {
    let (case, p, threads) = (c.case, c.precision, c.threads);
    let a = wgmma::source_of(p, &case.kernel).ok_or("unreachable")?;
    let warpgroups = threads / wgmma::WARPGROUP as u64;
    if warpgroups != case.elements || !BLOCK.is_multiple_of(wgmma::WARPGROUP as u32) {
        return Err(format!(
            "{} was planned for {} warpgroups, this device runs {threads} threads in blocks of {BLOCK}",
            case.id(),
            case.elements
        ));
    }
    let iterations = c.trips(wgmma::iterations_of(case)?)?;
    let input = |i: u8, words: Vec<u64>| Buffer {
        role: Role::Input(i),
        words: words.len() as u64,
        word_bytes: 4,
        init: Init::Words(words),
    };
    let buffers = vec![
        input(0, wgmma::a_words(p, a)),
        input(1, wgmma::b_image(p)),
        input(2, wgmma::c_registers(p)),
        Buffer {
            role: Role::Output,
            words: warpgroups * wgmma::d_registers(p).len() as u64,
            word_bytes: 4,
            init: Init::Poison,
        },
        c.clocks(),
    ];
    let params = vec![
        param("a", Arg::Buffer(Role::Input(0))),
        param("b", Arg::Buffer(Role::Input(1))),
        param("c", Arg::Buffer(Role::Input(2))),
        param("d", Arg::Buffer(Role::Output)),
        param("clocks", Arg::Buffer(Role::Clocks)),
        param("n", Arg::U64(warpgroups)),
        param("iterations", Arg::U32(iterations)),
    ];
    let check = Check::Wgmma {
        precision: p,
        warpgroups,
    };
    let owed = Owed::WgmmaTrips {
        precision: p,
        trips: iterations as u64,
    };
    Ok(c.launch(buffers, params, check, Some(iterations), Some(owed)))
}

/// An `mma.sync` peak: the fragments of A, B, -B and C, D per warp.
fn tensor_launch(c: &Context) -> Result<Launch, String> {
    let (case, p, threads) = (c.case, c.precision, c.threads);
    let warps = threads / tensor::WARP as u64;
    if warps != case.elements {
        return Err(format!(
            "{} was planned for {} warps, this device runs {warps}",
            case.id(),
            case.elements
        ));
    }
    let mma = tensor::Mma::of_case(case)?;
    let iterations = c.trips(tensor::iterations_of(case)?)?;
    let word_bytes = tensor::register_bits(p) as u64 / 8;
    let input = |i: u8, words: Vec<u64>| Buffer {
        role: Role::Input(i),
        words: words.len() as u64,
        word_bytes,
        init: Init::Words(words),
    };
    let buffers = vec![
        input(0, tensor::a_fragments(mma)),
        input(1, tensor::b_fragments(mma, false)),
        input(2, tensor::b_fragments(mma, true)),
        input(3, tensor::c_fragments(mma)),
        Buffer {
            role: Role::Output,
            words: warps * tensor::d_fragments(mma).len() as u64,
            word_bytes,
            init: Init::Poison,
        },
        c.clocks(),
    ];
    let params = vec![
        param("a", Arg::Buffer(Role::Input(0))),
        param("b", Arg::Buffer(Role::Input(1))),
        param("bneg", Arg::Buffer(Role::Input(2))),
        param("c", Arg::Buffer(Role::Input(3))),
        param("d", Arg::Buffer(Role::Output)),
        param("clocks", Arg::Buffer(Role::Clocks)),
        param("n", Arg::U64(warps)),
        param("iterations", Arg::U32(iterations)),
    ];
    let check = Check::Tensor { mma, warps };
    let owed = Owed::TensorTrips {
        mma,
        trips: iterations as u64,
    };
    Ok(c.launch(buffers, params, check, Some(iterations), Some(owed)))
}

/// An intensity-sweep point: a word in, k FMAs, the word out.
fn sweep_launch(c: &Context) -> Result<Launch, String> {
    let (case, p) = (c.case, c.precision);
    let k = case.count().ok_or("unreachable")?;
    let n = case.elements;
    let wide = p == Precision::F64;
    let word_bytes = arith::word_bytes(p);
    let map = intensity::map(p);
    let buffers = vec![
        Buffer {
            role: Role::Input(0),
            words: n,
            word_bytes,
            init: Init::Sweep(p),
        },
        Buffer {
            role: Role::Output,
            words: n,
            word_bytes,
            init: Init::Poison,
        },
        c.clocks(),
    ];
    let params = vec![
        param("in", Arg::Buffer(Role::Input(0))),
        param("out", Arg::Buffer(Role::Output)),
        param("clocks", Arg::Buffer(Role::Clocks)),
        param("n", Arg::U64(n)),
        param("a", Arg::bits(map.a, wide)),
        param("b", Arg::bits(map.b, wide)),
    ];
    let owed = Owed::SweepWords { precision: p, k, n };
    Ok(c.launch(
        buffers,
        params,
        Check::Sweep { precision: p, k },
        None,
        Some(owed),
    ))
}

/// A cache-sweep point: the working set read `passes` times, one sum per thread.
fn cache_launch(c: &Context) -> Result<Launch, String> {
    let (case, threads) = (c.case, c.threads);
    let n = case.elements;
    let passes = cache::passes(case);
    // kernels/cache.ptx indexes the vectors and the threads in 32 bits, and reads whole
    // vectors only
    if !n.is_multiple_of(4) || n / 4 > cache::GPU_MAX_INDEX || threads > cache::GPU_MAX_INDEX {
        return Err(format!(
            "{}: the GPU cache kernels read whole 16-byte vectors (n a multiple of 4), \
             fewer than 2^31 of them, with fewer than 2^31 threads; n = {n} words, \
             {threads} threads",
            case.id()
        ));
    }
    let buffers = vec![
        Buffer {
            role: Role::Input(0),
            words: n,
            word_bytes: cache::WORD_BYTES,
            init: Init::Cache,
        },
        // One sum per thread: `sums[gid]`.
        Buffer {
            role: Role::Output,
            words: threads,
            word_bytes: cache::WORD_BYTES,
            init: Init::Poison,
        },
    ];
    let params = vec![
        param("a", Arg::Buffer(Role::Input(0))),
        param("sums", Arg::Buffer(Role::Output)),
        param("n", Arg::U64(n)),
        param("passes", Arg::U32(c.trips(passes)?)),
    ];
    Ok(c.launch(
        buffers,
        params,
        Check::Cache { n, passes },
        Some(c.trips(passes)?),
        None,
    ))
}

/// A latency chase: one thread of one block follows the ring.
fn chase_launch(c: &Context) -> Result<Launch, String> {
    let case = c.case;
    // One thread of one block chases, whatever grid fills the device.
    let (lines, line_bytes, hops) = (
        case.elements,
        latency::line_bytes(case),
        latency::hops(case),
    );
    if line_bytes != latency::GPU_LINE_BYTES {
        return Err(format!(
            "{}: the GPU chase needs {}-byte lines",
            case.id(),
            latency::GPU_LINE_BYTES
        ));
    }
    let next = std::sync::Arc::new(latency::successors(&latency::order(lines)));
    let buffers = vec![
        Buffer {
            role: Role::Input(0),
            words: lines * line_bytes / latency::GPU_POINTER_BYTES,
            word_bytes: latency::GPU_POINTER_BYTES,
            init: Init::Chase { next, line_bytes },
        },
        // [byte offset the chase stands on, hops since line 0]
        Buffer {
            role: Role::Output,
            words: 2,
            word_bytes: 8,
            init: Init::Zero,
        },
        Buffer {
            words: BLOCK_RECORD_WORDS as u64,
            ..c.clocks()
        },
    ];
    let params = vec![
        param("ring", Arg::Buffer(Role::Input(0))),
        param("state", Arg::Buffer(Role::Output)),
        param("clocks", Arg::Buffer(Role::Clocks)),
        param("hops", Arg::U32(c.trips(hops)?)),
    ];
    Ok(Launch {
        grid: 1,
        block: 1,
        ..c.launch(
            buffers,
            params,
            Check::Latency {
                lines,
                line_bytes,
                hops,
            },
            Some(c.trips(hops)?),
            Some(Owed::ChaseHops { hops }),
        )
    })
}

/// A launch-overhead launch: one block of one thread adds one to a counter.
fn empty_launch(c: &Context) -> Result<Launch, String> {
    // One block of one thread, whatever grid fills the device: the launch is the figure.
    let buffers = vec![Buffer {
        role: Role::Output,
        words: 1,
        word_bytes: 4,
        init: Init::Zero,
    }];
    let params = vec![param("count", Arg::Buffer(Role::Output))];
    Ok(Launch {
        grid: 1,
        block: 1,
        ..c.launch(buffers, params, Check::Launches, None, None)
    })
}

/// Most elements one block of a STREAM reduction adds in the kernel's precision: its threads'
/// grid-stride share of whole 16-byte vectors, plus the scalar tail (which block 0 takes).
fn largest_block_terms(n: u64, element_bytes: u64, threads: u64) -> u64 {
    let width = 16 / element_bytes;
    let vectors = n / width;
    vectors.div_ceil(threads.max(1)) * width * BLOCK as u64 + width
}
