//! `roofprobe devices`: every CUDA device the driver reports, then the host CPU.

use crate::backend::cuda::{device_count, driver_library, CudaBackend};
use crate::backend::host::host_info;
use crate::backend::Backend;
use crate::cli::DevicesArgs;
use crate::commands::{emit, emit_json};
use crate::device::{BackendKind, DeviceInfo};
use crate::units::bytes;
use crate::Result;

/// Renders one device as `key: value` lines, each fact once: its identity, then its size,
/// clocks, caches, memory and driver.
pub fn describe(info: &DeviceInfo) -> String {
    let mut lines = vec![format!("{} — {}", info.id, info.name)];
    let mut field = |k: &str, v: String| lines.push(format!("  {k:<22} {v}"));
    for (k, v) in info.identity.fields() {
        field(k, v);
    }
    if !info.compute_capability.is_empty() {
        field("compute capability", info.compute_capability.clone());
        field("SMs", info.units.to_string());
    }
    // The host says how many CPUs it may use in its own line (`extra`).
    if let Some(c) = info.clock_mhz {
        field("max clock", format!("{c:.0} MHz"));
    }
    if let Some(c) = info.memory_clock_mhz {
        field("memory clock", format!("{c:.0} MHz"));
    }
    if let Some(b) = info.memory_bus_bits {
        field("memory bus", format!("{b} bits"));
    }
    for (k, v) in &info.extra {
        field(k, v.clone());
    }
    for c in &info.caches {
        let per = if c.instances > 1 {
            format!(" × {}", c.instances)
        } else {
            String::new()
        };
        field(&c.name, format!("{}{per}", bytes(c.size_bytes)));
    }
    // The capacity family's first figures (`run` adds a GPU's largest single allocation, which
    // takes allocating).
    match info.backend {
        BackendKind::Cuda => field(
            "memory",
            format!(
                "{} total, {} free after the context was created, {} in use then (the \
                 context's cost at most)",
                bytes(info.memory_total_bytes),
                bytes(info.memory_free_bytes),
                bytes(
                    info.memory_total_bytes
                        .saturating_sub(info.memory_free_bytes)
                )
            ),
        ),
        BackendKind::Host => field(
            "memory",
            format!(
                "{} total, {} available (MemTotal, MemAvailable)",
                bytes(info.memory_total_bytes),
                bytes(info.memory_free_bytes)
            ),
        ),
    }
    if !info.driver.is_empty() {
        let label = match info.backend {
            BackendKind::Host => "OS",
            BackendKind::Cuda => "driver",
        };
        field(label, info.driver.clone());
    }
    lines.join("\n")
}

/// A CUDA device the driver lists but that could not be opened.
#[derive(Debug, serde::Serialize)]
pub struct Unusable {
    pub id: String,
    pub error: String,
}

/// What `devices --json` prints.
#[derive(Debug, serde::Serialize)]
pub struct Listing {
    /// `N devices`, `no device`, or why there is no CUDA (no driver, a driver error).
    pub cuda: String,
    /// The driver library loaded and the CUDA version it reports (`PATH -> FILE, CUDA 12.2`),
    /// so a driver that lists no device, or will not initialise, is named; `null` where no
    /// libcuda could be loaded.
    pub driver: Option<String>,
    /// Every usable CUDA device, then the host.
    pub devices: Vec<DeviceInfo>,
    pub unusable: Vec<Unusable>,
    /// The GEMM rows' reference line on a GPU: the cuBLAS found (version, path), or why none.
    pub cublas: String,
    /// With `--jit-out`: each module a device takes whose driver code could not be written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub jit_errors: Vec<String>,
}

/// Every CUDA device the driver reports, then the host; with `jit_out`, each GPU's driver code
/// for every module written under it (`cuda<N>/`).
pub fn listing(jit_out: Option<&std::path::Path>, overwrite: crate::files::Overwrite) -> Listing {
    let mut out = Listing {
        cuda: String::new(),
        driver: None,
        devices: Vec::new(),
        unusable: Vec::new(),
        cublas: String::new(),
        jit_errors: Vec::new(),
    };
    match device_count() {
        Ok(0) => out.cuda = "the driver reports no device".to_string(),
        Ok(n) => {
            out.cuda = format!("{n} device(s)");
            for i in 0..n {
                match CudaBackend::open(i) {
                    Ok(b) => {
                        let mut info = b.info().clone();
                        info.extra.extend(b.jit_report());
                        if let Some(dir) = jit_out {
                            let code =
                                b.write_driver_code(&dir.join(format!("cuda{i}")), overwrite);
                            info.extra.extend(code.lines);
                            out.jit_errors
                                .extend(code.errors.into_iter().map(|e| format!("cuda:{i}: {e}")));
                        }
                        out.devices.push(info)
                    }
                    Err(e) => out.unusable.push(Unusable {
                        id: format!("cuda:{i}"),
                        error: e.to_string(),
                    }),
                }
            }
        }
        Err(e) => out.cuda = format!("none ({e})"),
    }
    out.driver = driver_library();
    // (after the driver: each device's `libcuda` line names the path the loader knows the
    // driver's file by, the first it was opened under, and that must be the driver's own)
    out.cublas = crate::backend::cuda::cublas::describe();
    out.devices.push(host_info());
    out
}

pub fn devices(args: &DevicesArgs) -> Result<i32> {
    // A malformed limit on the driver's start is a usage error (exit 2), as for `run`, before
    // anything is listed.
    crate::backend::cuda::init_timeout()?;
    let listing = listing(
        args.jit_out.as_deref(),
        crate::files::Overwrite::from_force(args.force),
    );
    // Everything is printed first; then a request for the driver's code that came to nothing,
    // or to less than the devices take, is an error.
    let jit_outcome = || -> Result<i32> {
        let Some(dir) = &args.jit_out else {
            return Ok(0);
        };
        let gpus = listing
            .devices
            .iter()
            .filter(|d| d.backend == BackendKind::Cuda)
            .count();
        if gpus == 0 {
            crate::say!(
                "error: --jit-out {}: no CUDA device to compile for (CUDA: {})",
                dir.display(),
                crate::text::one_line(&listing.cuda)
            );
            return Ok(1);
        }
        if let Some(first) = listing.jit_errors.first() {
            crate::say!(
                "error: the driver's code of {} module(s) was not written; the first: {}",
                listing.jit_errors.len(),
                crate::text::one_line(first)
            );
            return Ok(1);
        }
        Ok(0)
    };
    if args.json {
        let text = serde_json::to_string_pretty(&listing)
            .map_err(|e| crate::Error::Internal(format!("serialising the device list: {e}")))?;
        emit_json(&format!("{text}\n"))?;
        return jit_outcome();
    }
    let gpus = listing
        .devices
        .iter()
        .filter(|d| d.backend == BackendKind::Cuda);
    if gpus.clone().next().is_none() && listing.unusable.is_empty() {
        match &listing.driver {
            Some(driver) => emit(&format!("CUDA: {}\n  libcuda {driver}\n\n", listing.cuda))?,
            None => emit(&format!("CUDA: {}\n\n", listing.cuda))?,
        }
    }
    for d in gpus {
        emit(&format!("{}\n\n", describe(d)))?;
    }
    for u in &listing.unusable {
        emit(&format!("{} — unusable: {}\n\n", u.id, u.error))?;
    }
    emit(&format!("cuBLAS: {}\n\n", listing.cublas))?;
    for d in listing
        .devices
        .iter()
        .filter(|d| d.backend == BackendKind::Host)
    {
        emit(&format!("{}\n", describe(d)))?;
    }
    jit_outcome()
}
