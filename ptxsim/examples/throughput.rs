//! How fast the interpreter runs: `triad_f32` and `dot_f32` of kernels/stream.ptx over 1 Mi
//! elements (or another size), timed on the host, reported as thread-instructions per second.
//!
//! ```text
//! cargo run -p ptxsim --release --example throughput [-- [--no-global-races] ELEMENTS [PTX_FILE]]
//! ```
//!
//! `--no-global-races` runs with [`LaunchConfig::check_global_races`] off, to show what the
//! global-memory race detector costs.
//!
//! The figure is the interpreter's speed on the machine it runs on, printed as measured (the
//! best of several launches, in the thread's CPU time where the platform has it, so that
//! other processes on a busy machine do not count; wall time otherwise, and it says which);
//! nothing here is a GPU figure. Each launch's output is checked.

use std::time::Instant;

use ptxsim::{Arg, LaunchConfig, LaunchStats, Memory, Module};

const LAUNCHES: usize = 7;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let no_races = args.iter().any(|a| a == "--no-global-races");
    args.retain(|a| a != "--no-global-races");
    let n: usize = args.first().map_or(Ok(1 << 20), |s| s.parse())?;
    let path = args.get(1).cloned().unwrap_or_else(|| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels/stream.ptx").to_string()
    });
    let module = Module::parse(&std::fs::read_to_string(&path)?)?;
    let mut mem = Memory::new();
    // Dyadic inputs: the dot's partial sums are exact in any order.
    let a: Vec<f32> = (0..n).map(|i| (i % 4) as f32 * 0.25).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 8) as f32 * 0.5).collect();
    let (pa, pb) = (mem.alloc_from(&a), mem.alloc_from(&b));
    let pc = mem.alloc(n * 4);
    // A grid as the CUDA backend sizes it for a mid-size GPU: many blocks, a grid-stride loop.
    let blocks = 216u32;
    let mut config = LaunchConfig::new((blocks, 1, 1), (256, 1, 1), 0);
    config.check_global_races = !no_races;
    let partials = mem.alloc(blocks as usize * 4);

    let triad = [
        Arg::Ptr(pa),
        Arg::Ptr(pb),
        Arg::Ptr(pc),
        Arg::U64(n as u64),
        Arg::F32(3.0),
    ];
    let (stats, secs) = best_of(
        |mem| module.launch_with("triad_f32", &config, &triad, mem),
        &mut mem,
    )?;
    let c = mem.read::<f32>(pc, n)?;
    let wrong = (0..n).filter(|&i| c[i] != b[i].mul_add(3.0, a[i])).count();
    if wrong > 0 {
        return Err(format!("triad_f32: {wrong} of {n} outputs are wrong").into());
    }
    report("triad_f32", n, &stats, secs);

    let dot = [
        Arg::Ptr(pa),
        Arg::Ptr(pb),
        Arg::Ptr(partials),
        Arg::U64(n as u64),
    ];
    let (stats, secs) = best_of(
        |mem| module.launch_with("dot_f32", &config, &dot, mem),
        &mut mem,
    )?;
    let sum: f64 = mem
        .read::<f32>(partials, blocks as usize)?
        .iter()
        .map(|&x| x as f64)
        .sum();
    let want: f64 = a.iter().zip(&b).map(|(&x, &y)| x as f64 * y as f64).sum();
    if sum != want {
        return Err(format!("dot_f32: {sum} instead of {want}").into());
    }
    report("dot_f32", n, &stats, secs);
    Ok(())
}

fn best_of(
    mut launch: impl FnMut(&mut Memory) -> Result<LaunchStats, ptxsim::Error>,
    mem: &mut Memory,
) -> Result<(LaunchStats, f64), ptxsim::Error> {
    let mut best = f64::INFINITY;
    let mut stats = LaunchStats::default();
    for _ in 0..LAUNCHES {
        let (start, start_cpu) = (Instant::now(), thread_cpu_secs());
        stats = launch(mem)?;
        let secs = match (start_cpu, thread_cpu_secs()) {
            (Some(a), Some(b)) => b - a,
            _ => start.elapsed().as_secs_f64(),
        };
        best = best.min(secs);
    }
    Ok((stats, best))
}

/// CPU time of the calling thread (ptxsim runs a launch on it), where the platform has it.
fn thread_cpu_secs() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through a valid pointer.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
        (rc == 0).then_some(t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

fn report(entry: &str, n: usize, stats: &LaunchStats, secs: f64) {
    let clock = if thread_cpu_secs().is_some() {
        "thread CPU time"
    } else {
        "wall time"
    };
    println!(
        "{entry}, {n} elements: {} thread-instructions in {:.4} s of {clock} (best of {LAUNCHES}): {:.1} M thread-instructions/s",
        stats.thread_instructions,
        secs,
        stats.thread_instructions as f64 / secs / 1e6
    );
}
