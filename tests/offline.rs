//! Offline PTX checks (testing layer 3), with no GPU:
//!
//! - every module of `roofprobe::kernels::all()` (template expansions included) assembles with
//!   ptxas for every architecture its `.target` allows (sm_80, sm_86, sm_89, sm_90) with 0 bytes
//!   of spill and 0 bytes of stack, per entry;
//! - the STREAM kernels' SASS has 128-bit global loads and stores (`LDG.E.128`, `STG.E.128`);
//! - the cache kernels load 128 bits at a time, the L1 one with plain caching loads and the L2
//!   one with loads that skip L1 (`.cg`: `LDG.E.128.STRONG.GPU`);
//! - the timed loop of every peak and tensor kernel is at least 90 % the instruction it
//!   measures (FFMA, DFMA, HFMA2, IMAD, HMMA/IMMA/DMMA/QMMA);
//! - the sweep's expansions keep all k FMAs per word;
//! - the latency kernels' loop is one dependent load through the level each measures (`ca`:
//!   `LDG.E`, `cg`: `LDG.E.STRONG.GPU`);
//! - the empty kernel (launch overhead) is one counting `RED.ADD`, no other memory access, no
//!   loop;
//! - the GEMM kernels' SASS has the tensor-core pipeline they were written for: `HMMA` (32 per
//!   K tile: 2 steps of 4 × 4), `LDGSTS` (`cp.async`, 128 bits with zero fill) and `LDSM`
//!   (`ldmatrix`, x4, never `.T`: B is N × K and needs no transpose);
//! - the f32 SIMT GEMM is FFMA and no tensor core: 512 `FFMA` (a K tile: 8 steps of 8 × 8), no
//!   `HMMA`, its shared-memory reads 128 bits wide (`LDS.128`), and at most 128 registers a
//!   thread (two 256-thread blocks on an SM).
//!
//! Each (module, architecture) is assembled once for all these checks, on every core, into the
//! test target's scratch folder; SASS is disassembled only where a check reads it. With
//! `ROOFPROBE_JIT_SASS=DIR` (what `scripts/jit-sass` wrote from a device check's driver code) the
//! SASS checks read the code a GPU's driver compiled, for that GPU's architecture, instead. The
//! tools are found by `tests/tools.rs`; without them the checks print why and pass, except where
//! `ROOFPROBE_REQUIRE_TOOLS=1` (CI), where a missing tool fails.

use crate::tools;
use roofprobe::backend::cuda::jit;
use roofprobe::cases::stream::StreamKernel;
use roofprobe::cases::{gemm, intensity, peak, tensor, wgmma, Precision};
use roofprobe::kernels;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The architectures we check, oldest first.
const ARCHS: [&str; 4] = ["sm_80", "sm_86", "sm_89", "sm_90"];

/// The architectures a module with `.target target` is assembled for: every checked one at or
/// above it; an arch-specific target (`sm_90a`) only itself.
pub fn archs_for(target: &str) -> Vec<String> {
    if target.ends_with('a') {
        return vec![target.to_string()];
    }
    let need = kernels::target_capability(target).expect("a .target of the form sm_XY");
    ARCHS
        .iter()
        .filter(|a| kernels::target_capability(a).is_some_and(|c| c >= need))
        .map(|a| a.to_string())
        .collect()
}

/// One SASS instruction: (address, opcode with modifiers, whole text).
type Instruction = (u64, String, String);

/// Function name → instructions, from `cuobjdump --dump-sass`.
pub fn parse_sass(dump: &str) -> BTreeMap<String, Vec<Instruction>> {
    let mut out: BTreeMap<String, Vec<Instruction>> = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in dump.lines() {
        if let Some(name) = line.trim().strip_prefix("Function : ") {
            current = Some(name.trim().to_string());
            out.entry(name.trim().to_string()).or_default();
            continue;
        }
        let Some(f) = &current else { continue };
        let Some(rest) = line.trim_start().strip_prefix("/*") else {
            continue;
        };
        let Some((addr, instr)) = rest.split_once("*/") else {
            continue;
        };
        let Ok(addr) = u64::from_str_radix(addr.trim(), 16) else {
            continue;
        };
        let instr = instr.split(';').next().unwrap_or("").trim();
        if instr.is_empty() {
            continue;
        }
        // skip a guard predicate (@P0, @!PT)
        let mut words = instr.split_whitespace().skip_while(|w| w.starts_with('@'));
        let op = words.next().unwrap_or("").to_string();
        out.get_mut(f)
            .expect("inserted above")
            .push((addr, op, instr.to_string()));
    }
    out
}

/// A module assembled for one architecture.
struct Build {
    /// What `ptxas -v` printed.
    log: String,
    cubin: PathBuf,
    /// The architecture it was assembled for.
    arch: String,
}

/// Every (module name, arch) → its build or ptxas's error output.
type Builds = BTreeMap<(String, String), Result<Build, String>>;

/// cuobjdump, where the check reads SASS.
struct Tools {
    cuobjdump: Option<PathBuf>,
}

pub fn assemble(ptxas: &Path, ptx_file: &Path, arch: &str, cubin: &Path) -> Result<String, String> {
    let out = Command::new(ptxas)
        .args(["-v", &format!("-arch={arch}"), "-o"])
        .arg(cubin)
        .arg(ptx_file)
        .output()
        .map_err(|e| format!("running {}: {e}", ptxas.display()))?;
    let log =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    if out.status.success() {
        Ok(log)
    } else {
        Err(log)
    }
}

/// Assembles every module for its architectures, once per test binary, on every core.
fn build_all(ptxas: &Path) -> Builds {
    let dir =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("offline-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut jobs = Vec::new();
    for source in kernels::all() {
        let target = kernels::target(&source.ptx).expect("every module declares .target");
        let stem = source.name.replace(['#', '=', ',', '/'], "_");
        let ptx_file = dir.join(format!("{stem}.ptx"));
        std::fs::write(&ptx_file, &source.ptx).unwrap();
        for arch in archs_for(target) {
            let cubin = dir.join(format!("{stem}.{arch}.cubin"));
            jobs.push((source.name.clone(), arch, ptx_file.clone(), cubin));
        }
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let results: Vec<_> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let jobs = &jobs;
                s.spawn(move || {
                    jobs.iter()
                        .skip(t)
                        .step_by(threads)
                        .map(|(name, arch, ptx, cubin)| {
                            let built = assemble(ptxas, ptx, arch, cubin).map(|log| Build {
                                log,
                                cubin: cubin.clone(),
                                arch: arch.clone(),
                            });
                            ((name.clone(), arch.clone()), built)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("an assembling thread"))
            .collect()
    });
    results.into_iter().collect()
}

/// The tools and every build, or `None` after printing why the check is skipped.
fn setup(test: &str, need_cuobjdump: bool) -> Option<(Tools, &'static Builds)> {
    static BUILDS: OnceLock<Builds> = OnceLock::new();
    let ptxas = tools::or_skip("ptxas", "PTXAS", test)?;
    let cuobjdump = if need_cuobjdump {
        Some(tools::or_skip("cuobjdump", "CUOBJDUMP", test)?)
    } else {
        None
    };
    let builds = BUILDS.get_or_init(|| build_all(&ptxas));
    Some((Tools { cuobjdump }, builds))
}

/// The SASS a GPU's driver made, from `scripts/jit-sass`'s output (its `*.sass` files): its
/// architecture (`sm_90`, from cuobjdump's `code for sm_90`; `sm_90a` counts as `sm_90`) and
/// every function it holds.
#[derive(Debug, Default)]
struct DriverSass {
    arch: String,
    functions: BTreeMap<String, Vec<Instruction>>,
}

impl DriverSass {
    /// Reads the folder; a function found twice must be the same code both times.
    fn read(dir: &Path) -> DriverSass {
        let mut out = DriverSass::default();
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("ROOFPROBE_JIT_SASS={}: {e}", dir.display()))
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "sass"))
            .collect();
        files.sort();
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            // (the driver compiles sm_90a's modules for sm_90a on the same device)
            let arch = text
                .lines()
                .find_map(|l| l.trim().strip_prefix("code for "))
                .unwrap_or_else(|| panic!("{}: no `code for sm_..` line", file.display()))
                .trim()
                .trim_end_matches('a')
                .to_string();
            assert!(
                out.arch.is_empty() || out.arch == arch,
                "{}: {arch}, where the other files are {}: one device's SASS at a time",
                file.display(),
                out.arch
            );
            out.arch = arch;
            for (name, body) in parse_sass(&text) {
                let ops = |b: &[Instruction]| b.iter().map(|i| i.2.clone()).collect::<Vec<_>>();
                match out.functions.get(&name) {
                    Some(seen) if ops(seen) != ops(&body) => {
                        panic!("{name} is in the driver's SASS twice, with different code")
                    }
                    Some(_) => {}
                    None => {
                        out.functions.insert(name, body);
                    }
                }
            }
        }
        assert!(
            !out.functions.is_empty(),
            "no function in {}'s *.sass",
            dir.display()
        );
        out
    }

    /// `functions` (ptxas's, for `arch`) with the driver's code of each function in place of
    /// ptxas's, where the driver compiled for `arch` (sm_90a's module on an sm_90 device too)
    /// and has the function; the names it lacks are returned.
    fn stand_in(
        &self,
        arch: &str,
        functions: &mut BTreeMap<String, Vec<Instruction>>,
    ) -> Vec<String> {
        if arch.trim_end_matches('a') != self.arch {
            return Vec::new();
        }
        let mut missing = Vec::new();
        for (name, body) in functions.iter_mut() {
            match self.functions.get(name) {
                Some(driver) => *body = driver.clone(),
                None => missing.push(name.clone()),
            }
        }
        missing
    }
}

/// `ROOFPROBE_JIT_SASS=DIR` (the folder `scripts/jit-sass` wrote from a device check's driver
/// code or JIT cache): the SASS checks read the code the driver compiled and the GPU ran, for its
/// architecture, instead of ptxas's; the ptxas checks (spills, warnings) still read ptxas's.
fn driver_sass() -> Option<&'static DriverSass> {
    static DRIVER: OnceLock<Option<DriverSass>> = OnceLock::new();
    DRIVER
        .get_or_init(|| {
            let dir = std::env::var_os("ROOFPROBE_JIT_SASS")?;
            let driver = DriverSass::read(Path::new(&dir));
            eprintln!(
                "the SASS checks read the driver's {} code for {} functions (ROOFPROBE_JIT_SASS)",
                driver.arch,
                driver.functions.len()
            );
            Some(driver)
        })
        .as_ref()
}

/// The SASS of one build: ptxas's, or where `ROOFPROBE_JIT_SASS` names the driver's for its
/// architecture, the driver's (each function it lacks said on stderr, and left ptxas's).
fn sass(tools: &Tools, build: &Build) -> BTreeMap<String, Vec<Instruction>> {
    let mut functions = ptxas_sass(tools, build);
    if let Some(driver) = driver_sass() {
        let missing = driver.stand_in(&build.arch, &mut functions);
        if !missing.is_empty() {
            eprintln!(
                "not in the driver's SASS, checked as ptxas made them: {}",
                missing.join(" ")
            );
        }
    }
    functions
}

/// The SASS of one build as ptxas made it.
fn ptxas_sass(tools: &Tools, build: &Build) -> BTreeMap<String, Vec<Instruction>> {
    let cuobjdump = tools.cuobjdump.as_ref().expect("setup asked for cuobjdump");
    let out = Command::new(cuobjdump)
        .arg("--dump-sass")
        .arg(&build.cubin)
        .output()
        .expect("running cuobjdump");
    assert!(
        out.status.success(),
        "cuobjdump {}: {}",
        build.cubin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    parse_sass(&String::from_utf8_lossy(&out.stdout))
}

/// The build of `module` for `arch`, which must have assembled.
fn built<'a>(builds: &'a Builds, module: &str, arch: &str) -> &'a Build {
    match builds.get(&(module.to_string(), arch.to_string())) {
        Some(Ok(b)) => b,
        Some(Err(log)) => panic!("{module} does not assemble for {arch}:\n{log}"),
        None => panic!("{module} was not assembled for {arch}"),
    }
}

#[test]
fn every_kernel_assembles_for_every_arch_without_spills() {
    let Some((_, builds)) = setup(
        "every_kernel_assembles_for_every_arch_without_spills",
        false,
    ) else {
        return;
    };
    let mut failures = Vec::new();
    for source in kernels::all() {
        let target = kernels::target(&source.ptx).expect("every module declares .target");
        for arch in archs_for(target) {
            match builds.get(&(source.name.clone(), arch.clone())) {
                None => failures.push(format!("{}: not assembled for {arch}", source.name)),
                Some(Err(log)) => failures.push(format!(
                    "{} does not assemble for {arch}:\n{log}",
                    source.name
                )),
                Some(Ok(build)) => {
                    let usage = jit::resource_usage(&build.log);
                    for entry in kernels::entries(&source.ptx) {
                        match usage.get(&entry) {
                            None => failures.push(format!(
                                "{}: no ptxas report for {entry} on {arch}",
                                source.name
                            )),
                            Some(&(0, 0, 0)) => {}
                            Some((stack, st, ld)) => failures.push(format!(
                                "{}: {entry} on {arch}: {stack} bytes stack, {st} bytes spill \
                                 stores, {ld} bytes spill loads",
                                source.name
                            )),
                        }
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Registers a thread (`Used N registers`) and static shared memory (`N bytes smem`) of each
/// entry, from a `ptxas -v` log.
fn entry_resources(log: &str) -> BTreeMap<String, (u32, u32)> {
    let mut out = BTreeMap::new();
    let mut entry: Option<String> = None;
    for line in log.lines() {
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            entry = rest.split('\'').next().map(str::to_string);
        } else if let (Some(name), Some(rest)) = (&entry, line.split("Used ").nth(1)) {
            let registers = rest.split_whitespace().next().and_then(|n| n.parse().ok());
            let smem = line
                .split(", ")
                .find_map(|part| part.trim().strip_suffix(" bytes smem")?.parse().ok())
                .unwrap_or(0);
            if let Some(registers) = registers {
                out.insert(name.clone(), (registers, smem));
            }
        }
    }
    out
}

/// The shared memory one block may opt into on compute capability `cc`, bytes (CUDA C++
/// Programming Guide, "Features and Technical Specifications"): 163 KiB on 8.0 and 8.7, 227 KiB
/// on 9.0 and 10.0, 99 KiB on 8.6, 8.9 and 12.x, 64 KiB on 7.5.
fn shared_opt_in_bytes(cc: (u32, u32)) -> u32 {
    match cc {
        (8, 0) | (8, 7) => 163 << 10,
        (9, 0) | (10, _) => 227 << 10,
        (7, _) => 64 << 10,
        _ => 99 << 10,
    }
}

/// Registers one block of `threads` takes: each warp's allocated in units of 256 (8 a thread).
fn block_registers(registers_per_thread: u32, threads: u32) -> u32 {
    threads.div_ceil(32) * (registers_per_thread * 32).next_multiple_of(256)
}

/// Every launch the CUDA backend plans on the modelled devices fits one block of its device:
/// registers (ptxas's count for the device's architecture, sm_90 standing in for the newer
/// ones) within the 65,536 a block may have, and static plus dynamic shared memory within what
/// a block may opt into. The driver refuses a launch past either (`CUDA_ERROR_LAUNCH_OUT_OF_
/// RESOURCES`, `CUDA_ERROR_INVALID_VALUE`); neither the simulated driver nor the interpreter
/// counts registers. The TMA GEMM's 384 threads are why its `.maxnreg` is 168: 168 × 384 is
/// 64,512.
#[test]
fn every_planned_launch_fits_one_block_of_its_device() {
    let Some((_, builds)) = setup("every_planned_launch_fits_one_block_of_its_device", false)
    else {
        return;
    };
    assert_eq!(block_registers(168, 384), 64_512);
    assert_eq!(block_registers(169, 384), 67_584);
    assert_eq!(block_registers(255, 256), 65_536);
    let resources = entry_resources(
        "ptxas info    : Compiling entry function 'k' for 'sm_90'\n\
         ptxas info    : Used 154 registers, used 1 barriers, 1024 bytes smem, 400 bytes cmem[0]",
    );
    assert_eq!(resources.get("k"), Some(&(154, 1024)));
    let sources: BTreeMap<String, String> = kernels::all()
        .into_iter()
        .map(|s| (s.name, s.ptx))
        .collect();
    let (mut failures, mut checked) = (Vec::new(), 0);
    for (device, case, grid) in crate::kernel_args::every_planned_case() {
        let cc = crate::kernel_args::device_cc(&device);
        let launch = roofprobe::backend::cuda::describe::launch(&case, grid)
            .unwrap_or_else(|e| panic!("{device} {}: {e}", case.id()));
        let module = launch.entry.module.file();
        let ptx = sources
            .get(&module)
            .unwrap_or_else(|| panic!("{module} is not among kernels::all()"));
        let target = kernels::target(ptx).expect("every module declares .target");
        let own = format!("sm_{}{}", cc.0, cc.1);
        let archs = archs_for(target);
        let arch = archs
            .iter()
            .find(|a| **a == own || a.strip_suffix('a') == Some(own.as_str()))
            .or_else(|| archs.last())
            .expect("an architecture");
        let build = built(builds, &module, arch);
        let Some(&(registers, static_shared)) = entry_resources(&build.log).get(&launch.entry.name)
        else {
            failures.push(format!(
                "{module}: no ptxas report for {}",
                launch.entry.name
            ));
            continue;
        };
        let block = block_registers(registers, launch.block);
        let shared = static_shared + launch.dynamic_shared_bytes;
        if block > 65_536 || shared > shared_opt_in_bytes(cc) {
            failures.push(format!(
                "{device} {}: {} on {arch}, {} threads of {registers} registers ({block} a \
                 block), {shared} bytes of shared memory (at most {})",
                case.id(),
                launch.entry.name,
                launch.block,
                shared_opt_in_bytes(cc)
            ));
        }
        checked += 1;
    }
    assert!(checked > 1000, "{checked} launches");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn stream_kernels_use_128_bit_global_accesses() {
    let Some((tools, builds)) = setup("stream_kernels_use_128_bit_global_accesses", true) else {
        return;
    };
    let mut problems = Vec::new();
    for arch in ARCHS {
        let code = sass(&tools, built(builds, "stream.ptx", arch));
        for entry in kernels::entries(kernels::STREAM) {
            let kernel = StreamKernel::from_name(entry.split('_').next().unwrap()).unwrap();
            let body = code.get(&entry).cloned().unwrap_or_default();
            let has = |op: &str| body.iter().any(|(_, o, _)| o == op);
            if kernel.inputs() > 0 && !has("LDG.E.128") {
                problems.push(format!("{entry} on {arch}: no LDG.E.128"));
            }
            if kernel.outputs() > 0 && !has("STG.E.128") {
                problems.push(format!("{entry} on {arch}: no STG.E.128"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The cache kernels load through the level each measures (`l1_i32` the plain caching
/// `LDG.E.128`, `l2_i32` `LDG.E.128.STRONG.GPU`), in a main loop of four such loads and at most
/// 40 instructions (about 8.5 a load; an SM issues 16 while its L1 returns one warp's 512 bytes),
/// and no loop encloses it: a loop of passes around the share would put its overhead on every
/// pass, which at the one vector an H200 thread holds of an L1 working set is more than the
/// loads (tests/interp.rs counts the instructions per load at every share).
#[test]
fn cache_kernels_load_through_the_level_they_measure() {
    let Some((tools, builds)) = setup("cache_kernels_load_through_the_level_they_measure", true)
    else {
        return;
    };
    let mut problems = Vec::new();
    for arch in ARCHS {
        let code = sass(&tools, built(builds, "cache.ptx", arch));
        for (entry, wanted) in [("l1_i32", "LDG.E.128"), ("l2_i32", "LDG.E.128.STRONG.GPU")] {
            let body = code.get(entry).cloned().unwrap_or_default();
            let loads: Vec<&str> = body
                .iter()
                .map(|(_, op, _)| op.as_str())
                .filter(|op| op.starts_with("LDG"))
                .collect();
            // the main loop's four vector loads and the one-at-a-time loop's one
            let vectors = loads.iter().filter(|op| **op == wanted).count();
            if vectors != 5 || loads.len() != 5 {
                problems.push(format!(
                    "{entry} on {arch}: loads {loads:?}, want 5 x {wanted}"
                ));
            }
            let Some(main) = loop_containing(&body, wanted) else {
                problems.push(format!("{entry} on {arch}: no loop of {wanted}"));
                continue;
            };
            let in_main = main.iter().filter(|(_, op, _)| op == wanted).count();
            if in_main != 4 || main.len() > 40 {
                problems.push(format!(
                    "{entry} on {arch}: main loop of {} instructions with {in_main} x {wanted}, \
                     want 4 in at most 40",
                    main.len()
                ));
            }
            let (first, last) = (main[0].0, main[main.len() - 1].0);
            let enclosing = body.iter().any(|(addr, op, text)| {
                let target = text
                    .split_whitespace()
                    .last()
                    .and_then(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok());
                op.starts_with("BRA") && *addr > last && target.is_some_and(|t| t <= first)
            });
            if enclosing {
                problems.push(format!(
                    "{entry} on {arch}: a loop encloses the main loop (a loop per pass)"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The chase's loop is one dependent load, through the level each kernel measures: `ca_i32`
/// the plain caching `LDG.E.64` (L1), `cg_i32` `LDG.E.64.STRONG.GPU` (L2 only), whose address
/// is the register it loads into (`LDG.E.64 R6, [R6.64]`): nothing between two loads, where an
/// add of the ring's base to an offset put two dependent integer instructions (4 cycles each on
/// Volta, Jia et al. 2018) on every hop; and never a second load, which would put two latencies
/// in a hop.
#[test]
fn latency_kernels_chase_one_load_per_hop_through_their_level() {
    let Some((tools, builds)) = setup(
        "latency_kernels_chase_one_load_per_hop_through_their_level",
        true,
    ) else {
        return;
    };
    let mut problems = Vec::new();
    for arch in ARCHS {
        let code = sass(&tools, built(builds, "latency.ptx", arch));
        for (entry, wanted) in [("ca_i32", "LDG.E.64"), ("cg_i32", "LDG.E.64.STRONG.GPU")] {
            let body = code.get(entry).cloned().unwrap_or_default();
            if body.is_empty() {
                problems.push(format!("{entry} on {arch}: no SASS"));
                continue;
            }
            let looped = timed_loop(&body);
            let loop_ops: Vec<&str> = looped.iter().map(|(_, op, _)| op.as_str()).collect();
            let loads: Vec<&(u64, String, String)> = looped
                .iter()
                .filter(|(_, op, _)| op.starts_with("LD"))
                .collect();
            // the load's destination pair is its address (`LDG.E.64 R6, desc[UR6][R6.64]`) and
            // no other instruction of the loop writes either register of that pair (an add
            // making the address from an offset would)
            let dest = |op: &str, text: &str| -> String {
                let rest = text.split_once(op).map_or("", |(_, r)| r);
                rest.split(',').next().unwrap_or("").trim().to_string()
            };
            let chased = loads.first().is_some_and(|(_, op, text)| {
                let pair = dest(op, text);
                let Some(n) = pair.strip_prefix('R').and_then(|n| n.parse::<u32>().ok()) else {
                    return false;
                };
                let (low, high) = (format!("R{n}"), format!("R{}", n + 1));
                text.contains(&format!("[{low}.64]"))
                    && looped
                        .iter()
                        .filter(|(_, o, _)| !o.starts_with("LD"))
                        .all(|(_, o, t)| {
                            let d = dest(o, t);
                            d != low && d != high
                        })
            });
            if loads.len() != 1 || loads[0].1 != wanted || !chased || loop_ops.len() > 6 {
                problems.push(format!(
                    "{entry} on {arch}: loop {looped:?}, want one {wanted} from the address it \
                     loads, in at most 6 instructions"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The empty kernel is empty but for its count: one global reduction (`RED.E.ADD` or, on
/// sm_90, `REDG.E.ADD`), no other memory access, no loop, a handful of instructions before its
/// `EXIT`; so its launch time is a launch's.
#[test]
fn the_empty_kernel_is_one_counting_add() {
    let Some((tools, builds)) = setup("the_empty_kernel_is_one_counting_add", true) else {
        return;
    };
    let mut problems = Vec::new();
    for arch in ARCHS {
        let code = sass(&tools, built(builds, "launch.ptx", arch));
        let body = code.get("empty_i32").cloned().unwrap_or_default();
        // up to the last EXIT: after it, ptxas's BRA to itself and padding
        let last_exit = body.iter().rposition(|(_, op, _)| op == "EXIT");
        let ops: Vec<&str> = body[..last_exit.map_or(0, |i| i + 1)]
            .iter()
            .map(|(_, op, _)| op.as_str())
            .collect();
        let reds = ops
            .iter()
            .filter(|op| op.starts_with("RED") && op.contains(".ADD"))
            .count();
        let other_memory = ops.iter().any(|op| {
            ["LDG", "STG", "ATOM", "LD.", "ST."]
                .iter()
                .any(|m| op.starts_with(m))
        });
        let backward = ops.iter().any(|op| op.starts_with("BRA"));
        if reds != 1 || other_memory || backward || ops.len() > 20 {
            problems.push(format!(
                "empty_i32 on {arch}: {ops:?}, want one RED.ADD, no other memory access, no \
                 branch back, at most 20 instructions"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The instructions of a function's loop: from the target of its backward branch to the
/// branch, without `NOP`s. (ptxas's `BRA` to itself after `EXIT` is not a loop; the NOPs are
/// issue-slot padding that sm_90 needs after each DMMA, not work competing for a pipe.)
fn timed_loop(body: &[Instruction]) -> Vec<Instruction> {
    let first = *loops(body).first().expect("the kernel has a loop");
    loop_body(body, first)
}

/// The loops of `body`: (target, address) of every backward branch, in address order.
fn loops(body: &[Instruction]) -> Vec<(u64, u64)> {
    body.iter()
        .filter(|(_, op, _)| op.starts_with("BRA"))
        .filter_map(|(addr, _, text)| {
            let target = text
                .split_whitespace()
                .last()
                .and_then(|t| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok())?;
            (target < *addr).then_some((target, *addr))
        })
        .collect()
}

/// The instructions of the loop `(start, end)` of [`loops`], without padding: `NOP`s, and
/// instructions guarded by a predicate that is never true (`@!PT`, `@!UPT`), the form ptxas 13.0
/// pads sm_89's QMMA loops with (`@!UPT UIADD3 URZ, URZ, URZ, URZ` after each).
fn loop_body(body: &[Instruction], (start, end): (u64, u64)) -> Vec<Instruction> {
    body.iter()
        .filter(|(a, op, text)| {
            (start..=end).contains(a)
                && op != "NOP"
                && !text.starts_with("@!PT ")
                && !text.starts_with("@!UPT ")
        })
        .cloned()
        .collect()
}

/// The instructions of the loop (target of a backward branch to the branch) that holds the
/// warpgroup MMAs, without `NOP`s.
fn mma_loop(body: &[Instruction]) -> Vec<Instruction> {
    loop_containing(body, "GMMA").expect("a loop of warpgroup MMAs")
}

/// The instructions (NOPs aside) of the first backward branch's loop in `body` that contains
/// an opcode with `op` in it.
fn loop_containing(body: &[Instruction], op: &str) -> Option<Vec<Instruction>> {
    loops(body)
        .into_iter()
        .map(|l| loop_body(body, l))
        .find(|inside| inside.iter().any(|(_, o, _)| o.contains(op)))
}

/// The SASS opcode family a kernel's loop must be made of.
fn expected_family(precision: Precision) -> &'static [&'static str] {
    match precision {
        Precision::F64 => &["DFMA"],
        Precision::F32 => &["FFMA"],
        Precision::F16x2 | Precision::Bf16x2 => &["HFMA2"],
        Precision::I32 => &["IMAD"],
        Precision::S8S32 => &["IMMA"],
        Precision::F64F64 => &["DMMA"],
        // sm_89 runs fp8 as QMMA; later parts may name it HMMA
        Precision::E4m3F32 => &["QMMA", "HMMA"],
        _ => &["HMMA"],
    }
}

/// A loop's own counting and branching as ptxas emits it (the trip counters in uniform
/// registers, the compare, the branch back, and on sm_80-89 the warp's exit call).
const LOOP_CONTROL: [&str; 6] = ["UIADD3", "IADD3", "VIADD", "ISETP", "BRA", "CALL"];

fn is_family(op: &str, family: &[&str]) -> bool {
    family
        .iter()
        .any(|f| op == *f || op.starts_with(&format!("{f}.")))
}

/// Every peak and tensor kernel: ≥ 90 % of its timed loop is the instruction it measures (a
/// peak kernel's ≥ 99 %, the rest only loop control), on every architecture it targets.
#[test]
fn compute_loops_are_the_instruction_measured() {
    let Some((tools, builds)) = setup("compute_loops_are_the_instruction_measured", true) else {
        return;
    };
    let mut kernels_by_entry: Vec<(String, Precision)> = peak::PRECISIONS
        .iter()
        .map(|&p| (format!("{}_{}", peak::KERNEL, p.as_str()), p))
        .collect();
    kernels_by_entry.extend(
        tensor::forms()
            .into_iter()
            .map(|m| (tensor::entry_name(m), m.precision)),
    );
    let mut report = Vec::new();
    for (module, ptx) in [
        ("peak.ptx", kernels::PEAK),
        ("mma.ptx", kernels::MMA),
        ("mma_sm89.ptx", kernels::MMA_SM89),
        ("mma_sm90.ptx", kernels::MMA_SM90),
    ] {
        let target = kernels::target(ptx).expect("a .target");
        for arch in archs_for(target) {
            for (name, body) in sass(&tools, built(builds, module, &arch)) {
                let lp = timed_loop(&body);
                if module == "mma_sm89.ptx" && arch == "sm_90" {
                    // sm_90 has no fp8 mma.sync: ptxas unpacks e4m3 to f16, hoists A·B out of
                    // the loop and accumulates with FADD. The CUDA backend therefore runs this
                    // kernel only where it is native (backend::cuda::plan::native_fp8_mma); pin that.
                    let mma = lp
                        .iter()
                        .filter(|(_, op, _)| is_family(op, &["QMMA", "HMMA"]))
                        .count();
                    assert!(
                        (mma as f64) < 0.5 * lp.len() as f64,
                        "sm_90 fp8 mma.sync looks native now ({mma} of {}): revisit \
                         native_fp8_mma",
                        lp.len()
                    );
                    continue;
                }
                let (_, precision) = kernels_by_entry
                    .iter()
                    .find(|(k, _)| *k == name)
                    .unwrap_or_else(|| panic!("unknown kernel {name} in {module}"));
                let family = expected_family(*precision);
                let hits = lp.iter().filter(|(_, op, _)| is_family(op, family)).count();
                // f64 on sm_90: Ampere's m8n8k4 is DMMA.8x8x4, Hopper's m16n8k16 its own
                // DMMA.16x8x16 (not four smaller ones)
                if *precision == Precision::F64F64 && arch == "sm_90" {
                    let want = if name == tensor::entry_name(tensor::HOPPER_F64) {
                        "DMMA.16x8x16"
                    } else {
                        "DMMA.8x8x4"
                    };
                    assert!(
                        lp.iter()
                            .filter(|(_, op, _)| op.starts_with("DMMA"))
                            .all(|(_, op, _)| op == want),
                        "{arch} {name}: want every DMMA a {want}"
                    );
                }
                let share = hits as f64 / lp.len() as f64;
                report.push(format!(
                    "{arch} {name}: {hits}/{} {} ({:.1}%)",
                    lp.len(),
                    family[0],
                    100.0 * share
                ));
                // a peak loop is 512 FMAs and the loop's own counting and branching (4 on
                // sm_90, 5 on sm_80-89): on a part whose FP32 pipe takes one warp instruction per
                // clock (GA10x, Hopper) each other instruction costs an FMA's issue slot, so a
                // scalar reloaded from the parameter bank on every trip (as ptxas did with f16x2's
                // a and b: 2 ULDC.U16, IMAD.U32, MOV, PRMT on sm_80; an LDC on sm_90) fails it
                if module == "peak.ptx" {
                    let others: Vec<&str> = lp
                        .iter()
                        .filter(|(_, op, _)| !is_family(op, family))
                        .filter(|(_, op, _)| !is_family(op, &LOOP_CONTROL))
                        .map(|(_, _, t)| t.as_str())
                        .collect();
                    assert!(
                        others.is_empty() && lp.len() - hits <= 5,
                        "{arch} {name}: a peak loop should be its {hits} FMAs and at most 5 \
                         instructions of loop control; it also has:\n{}",
                        others.join("\n")
                    );
                }
                let floor = if module == "peak.ptx" { 0.99 } else { 0.9 };
                assert!(
                    share >= floor,
                    "{arch} {name}: only {hits} of {} loop instructions are {family:?}:\n{}",
                    lp.len(),
                    lp.iter()
                        .map(|(_, _, t)| t.as_str())
                        .collect::<Vec<_>>()
                        .join("\n")
                );
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    // every kernel was seen on every architecture it targets (fp8: sm_89 only, see above;
    // Hopper's f64 shape: sm_90 only)
    assert_eq!(report.len(), 4 * 5 + 4 * 6 + 1 + 1);
}

/// Hopper's `wgmma` peaks (sm_90a): each timed loop is one `WARPGROUP.ARRIVE`, the 8
/// warpgroup MMAs of the type and shape measured (HGMMA for f16/bf16/tf32, QGMMA for fp8, IGMMA
/// for s8; A from a descriptor or from registers as the kernel says), one
/// `WARPGROUP.DEPBAR.LE gsb0, 0x1` (`wait_group 1`: the next group queued behind the running
/// one) and the loop's own counting; no memory access; and ptxas did not serialize the MMAs.
#[test]
fn wgmma_loops_are_the_warpgroup_mma() {
    let Some((tools, builds)) = setup("wgmma_loops_are_the_warpgroup_mma", true) else {
        return;
    };
    let build = built(builds, "wgmma.ptx.in#sm_90a", "sm_90a");
    assert!(
        !build.log.contains("serialized") && !build.log.contains("arning"),
        "ptxas warns about the wgmma module:\n{}",
        build.log
    );
    let functions = sass(&tools, build);
    let mut seen = 0;
    for p in wgmma::PRECISIONS {
        for a in wgmma::SOURCES {
            let name = wgmma::entry_name(p, a);
            let body = functions
                .get(&name)
                .unwrap_or_else(|| panic!("{name} is not in the SASS"));
            // the loop with the MMAs (the copy into shared memory before it is a loop too)
            let lp = mma_loop(body);
            let text = lp
                .iter()
                .map(|(_, _, t)| t.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let family = match p {
                Precision::E4m3F32 | Precision::E5m2F32 => "QGMMA",
                Precision::S8S32 => "IGMMA",
                _ => "HGMMA",
            };
            let shape = format!("{family}.64x256x{}", wgmma::k(p));
            let mmas: Vec<&str> = lp
                .iter()
                .filter(|(_, op, _)| op.contains("GMMA"))
                .map(|(_, _, t)| t.as_str())
                .collect();
            assert_eq!(
                mmas.len() as u64,
                2 * wgmma::UNROLL,
                "{name}: the loop has {} warpgroup MMAs:\n{text}",
                mmas.len()
            );
            for m in &mmas {
                assert!(m.starts_with(&shape), "{name}: {m} is not {shape}");
                // A from a descriptor: `R24, gdesc[UR4], R24`; from registers: `R24, R152, gdesc[…]`
                let a_in_registers = m
                    .split(',')
                    .nth(1)
                    .is_some_and(|o| o.trim().starts_with('R'));
                assert_eq!(
                    a_in_registers,
                    a == wgmma::ASource::Registers,
                    "{name}: {m} takes A from the wrong place"
                );
            }
            let count = |needle: &str| lp.iter().filter(|(_, _, t)| t.contains(needle)).count();
            assert_eq!(count("WARPGROUP.ARRIVE"), 1, "{name}:\n{text}");
            assert_eq!(count("WARPGROUP.DEPBAR.LE gsb0, 0x1"), 1, "{name}:\n{text}");
            let memory = lp
                .iter()
                .filter(|(_, op, _)| {
                    ["LDG", "STG", "LDS", "STS", "LDSM", "LD.", "ST."]
                        .iter()
                        .any(|m| op.starts_with(m))
                })
                .count();
            assert_eq!(
                memory, 0,
                "{name}: memory access in the timed loop:\n{text}"
            );
            seen += 1;
        }
    }
    assert_eq!(seen, 2 * wgmma::PRECISIONS.len());
}

/// Hopper's GEMM (`gemm_wgmma_*`, sm_90a): the K-tile loop is 4 `HGMMA.64x256x16.F32` of its
/// type with A and B from descriptors, one `WARPGROUP.ARRIVE` and one `DEPBAR` of the wgmma
/// groups (`wait_group 1`), 12 128-bit zero-filling `LDGSTS` (`cp.async.cg`: 4 rows of A's tile
/// and 8 of B's a thread) and the fence that hands them to the async proxy; ptxas warns of no
/// serialized wgmma.
#[test]
fn wgmma_gemm_is_hgmma_fed_by_ldgsts() {
    let Some((tools, builds)) = setup("wgmma_gemm_is_hgmma_fed_by_ldgsts", true) else {
        return;
    };
    for p in gemm::WGMMA_PRECISIONS {
        let build = built(builds, &format!("gemm_wgmma.ptx.in#{p}"), "sm_90a");
        assert!(
            !build.log.contains("serialized") && !build.log.contains("arning"),
            "ptxas warns about the wgmma GEMM:\n{}",
            build.log
        );
        let name = gemm::wgmma_entry_name(p);
        let functions = sass(&tools, build);
        let lp = mma_loop(&functions[&name]);
        let text = lp
            .iter()
            .map(|(_, _, t)| t.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let ty = if p == Precision::Bf16F32 { ".BF16" } else { "" };
        let shape = format!("HGMMA.64x256x16.F32{ty} ");
        let count = |f: &dyn Fn(&str) -> bool| lp.iter().filter(|(_, _, t)| f(t)).count();
        assert_eq!(
            count(&|t| t.starts_with(&shape) && t.matches("gdesc").count() == 1),
            4,
            "{name}:\n{text}"
        );
        assert_eq!(count(&|t| t.contains("GMMA")), 4, "{name}:\n{text}");
        assert_eq!(
            count(&|t| t.starts_with("LDGSTS.E.BYPASS.128.ZFILL")),
            12,
            "{name}:\n{text}"
        );
        assert_eq!(
            count(&|t| t.contains("WARPGROUP.ARRIVE")),
            1,
            "{name}:\n{text}"
        );
        assert_eq!(
            count(&|t| t.contains("WARPGROUP.DEPBAR.LE gsb0, 0x1")),
            1,
            "{name}:\n{text}"
        );
        assert_eq!(
            count(&|t| t.starts_with("FENCE.VIEW.ASYNC.S")),
            1,
            "{name}:\n{text}"
        );
    }
}

/// Hopper's TMA-fed GEMM (`gemm_tma_*`, sm_90a; QGMMA for e4m3): every global read is a
/// tensor copy. The
/// producer's loop is one wait on a stage's empty barrier, one arrive with its expected bytes
/// and two `UTMALDG.2D` (A's and B's box); the consumers' loop is one wait on the full barrier,
/// one `WARPGROUP.ARRIVE`, 4 `HGMMA.64x256x16.F32` of its type with A and B from descriptors,
/// one `DEPBAR` leaving a group in flight (`wait_group 1`), and the arrive that releases the
/// previous stage, with no proxy fence (TMA writes through the async proxy). No `LDG`/`LDGSTS`
/// anywhere; ptxas warns of no serialized wgmma. In the cluster expansion one of the producer's
/// two copies is `UTMALDG.2D.MULTICAST` and the release is two arrives, one of them remote
/// (`SYNCS.ARRIVE.TRANS64.RED`), with no `MEMBAR` in the loop.
#[test]
fn tma_gemm_is_hgmma_fed_by_utmaldg() {
    let Some((tools, builds)) = setup("tma_gemm_is_hgmma_fed_by_utmaldg", true) else {
        return;
    };
    for (p, cluster) in gemm::TMA_PRECISIONS
        .into_iter()
        .flat_map(|p| [(p, false), (p, true)])
    {
        let module = if cluster {
            format!("gemm_tma.ptx.in#cluster2,{p}")
        } else {
            format!("gemm_tma.ptx.in#{p}")
        };
        let build = built(builds, &module, "sm_90a");
        assert!(
            !build.log.contains("serialized") && !build.log.contains("arning"),
            "ptxas warns about the TMA GEMM:\n{}",
            build.log
        );
        let name = gemm::tma_entry_name(p, cluster);
        let functions = sass(&tools, build);
        let body = &functions[&name];
        let listing = |lp: &[Instruction]| {
            lp.iter()
                .map(|(_, _, t)| t.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        };
        let count = |lp: &[Instruction], f: &dyn Fn(&str) -> bool| {
            lp.iter().filter(|(_, _, t)| f(t)).count()
        };
        assert_eq!(
            count(body, &|t| t.starts_with("LDG") || t.contains("LDGSTS")),
            0,
            "{name}:\n{}",
            listing(body)
        );
        let producer = loop_containing(body, "UTMALDG").expect("a loop of tensor copies");
        let text = listing(&producer);
        assert_eq!(
            count(&producer, &|t| t.starts_with("UTMALDG.2D")),
            2,
            "{text}"
        );
        assert_eq!(
            count(&producer, &|t| t.starts_with("SYNCS.PHASECHK")),
            1,
            "{text}"
        );
        assert_eq!(
            count(&producer, &|t| t.starts_with("SYNCS.ARRIVE.TRANS64 ")),
            1,
            "{text}"
        );
        assert_eq!(count(&producer, &|t| t.contains("GMMA")), 0, "{text}");
        let consumer = mma_loop(body);
        let text = listing(&consumer);
        let shape = match p {
            Precision::Bf16F32 => "HGMMA.64x256x16.F32.BF16 ",
            Precision::E4m3F32 => "QGMMA.64x256x32.F32.E4M3.E4M3 ",
            _ => "HGMMA.64x256x16.F32 ",
        };
        assert_eq!(
            count(&consumer, &|t| t.starts_with(shape)
                && t.matches("gdesc").count() == 1),
            4,
            "{name}:\n{text}"
        );
        assert_eq!(count(&consumer, &|t| t.contains("GMMA")), 4, "{text}");
        assert_eq!(
            count(&consumer, &|t| t.contains("WARPGROUP.ARRIVE")),
            1,
            "{text}"
        );
        assert_eq!(
            count(&consumer, &|t| t.contains("WARPGROUP.DEPBAR.LE gsb0, 0x1")),
            1,
            "{text}"
        );
        assert_eq!(
            count(&consumer, &|t| t.starts_with("SYNCS.PHASECHK")),
            1,
            "{text}"
        );
        assert_eq!(
            count(&consumer, &|t| t.contains("SYNCS.ARRIVE")),
            if cluster { 2 } else { 1 },
            "{text}"
        );
        assert_eq!(count(&consumer, &|t| t.contains("FENCE")), 0, "{text}");
        assert_eq!(count(&consumer, &|t| t.contains("UTMALDG")), 0, "{text}");
        // the cluster kernel: one half of B multicast by each CTA, each stage released in
        // both CTAs (the other's through the cluster, a remote arrive), and no memory fence in
        // the loop (a `.release.cluster` arrive would put a MEMBAR.ALL.GPU in every K tile)
        assert_eq!(
            count(&producer, &|t| t.starts_with("UTMALDG.2D.MULTICAST")),
            usize::from(cluster),
            "{name}:\n{}",
            listing(&producer)
        );
        assert_eq!(
            count(&consumer, &|t| t.contains("SYNCS.ARRIVE.TRANS64.RED")),
            usize::from(cluster),
            "{name}:\n{text}"
        );
        assert_eq!(count(&consumer, &|t| t.contains("MEMBAR")), 0, "{text}");
    }
}

/// The sweep's expansions keep all k FMAs per word in their SASS (none folded away: the
/// results are stored). Up to k = 64 the steps are unrolled; above it each of the three loops
/// (2 vectors, 1 vector, 1 word) runs its steps as an innermost loop of exactly 64 steps per
/// chain and a few instructions more (ptxas kept the loop, unrolled neither further nor less),
/// so no kernel's code grows with k: the largest, f32's main loop, is 512 FFMAs. The others
/// may only be the count, compare and branch, 4 at most: when `a` and `b` came straight from the
/// parameter bank, ptxas unpacked f16x2's again on every trip on sm_80 (2 `ULDC.U16`, 2
/// `IMAD.U32`, a `PRMT`: 9 instructions beside 512 `HFMA2`, 1.7 %).
#[test]
fn sweep_variants_keep_k_fmas_per_word() {
    let Some((tools, builds)) = setup("sweep_variants_keep_k_fmas_per_word", true) else {
        return;
    };
    let mut problems = Vec::new();
    for p in intensity::PRECISIONS {
        for k in [0u32, 1, 64, 128, 1024] {
            let module = format!("intensity.ptx.in#k={k},{p}");
            let arch = if k == 1024 { "sm_90" } else { "sm_80" };
            let code = sass(&tools, built(builds, &module, arch));
            let (_, body) = code.iter().next().expect("one function");
            let family = expected_family(p);
            let is_fma = |op: &str| is_family(op, family);
            let fmas = body.iter().filter(|(_, op, _)| is_fma(op)).count();
            let vec = if p == Precision::F64 { 2 } else { 4 };
            let step = roofprobe::kernels::intensity::UNROLLED_STEPS as usize;
            let unrolled = if k as usize > step { step } else { k as usize };
            // main loop (2 vectors), remainder (1 vector), tail (1 word); ptxas also uses IMAD
            // for address arithmetic and HFMA2.MMA for moves, so there may be a few more
            let want = unrolled * (3 * vec + 1);
            if fmas < want || fmas > want + 64 {
                problems.push(format!(
                    "{module} {arch}: {fmas} {family:?}, expected {want}"
                ));
            }
            // the innermost loops holding FMAs: the step loops, one per loop of the kernel
            // (FMAs, other instructions), and the others that are not loop control
            let mut step_loops: Vec<(usize, usize)> = Vec::new();
            let mut strays: Vec<String> = Vec::new();
            for l in innermost_loops(body) {
                let n = l.iter().filter(|(_, op, _)| is_fma(op)).count();
                if n > 0 {
                    step_loops.push((n, l.len() - n));
                    strays.extend(
                        l.iter()
                            .filter(|(_, op, _)| !is_fma(op) && !is_family(op, &LOOP_CONTROL))
                            .map(|(_, _, t)| t.clone()),
                    );
                }
            }
            step_loops.sort();
            // (up to k = 64 the innermost loops are the grid-stride loops themselves)
            if k as usize <= step {
                continue;
            }
            let chains = [1, vec, 2 * vec];
            let fmas_in_loops: Vec<usize> = step_loops.iter().map(|&(n, _)| n).collect();
            let want_in_loops: Vec<usize> = chains.iter().map(|c| c * step).collect();
            if fmas_in_loops.len() != want_in_loops.len()
                || fmas_in_loops
                    .iter()
                    .zip(&want_in_loops)
                    .any(|(&is, &want)| is < want || is > want + 4)
                || step_loops.iter().any(|&(_, other)| other > 4)
                || !strays.is_empty()
            {
                problems.push(format!(
                    "{module} {arch}: step loops (FMAs, other instructions) {step_loops:?}, \
                     expected FMAs {want_in_loops:?} and at most 4 others, all loop control; \
                     not loop control: {strays:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The loops of `body` (a backward branch's target to the branch) that hold no other loop,
/// each without `NOP`s.
fn innermost_loops(body: &[Instruction]) -> Vec<Vec<Instruction>> {
    let all = loops(body);
    all.iter()
        .filter(|&&(s, e)| {
            !all.iter()
                .any(|&(s2, e2)| (s2, e2) != (s, e) && s <= s2 && e2 <= e)
        })
        .map(|&l| loop_body(body, l))
        .collect()
}

#[test]
fn gemm_kernels_use_hmma_ldgsts_and_ldsm() {
    let Some((tools, builds)) = setup("gemm_kernels_use_hmma_ldgsts_and_ldsm", true) else {
        return;
    };
    let mut problems = Vec::new();
    for p in gemm::TENSOR_PRECISIONS {
        let module = format!("gemm.ptx.in#{p}");
        for arch in ARCHS {
            let code = sass(&tools, built(builds, &module, arch));
            let entry = gemm::entry_name(p);
            let body = code.get(&entry).cloned().unwrap_or_default();
            let count = |prefix: &str| {
                body.iter()
                    .filter(|(_, op, _)| op.starts_with(prefix))
                    .count()
            };
            let (hmma, ldgsts, ldsm) = (count("HMMA"), count("LDGSTS"), count("LDSM"));
            let wrong_ldsm: Vec<&str> = body
                .iter()
                .map(|(_, op, _)| op.as_str())
                .filter(|op| op.starts_with("LDSM") && *op != "LDSM.16.M88.4")
                .collect();
            let wrong_ldgsts: Vec<&str> = body
                .iter()
                .map(|(_, op, _)| op.as_str())
                .filter(|op| op.starts_with("LDGSTS") && !op.contains(".128"))
                .collect();
            if hmma < 32
                || ldgsts < 4
                || ldsm < 12
                || !wrong_ldsm.is_empty()
                || !wrong_ldgsts.is_empty()
            {
                problems.push(format!(
                    "{entry} on {arch}: {hmma} HMMA (want 32), {ldgsts} LDGSTS (want 4 x 128 \
                     bits), {ldsm} LDSM (want 12 x M88.4); others: {wrong_ldsm:?} {wrong_ldgsts:?}"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The SIMT GEMM is what it says: FFMA on the ALUs, no tensor-core instruction, 16-byte shared
/// reads, and registers for two blocks an SM (ptxas's `Used N registers`).
#[test]
fn simt_gemm_is_ffma_without_tensor_cores() {
    let Some((tools, builds)) = setup("simt_gemm_is_ffma_without_tensor_cores", true) else {
        return;
    };
    let entry = gemm::entry_name(gemm::SIMT_PRECISION);
    let mut problems = Vec::new();
    for arch in ARCHS {
        let build = built(builds, "gemm_simt.ptx", arch);
        let registers = build
            .log
            .lines()
            .find_map(|l| {
                let rest = l.split("Used ").nth(1)?;
                rest.split_whitespace().next()?.parse::<u32>().ok()
            })
            .unwrap_or(u32::MAX);
        let code = sass(&tools, build);
        let body = code.get(&entry).cloned().unwrap_or_default();
        let count = |prefix: &str| {
            body.iter()
                .filter(|(_, op, _)| op.starts_with(prefix))
                .count()
        };
        let (ffma, lds128) = (count("FFMA"), count("LDS.128"));
        let tensor: Vec<&str> = body
            .iter()
            .map(|(_, op, _)| op.as_str())
            .filter(|op| {
                ["HMMA", "IMMA", "DMMA", "QMMA", "HGMMA"]
                    .iter()
                    .any(|t| op.starts_with(t))
            })
            .collect();
        eprintln!("{entry} on {arch}: {registers} registers, {ffma} FFMA, {lds128} LDS.128");
        if ffma < 512 || lds128 < 32 || !tensor.is_empty() || registers > 128 {
            problems.push(format!(
                "{entry} on {arch}: {ffma} FFMA (want 512), {lds128} LDS.128 (want 32), \
                 {registers} registers (want at most 128), tensor instructions {tensor:?}"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `ROOFPROBE_JIT_SASS`'s reader: the driver's code stands in for ptxas's for the
/// architecture it was compiled for (sm_90a's module included on sm_90), function by
/// function, the ones it lacks named; other architectures keep ptxas's; a function found twice
/// with different code, or two architectures in one folder, is refused.
#[test]
fn the_drivers_sass_stands_in_for_ptxas_for_its_arch() {
    let dump = |arch: &str, functions: &[(&str, &str)]| {
        let mut text = format!("\n\tcode for {arch}\n");
        for (name, ops) in functions {
            text += &format!("\t\tFunction : {name}\n");
            for (i, op) in ops.split(';').enumerate() {
                text += &format!("        /*{:04x}*/    {op} ;    /* 0x0 */\n", i * 16);
            }
        }
        text
    };
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write(
        "1.sass",
        &dump("sm_90", &[("k1", "FFMA R1, R2, R3, R4;EXIT")]),
    );
    write(
        "2.sass",
        &dump(
            "sm_90",
            &[("k1", "FFMA R1, R2, R3, R4;EXIT"), ("k2", "EXIT")],
        ),
    );
    write("2.cubin", "not read");
    let driver = DriverSass::read(dir.path());
    assert_eq!(driver.arch, "sm_90");
    assert_eq!(driver.functions.len(), 2);
    let ptxas = parse_sass(&dump(
        "sm_90",
        &[("k1", "FADD R1, R2, R3;EXIT"), ("k3", "EXIT")],
    ));
    for (arch, replaced) in [("sm_90", true), ("sm_90a", true), ("sm_80", false)] {
        let mut functions = ptxas.clone();
        let missing = driver.stand_in(arch, &mut functions);
        let op = &functions["k1"][0].1;
        assert_eq!(op, if replaced { "FFMA" } else { "FADD" }, "{arch}");
        assert_eq!(
            missing,
            if replaced { vec!["k3"] } else { vec![] },
            "{arch}"
        );
        assert_eq!(functions["k3"], ptxas["k3"]);
    }
    for (name, text, why) in [
        (
            "3.sass",
            dump("sm_90", &[("k1", "EXIT")]),
            "twice, with different code",
        ),
        (
            "0.sass",
            dump("sm_89", &[("k4", "EXIT")]),
            "one device's SASS at a time",
        ),
    ] {
        write(name, &text);
        let refused =
            std::panic::catch_unwind(|| DriverSass::read(dir.path())).expect_err("refused");
        let said = refused
            .downcast_ref::<String>()
            .cloned()
            .unwrap_or_default();
        assert!(said.contains(why), "{said}");
        std::fs::remove_file(dir.path().join(name)).unwrap();
    }
}

#[test]
fn parsers_read_tool_output() {
    let log = "ptxas info    : Function properties for copy_f32\n    0 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\nptxas info    : Function properties for add_f32\n    16 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n";
    let u = jit::resource_usage(log);
    assert_eq!(u["copy_f32"], (0, 8, 4));
    assert_eq!(u["add_f32"], (16, 0, 0));
    let text = "\t\tFunction : fma_f32\n\
        /*0000*/   MOV R1, c[0x0][0x28] ;\n\
        /*0010*/   FFMA R2, R2, R3, R4 ;   /* 0x0000000402087981 */\n\
        /*0020*/   FFMA R5, R5, R3, R4 ;\n\
        /*0030*/   IADD3 R0, R0, -0x1, RZ ;\n\
        /*0038*/   NOP ;\n\
        /*0040*/ @P0 BRA 0x10 ;\n\
        /*0050*/   EXIT ;\n\
        /*0060*/   BRA 0x60;\n";
    let f = parse_sass(text);
    assert_eq!(
        f["fma_f32"][1],
        (0x10, "FFMA".to_string(), "FFMA R2, R2, R3, R4".to_string())
    );
    let lp = timed_loop(&f["fma_f32"]);
    assert_eq!(lp.len(), 4);
    assert_eq!(lp.iter().filter(|(_, op, _)| op == "FFMA").count(), 2);
    assert!(is_family("HFMA2.MMA", &["HFMA2"]));
    assert!(is_family("HFMA2.BF16_V2", &["HFMA2"]));
    assert!(!is_family("FFMA2", &["FFMA"]));
    assert_eq!(archs_for("sm_80"), ["sm_80", "sm_86", "sm_89", "sm_90"]);
    assert_eq!(archs_for("sm_89"), ["sm_89", "sm_90"]);
    assert_eq!(archs_for("sm_90a"), ["sm_90a"]);
}
