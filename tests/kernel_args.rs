//! The CUDA backend's launches, checked without a GPU (testing layer 5, docs/testing.md).
//!
//! `cuLaunchKernel` trusts its caller: an argument list that does not match the entry's
//! `.param` declarations is not an error on a GPU, it is a kernel reading garbage. The CUDA
//! backend pushes exactly what `roofprobe::backend::cuda::describe::launch` describes, so this file checks
//! those descriptions, for every case the CUDA planner plans on a range of devices (an H200, an
//! A100, an RTX 3090, an RTX 4090 and L40S with fp8, an RTX 5090, a B200, a T4) and every case the
//! host backend plans:
//!
//! - the entry exists in the module the backend loads it from, and every entry of the fixed
//!   modules is planned on some device (no kernel the backend cannot reach);
//! - the argument list has the entry's `.param` count, names and order, and each argument's
//!   kind is the declared type at the declared width; a pointer argument is exactly a parameter
//!   the kernel converts with `cvta.to.global` (an address), and no other;
//! - no kernel needs dynamic shared memory, which every launch passes as 0;
//! - the grids are within the driver's limits and the loop counts fit their `.u32`;
//! - a peak or tensor launch lasts about the target time on each device at its theoretical
//!   peak, for any occupancy from 1 to 16 blocks per SM;
//!
//! and then runs every (family, kernel, precision, k) under the PTX interpreter exactly as
//! described (arrays of the described sizes and contents, the described arguments and grid,
//! at reduced sizes) and checks the output and the block records with the launch's own check,
//! as the backend would. Mutated descriptions (swapped arguments, a narrowed scalar, a short
//! array, a trip count other than the row's) and mutated kernels (a loop one trip short, a sweep
//! that moves its vectors twice) must fail.

use ptxsim::{Arg as SimArg, Memory, Module};
use roofprobe::backend::cuda::args::{
    self, Arg, Launch, ModuleId, ParamKind, Role, BLOCK, BLOCK_RECORD_WORDS, MAX_GRID,
    RECORD_WORK_WORD,
};
use roofprobe::backend::cuda::describe;
use roofprobe::backend::cuda::plan::{self, DeviceModel, TARGET_LAUNCH_SECS};
use roofprobe::backend::host::pool::allowed_cpus;
use roofprobe::backend::host::HostBackend;
use roofprobe::backend::{Backend, PlannedCase, SizeRequest};
use roofprobe::cases::launch as launch_rows;
use roofprobe::cases::stream::StreamKernel;
use roofprobe::cases::{
    cache, gemm, intensity, latency, peak, tensor, wgmma, Case, Family, Precision,
};
use roofprobe::device::{BackendKind, DeviceInfo};
use std::collections::{BTreeMap, BTreeSet};

/// A device as the driver would describe it: name, compute capability, SMs, max SM clock (MHz),
/// L2 bytes, free bytes.
pub(crate) struct Device {
    pub(crate) name: &'static str,
    cc: (u32, u32),
    sms: u32,
    mhz: f64,
    l2: u64,
    free: u64,
}

pub(crate) const DEVICES: &[Device] = &[
    Device {
        name: "NVIDIA H200",
        cc: (9, 0),
        sms: 132,
        mhz: 1980.0,
        // PyTorch on the lent H200 read 60 MB of L2 (the H100 SXM enables 50)
        l2: 60 << 20,
        free: 140 << 30,
    },
    Device {
        name: "NVIDIA H100 80GB HBM3",
        cc: (9, 0),
        sms: 132,
        mhz: 1980.0,
        l2: 50 << 20,
        free: 79 << 30,
    },
    Device {
        name: "NVIDIA A100-SXM4-80GB",
        cc: (8, 0),
        sms: 108,
        mhz: 1410.0,
        l2: 40 << 20,
        free: 79 << 30,
    },
    Device {
        name: "NVIDIA GeForce RTX 3090",
        cc: (8, 6),
        sms: 82,
        mhz: 1695.0,
        l2: 6 << 20,
        free: 23 << 30,
    },
    Device {
        name: "NVIDIA GeForce RTX 4090",
        cc: (8, 9),
        sms: 128,
        mhz: 2520.0,
        l2: 72 << 20,
        free: 23 << 30,
    },
    Device {
        name: "NVIDIA L40S",
        cc: (8, 9),
        sms: 142,
        mhz: 2520.0,
        l2: 96 << 20,
        free: 44 << 30,
    },
    Device {
        name: "NVIDIA GeForce RTX 5090",
        cc: (12, 0),
        sms: 170,
        mhz: 2407.0,
        l2: 96 << 20,
        free: 31 << 30,
    },
    Device {
        name: "NVIDIA B200",
        cc: (10, 0),
        sms: 148,
        mhz: 1965.0,
        l2: 126 << 20,
        free: 178 << 30,
    },
    // Too old for the compute kernels: STREAM only.
    Device {
        name: "Tesla T4",
        cc: (7, 5),
        sms: 40,
        mhz: 1590.0,
        l2: 4 << 20,
        free: 15 << 30,
    },
];

pub(crate) fn info(d: &Device) -> DeviceInfo {
    DeviceInfo {
        backend: BackendKind::Cuda,
        id: "cuda:0".into(),
        name: d.name.into(),
        compute_capability: format!("{}.{}", d.cc.0, d.cc.1),
        units: d.sms,
        clock_mhz: Some(d.mhz),
        memory_clock_mhz: None,
        memory_bus_bits: None,
        llc_bytes: d.l2,
        caches: Vec::new(),
        memory_total_bytes: d.free,
        memory_free_bytes: d.free,
        driver: String::new(),
        identity: Default::default(),
        extra: Vec::new(),
    }
}

/// The cases the CUDA backend plans on `d` when every kernel fits `per_sm` blocks per SM, with
/// the one-wave grid the planner saw.
pub(crate) fn planned(d: &Device, per_sm: u32) -> (Vec<PlannedCase>, u32) {
    planned_at(d, per_sm, SizeRequest::Auto)
}

/// [`planned`] at the array size `size` asks for.
fn planned_at(d: &Device, per_sm: u32, size: SizeRequest) -> (Vec<PlannedCase>, u32) {
    let info = info(d);
    let grid = d.sms * per_sm;
    let model = DeviceModel {
        info: &info,
        compute_capability: d.cc,
        usable_bytes: d.free / 100 * 90,
        peers: &[],
    };
    let cases = plan::plan_cases(&model, size, &mut |_| Ok(grid))
        .unwrap_or_else(|e| panic!("{}: {e}", d.name));
    (cases, grid)
}

/// Every module the CUDA backend can load, parsed once.
fn module(id: ModuleId, cache: &mut BTreeMap<String, Module>) -> &Module {
    cache.entry(id.file()).or_insert_with(|| {
        Module::parse(&id.ptx()).unwrap_or_else(|e| panic!("{}: {e}", id.file()))
    })
}

/// The text of entry `name` in `ptx`: from its `.entry` to the next one.
fn entry_text<'a>(ptx: &'a str, name: &str) -> &'a str {
    let start = ptx
        .find(&format!(".entry {name}("))
        .unwrap_or_else(|| panic!("no .entry {name}("));
    let rest = &ptx[start + 1..];
    &ptx[start..start + 1 + rest.find(".entry ").unwrap_or(rest.len())]
}

/// The parameters of an entry that the kernel uses as addresses: loaded into a register that
/// is then converted with `cvta.to.global`.
fn address_params(ptx: &str, name: &str) -> BTreeSet<String> {
    let text = entry_text(ptx, name);
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let mut out = BTreeSet::new();
    for line in &lines {
        let Some(rest) = line.strip_prefix("ld.param.") else {
            continue;
        };
        // ld.param.u64 %rd1, [copy_f32_a];
        let Some((reg, param)) = rest
            .split_once(' ')
            .and_then(|(_, ops)| ops.split_once(','))
            .map(|(r, p)| (r.trim(), p.trim().trim_end_matches(';').trim()))
        else {
            continue;
        };
        let param = param.trim_start_matches('[').trim_end_matches(']');
        let converted = lines.iter().any(|l| {
            l.starts_with("cvta.to.global.")
                && l.trim_end_matches(';')
                    .split(',')
                    .nth(1)
                    .is_some_and(|src| src.trim() == reg)
        });
        if converted {
            out.insert(param.to_string());
        }
    }
    out
}

/// How `launch` disagrees with its entry in `module` (`ptx` its text); empty when it matches.
fn mismatches(launch: &Launch, module: &Module, ptx: &str) -> Vec<String> {
    let name = &launch.entry.name;
    let Some(kernel) = module.kernel(name) else {
        return vec![format!(
            "no entry {name} in {} (entries: {})",
            launch.entry.module.file(),
            module.entries().join(", ")
        )];
    };
    let mut out = Vec::new();
    if kernel.params.len() != launch.params.len() {
        out.push(format!(
            "{name}: {} arguments for {} parameters",
            launch.params.len(),
            kernel.params.len()
        ));
    }
    let addresses = address_params(ptx, name);
    for (i, (declared, param)) in kernel.params.iter().zip(&launch.params).enumerate() {
        let kind = param.arg.kind();
        let want_name = format!("{name}_{}", param.name);
        if declared.name != want_name {
            out.push(format!(
                "{name} parameter {i}: declared {}, passed as {want_name}",
                declared.name
            ));
        }
        if declared.array != kind.array()
            || declared.ty.name() != kind.ptx_type()
            || declared.bytes != kind.bytes()
        {
            out.push(format!(
                "{name} parameter {i} ({}): declared .{} ({} bytes), passed as {kind:?} ({} bytes)",
                declared.name,
                declared.ty.name(),
                declared.bytes,
                kind.bytes()
            ));
        }
        let is_address = addresses.contains(&declared.name);
        if is_address != (kind == ParamKind::GlobalPtr) {
            out.push(format!(
                "{name} parameter {i} ({}): the kernel {} it as an address, passed as {kind:?}",
                declared.name,
                if is_address { "uses" } else { "does not use" }
            ));
        }
    }
    let dynamic_shared = entry_text(ptx, name).contains(".extern .shared");
    if dynamic_shared && launch.dynamic_shared_bytes == 0 {
        out.push(format!(
            "{name} declares dynamic shared memory and is launched with none"
        ));
    }
    out
}

/// The launch family's timer row: it records events and launches nothing.
fn is_timer(case: &Case) -> bool {
    case.family == Family::Launch
        && launch_rows::What::parse(&case.kernel) == Some(launch_rows::What::Timer)
}

/// The compute capability of the modelled device named `name`.
pub fn device_cc(name: &str) -> (u32, u32) {
    DEVICES
        .iter()
        .find(|d| d.name == name)
        .unwrap_or_else(|| panic!("{name} is not a modelled device"))
        .cc
}

/// Every PTX launch the CUDA backend plans on the modelled devices (cuBLAS rows launch no PTX
/// of ours), each once by device, id and occupancy, with the grid it was planned for.
pub fn every_planned_case() -> Vec<(String, Case, u32)> {
    let mut out: BTreeMap<String, (String, Case, u32)> = BTreeMap::new();
    for d in DEVICES {
        for per_sm in [1, 4, 8] {
            let (cases, grid) = planned(d, per_sm);
            for p in cases {
                // cuBLAS, the capacity figures (driver calls), the link's copies, the event
                // timer (events, no kernel): no launch of ours
                if p.case.kernel == gemm::GPU_REFERENCE
                    || matches!(p.case.family, Family::Capacity | Family::Link)
                    || is_timer(&p.case)
                {
                    continue;
                }
                // only the sweep's steps carry a note (the caches the device reports), on
                // Hopper the legacy mma.sync rows (their theory is the wgmma rate), and the DRAM
                // latency chase (its TLB misses)
                assert!(
                    p.note.is_empty()
                        || cache::is_sweep_step(&p.case)
                        || crate::common::is_legacy_mma_note(&p, d.cc)
                        || p.note == plan::DRAM_LATENCY_NOTE,
                    "{}: {}",
                    d.name,
                    p.note
                );
                let key = format!("{} {} {per_sm}", d.name, p.case.id());
                out.insert(key, (d.name.to_string(), p.case, grid));
            }
        }
    }
    out.into_values().collect()
}

#[test]
fn every_planned_launch_matches_its_ptx_entry() {
    let mut cache = BTreeMap::new();
    let mut failures = Vec::new();
    let mut entries_used: BTreeSet<(String, String)> = BTreeSet::new();
    let mut launches = 0;
    for (device, case, grid) in every_planned_case() {
        let launch = describe::launch(&case, grid)
            .unwrap_or_else(|e| panic!("{device} {}: no launch: {e}", case.id()));
        let id = launch.entry.module;
        let ptx = id.ptx();
        let m = module(id, &mut cache);
        failures.extend(
            mismatches(&launch, m, &ptx)
                .into_iter()
                .map(|f| format!("{device} {}: {f}", case.id())),
        );
        assert!((1..=MAX_GRID).contains(&launch.grid));
        if case.family == Family::Gemm {
            // one block per tile; a tensor-core kernel with 64 KiB of dynamic shared memory
            // (raised before launch), the SIMT kernel with none (its shared memory is static),
            // Hopper's wgmma kernel 192 KiB, and its TMA-fed kernel that and its barriers, in
            // blocks of three warpgroups
            let (block, dynamic) = if gemm::tma_kernel(&case.kernel).is_some() {
                (
                    gemm::TMA_BLOCK,
                    gemm::TMA_SHARED_BYTES + gemm::HOPPER_SHARED_SLACK,
                )
            } else if case.kernel == gemm::GPU_WGMMA {
                (
                    gemm::WGMMA_BLOCK,
                    gemm::WGMMA_SHARED_BYTES + gemm::HOPPER_SHARED_SLACK,
                )
            } else if case.precision == gemm::SIMT_PRECISION {
                (gemm::GPU_BLOCK, 0)
            } else {
                (gemm::GPU_BLOCK, gemm::GPU_SHARED_BYTES)
            };
            assert_eq!(
                (launch.block, launch.dynamic_shared_bytes),
                (block, dynamic)
            );
        } else if matches!(case.family, Family::Latency | Family::Launch) {
            // the latency chase is one thread, and so is the empty kernel
            assert_eq!((launch.block, launch.dynamic_shared_bytes), (1, 0));
        } else {
            assert_eq!((launch.block, launch.dynamic_shared_bytes), (BLOCK, 0));
        }
        // every pointer argument names an array of the launch, and every array is passed
        let passed: BTreeSet<Role> = launch
            .params
            .iter()
            .filter_map(|p| match p.arg {
                Arg::Buffer(role) => Some(role),
                Arg::TensorMap(map) => Some(map.role),
                _ => None,
            })
            .collect();
        let arrays: BTreeSet<Role> = launch.buffers.iter().map(|b| b.role).collect();
        assert_eq!(passed, arrays, "{}", case.id());
        assert_eq!(arrays.len(), launch.buffers.len(), "each role once");
        entries_used.insert((id.file(), launch.entry.name.clone()));
        launches += 1;
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every entry of the fixed modules is reachable: planned on some device.
    for id in [
        ModuleId::Stream,
        ModuleId::Peak,
        ModuleId::Mma,
        ModuleId::MmaSm89,
        ModuleId::MmaSm90,
        ModuleId::GemmSimt,
    ] {
        for entry in module(id, &mut cache).entries() {
            assert!(
                entries_used.contains(&(id.file(), entry.to_string())),
                "{entry} in {} is never planned",
                id.file()
            );
        }
    }
    // 14 STREAM cases on all 8 devices; 5 peaks, 6 or 7 MMAs and 60 sweep points on the 7 of
    // compute capability 8.0+; three occupancies each
    assert!(launches > 3 * (8 * 14 + 7 * (5 + 6 + 60)), "{launches}");
}

#[test]
fn host_planned_cases_are_launchable_or_refused_by_name() {
    let host = HostBackend::with_cpus(allowed_cpus().into_iter().take(1).collect());
    let mut cache = BTreeMap::new();
    for p in host.cases(SizeRequest::BytesPerArray(1 << 20)).unwrap() {
        match describe::launch(&p.case, 1056) {
            Ok(launch) => {
                let id = launch.entry.module;
                let ptx = id.ptx();
                let bad = mismatches(&launch, module(id, &mut cache), &ptx);
                assert!(bad.is_empty(), "{}: {}", p.case.id(), bad.join("; "));
            }
            // a host peak case is sized for the host's threads and FMAs per trip; a GPU has no
            // AMX, and no L3 to sweep, and chases 128-byte lines with its own kernels; the host's GEMM
            // implementations (`simd`, `gemm-crate`) are not GPU kernels
            Err(why) => assert!(
                (p.case.family == Family::Gemm && why.contains("has no kernel for"))
                    || (p.case.family == Family::Peak
                        && (why.contains("was planned for") || why.contains("is not a peak case")))
                    || (p.case.family == Family::Cache
                        && p.case.kernel == "l3"
                        && why.contains("has no kernel for"))
                    // AMX is the host CPU's matrix unit
                    || (p.case.family == Family::Tensor
                        && p.case.kernel == roofprobe::backend::host::tensor::KERNEL
                        && why.contains("has no kernel for"))
                    || (p.case.family == Family::Latency
                        && p.case.kernel == latency::HOST_KERNEL
                        && why.contains("has no kernel for"))
                    // capacity figures are driver or OS calls
                    || (p.case.family == Family::Capacity
                        && why.contains("has no kernel for"))
                    // waking the host's workers is the host's
                    || (p.case.family == Family::Launch
                        && p.case.kernel == launch_rows::What::WakeBarrier.as_str()
                        && why.contains("has no kernel for")),
                "{}: {why}",
                p.case.id()
            ),
        }
    }
}

/// Each mistake the description could make is caught by the comparison.
#[test]
fn a_wrong_argument_list_is_caught() {
    let mut cache = BTreeMap::new();
    let check = |launch: &Launch, cache: &mut BTreeMap<String, Module>| {
        let id = launch.entry.module;
        let ptx = id.ptx();
        mismatches(launch, module(id, cache), &ptx)
    };
    let triad = describe::launch(
        &StreamKernel::Triad.case(roofprobe::cases::Precision::F32, 100),
        4,
    )
    .unwrap();
    assert!(check(&triad, &mut cache).is_empty());
    // swapped order
    let mut swapped = triad.clone();
    swapped.params.swap(3, 4);
    assert!(!check(&swapped, &mut cache).is_empty());
    // a missing argument
    let mut short = triad.clone();
    short.params.pop();
    assert!(check(&short, &mut cache)[0].contains("4 arguments for 5 parameters"));
    // the f32 scalar passed as f64 (8 bytes where 4 are read)
    let mut wide = triad.clone();
    wide.params[4].arg = Arg::F64(3.0);
    assert!(check(&wide, &mut cache)
        .iter()
        .any(|m| m.contains("F64 (8 bytes)")));
    // the count passed as a pointer, with the right width and name: the kernel does not use it
    // as an address
    let mut count_as_pointer = triad.clone();
    count_as_pointer.params[3].arg = Arg::Buffer(Role::Output);
    assert!(check(&count_as_pointer, &mut cache)
        .iter()
        .any(|m| m.contains("does not use it as an address")));
    // a peak kernel's loop count passed as 64 bits
    let peak_case = peak::case(
        roofprobe::cases::Precision::F64,
        4 * BLOCK as u64,
        3,
        peak::GPU_FMAS_PER_ITERATION,
    );
    let mut peak_launch = describe::launch(&peak_case, 4).unwrap();
    assert!(check(&peak_launch, &mut cache).is_empty());
    peak_launch.params[3].arg = Arg::U64(3);
    assert!(!check(&peak_launch, &mut cache).is_empty());
}

#[test]
fn grids_and_loop_counts_fit_and_launches_last_about_the_target() {
    for d in DEVICES {
        for per_sm in [1, 2, 4, 8, 16] {
            let (cases, grid) = planned(d, per_sm);
            for p in cases {
                let case = &p.case;
                if case.kernel == gemm::GPU_REFERENCE
                    || matches!(case.family, Family::Capacity | Family::Link)
                    || is_timer(case)
                {
                    continue; // cuBLAS, driver calls, copies, events: no launch of ours
                }
                let launch = describe::launch(case, grid)
                    .unwrap_or_else(|e| panic!("{} {}: {e}", d.name, case.id()));
                let threads = launch.threads();
                assert!(threads <= u32::MAX as u64, "{} threads", threads);
                if !matches!(case.family, Family::Peak | Family::Tensor) {
                    continue;
                }
                // the loop count is a .u32 and the work a u64 with room to spare
                let trips = launch.iterations.unwrap();
                assert!(trips >= 1);
                // at the theoretical peak (or the slowest known rate, which sized it), one
                // launch takes the target time, plus at most one trip (rounding up) and the
                // tensor kernels' one MMA per chain after the loop (1/8 of a trip)
                let info = info(d);
                let rate = plan::target_flops(&info, d.cc, case.precision) / TARGET_LAUNCH_SECS;
                let secs = case.work.flops as f64 / rate;
                let one_trip = secs / trips as f64;
                assert!(
                    secs >= TARGET_LAUNCH_SECS * 0.999
                        && secs <= TARGET_LAUNCH_SECS + one_trip * 1.2,
                    "{} {} at {per_sm} blocks/SM: {trips} trips last {:.3} ms",
                    d.name,
                    case.id(),
                    secs * 1e3
                );
                assert!(secs < 0.05, "{} {}: {secs} s", d.name, case.id());
            }
        }
    }
}

/// `map` over the array at `base` in the interpreter's encoding, as the simulated driver's
/// `cuTensorMapEncodeTiled` writes it.
fn tensor_map(map: &args::TensorMap, base: ptxsim::DevicePtr) -> [u8; 128] {
    ptxsim::TensorMap {
        base: base.addr(),
        elem_bytes: map.element_bytes() as u32,
        dims: map.dims,
        strides_bytes: [map.row_bytes],
        box_dims: map.box_dims,
        swizzle: match map.swizzle_bytes {
            0 => ptxsim::Swizzle::None,
            32 => ptxsim::Swizzle::B32,
            64 => ptxsim::Swizzle::B64,
            _ => ptxsim::Swizzle::B128,
        },
        oob_fill: ptxsim::OobFill::Zero,
    }
    .encode()
}

/// Runs `launch` under the interpreter exactly as described; returns the output words and the
/// block records (empty for a launch without them).
fn run(launch: &Launch, m: &Module) -> Result<(Vec<u64>, Vec<u64>), String> {
    let mut mem = Memory::new();
    let mut ptrs = BTreeMap::new();
    for b in &launch.buffers {
        let ptr = mem.alloc(b.bytes() as usize);
        if b.word_bytes == 8 {
            let words: Vec<u64> = (0..b.words).map(|i| b.word(i, ptr.addr())).collect();
            mem.write(ptr, &words).map_err(|e| e.to_string())?;
        } else {
            let words: Vec<u32> = (0..b.words).map(|i| b.word(i, ptr.addr()) as u32).collect();
            mem.write(ptr, &words).map_err(|e| e.to_string())?;
        }
        ptrs.insert(b.role, ptr);
    }
    let args: Vec<SimArg> = launch
        .params
        .iter()
        .map(|p| match p.arg {
            Arg::Buffer(role) => SimArg::Ptr(ptrs[&role]),
            Arg::U64(v) | Arg::B64(v) => SimArg::U64(v),
            Arg::U32(v) | Arg::B32(v) => SimArg::U32(v),
            Arg::F32(v) => SimArg::F32(v),
            Arg::F64(v) => SimArg::F64(v),
            Arg::TensorMap(map) => SimArg::Bytes(tensor_map(&map, ptrs[&map.role]).to_vec()),
        })
        .collect();
    m.launch(
        &launch.entry.name,
        (launch.grid, 1, 1),
        (launch.block, 1, 1),
        launch.dynamic_shared_bytes,
        &args,
        &mut mem,
    )
    .map_err(|e| e.to_string())?;
    let read = |role: Role| -> Result<Vec<u64>, String> {
        let Some(b) = launch.buffer(role) else {
            return Ok(Vec::new());
        };
        let ptr = ptrs[&role];
        Ok(if b.word_bytes == 8 {
            mem.read::<u64>(ptr, b.words as usize)
                .map_err(|e| e.to_string())?
        } else {
            mem.read::<u32>(ptr, b.words as usize)
                .map_err(|e| e.to_string())?
                .into_iter()
                .map(u64::from)
                .collect()
        })
    };
    Ok((read(Role::Output)?, read(Role::Clocks)?))
}

/// A case like `case` (same family, kernel, precision, k) sized for the interpreter, with the
/// grid to run it on: a small grid, arrays of a few thousand words (a size that is not a
/// multiple of the vector, the block or the grid), one or two loop trips.
fn small(case: &Case) -> (Case, u32) {
    let p = case.precision;
    match case.family {
        Family::Stream => {
            let k = StreamKernel::from_name(&case.kernel).unwrap();
            (k.case(p, 4099), 2)
        }
        // the size sweep launches the STREAM kernels, described the same way
        Family::Efficiency => {
            let k = StreamKernel::from_name(&case.kernel).unwrap();
            let mut small = k.case(p, 4099);
            small.family = Family::Efficiency;
            small.param = case.param;
            (small, 2)
        }
        Family::Peak => (
            peak::case(p, 2 * BLOCK as u64, 2, peak::GPU_FMAS_PER_ITERATION),
            2,
        ),
        Family::Tensor => match wgmma::source_of(p, &case.kernel) {
            Some(a) => (
                wgmma::case(p, a, BLOCK as u64 / wgmma::WARPGROUP as u64, 1),
                1,
            ),
            None => (
                tensor::case(tensor::Mma::of_case(case).unwrap(), BLOCK as u64 / 32, 1),
                1,
            ),
        },
        Family::Intensity => (intensity::case(p, case.count().unwrap(), 1031), 2),
        // 4100 words: 1025 whole vectors (the kernels read no tail) over 512 threads, shares
        // of 3 and 2; two passes.
        Family::Cache => (cache::case(&case.kernel, 4 * 4100, 2), 2),
        // 32 lines, 1000 hops: the chase goes round the ring 31 times and stops mid-way.
        Family::Latency => (
            latency::case(&case.kernel, latency::GPU_LINE_BYTES, 4 << 10, 1000),
            1,
        ),
        Family::Gemm => unreachable!("GEMM launches run at their own edge shapes"),
        Family::Capacity => unreachable!("a capacity case launches nothing"),
        // one launch, one block of one thread, whatever grid: it is sized by nothing
        Family::Launch => (case.clone(), 1),
        Family::Link => unreachable!("a link case copies, it launches nothing"),
    }
}

#[test]
fn every_described_launch_runs_and_validates_under_the_interpreter() {
    let mut cache = BTreeMap::new();
    let mut seen = BTreeSet::new();
    let mut failures = Vec::new();
    for (_, case, _) in every_planned_case() {
        // GEMM kernels run at their edge shapes in gemm_kernels_match_the_exact_product_…
        // The sweep's steps are one launch at the interpreter's size: run it once.
        let key = if cache::is_sweep_step(&case) {
            "cache/sweep".to_string()
        } else {
            case.id()
        };
        if case.family == Family::Gemm || !seen.insert(key) {
            continue;
        }
        let (small_case, grid) = small(&case);
        let launch = describe::launch(&small_case, grid).unwrap();
        let m = module(launch.entry.module, &mut cache);
        match run(&launch, m) {
            Err(e) => failures.push(format!("{}: {e}", case.id())),
            Ok((out, records)) => {
                let verdict = launch.verify(&out, &records);
                if !verdict.valid {
                    failures.push(format!("{}: {}", case.id(), verdict.detail));
                }
                // every compute kernel (and the latency chase) writes block records, and every
                // block wrote its own, forwards
                assert_eq!(
                    launch.owed.is_some(),
                    matches!(
                        case.family,
                        Family::Peak | Family::Tensor | Family::Intensity | Family::Latency
                    ),
                    "{}",
                    case.id()
                );
                if launch.buffer(Role::Clocks).is_some() {
                    assert_eq!(records.len(), BLOCK_RECORD_WORDS * grid as usize);
                    assert!(
                        records
                            .chunks_exact(BLOCK_RECORD_WORDS)
                            .all(|r| r[1] >= r[0]
                                && r[3] >= r[2]
                                && r[..4].iter().any(|&w| w != 0)),
                        "{}: {records:?}",
                        case.id()
                    );
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // every family ran: 14 STREAM, 5 peak, 8 tensor (mma.sync: 7 precisions, and f64 at
    // Hopper's m16n8k16), 14 wgmma (the H200's: 7
    // precisions, A from shared memory and from registers), 60 sweep cases, 14 cache working
    // sets, the bandwidth sweep's step (one launch shape for all its steps), 7 latency ones
    // (`ca` at 16 KiB, `cg` in each model's L2 and DRAM), 26 of the size sweep (copy and triad,
    // 1 MiB to 4 GiB per array: up to the STREAM arrays of 1 ms of the largest model's DRAM
    // bandwidth) and the empty kernel over the devices modelled
    assert_eq!(
        seen.len(),
        14 + 5 + 8 + 14 + 60 + 14 + 1 + 7 + 26 + 1,
        "{seen:?}"
    );
    assert!(seen.contains("cache/l1/i32/16384") && seen.contains("cache/l2/i32/256"));
    assert!(seen.contains("cache/sweep"));
}

/// The interpreter run catches a wrong value where the layout is right: the peak map's `a`
/// and `b` exchanged, a reduction's partials one block short, a launch whose grid is not the
/// one its case was planned for.
#[test]
fn wrong_values_fail_under_the_interpreter() {
    let mut cache = BTreeMap::new();
    let f32_ = roofprobe::cases::Precision::F32;
    let (case, grid) = small(&peak::case(f32_, 1, 1, 1));
    let good = describe::launch(&case, grid).unwrap();
    let m = module(good.entry.module, &mut cache);
    let verify = |l: &Launch, m: &Module| {
        let (out, records) = run(l, m).unwrap();
        l.verify(&out, &records)
    };
    assert!(verify(&good, m).valid);
    let mut swapped = good.clone();
    let (a, b) = (swapped.params[5].arg, swapped.params[6].arg);
    swapped.params[5].arg = b;
    swapped.params[6].arg = a;
    assert!(!verify(&swapped, m).valid);

    let dot = describe::launch(&StreamKernel::Dot.case(f32_, 4099), 3).unwrap();
    let m = module(dot.entry.module, &mut cache);
    assert!(verify(&dot, m).valid);
    let mut short = dot.clone();
    short.buffers.iter_mut().for_each(|b| {
        if b.role == Role::Output {
            b.words -= 1;
        }
    });
    let err = run(&short, m).unwrap_err();
    assert!(
        err.contains("out of bounds") || err.contains("bounds"),
        "{err}"
    );

    let e =
        describe::launch(&peak::case(f32_, 1000, 1, peak::GPU_FMAS_PER_ITERATION), 4).unwrap_err();
    assert!(e.contains("planned for 1000 threads"), "{e}");
    assert!(describe::launch(&case, 0).is_err());
    assert!(describe::launch(&case, MAX_GRID + 1).is_err());
}

/// The launch's `iterations` argument set to `trips`, as a planner bug that passes a loop count
/// other than the one its row counts would.
fn with_trips(launch: &Launch, trips: u32) -> Launch {
    let mut l = launch.clone();
    let p = l
        .params
        .iter_mut()
        .find(|p| p.name == "iterations")
        .expect("a compute launch has a loop count");
    p.arg = Arg::U32(trips);
    l
}

/// A trip count other than the one the row counts is an invalid row, from the check the CUDA
/// backend runs (`Launch::verify`), in every peak and tensor kernel: even where the output
/// cannot show it (a tensor kernel's D is the same after any number of trips; the converged
/// f16x2/bf16x2 chains after a few thousand).
#[test]
fn a_trip_count_other_than_the_rows_is_invalid() {
    let mut cache = BTreeMap::new();
    let mut cases: Vec<Case> = peak::PRECISIONS
        .iter()
        .map(|&p| peak::case(p, 2 * BLOCK as u64, 3, peak::GPU_FMAS_PER_ITERATION))
        .collect();
    cases.extend(
        tensor::forms()
            .into_iter()
            .map(|m| tensor::case(m, 2 * BLOCK as u64 / 32, 3)),
    );
    // two wgmma kernels (A from shared memory, A from registers): the interpreter runs a whole
    // warpgroup's 64 x 256 product per instruction
    cases.push(wgmma::case(
        Precision::E5m2F32,
        wgmma::ASource::Shared,
        2 * BLOCK as u64 / 128,
        3,
    ));
    cases.push(wgmma::case(
        Precision::F16F16,
        wgmma::ASource::Registers,
        2 * BLOCK as u64 / 128,
        3,
    ));
    for case in cases {
        let good = describe::launch(&case, 2).unwrap();
        let m = module(good.entry.module, &mut cache);
        let (out, records) = run(&good, m).unwrap();
        assert!(good.verify(&out, &records).valid, "{}", case.id());
        for trips in [2, 4] {
            let planted = with_trips(&good, trips);
            let (out, records) = run(&planted, m).unwrap();
            let verdict = planted.verify(&out, &records);
            assert!(!verdict.valid, "{} ran {trips} trips", case.id());
            assert!(
                verdict
                    .detail
                    .contains(&format!("block 0: is {trips}, should be 3")),
                "{}: {}",
                case.id(),
                verdict.detail
            );
            if case.family == Family::Tensor {
                // the output alone passes: only the records show it
                assert!(planted.verify_output(&out).valid, "{}", case.id());
            }
        }
    }
}

/// The module `id` with `from` replaced by `to` in entry `entry` (which must contain it).
fn mutated(id: ModuleId, entry: &str, from: &str, to: &str) -> Module {
    let ptx = id.ptx();
    let body = entry_text(&ptx, entry);
    assert!(body.contains(from), "{entry} has no `{from}`");
    let start = ptx.find(body).unwrap();
    let text = format!(
        "{}{}{}",
        &ptx[..start],
        body.replacen(from, to, 1),
        &ptx[start + body.len()..]
    );
    Module::parse(&text).unwrap()
}

/// Mutated kernels that do other work than their row counts fail the backend's check: a peak or
/// tensor loop that exits one trip early, and a sweep whose main loop advances by one grid
/// instead of two, so it moves most vectors twice (its output is still right: only the records
/// show it).
#[test]
fn kernels_doing_other_work_than_the_row_are_invalid() {
    let short_loop = ("setp.ne.u32 %p1, %r1, 0;", "setp.gt.u32 %p1, %r1, 1;");
    for case in [
        peak::case(
            Precision::F16x2,
            2 * BLOCK as u64,
            3,
            peak::GPU_FMAS_PER_ITERATION,
        ),
        tensor::case(Precision::S8S32, 2 * BLOCK as u64 / 32, 3),
    ] {
        let launch = describe::launch(&case, 2).unwrap();
        let m = mutated(
            launch.entry.module,
            &launch.entry.name,
            short_loop.0,
            short_loop.1,
        );
        let (out, records) = run(&launch, &m).unwrap();
        assert!(records
            .chunks_exact(BLOCK_RECORD_WORDS)
            .all(|r| r[RECORD_WORK_WORD] == 2));
        let verdict = launch.verify(&out, &records);
        assert!(
            !verdict.valid && verdict.detail.contains("is 2, should be 3"),
            "{}: {}",
            case.id(),
            verdict.detail
        );
    }
    for p in intensity::PRECISIONS {
        let launch = describe::launch(&intensity::case(p, 2, 4099), 2).unwrap();
        assert_right_output_invalid_row(
            &launch,
            ("add.u64 %rd9, %rd9, %rd8;", "add.u64 %rd9, %rd9, %rd5;"),
            "words",
            &p.to_string(),
        );
    }
}

/// `launch`'s kernel with `from` replaced by `to` (once) still passes its output check, and its
/// row is invalid by the block records, the verdict naming `why`; `context` heads the messages.
fn assert_right_output_invalid_row(
    launch: &Launch,
    (from, to): (&str, &str),
    why: &str,
    context: &str,
) {
    let m = mutated(launch.entry.module, &launch.entry.name, from, to);
    let (out, records) = run(launch, &m).unwrap();
    assert!(
        launch.verify_output(&out).valid,
        "{context}: the output is right"
    );
    let verdict = launch.verify(&out, &records);
    assert!(
        !verdict.valid && verdict.detail.contains(why),
        "{context}: {}",
        verdict.detail
    );
}

/// A sweep whose FMA step loop (k above 64) runs one trip short: bf16x2's chains have converged
/// by then, so the output passes its check, and the row is invalid by thread 0's recorded steps.
#[test]
fn sweep_step_loop_one_trip_short_gives_an_invalid_row() {
    let k = 1024;
    let launch = describe::launch(&intensity::case(Precision::Bf16x2, k, 4099), 2).unwrap();
    assert_right_output_invalid_row(
        &launch,
        (
            &format!("add.u32 %r13, %r12, {k};"),
            &format!(
                "add.u32 %r13, %r12, {};",
                k - roofprobe::kernels::intensity::UNROLLED_STEPS
            ),
        ),
        "FMA steps per chain",
        &format!("bf16x2 k = {k}"),
    );
    // the kernel as it is gives a valid row
    let m = mutated(launch.entry.module, &launch.entry.name, "", "");
    let (out, records) = run(&launch, &m).unwrap();
    assert!(launch.verify(&out, &records).valid);
}

/// Planted mistakes in the `wgmma` kernels are caught under the interpreter: B's descriptor in
/// the 64-byte swizzle mode instead of 128, A's leading- and stride-byte offsets swapped, −B's
/// start address not moved (every pair then adds 2·A·B), a loop that exits one trip early, and a
/// final `wgmma.wait_group` left out (the accumulator stored while the MMA writing it is
/// pending).
#[test]
fn wgmma_planted_mistakes_are_caught() {
    let shared = wgmma::case(Precision::Bf16F32, wgmma::ASource::Shared, 4, 3);
    let registers = wgmma::case(Precision::S8S32, wgmma::ASource::Registers, 4, 3);
    let b_desc = (1u64 << 62) | (64u64 << 32) | (1 << 16);
    let b_desc_64 = (2u64 << 62) | (64u64 << 32) | (1 << 16);
    let a_desc = (8u64 << 16) | (16u64 << 32);
    // LBO and SBO swapped: 256 and 128 (every read still inside A's 2 KiB)
    let a_desc_swapped = (16u64 << 16) | (8u64 << 32);
    let mistakes: [(&Case, &str, String, String); 5] = [
        (
            &shared,
            "the 64-byte swizzle for B",
            format!("or.b64 %rd17, %rd17, {b_desc};"),
            format!("or.b64 %rd17, %rd17, {b_desc_64};"),
        ),
        (
            &shared,
            "A's LBO and SBO swapped",
            format!("or.b64 %rd16, %rd16, {a_desc};"),
            format!("or.b64 %rd16, %rd16, {a_desc_swapped};"),
        ),
        (
            &registers,
            "-B at B's address",
            "add.u64 %rd18, %rd17, 2;".into(),
            "add.u64 %rd18, %rd17, 0;".into(),
        ),
        (
            &registers,
            "one trip short",
            "setp.lt.u32 %p1, %r7, %r1;".into(),
            "add.u32 %r13, %r7, 1;\n    setp.lt.u32 %p1, %r13, %r1;".into(),
        ),
        (
            &shared,
            "no final wait_group",
            "wgmma.wait_group.sync.aligned 0;".into(),
            "".into(),
        ),
    ];
    let mut cache = BTreeMap::new();
    for case in [&shared, &registers] {
        let good = describe::launch(case, 2).unwrap();
        let (out, records) = run(&good, module(good.entry.module, &mut cache)).unwrap();
        let verdict = good.verify(&out, &records);
        assert!(verdict.valid, "{}: {}", case.id(), verdict.detail);
    }
    for (case, what, from, to) in mistakes {
        let launch = describe::launch(case, 2).unwrap();
        let m = mutated(launch.entry.module, &launch.entry.name, &from, &to);
        match run(&launch, &m) {
            // the interpreter refused to go on: the missing wait
            Err(e) => assert!(
                what == "no final wait_group" && e.contains("wait_group"),
                "{what}: {e}"
            ),
            Ok((out, records)) => {
                let verdict = launch.verify(&out, &records);
                assert!(!verdict.valid, "{what}: the planted mistake passed");
                eprintln!("{what}: {}", verdict.detail);
            }
        }
    }
}

/// The GPUs `scripts/device-check` may be lent: an H200, or an H100 (the kind a first call gets).
const LENT: &[&str] = &[
    "NVIDIA H200",
    "NVIDIA H100 80GB HBM3",
    "NVIDIA A100-SXM4-80GB",
    "NVIDIA GeForce RTX 3090",
];

/// The devices of [`LENT`], each of them in [`DEVICES`].
fn lent() -> impl Iterator<Item = &'static Device> {
    let found: Vec<&Device> = DEVICES.iter().filter(|d| LENT.contains(&d.name)).collect();
    assert_eq!(found.len(), LENT.len(), "every lent GPU is a test device");
    found.into_iter()
}

/// Host cores of the H200 and H100 machines `scripts/device-check` is written for: 16.
const GPU_MACHINE_CORES: usize = 16;

/// A device's rates as its estimate takes them on the machine that measures it (16 host cores,
/// which generate and check the arrays), not on the one the test runs on.
pub(crate) fn machine_rates(d: &Device) -> roofprobe::run::forecast::Rates {
    let mut rates = roofprobe::run::forecast::Rates::for_gpu(&info(d)).expect("a GPU has rates");
    rates.host_cores = GPU_MACHINE_CORES;
    rates
}

/// The plan's estimated duration before it starts (`roofprobe::run::forecast`): a default run
/// (the default suite, `roofprobe::cases::suite`) on an H200, an H100, an A100 or an RTX 3090
/// fits in three minutes by it, and every model's estimate, default and `--full`, is printed.
#[test]
fn a_default_run_on_a_gpu_fits_in_three_minutes_by_its_estimate() {
    use roofprobe::run::forecast::plan_secs;
    use roofprobe::run::runner::{choose, RunConfig};
    use roofprobe::units::human;
    /// The GPUs the three minutes are promised for (issue 56).
    const THREE_MINUTES: &[&str] = &[
        "NVIDIA H200",
        "NVIDIA H100 80GB HBM3",
        "NVIDIA A100-SXM4-80GB",
        "NVIDIA GeForce RTX 3090",
    ];
    assert!(THREE_MINUTES
        .iter()
        .all(|name| DEVICES.iter().any(|d| d.name == *name)));
    for d in DEVICES {
        let (all, _) = planned(d, 4);
        let rates = machine_rates(d);
        let full_cfg = RunConfig::full();
        let full = choose(all.clone(), &full_cfg, &rates);
        let full_secs = plan_secs(&full, &full_cfg, 0.01, &rates);
        let cfg = RunConfig::default_suite();
        let cases = choose(all, &cfg, &rates);
        // what a CUDA backend's samples last at least
        let secs = plan_secs(&cases, &cfg, 0.01, &rates);
        eprintln!(
            "{}: default {} cases, about {} ({secs:.1} s); --full {} cases, about {} \
             ({full_secs:.1} s); DRAM {:.0} GB/s",
            d.name,
            cases.len(),
            human(secs),
            full.len(),
            human(full_secs),
            rates.dram_bytes_per_sec / 1e9
        );
        assert!(secs > 10.0, "{}: {secs} s is no estimate", d.name);
        assert!(full_secs > secs, "{}", d.name);
        // every case once: a case planned twice costs its time twice and gives two rows of one id
        let mut ids: Vec<String> = full.iter().map(|p| p.case.id()).collect();
        ids.sort();
        let before = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), before, "{}: a case id planned twice", d.name);
        // where the time goes, by family, the longest first
        let mut by_family: BTreeMap<String, (usize, f64)> = BTreeMap::new();
        for p in &cases {
            let e = by_family.entry(format!("{:?}", p.case.family)).or_default();
            e.0 += 1;
            e.1 += roofprobe::run::forecast::case_secs(&p.case, &cfg, 0.01, &rates);
        }
        let mut by_family: Vec<_> = by_family.into_iter().collect();
        by_family.sort_by(|a, b| b.1 .1.total_cmp(&a.1 .1));
        for (family, (n, s)) in &by_family {
            eprintln!("  {family}: {n} cases, {s:.1} s");
        }
        if THREE_MINUTES.contains(&d.name) {
            assert!(
                secs <= 180.0,
                "{}: about {} ({secs:.1} s)",
                d.name,
                human(secs)
            );
        }
        if d.name == "NVIDIA H200" {
            // docs/method.md ("The plan and its estimate") quotes this line of `run` for a
            // default H200 run
            let line = format!(
                "plan: {} cases (the default suite), about {} by the device's rated speeds",
                cases.len(),
                human(secs)
            );
            assert!(
                include_str!("../docs/method.md").contains(&line),
                "docs/method.md should quote `{line}` for a default run on an H200"
            );
        }
    }
}

/// Each `run` step of scripts/device-check (the first look at a lent H200, H100, A100 or RTX
/// 3090) fits half its time limit by the plan's estimate (the line the check prints before the
/// step), with the other half left for what the estimate leaves out (starting the
/// process, opening the device and JIT-compiling its modules, loading cuBLAS), and every filter
/// it passes keeps a case an H200 plans: a step cut off by its limit, or a filter that matches
/// nothing, would cost the rows it was there for (the GEMM step: issue 15's ratios to cuBLAS).
#[test]
fn each_device_check_run_fits_its_step_on_a_lent_gpu_by_its_estimate() {
    for d in lent() {
        device_check_runs_fit(d);
    }
}

fn device_check_runs_fit(d: &Device) {
    use roofprobe::run::forecast::plan_secs;
    use roofprobe::run::runner::RunConfig;
    use roofprobe::units::human;
    let (cases, _) = planned(d, 4);
    let rates = machine_rates(d);
    let runs = crate::scripts::device_check_runs();
    assert!(runs.len() >= 4, "{runs:?}");
    for (step, limit, args) in runs {
        assert!(args.iter().any(|a| a == "--quick"), "{step}: {args:?}");
        let filters: Vec<String> = args
            .windows(2)
            .filter(|w| w[0] == "--filter")
            .map(|w| w[1].clone())
            .collect();
        assert!(!filters.is_empty(), "{step}: no --filter: {args:?}");
        // the cases the step runs: its filters pick from every case, as `run` chooses them
        let selection = roofprobe::cases::suite::Selection::chosen(
            args.iter().any(|a| a == "--full"),
            &[],
            true,
        );
        let cfg = RunConfig {
            filter: filters.clone(),
            selection,
            ..RunConfig::quick()
        };
        let kept = roofprobe::run::runner::choose(cases.clone(), &cfg, &rates);
        // (the check is written for a lent H100 or H200: its Hopper kernels' filters keep
        // nothing on an earlier GPU, whose estimate is still held to half the limit)
        for f in filters.iter().filter(|_| d.cc.0 >= 9) {
            let alone = RunConfig {
                filter: vec![f.clone()],
                ..RunConfig::quick()
            };
            assert!(
                kept.iter().any(|p| alone.keeps(&p.case)),
                "{step}: --filter {f} keeps no case the {} plans",
                d.name
            );
        }
        let secs = plan_secs(&kept, &cfg, 0.01, &rates);
        eprintln!(
            "{}: {step}: {} cases, about {} ({secs:.1} s) of its {limit} s",
            d.name,
            kept.len(),
            human(secs)
        );
        assert!(
            secs <= DEVICE_CHECK_SHARE * f64::from(limit),
            "{}: {step}: about {secs:.1} s by the estimate, over {:.0} % of its {limit} s limit",
            d.name,
            DEVICE_CHECK_SHARE * 100.0
        );
    }
}

/// The device check's `gpu-tests` step fits its limit on a lent GPU by the estimate the check
/// itself prints: its first test (`gpu::planned_cases_fit_and_validate_at_a_small_size`) runs
/// the GPU's plan at 4 MiB arrays (a 64th of free memory, at most 4 MiB) capped as
/// `gpu::small_plan` caps it, whose quick run's estimate (which times more launches than the
/// test's two) and the script's allowance for the other tests (`other_gpu_tests_secs`) take at
/// most half the step's limit.
#[test]
fn the_gpu_tests_step_fits_its_limit_on_a_lent_gpu_by_the_estimate() {
    for d in lent() {
        gpu_tests_step_fits(d);
    }
}

fn gpu_tests_step_fits(d: &Device) {
    use roofprobe::run::forecast::plan_secs;
    use roofprobe::run::runner::RunConfig;
    use roofprobe::units::human;
    let small = crate::gpu::small_array_bytes_for(d.free);
    let (all, _) = planned_at(d, 4, SizeRequest::BytesPerArray(small));
    let cases = crate::gpu::small_plan(all.clone(), small);
    assert!(cases.len() > 100, "{} cases", cases.len());
    // every kernel of the plan is still there, at some size
    let kernels = |plan: &[PlannedCase]| -> BTreeSet<(String, String)> {
        plan.iter()
            .map(|p| (format!("{:?}", p.case.family), p.case.kernel.clone()))
            .collect()
    };
    assert_eq!(kernels(&cases), kernels(&all), "{}", d.name);
    let rates = machine_rates(d);
    let secs = plan_secs(&cases, &RunConfig::quick(), 0.01, &rates)
        + crate::scripts::other_gpu_tests_secs();
    let limit = crate::scripts::device_check_steps()
        .into_iter()
        .find(|(name, _)| name == "gpu-tests")
        .map(|(_, limit)| limit)
        .expect("a gpu-tests step");
    eprintln!(
        "{}: gpu-tests: {} cases at {small} bytes per array, about {} ({secs:.1} s) as a quick run \
         with the other tests' allowance, of its {limit} s",
        d.name,
        cases.len(),
        human(secs)
    );
    assert!(
        secs <= DEVICE_CHECK_SHARE * f64::from(limit),
        "{}: {secs:.1} s by the estimate, over half of the gpu-tests step's {limit} s",
        d.name
    );
}

/// Issue 57, item 3: every STREAM case a lent GPU plans sits on the plateau of the size sweep's
/// curve, within 1 % of the bandwidth its launches approach as they grow. The curve is the
/// sweep's own fit (`stats::fit::two_stage`, `t = a + bytes/BW`) of the points the plan's model gives
/// its sizes: the spec sheet's bandwidth, and the fixed cost of a launch
/// (`plan::DRAM_LAUNCH_FIXED_SECS`, the gap between launches and the grid's ramp and tail). The
/// DRAM rule alone (4 × the L2, at least 256 MiB), which sized the arrays before, puts the one-
/// array kernels (read, write) of an H200, an H100 and an A100 below it.
#[test]
fn the_stream_arrays_sit_on_the_size_sweeps_plateau_on_a_lent_gpu() {
    use roofprobe::backend::dram_rule_bytes;
    /// How far below the asymptote a size on the plateau may run.
    const PLATEAU_SHORTFALL: f64 = 0.01;
    for d in lent() {
        let info = info(d);
        let bw = plan::spec_dram_bytes_per_sec(&info).expect("a spec sheet entry");
        let modelled = |bytes: f64| plan::DRAM_LAUNCH_FIXED_SECS + bytes / bw;
        let (cases, _) = planned(d, 4);
        let sweep: Vec<&Case> = cases
            .iter()
            .map(|p| &p.case)
            .filter(|c| c.family == Family::Efficiency && c.kernel == "copy")
            .collect();
        let points: Vec<(f64, f64)> = sweep
            .iter()
            .map(|c| {
                let bytes = c.work.bytes() as f64;
                (bytes, modelled(bytes))
            })
            .collect();
        let fit = roofprobe::stats::fit::two_stage(&points).expect("a fit");
        let efficiency = |bytes: u64| {
            let bytes = bytes as f64;
            bytes / fit.bytes_per_sec / fit.secs(bytes)
        };
        let stream: Vec<&Case> = cases
            .iter()
            .map(|p| &p.case)
            .filter(|c| c.family == Family::Stream)
            .collect();
        assert_eq!(stream.len(), 14, "{}", d.name);
        let array_bytes = stream[0].working_set_bytes
            / StreamKernel::from_name(&stream[0].kernel).unwrap().arrays();
        let mut lowest = f64::MAX;
        for c in &stream {
            let e = efficiency(c.work.bytes());
            lowest = lowest.min(e);
            assert!(
                e >= 1.0 - PLATEAU_SHORTFALL,
                "{}: {} moves {} bytes in {:.3} ms by the sweep's fit: {:.2} % of its \
                 asymptote",
                d.name,
                c.id(),
                c.work.bytes(),
                fit.secs(c.work.bytes() as f64) * 1e3,
                e * 100.0
            );
        }
        // the sweep reaches the STREAM arrays' size (its largest power of two at or below it)
        let largest = sweep.last().unwrap().working_set_bytes / 2;
        assert!(
            largest <= array_bytes && 2 * largest > array_bytes,
            "{}",
            d.name
        );
        // before: the DRAM rule alone left a one-array launch short of the plateau on HBM
        let before = dram_rule_bytes(d.l2);
        let before_efficiency = efficiency(before);
        eprintln!(
            "{}: {} MiB per array, every STREAM launch at least {:.2} % of the sweep's asymptote \
             ({:.2} GB/s of the sheet's {:.0}); the DRAM rule's {} MiB gave a one-array launch \
             {:.2} %",
            d.name,
            array_bytes >> 20,
            lowest * 100.0,
            fit.bytes_per_sec / 1e9,
            bw / 1e9,
            before >> 20,
            before_efficiency * 100.0
        );
        if bw > 2e12 {
            assert!(before_efficiency < 1.0 - PLATEAU_SHORTFALL, "{}", d.name);
        }
    }
}

/// Issue 57, item 3: the intensity sweep's arrays on a lent GPU are the STREAM cases' own
/// (`plan::dram_array_bytes`), so its k = 0 point, a copy of one array into the other, moves at
/// least `plan::DRAM_LAUNCH_SECS` (1 ms) of the spec sheet's bandwidth per array, and is filled
/// and checked on the device. The DRAM rule alone (4 × the L2, at least 256 MiB), which sized
/// them before, made an H200's and an H100's a launch of about 0.2 ms.
#[test]
fn the_sweeps_arrays_hold_a_millisecond_of_dram_on_a_lent_gpu() {
    use roofprobe::backend::dram_rule_bytes;
    for d in lent() {
        let info = info(d);
        let bw = plan::spec_dram_bytes_per_sec(&info).expect("a spec sheet entry");
        let (cases, _) = planned(d, 4);
        let stream_array = cases
            .iter()
            .find(|p| p.case.family == Family::Stream && p.case.kernel == "copy")
            .map(|p| p.case.working_set_bytes / 2)
            .expect("a STREAM copy");
        let sweep: Vec<&Case> = cases
            .iter()
            .map(|p| &p.case)
            .filter(|c| c.family == Family::Intensity)
            .collect();
        assert_eq!(sweep.len(), 60, "{}", d.name);
        for c in &sweep {
            let array = c.working_set_bytes / 2;
            assert_eq!(array, stream_array, "{}: {}", d.name, c.id());
            assert!(
                array as f64 / bw >= plan::DRAM_LAUNCH_SECS,
                "{}: {} has {array} bytes per array",
                d.name,
                c.id()
            );
            assert!(
                describe::prepared_on_device(c, describe::DEVICE_PREP_FROM_BYTES),
                "{}: {}",
                d.name,
                c.id()
            );
        }
        let k0 = sweep.iter().find(|c| c.count() == Some(0)).unwrap();
        let before = 2 * dram_rule_bytes(d.l2);
        eprintln!(
            "{}: the sweep's {} MiB per array; its k = 0 point {:.2} ms at the sheet's {:.0} GB/s \
             (the DRAM rule's: {:.2} ms)",
            d.name,
            stream_array >> 20,
            k0.work.bytes() as f64 / bw * 1e3,
            bw / 1e9,
            before as f64 / bw * 1e3
        );
        assert!(
            k0.work.bytes() as f64 / bw >= plan::DRAM_LAUNCH_SECS,
            "{}",
            d.name
        );
    }
}

/// The share of a device-check step's time limit its estimate may take (issue 57: half, the
/// other half for what the estimate leaves out).
const DEVICE_CHECK_SHARE: f64 = 0.5;

/// The latency chase's check: the state must stand where the hops it took end, after whole
/// launches, at the start of a line; the block record must count the hops the row counts.
#[test]
fn a_chase_that_ends_elsewhere_is_invalid() {
    let case = latency::case("cg", latency::GPU_LINE_BYTES, 4 << 10, 10);
    let launch = describe::launch(&case, 132).unwrap();
    assert_eq!((launch.grid, launch.block), (1, 1));
    let order = latency::order(32);
    let at = |hops: u64| u64::from(order[(hops % 32) as usize]) * latency::GPU_LINE_BYTES;
    let record = |hops: u64| vec![1, 2, 3, 4, hops, 0];
    assert!(launch.verify(&[at(30), 30], &record(10)).valid);
    for (state, why) in [
        ([at(31), 30], "one hop further"),
        ([at(30) + 4, 30], "not a line's start"),
        ([at(25), 25], "not whole launches"),
        ([0, 0], "never ran"),
    ] {
        let v = launch.verify(&state, &record(10));
        assert!(!v.valid, "{why}: {state:?}");
    }
    let v = launch.verify(&[at(30), 30], &record(9));
    assert!(!v.valid && v.detail.contains("hops"), "{}", v.detail);
}

/// Runs a GEMM case's launch under the interpreter and checks C with the backend's own check.
fn gemm_verdict(case: &Case, m: &Module) -> Result<roofprobe::cases::Verdict, String> {
    let launch = describe::launch(case, 1)?;
    let (out, records) = run(&launch, m)?;
    assert!(records.is_empty(), "a GEMM launch has no block records");
    Ok(launch.verify(&out, &records))
}

/// Why a GEMM case's launch is not the exact product under the interpreter (its id first), or
/// `None` when it is.
fn gemm_failure(case: &Case, m: &Module) -> Option<String> {
    match gemm_verdict(case, m) {
        Ok(v) if v.valid => None,
        Ok(v) => Some(format!("{}: {}", case.id(), v.detail)),
        Err(e) => Some(format!("{}: {e}", case.id())),
    }
}

/// Each planted mistake (what it is; the text of `case`'s entry replaced, and by what) makes
/// the launch fail under the interpreter or its check; prints how it was caught. Where
/// `refusals` names words, a refusal by the interpreter (rather than an invalid row) must name
/// one of them, so a mutant that broke the module some other way is not counted as caught.
fn assert_gemm_mutants_caught<S: AsRef<str>>(
    case: &Case,
    mutants: &[(&str, S, S)],
    refusals: Option<&[&str]>,
) {
    let launch = describe::launch(case, 1).unwrap();
    let id = case.id();
    for (what, from, to) in mutants {
        let m = mutated(
            launch.entry.module,
            &launch.entry.name,
            from.as_ref(),
            to.as_ref(),
        );
        match gemm_verdict(case, &m) {
            Ok(v) => {
                assert!(!v.valid, "{id}: {what}: the planted mistake passed");
                eprintln!("{id}: {what}: {}", v.detail);
            }
            Err(e) => {
                if let Some(words) = refusals {
                    assert!(
                        words.iter().any(|w| e.contains(w)),
                        "{id}: {what}: refused for another reason: {e}"
                    );
                }
                eprintln!("{id}: {what}: {e}");
            }
        }
    }
}

/// The PTX GEMM kernels (the tensor-core expansions and the f32 SIMT kernel) compute the exact
/// product at edge shapes (M, N and K of 1, 17 and 129, and shapes that are not multiples of
/// the 128 × 128 × 32 tile, the SIMT kernel's K tile of 8 or the 16-byte rows), launched
/// exactly as described: 64 KiB of dynamic shared memory (none for the SIMT kernel, whose
/// shared memory is static), 256 threads, one block per tile, A and B padded to rows of a
/// multiple of 8 elements.
#[test]
fn gemm_kernels_match_the_exact_product_at_edge_shapes() {
    use roofprobe::cases::gemm::{self, Shape};
    let mut cache = BTreeMap::new();
    let mut shapes = gemm::edge_shapes();
    shapes.extend([Shape::new(130, 257, 100), Shape::new(256, 128, 64)]);
    let mut failures = Vec::new();
    for p in gemm::GPU_PRECISIONS {
        for &shape in &shapes {
            let case = gemm::case(gemm::GPU_OURS, p, shape);
            let launch = describe::launch(&case, 1).unwrap();
            assert_eq!(
                (
                    launch.block,
                    launch.dynamic_shared_bytes,
                    launch.grid as u64
                ),
                (
                    256,
                    gemm::gpu_dynamic_shared_bytes(p),
                    gemm::gpu_blocks(shape)
                )
            );
            let m = module(launch.entry.module, &mut cache);
            failures.extend(gemm_failure(&case, m));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Hopper's GEMM (`gemm_wgmma_*`) as the backend launches it (128 × 256 tiles, 256 threads,
/// 192 KiB of dynamic shared memory) computes the exact product at edge shapes, and planted
/// mistakes are caught: A's descriptor in the 64-byte swizzle, the wgmma.wait_group that frees
/// a stage left out (the next copies write a stage a pending wgmma reads), the
/// `fence.proxy.async` left out (the tensor cores read the copies without it), and the copies
/// waited for one tile short (`cp.async.wait_group 2`: a tile read before it landed).
#[test]
fn wgmma_gemm_matches_the_exact_product_and_planted_mistakes_are_caught() {
    use roofprobe::cases::gemm::{self, Shape};
    let mut cache = BTreeMap::new();
    let mut failures = Vec::new();
    for p in gemm::WGMMA_PRECISIONS {
        for shape in [
            Shape::new(1, 1, 1),
            Shape::new(129, 17, 129),
            Shape::new(17, 257, 64),
            Shape::new(200, 300, 257),
        ] {
            let case = gemm::case(gemm::GPU_WGMMA, p, shape);
            let launch = describe::launch(&case, 1).unwrap();
            assert_eq!(
                (
                    launch.block,
                    launch.dynamic_shared_bytes,
                    launch.grid as u64
                ),
                (256, 196608 + 1024, gemm::wgmma_blocks(shape))
            );
            let m = module(launch.entry.module, &mut cache);
            failures.extend(gemm_failure(&case, m));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let case = gemm::case(
        gemm::GPU_WGMMA,
        Precision::Bf16F32,
        Shape::new(129, 257, 320),
    );
    let desc = (1u64 << 62) | (64u64 << 32) | (1 << 16);
    let desc_64 = (2u64 << 62) | (64u64 << 32) | (1 << 16);
    let mutants = [
        (
            "A in the 64-byte swizzle",
            format!("or.b64 %rd16, %rd16, {desc};"),
            format!("or.b64 %rd16, %rd16, {desc_64};"),
        ),
        (
            "no wgmma.wait_group in the loop",
            "wgmma.wait_group.sync.aligned 1;".to_string(),
            String::new(),
        ),
        (
            "no fence.proxy.async",
            "fence.proxy.async.shared::cta;".to_string(),
            String::new(),
        ),
        (
            "copies waited for one tile short",
            "cp.async.wait_group 1;".to_string(),
            "cp.async.wait_group 2;".to_string(),
        ),
    ];
    assert_gemm_mutants_caught(&case, &mutants, None);
}

/// Hopper's TMA-fed GEMM (`gemm_tma_*`: bf16, f16, e4m3) as the backend launches it (128 × 256 tiles, 384
/// threads: a producer warpgroup and two consumers, 4 stages and their barriers in 196672 bytes (and 1 KiB of slack)
/// of dynamic shared memory, A and B passed as tensor maps over the arrays the backend fills)
/// computes the exact product at edge shapes and past the 4 stages, and planted mistakes are
/// caught: the consumers not waiting on a stage's full barrier (they read a tile before it
/// landed), the producer expecting a tile's bytes short (the barrier completes with a copy
/// still writing), B's descriptor in the 64-byte swizzle, the `wgmma.wait_group 1` before a
/// stage's release left out (the producer's next copy overwrites what a pending wgmma reads),
/// the last `wgmma.wait_group 0` left out (C stored from pending accumulators), and the tensor
/// map of B encoded without its swizzle (the tiles land unswizzled).
#[test]
fn tma_gemm_matches_the_exact_product_and_planted_mistakes_are_caught() {
    use roofprobe::cases::gemm::{self, Shape};
    let mut cache = BTreeMap::new();
    let mut failures = Vec::new();
    for (p, cluster) in gemm::TMA_PRECISIONS
        .into_iter()
        .flat_map(|p| [(p, false), (p, true)])
    {
        for shape in [
            Shape::new(1, 1, 1),
            Shape::new(129, 17, 129),
            Shape::new(17, 257, 64),
            Shape::new(130, 3, 520),
            Shape::new(257, 17, 64),
        ] {
            let kernel = if cluster {
                gemm::GPU_TMA_CLUSTER
            } else {
                gemm::GPU_TMA
            };
            let case = gemm::case(kernel, p, shape);
            let launch = describe::launch(&case, 1).unwrap();
            // whole clusters of two on adjacent row tiles: 3 row tiles take 2 clusters
            let row_tiles = shape.m.div_ceil(128);
            let grid = if cluster {
                row_tiles.div_ceil(2) * 2
            } else {
                row_tiles
            } * shape.n.div_ceil(256);
            assert_eq!(
                (
                    launch.block,
                    launch.dynamic_shared_bytes,
                    launch.grid as u64
                ),
                (384, 196672 + 1024, grid)
            );
            let maps: Vec<args::TensorMap> = launch
                .params
                .iter()
                .filter_map(|p| match p.arg {
                    Arg::TensorMap(map) => Some(map),
                    _ => None,
                })
                .collect();
            let ld = gemm::gpu_leading_dimension(p, shape.k);
            let (bytes, kt) = (gemm::input_bytes(p), gemm::tma_tile_k(p) as u32);
            assert_eq!(
                maps.iter()
                    .map(|m| (m.role, m.dims, m.row_bytes, m.box_dims, m.swizzle_bytes))
                    .collect::<Vec<_>>(),
                [
                    (
                        Role::Input(0),
                        [shape.k, shape.m],
                        bytes * ld,
                        [kt, 128],
                        128
                    ),
                    (
                        Role::Input(1),
                        [shape.k, shape.n],
                        bytes * ld,
                        [kt, if cluster { 128 } else { 256 }],
                        128
                    ),
                ]
            );
            let m = module(launch.entry.module, &mut cache);
            failures.extend(gemm_failure(&case, m));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let case = gemm::case(gemm::GPU_TMA, Precision::Bf16F32, Shape::new(129, 257, 320));
    let desc = (1u64 << 62) | (64u64 << 32) | (1 << 16);
    let desc_64 = (2u64 << 62) | (64u64 << 32) | (1 << 16);
    let mutants = [
        (
            "the consumers not waiting on the full barrier",
            "mbarrier.try_wait.parity.shared::cta.b64 %p4, [%r33], %r31;".to_string(),
            "setp.eq.u32 %p4, %r31, %r31;".to_string(),
        ),
        (
            "a tile's bytes expected short",
            "expect_tx.shared::cta.b64 _, [%r33], 49152;".to_string(),
            "expect_tx.shared::cta.b64 _, [%r33], 32768;".to_string(),
        ),
        (
            "B in the 64-byte swizzle",
            format!("or.b64 %rd17, %rd17, {desc};"),
            format!("or.b64 %rd17, %rd17, {desc_64};"),
        ),
        (
            "no wgmma.wait_group before the release",
            "wgmma.wait_group.sync.aligned 1;".to_string(),
            String::new(),
        ),
        (
            "no wgmma.wait_group before the stores",
            "wgmma.wait_group.sync.aligned 0;".to_string(),
            String::new(),
        ),
    ];
    assert_gemm_mutants_caught(&case, &mutants, None);
    // the cluster kernel's own mistakes
    let clustered = gemm::case(
        gemm::GPU_TMA_CLUSTER,
        Precision::Bf16F32,
        Shape::new(129, 257, 320),
    );
    let cluster_mutants = [
        (
            "a CTA barrier instead of the cluster's after the barriers' init",
            "barrier.cluster.arrive.release.aligned;\n    barrier.cluster.wait.acquire.aligned;"
                .to_string(),
            "bar.sync 0;".to_string(),
        ),
        (
            "the stage not released in the other CTA",
            "@%p9 mbarrier.arrive.shared::cluster.b64 _, [%r42];".to_string(),
            String::new(),
        ),
        (
            "B's half multicast to this CTA only",
            "mov.b16 %rs1, 3;".to_string(),
            "mov.b16 %rs1, 1;".to_string(),
        ),
        (
            "both CTAs loading the same half of B",
            "shl.b32 %r45, %r43, 7;".to_string(),
            "mov.u32 %r45, 0;".to_string(),
        ),
        (
            "both halves of B landing in one place",
            "shl.b32 %r44, %r43, 14;".to_string(),
            "mov.u32 %r44, 0;".to_string(),
        ),
        (
            "no cluster barrier before exit",
            "barrier.cluster.arrive.release;\n    barrier.cluster.wait.acquire;".to_string(),
            String::new(),
        ),
    ];
    assert_gemm_mutants_caught(&clustered, &cluster_mutants, None);
    // B's tensor map without the swizzle its descriptors read
    let launch = describe::launch(&case, 1).unwrap();
    let mut unswizzled = launch.clone();
    for p in &mut unswizzled.params {
        if let Arg::TensorMap(map) = &mut p.arg {
            if map.role == Role::Input(1) {
                map.swizzle_bytes = 0;
            }
        }
    }
    let m = module(launch.entry.module, &mut cache);
    match run(&unswizzled, m) {
        Ok((out, records)) => {
            let v = unswizzled.verify(&out, &records);
            assert!(!v.valid, "B unswizzled: the planted mistake passed");
            eprintln!("B's map unswizzled: {}", v.detail);
        }
        Err(e) => eprintln!("B's map unswizzled: {e}"),
    }
}

/// Hopper's GEMMs (wgmma, TMA, TMA in clusters of two) run right where the dynamic shared
/// memory starts 16-byte aligned but not 1024-byte aligned, as real toolchains may place it
/// (their `.extern .shared .align 1024` is not promised: NVIDIA/cccl#5122): each kernel rounds
/// its base up into the launch's 1 KiB of slack. Planted: the rounding left out (the kernel
/// assumes the declared alignment, as it did before) fails there, and so does a launch without
/// the slack, whose kernel traps rather than write past its shared memory.
#[test]
fn hopper_gemms_round_a_misaligned_dynamic_shared_base_up() {
    use ptxsim::DynamicSharedBase::Misaligned;
    use roofprobe::cases::gemm::{self, Shape};
    let shape = Shape::new(130, 257, 320);
    for (kernel, p) in [
        (gemm::GPU_WGMMA, Precision::Bf16F32),
        (gemm::GPU_TMA, Precision::F16F32),
        (gemm::GPU_TMA_CLUSTER, Precision::Bf16F32),
    ] {
        let case = gemm::case(kernel, p, shape);
        let launch = describe::launch(&case, 1).unwrap();
        let entry = &launch.entry.name;
        let ptx = launch.entry.module.ptx();
        let misaligned = Module::parse_with(&ptx, Misaligned).unwrap();
        let verdict = |launch: &Launch, m: &Module| -> Result<bool, String> {
            let (out, records) = run(launch, m)?;
            Ok(launch.verify(&out, &records).valid)
        };
        assert_eq!(verdict(&launch, &misaligned), Ok(true), "{}", case.id());
        // the rounding left out: the base stays where the toolchain put it
        let body = entry_text(&ptx, entry);
        let unrounded = body.replacen("and.b32 %r17, %r17, 0xFFFFFC00;", "mov.u32 %r17, %r16;", 1);
        assert_ne!(
            unrounded, body,
            "{entry} rounds its base with that instruction"
        );
        let old = Module::parse_with(&ptx.replacen(body, &unrounded, 1), Misaligned).unwrap();
        let caught = verdict(&launch, &old);
        assert_ne!(caught, Ok(true), "{}: the unrounded base passed", case.id());
        eprintln!("{}: the base unrounded: {caught:?}", case.id());
        // as declared, the unrounded kernel was right: the planted assumption is what fails
        let declared = Module::parse(&ptx.replacen(body, &unrounded, 1)).unwrap();
        assert_eq!(verdict(&launch, &declared), Ok(true), "{}", case.id());
        // a launch without the slack traps
        let mut short = launch.clone();
        short.dynamic_shared_bytes -= gemm::HOPPER_SHARED_SLACK;
        let trapped = verdict(&short, &misaligned);
        assert!(
            trapped.as_ref().is_err_and(|e| e.contains("trap")),
            "{}: {trapped:?}",
            case.id()
        );
    }
}

/// Planted mistakes in the GEMM kernels are caught under the interpreter, in the bf16 and the
/// tf32 expansion: B's fragments loaded with `.trans` (the wrong layout), two A fragment
/// registers swapped in one mma (a wrong fragment index), and the pipeline's
/// `cp.async.wait_group` left out (the fragments are read before their tile has landed).
#[test]
fn gemm_planted_mistakes_are_caught() {
    use roofprobe::cases::gemm::{self, Shape};
    for p in [Precision::Bf16F32, Precision::Tf32F32] {
        let case = gemm::case(gemm::GPU_OURS, p, Shape::new(33, 40, 70));
        let launch = describe::launch(&case, 1).unwrap();
        let mut cache = BTreeMap::new();
        let good = module(launch.entry.module, &mut cache);
        assert!(gemm_verdict(&case, good).unwrap().valid, "{p}");
        let mutants = [
            (
                "a wrong .trans",
                "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%fb0",
                "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%fb0",
            ),
            (
                "a wrong fragment index",
                "{%acc0, %acc1, %acc2, %acc3}, {%fa0, %fa1, %fa2, %fa3}",
                "{%acc0, %acc1, %acc2, %acc3}, {%fa0, %fa2, %fa1, %fa3}",
            ),
            (
                "a missing cp.async.wait_group",
                "cp.async.wait_group 2;",
                "",
            ),
        ];
        // (a read of a tile before it landed is a shared-memory race between the warp whose copy
        // it was and the reader, which the interpreter names)
        assert_gemm_mutants_caught(&case, &mutants, Some(&["race", "poison"]));
    }
}

/// Planted mistakes in the f32 SIMT GEMM are caught under the interpreter: a K loop one tile
/// short (K rounded down to the 8-element tile), a transposing store to shared memory one K
/// row off, a wrong operand in one FFMA (A's row 1 for row 0), and the barrier after a stage's
/// stores left out (a thread reads a stage another thread is still writing).
#[test]
fn simt_gemm_planted_mistakes_are_caught() {
    use roofprobe::cases::gemm::{self, Shape};
    let p = gemm::SIMT_PRECISION;
    let case = gemm::case(gemm::GPU_OURS, p, Shape::new(33, 40, 70));
    let launch = describe::launch(&case, 1).unwrap();
    assert_eq!(launch.entry.module, ModuleId::GemmSimt);
    let mut cache = BTreeMap::new();
    let good = module(launch.entry.module, &mut cache);
    assert!(gemm_verdict(&case, good).unwrap().valid, "{p}");
    let mutants = [
        (
            "a K loop one tile short",
            "add.u32 %r12, %r3, 7;",
            "add.u32 %r12, %r3, 0;",
        ),
        (
            "a transposing store one K row off",
            "st.shared.f32 [%r26+528], %x1;",
            "st.shared.f32 [%r26+1056], %x1;",
        ),
        (
            "a wrong FFMA operand",
            "fma.rn.f32 %c1, %a0, %b1, %c1;",
            "fma.rn.f32 %c1, %a1, %b1, %c1;",
        ),
        (
            "a missing barrier",
            "bar.sync 0;\n    bra.uni tile_loop;",
            "bra.uni tile_loop;",
        ),
    ];
    // (a stage read while another thread writes it is a shared-memory race, which the
    // interpreter names)
    assert_gemm_mutants_caught(&case, &mutants, Some(&["race", "poison"]));
}

/// The empty kernel under the interpreter, launched as the backend launches it, several times
/// on one count: the count is the launches (`args::check_count` agrees), a grid of many
/// threads still adds one per launch, and a kernel without its add (a planted mutation) leaves
/// a count the check refuses.
#[test]
fn the_empty_kernel_counts_every_launch_under_the_interpreter() {
    let case = launch_rows::case(launch_rows::What::Empty);
    let described = describe::launch(&case, 132).unwrap();
    assert_eq!((described.grid, described.block), (1, 1));
    let launches = |ptx: &str, grid: u32, block: u32, n: u32| -> u64 {
        let m = Module::parse(ptx).unwrap();
        let mut mem = Memory::new();
        let count = mem.alloc(4);
        mem.write(count, &[0u32]).unwrap();
        for _ in 0..n {
            m.launch(
                &described.entry.name,
                (grid, 1, 1),
                (block, 1, 1),
                0,
                &[SimArg::Ptr(count)],
                &mut mem,
            )
            .unwrap();
        }
        u64::from(mem.read::<u32>(count, 1).unwrap()[0])
    };
    let ptx = described.entry.module.ptx();
    let counted = launches(&ptx, 1, 1, 5);
    assert!(launch_rows::check_count(counted, 5).valid, "{counted}");
    assert!(!launch_rows::check_count(counted, 6).valid);
    let out = [counted];
    assert!(described.verify(&out, &[]).valid);
    assert!(
        !described.verify(&[0], &[]).valid,
        "a count of 0 ran nothing"
    );
    // any other thread returns: a grid of 2 x 64 threads still adds one per launch
    assert_eq!(launches(&ptx, 2, 64, 3), 3);
    // the add removed: nothing is counted, and the row would be invalid
    let mutated = ptx.replace("red.global.add.u32 [%rd2], 1;", "");
    assert_ne!(mutated, ptx);
    let counted = launches(&mutated, 1, 1, 5);
    assert!(!launch_rows::check_count(counted, 5).valid, "{counted}");
}
