//! The DRAM cases' preparation on the device (kernels/prep.ptx, described by
//! `describe::device_prep`), checked without a GPU as every launch is (docs/testing.md, layer 5):
//! each fill and check launch matches its entry's `.param` list; under the PTX interpreter the
//! fills write exactly the words the host would generate (so a STREAM case's or a sweep point's
//! inputs are the same wherever they were made), every STREAM kernel's and sweep point's output
//! then passes the check on the device, and a planted wrong result (one element, a wrong scalar,
//! a kernel that never ran) is reported invalid with the host check's words: `count of n
//! elements wrong: [i] is …, should be …` (a sweep's: `values`, word for word the host's).

use ptxsim::{Arg as SimArg, DevicePtr, Memory, Module};
use roofprobe::backend::cuda::args::{
    Arg, Check, DevicePrep, Init, Launch, ModuleId, ParamKind, Role, TALLY_START, TALLY_WINDOW,
};
use roofprobe::backend::cuda::describe;
use roofprobe::cases::stream::{self, StreamKernel};
use roofprobe::cases::{intensity, Case, Family, Precision, Verdict};
use std::collections::BTreeMap;

/// Elements of the interpreter's arrays: not a multiple of a vector, a block or the grid.
const N: u64 = 4099;

/// The grid the interpreter runs: two blocks.
const GRID: u32 = 2;

fn parse(id: ModuleId) -> Module {
    Module::parse(&id.ptx()).unwrap_or_else(|e| panic!("{}: {e}", id.file()))
}

/// A case's arrays in the interpreter's memory: each allocated, those the device fills holding
/// garbage (so a word a fill skips shows), the others as the host would upload them.
struct Arrays {
    mem: Memory,
    ptrs: BTreeMap<Role, DevicePtr>,
}

impl Arrays {
    fn new(launch: &Launch, prep: &DevicePrep) -> Arrays {
        let mut mem = Memory::new();
        let mut ptrs = BTreeMap::new();
        let filled = |role: Role| prep.fills.iter().any(|f| f.buffers[0].role == role);
        for b in launch
            .buffers
            .iter()
            .chain(prep.check.iter().flat_map(|c| &c.buffers))
        {
            if ptrs.contains_key(&b.role) {
                continue;
            }
            let ptr = mem.alloc(b.bytes() as usize);
            let word = |i: u64| match filled(b.role) {
                true => 0xA5A5_A5A5_A5A5_A5A5,
                false => b.word(i, ptr.addr()),
            };
            if b.word_bytes == 8 {
                let words: Vec<u64> = (0..b.words).map(word).collect();
                mem.write(ptr, &words).unwrap();
            } else {
                let words: Vec<u32> = (0..b.words).map(|i| word(i) as u32).collect();
                mem.write(ptr, &words).unwrap();
            }
            ptrs.insert(b.role, ptr);
        }
        Arrays { mem, ptrs }
    }

    /// Runs `launch` on these arrays, its arguments as described.
    fn run(&mut self, launch: &Launch, m: &Module) -> Result<(), String> {
        let args: Vec<SimArg> = launch
            .params
            .iter()
            .map(|p| match p.arg {
                Arg::Buffer(role) => SimArg::Ptr(self.ptrs[&role]),
                Arg::U64(v) | Arg::B64(v) => SimArg::U64(v),
                Arg::U32(v) | Arg::B32(v) => SimArg::U32(v),
                Arg::F32(v) => SimArg::F32(v),
                Arg::F64(v) => SimArg::F64(v),
                Arg::TensorMap(_) => panic!("no tensor maps here"),
            })
            .collect();
        m.launch(
            &launch.entry.name,
            (launch.grid, 1, 1),
            (launch.block, 1, 1),
            0,
            &args,
            &mut self.mem,
        )
        .map(|_| ())
        .map_err(|e| e.to_string())
    }

    /// The words of the array of `role` (`words` of `word_bytes`), from word `from` on.
    fn read(&self, role: Role, word_bytes: u64, from: u64, words: u64) -> Vec<u64> {
        let ptr = self.ptrs[&role].byte_add(from * word_bytes);
        if word_bytes == 8 {
            self.mem.read::<u64>(ptr, words as usize).unwrap()
        } else {
            self.mem
                .read::<u32>(ptr, words as usize)
                .unwrap()
                .into_iter()
                .map(u64::from)
                .collect()
        }
    }

    /// Sets output element `i` to `bits`.
    fn plant(&mut self, word_bytes: u64, i: u64, bits: u64) {
        let ptr = self.ptrs[&Role::Output].byte_add(i * word_bytes);
        if word_bytes == 8 {
            self.mem.write(ptr, &[bits]).unwrap();
        } else {
            self.mem.write(ptr, &[bits as u32]).unwrap();
        }
    }
}

/// `case`'s launch run as the backend runs a case prepared on the device: its fills, its kernel
/// (`kernel`, or the case's own module), what `plant` does to the output, then its check on the
/// device (a map kernel, a sweep point: with its block records, as the backend reads them) or
/// the host's check of its partial sums (a reduction). The verdict, and whether every fill wrote
/// exactly the words the host would have generated.
fn prepared_run(
    launch: &Launch,
    kernel: Option<&Module>,
    plant: impl FnOnce(&mut Arrays),
) -> (Verdict, bool) {
    let prep = describe::device_prep(launch).expect("a STREAM launch is prepared on the device");
    let prep_module = parse(ModuleId::Prep);
    let mut arrays = Arrays::new(launch, &prep);
    let mut fills_as_host = true;
    for fill in &prep.fills {
        arrays.run(fill, &prep_module).unwrap();
        let b = &fill.buffers[0];
        let base = arrays.ptrs[&b.role].addr();
        let host: Vec<u64> = (0..b.words).map(|i| b.word(i, base)).collect();
        fills_as_host &= arrays.read(b.role, b.word_bytes, 0, b.words) == host;
    }
    let own = parse(launch.entry.module);
    arrays.run(launch, kernel.unwrap_or(&own)).unwrap();
    plant(&mut arrays);
    let out = launch.buffer(Role::Output).unwrap();
    let verdict = match &prep.check {
        Some(check) => {
            arrays.run(check, &prep_module).unwrap();
            let tally = arrays.read(Role::Tally, 8, 0, 2);
            let from_first = match tally[..] {
                [w, first] if w > 0 && first < out.words => arrays.read(
                    Role::Output,
                    out.word_bytes,
                    first,
                    TALLY_WINDOW.min(out.words - first),
                ),
                _ => Vec::new(),
            };
            let records = match launch.buffer(Role::Clocks) {
                Some(c) => arrays.read(Role::Clocks, 8, 0, c.words),
                None => Vec::new(),
            };
            launch.verify_with(check.verify_tally(&tally, &from_first), &records)
        }
        None => launch.verify_output(&arrays.read(Role::Output, out.word_bytes, 0, out.words)),
    };
    (verdict, fills_as_host)
}

/// Every STREAM case of both precisions, as the STREAM and the size-sweep families plan it.
fn stream_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for p in stream::PRECISIONS {
        for k in StreamKernel::ALL {
            out.push(k.case(p, N));
        }
        for k in [StreamKernel::Copy, StreamKernel::Triad] {
            let mut swept = k.case(p, N);
            swept.family = Family::Efficiency;
            out.push(swept);
        }
    }
    out
}

/// Each fill and check launch names an entry of kernels/prep.ptx and passes its `.param` list:
/// names, order, types and widths; every pointer argument is one of the case's arrays (or the
/// tally) of the described size; and it runs on the case's own grid.
#[test]
fn every_preparation_launch_matches_its_ptx_entry() {
    let m = parse(ModuleId::Prep);
    let mut used = std::collections::BTreeSet::new();
    for case in stream_cases().into_iter().chain(sweep_cases()) {
        let launch = describe::launch(&case, GRID).unwrap();
        let prep = describe::device_prep(&launch).unwrap();
        // every input filled, and the output poisoned (a sweep's block records are the host's)
        let filled = launch.buffers.iter().filter(|b| b.role != Role::Clocks);
        assert_eq!(prep.fills.len(), filled.count(), "{}", case.id());
        let reduction = StreamKernel::from_name(&case.kernel).is_some_and(|k| k.is_reduction());
        assert_eq!(prep.check.is_some(), !reduction, "{}", case.id());
        for l in prep.fills.iter().chain(&prep.check) {
            let kernel = m
                .kernel(&l.entry.name)
                .unwrap_or_else(|| panic!("no entry {} in prep.ptx", l.entry.name));
            assert_eq!(kernel.params.len(), l.params.len(), "{}", l.entry.name);
            for (declared, p) in kernel.params.iter().zip(&l.params) {
                let kind = p.arg.kind();
                assert_eq!(declared.name, format!("{}_{}", l.entry.name, p.name));
                assert_eq!(
                    (declared.ty.name(), declared.bytes),
                    (kind.ptx_type(), kind.bytes()),
                    "{} {}",
                    l.entry.name,
                    p.name
                );
                if let Arg::Buffer(role) = p.arg {
                    assert_eq!(kind, ParamKind::GlobalPtr);
                    let b = l
                        .buffer(role)
                        .expect("a pointer names an array of the launch");
                    if role != Role::Tally && role != Role::Gold {
                        assert_eq!(Some(b), launch.buffer(role), "the case's own array");
                    }
                }
            }
            assert_eq!((l.grid, l.block), (launch.grid, launch.block));
            used.insert(l.entry.name.clone());
        }
    }
    let mut entries: Vec<String> = m.entries().into_iter().map(str::to_string).collect();
    entries.sort();
    assert_eq!(
        used.into_iter().collect::<Vec<_>>(),
        entries,
        "every entry used"
    );
    // and nothing else is prepared on the device
    use roofprobe::cases::peak;
    let peak = peak::case(Precision::F32, 512, 1, peak::GPU_FMAS_PER_ITERATION);
    let launch = describe::launch(&peak, GRID).unwrap();
    assert_eq!(describe::device_prep(&launch), None);
    assert!(!describe::prepared_on_device(&peak, 0));
    let big = StreamKernel::Triad.case(Precision::F32, 2 << 20);
    assert!(describe::prepared_on_device(
        &big,
        describe::DEVICE_PREP_FROM_BYTES
    ));
    let small = StreamKernel::Triad.case(Precision::F32, 1 << 20);
    assert!(!describe::prepared_on_device(
        &small,
        describe::DEVICE_PREP_FROM_BYTES
    ));
    // the intensity sweep too, from the same size (its two arrays)
    let sweep = |words: u64| intensity::case(Precision::F32, 0, words);
    assert!(describe::prepared_on_device(
        &sweep(2 << 20),
        describe::DEVICE_PREP_FROM_BYTES
    ));
    assert!(!describe::prepared_on_device(
        &sweep((2 << 20) - 1),
        describe::DEVICE_PREP_FROM_BYTES
    ));
}

/// Under the interpreter, the fills write exactly the host's words, and every STREAM kernel's
/// output then passes the check on the device (a reduction's, the host's check of its partials).
#[test]
fn every_stream_case_filled_on_the_device_validates() {
    for case in stream_cases() {
        let launch = describe::launch(&case, GRID).unwrap();
        let (verdict, fills_as_host) = prepared_run(&launch, None, |_| {});
        assert!(fills_as_host, "{}: a fill wrote other words", case.id());
        assert!(verdict.valid, "{}: {}", case.id(), verdict.detail);
    }
}

/// A planted wrong result is invalid, checked on the device as on the host: one wrong element
/// (named with its index and values), every element wrong where the kernel got a wrong scalar,
/// and every element still the poison where the kernel never ran.
#[test]
fn a_planted_wrong_result_is_invalid_on_the_device() {
    for p in stream::PRECISIONS {
        let triad = StreamKernel::Triad.case(p, N);
        let launch = describe::launch(&triad, GRID).unwrap();
        let word_bytes = stream::element_bytes(p);
        // one element off by one
        let (verdict, _) = prepared_run(&launch, None, |a| {
            let i = 1234;
            let right = stream::expected(StreamKernel::Triad, i);
            let wrong = match p {
                Precision::F64 => (right + 1.0).to_bits(),
                _ => ((right + 1.0) as f32).to_bits() as u64,
            };
            a.plant(word_bytes, i, wrong);
        });
        assert!(!verdict.valid, "{p}");
        assert!(
            verdict
                .detail
                .starts_with(&format!("1 of {N} elements wrong: [1234] is ")),
            "{p}: {}",
            verdict.detail
        );
        assert!(verdict.detail.contains("diff 1e0"), "{}", verdict.detail);
        // the kernel given a wrong scalar: every element wrong, the first three shown
        let mut wrong_scalar = launch.clone();
        let scalar = wrong_scalar
            .params
            .iter_mut()
            .find(|q| q.name == "scalar")
            .unwrap();
        scalar.arg = match scalar.arg {
            Arg::F64(_) => Arg::F64(2.0),
            _ => Arg::F32(2.0),
        };
        let (verdict, _) = prepared_run(&wrong_scalar, None, |_| {});
        assert!(
            verdict
                .detail
                .starts_with(&format!("{N} of {N} elements wrong: [0] is ")),
            "{p}: {}",
            verdict.detail
        );
        assert_eq!(verdict.detail.matches("should be").count(), 3);
        // the kernel never ran (its entry returns at once): the poison stands everywhere
        let skipped = returning_at_once(&ModuleId::Stream.ptx(), &format!("triad_{p}"));
        let (verdict, _) = prepared_run(&launch, Some(&skipped), |_| {});
        assert!(
            verdict
                .detail
                .starts_with(&format!("{N} of {N} elements wrong: [0] is NaN")),
            "{p}: {}",
            verdict.detail
        );
    }
}

/// The check kernel itself, mutated so that it compares nothing (every element passes), lets a
/// planted wrong element through: the test above would fail with it, so it tests the check.
#[test]
fn a_check_that_compares_nothing_would_pass_a_wrong_element() {
    let launch = describe::launch(&StreamKernel::Copy.case(Precision::F32, N), GRID).unwrap();
    let prep = describe::device_prep(&launch).unwrap();
    let check = prep.check.as_ref().unwrap();
    let ptx = ModuleId::Prep.ptx();
    let blind = Module::parse(&ptx.replacen(
        "setp.eq.u32 %p2, %r5, %r6;",
        "setp.eq.u32 %p2, %r5, %r5;",
        1,
    ))
    .unwrap();
    let mut arrays = Arrays::new(&launch, &prep);
    for fill in &prep.fills {
        arrays.run(fill, &blind).unwrap();
    }
    arrays.run(&launch, &parse(ModuleId::Stream)).unwrap();
    arrays.plant(4, 7, 0);
    arrays.run(check, &blind).unwrap();
    let tally = arrays.read(Role::Tally, 8, 0, 2);
    assert_eq!(tally, TALLY_START.to_vec());
    assert!(check.verify_tally(&tally, &[]).valid);
}

/// A tally that no right check leaves is no verdict of "valid": inconsistent or out of range, or
/// not two words.
#[test]
fn a_tally_that_cannot_be_is_invalid() {
    let launch = describe::launch(&StreamKernel::Add.case(Precision::F64, N), GRID).unwrap();
    let prep = describe::device_prep(&launch).unwrap();
    let check = prep.check.unwrap();
    assert!(matches!(check.check, Check::Tally { n: N, .. }));
    assert!(check.verify_tally(&TALLY_START, &[]).valid);
    for (tally, why) in [
        (vec![0, 5], "inconsistent"),
        (vec![3, u64::MAX], "inconsistent"),
        (vec![N + 1, 0], "out of range"),
        (vec![1, N], "out of range"),
        (vec![0], "expected 2"),
    ] {
        let v = check.verify_tally(&tally, &[]);
        assert!(
            !v.valid && v.detail.contains(why),
            "{tally:?}: {}",
            v.detail
        );
    }
    // the wrong element outside the window read back is still counted, and named by index
    let v = check.verify_tally(&[2, 9], &[]);
    assert_eq!(
        v.detail,
        format!("2 of {N} elements wrong: the first at [9]")
    );
    // a launch that is not a device check has no tally
    assert!(!launch.verify_tally(&TALLY_START, &[]).valid);
}

/// Sweep points the tests run: every precision at a few k (the ends, one unrolled, one looped),
/// over [`SWEEP_N`] words.
fn sweep_cases() -> Vec<Case> {
    intensity::PRECISIONS
        .into_iter()
        .flat_map(|p| SWEEP_KS.map(|k| intensity::case(p, k, SWEEP_N)))
        .collect()
}

/// A sweep point's words: not a multiple of a vector, a block or the grid.
const SWEEP_N: u64 = 1031;

/// The k of [`sweep_cases`].
const SWEEP_KS: [u32; 4] = [0, 1, 64, 1024];

/// Under the interpreter, the sweep's fills write exactly `intensity::input` (the input) and the
/// poison (the output) in every precision, and the output then passes the check on the device:
/// its tally stays as it started, and the row, with its block records, is valid.
#[test]
fn every_sweep_point_filled_on_the_device_validates() {
    for case in sweep_cases() {
        let launch = describe::launch(&case, GRID).unwrap();
        let prep = describe::device_prep(&launch).unwrap();
        let input = prep.fills[0].buffers[0].clone();
        assert_eq!(input.init, Init::Sweep(case.precision), "{}", case.id());
        let (verdict, fills_as_host) = prepared_run(&launch, None, |a| {
            // the input as the device left it is `intensity::input`, word for word
            let words = a.read(Role::Input(0), input.word_bytes, 0, input.words);
            for (i, &w) in words.iter().enumerate() {
                assert_eq!(
                    w,
                    intensity::input(case.precision, i as u64),
                    "{} word {i}",
                    case.id()
                );
            }
        });
        assert!(fills_as_host, "{}: a fill wrote other words", case.id());
        assert!(verdict.valid, "{}: {}", case.id(), verdict.detail);
    }
}

/// One wrong output word of a sweep point, first, in the middle or last (for a packed format,
/// in either lane), is counted once by the check on the device, named by its index, and its
/// verdict is the host check's, word for word; put right, the tally is clean again.
#[test]
fn a_planted_wrong_sweep_word_is_counted_once_and_named() {
    let prep_module = parse(ModuleId::Prep);
    for case in sweep_cases() {
        let p = case.precision;
        let launch = describe::launch(&case, GRID).unwrap();
        let prep = describe::device_prep(&launch).unwrap();
        let check = prep.check.as_ref().unwrap();
        let mut arrays = Arrays::new(&launch, &prep);
        for fill in &prep.fills {
            arrays.run(fill, &prep_module).unwrap();
        }
        arrays.run(&launch, &parse(launch.entry.module)).unwrap();
        let out = launch.buffer(Role::Output).unwrap().clone();
        let right = arrays.read(Role::Output, out.word_bytes, 0, out.words);
        let tally = |a: &mut Arrays| {
            let at = a.ptrs[&Role::Tally];
            a.mem.write(at, &TALLY_START[..]).unwrap();
            a.run(check, &prep_module).unwrap();
            a.read(Role::Tally, 8, 0, 2)
        };
        assert_eq!(tally(&mut arrays), TALLY_START.to_vec(), "{}", case.id());
        let flips: &[u64] = match p {
            Precision::F16x2 | Precision::Bf16x2 => &[1, 1 << 16],
            _ => &[1],
        };
        for i in [0, SWEEP_N / 2, SWEEP_N - 1] {
            for &flip in flips {
                let mut words = right.clone();
                words[i as usize] ^= flip;
                arrays.plant(out.word_bytes, i, words[i as usize]);
                let t = tally(&mut arrays);
                assert_eq!(t, vec![1, i], "{} word {i} ^ {flip:#x}", case.id());
                let window = arrays.read(Role::Output, out.word_bytes, i, SWEEP_N - i);
                let device = check.verify_tally(&t, &window);
                let host = launch.verify_output(&words);
                assert!(!device.valid, "{}", case.id());
                assert_eq!(device.detail, host.detail, "{} word {i}", case.id());
                assert!(
                    device
                        .detail
                        .starts_with(&format!("1 of {SWEEP_N} values wrong: [{i}] is ")),
                    "{}: {}",
                    case.id(),
                    device.detail
                );
                arrays.plant(out.word_bytes, i, right[i as usize]);
            }
        }
        assert_eq!(tally(&mut arrays), TALLY_START.to_vec(), "{}", case.id());
    }
}

/// A sweep kernel that never ran leaves the poison everywhere, and one that ran with another
/// map (its `b` off) leaves wrong words: both invalid on the device, every word counted.
#[test]
fn a_sweep_kernel_that_did_not_run_or_ran_wrong_is_invalid_on_the_device() {
    for p in intensity::PRECISIONS {
        let launch = describe::launch(&intensity::case(p, 4, SWEEP_N), GRID).unwrap();
        let skipped = returning_at_once(&launch.entry.module.ptx(), &launch.entry.name);
        let (verdict, _) = prepared_run(&launch, Some(&skipped), |_| {});
        assert!(
            verdict
                .detail
                .starts_with(&format!("{SWEEP_N} of {SWEEP_N} values wrong: [0] is ")),
            "{p}: {}",
            verdict.detail
        );
        let mut wrong_map = launch.clone();
        let b = wrong_map.params.iter_mut().find(|q| q.name == "b").unwrap();
        b.arg = match b.arg {
            Arg::B64(v) => Arg::B64(v ^ 1 << 40),
            Arg::B32(v) => Arg::B32(v ^ 1 << 8),
            other => panic!("{p}: b is {other:?}"),
        };
        let (verdict, _) = prepared_run(&wrong_map, None, |_| {});
        assert!(!verdict.valid, "{p}");
        assert!(
            verdict.detail.contains(" values wrong: ["),
            "{p}: {}",
            verdict.detail
        );
    }
}

/// The sweep's check kernels, mutated so that they compare nothing or gather lane 1 from lane
/// 0's entry, let a planted wrong word through: the tests above would fail with them, so they
/// test the checks.
#[test]
fn a_sweep_check_that_compares_nothing_or_skips_lane_1_would_pass_a_wrong_word() {
    let ptx = ModuleId::Prep.ptx();
    for (p, from, to, flip) in [
        (
            Precision::F32,
            "setp.eq.u32 %p2, %r6, %r5;",
            "setp.eq.u32 %p2, %r5, %r5;",
            1u64,
        ),
        (
            Precision::F64,
            "setp.eq.u64 %p2, %rd16, %rd15;",
            "setp.eq.u64 %p2, %rd15, %rd15;",
            1,
        ),
        (
            Precision::F16x2,
            "and.b32 %r15, %r15, 0xFFFF0000;",
            "and.b32 %r15, %r6, 0xFFFF0000;",
            1 << 16,
        ),
    ] {
        assert_eq!(ptx.matches(from).count(), 1, "{from}");
        let blind = Module::parse(&ptx.replacen(from, to, 1)).unwrap();
        let launch = describe::launch(&intensity::case(p, 2, SWEEP_N), GRID).unwrap();
        let prep = describe::device_prep(&launch).unwrap();
        let check = prep.check.as_ref().unwrap();
        let mut arrays = Arrays::new(&launch, &prep);
        for fill in &prep.fills {
            arrays.run(fill, &blind).unwrap();
        }
        arrays.run(&launch, &parse(launch.entry.module)).unwrap();
        let word_bytes = launch.buffer(Role::Output).unwrap().word_bytes;
        let i = 7;
        let right = arrays.read(Role::Output, word_bytes, i, 1)[0];
        arrays.plant(word_bytes, i, right ^ flip);
        arrays.run(check, &blind).unwrap();
        let tally = arrays.read(Role::Tally, 8, 0, 2);
        assert_eq!(tally, TALLY_START.to_vec(), "{p}: {to}");
    }
}

/// The module `ptx` with its kernel `entry` returning at once: a kernel that never ran.
fn returning_at_once(ptx: &str, entry: &str) -> Module {
    let at = ptx.find(&format!(".entry {entry}(")).unwrap();
    let body = ptx[at..].find('{').unwrap() + at + 1;
    Module::parse(&format!("{}\n    ret;\n{}", &ptx[..body], &ptx[body..])).unwrap()
}
