//! `roofprobe devices`: every CUDA device the driver reports, then the host CPU.

use crate::backend::cuda::{device_count, CudaBackend};
use crate::backend::host::host_info;
use crate::backend::{Backend, DeviceInfo};
use crate::commands::emit;
use crate::report::table::bytes;
use crate::Result;

/// Renders one device as `key: value` lines.
pub fn describe(info: &DeviceInfo) -> String {
    let mut lines = vec![format!("{} — {}", info.id, info.name)];
    let mut field = |k: &str, v: String| lines.push(format!("  {k:<22} {v}"));
    if !info.compute_capability.is_empty() {
        field("compute capability", info.compute_capability.clone());
        field("SMs", info.units.to_string());
    } else {
        field("CPUs used", info.units.to_string());
    }
    if let Some(c) = info.clock_mhz {
        field("max clock", format!("{c:.0} MHz"));
    }
    if let Some(c) = info.memory_clock_mhz {
        field("memory clock", format!("{c:.0} MHz"));
    }
    if let Some(b) = info.memory_bus_bits {
        field("memory bus", format!("{b} bits"));
    }
    for c in &info.caches {
        let per = if c.instances > 1 {
            format!(" × {}", c.instances)
        } else {
            String::new()
        };
        field(&c.name, format!("{}{per}", bytes(c.size_bytes)));
    }
    field(
        "memory",
        format!(
            "{} total, {} free",
            bytes(info.memory_total_bytes),
            bytes(info.memory_free_bytes)
        ),
    );
    if !info.driver.is_empty() {
        field("driver", info.driver.clone());
    }
    for (k, v) in &info.extra {
        field(k, v.clone());
    }
    lines.join("\n")
}

pub fn devices() -> Result<i32> {
    match device_count() {
        Ok(0) => emit("CUDA: the driver reports no device\n\n")?,
        Ok(n) => {
            for i in 0..n {
                match CudaBackend::open(i) {
                    Ok(b) => emit(&format!("{}\n\n", describe(b.info())))?,
                    Err(e) => emit(&format!("cuda:{i} — unusable: {e}\n\n"))?,
                }
            }
        }
        Err(e) => emit(&format!("CUDA: none ({e})\n\n"))?,
    }
    // The GEMM rows' reference line on a GPU.
    emit(&format!(
        "cuBLAS: {}\n\n",
        crate::backend::cublas::describe()
    ))?;
    emit(&format!("{}\n", describe(&host_info())))?;
    Ok(0)
}
