//! What the simulated device is, read once from the `SIMCUDA` environment variable at `cuInit`:
//! comma-separated `key=value` settings, every one optional.
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `devices` | how many devices the driver reports | 1 |
//! | `name` | the name `cuDeviceGetName` reports | `roofprobe simulated GPU` |
//! | `cc` | compute capability, `major.minor` | 8.9 |
//! | `sms` | multiprocessors | 2 |
//! | `clock_mhz` | SM clock: the attribute, and the rate `%clock64` runs at against `%globaltimer` | 64 |
//! | `clock_fall` | `START:END:LAUNCHES`: the SM clock the device's kernels run at (their `%clock64` against `%globaltimer`, and NVML's current SM clock while they run) falls linearly from START MHz at its first launch to END at its LAUNCHES-th and stays there, as a power-capped part's does while a heavy load settles; every kernel's launches count, in the order they are queued, and the trace gets a `clock NAME MHZ` line after each launch's. `clock_mhz` stays what the attribute and NVML's maximum say | the clock holds at `clock_mhz` |
//! | `clock_attribute` | what `CU_DEVICE_ATTRIBUTE_CLOCK_RATE` reports, kHz (0: nothing, as the attribute CUDA deprecated may one day; NVML's maximum clock then stands in) | `clock_mhz` × 1000 |
//! | `memory_p2` | NVML's current memory clock, MHz, below the maximum of 1000 MHz (the `MEMORY_CLOCK_RATE` attribute's, NVML's maximum and application clock), as a GeForce board computing in P2 reads it (an RTX 3090: 9501 MHz of 9751) | the maximum |
//! | `l2` | L2 bytes | 32 KiB |
//! | `memory` | device memory bytes | 1 MiB |
//! | `context` | bytes the context itself takes from `memory` | 128 KiB |
//! | `blocks_per_sm` | the most blocks the occupancy query reports per SM | 1 |
//! | `driver` | `cuDriverGetVersion` (12040 = CUDA 12.4) | 12040 |
//! | `init` | `hang`: `cuInit` never returns; or a CUresult number it returns | |
//! | `reject` | a module whose PTX contains this text fails to load (`CUDA_ERROR_INVALID_PTX`) | |
//! | `fault` | launches of this kernel fault (`CUDA_ERROR_ILLEGAL_ADDRESS`, sticky) | |
//! | `wrong` | after each launch of this kernel (or of each of several, `+`-separated), one word of its output is wrong: of the kernel's parameters that are the start of a device allocation, the first (in parameter order) whose bytes the launch changed is its output, and in it the 8-byte word at byte 8·⌊bytes/16⌋ (the middle, rounded down to 8 bytes) gets bit 22 of its low 4 bytes flipped. That is the top mantissa bit of f32 element 2·⌊n/4⌋ of n, mantissa bit 22 of f64 element ⌊n/2⌋, a mantissa bit of an f16x2 or bf16x2 word's upper half, and 2^22 off an i32: never an infinity or a NaN. A launch that changes no allocation (or only one under 4 bytes) is left as it is; the trace gets a `wrong NAME 0xADDRESS` line with the word's address | none |
//! | `hang` | launches of this kernel, or calls of this library routine (`cublasGemmEx`, `cublasLtMatmul`), never finish | |
//! | `fault_code` | the code a `fault` kernel's launch leaves sticky: a number, such as 226 (`CUDA_ERROR_CONTAINED`, a CUDA 12.x code the CUDA 12.0 binding's enum lacks) | 700 (`CUDA_ERROR_ILLEGAL_ADDRESS`) |
//! | `watchdog` | seconds a kernel may run, as a display's watchdog allows (`CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT` 1): a kernel still running after them (a `hang` kernel too) ends with `CUDA_ERROR_LAUNCH_TIMEOUT`, sticky | none (attribute 0) |
//! | `trace` | a file that gets one line per launch (`launch …`, then `args …`: its arguments, addresses in hex, a tensor map as `map@` its address), attribute change, module load and library call (`library cublasGemmEx MxNxK a … b … c …`) | |
//! | `power_w` | NVML's power draw while work runs (a quarter of it idle); the enforced limit is twice it | 300 |
//! | `energy_ms` | how often NVML's energy counter moves: it shows the energy drawn as of its last update, at most this many milliseconds old | 100 |
//! | `power_reading` | NVML's power reading: `average`, the last second's (as Ampere's and later boards but the A100 report it), or a number of watts it reports whatever the device does (so a test can tell a figure taken from the readings from one taken from the energy counter) | `average` |
//! | `throttle` | NVML's clock-event reasons while work runs, `+`-separated names ([`REASONS`]); idle, `gpu_idle` | none |
//! | `nvml_reasons` | which of NVML's two reason calls answer: `both`, `events` (the deprecated `…ThrottleReasons` is gone, as a later driver may drop it) or `throttle` (an older driver, without `…ClocksEventReasons`) | `both` |
//! | `others` | processes other than the caller that NVML lists on each device | 0 |
//! | `workload` | a scripted job NVML reports (GPM metrics, utilisation, memory, clocks and power follow it): phases separated by `;` ([`crate::workload`]) | none |
//! | `job_pid` | the process id NVML lists the scripted job under, with the memory it holds | 4100000 |
//! | `gpm` | NVML's GPM metrics: `yes`, `no` (the device has none, as before Hopper) or `absent` (an NVML too old for them: every `nvmlGpm…` call answers `FUNCTION_NOT_FOUND`) | `yes` from compute capability 9.0, else `no` |
//! | `vanish` | seconds after NVML starts when the device falls off the bus: every NVML call on it answers `GPU_IS_LOST` | never |
//! | `smem_base` | where a kernel's dynamic shared memory starts: `declared` (at its `.extern .shared` declaration's alignment) or `misaligned` (16-byte aligned and never 1024-byte aligned, which real toolchains may give: NVIDIA/cccl#5122) | `declared` |
//! | `ptxas` | the ptxas the linker (`cuLinkComplete`) compiles a module with, for the device's architecture: the machine code and the `-v` log a driver's JIT gives; without it the linker answers `CUDA_ERROR_JIT_COMPILER_NOT_FOUND` | |
//!
//! Sizes take `K`, `M` or `G` suffixes (binary). The defaults are a device small enough that
//! roofprobe's whole plan runs under the interpreter in about a minute. Unknown keys are an
//! error at `cuInit`, printed to stderr: a misspelt setting must not silently test the default.

use crate::workload::Workload;
use std::path::PathBuf;

/// The device's maximum memory clock, MHz: the `MEMORY_CLOCK_RATE` attribute's, and NVML's
/// maximum and application memory clocks.
pub const MEMORY_CLOCK_MHZ: u32 = 1000;

/// What `cuInit` does.
#[derive(Clone, Debug, PartialEq)]
pub enum InitBehaviour {
    Succeed,
    /// Never returns (a driver stuck on a device that does not answer).
    Hang,
    /// Returns this CUresult.
    Fail(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub devices: u32,
    pub name: String,
    pub cc: (u32, u32),
    pub sms: u32,
    pub clock_mhz: u32,
    /// A clock that falls over the device's launches; `None`: every launch at `clock_mhz`.
    pub clock_fall: Option<ClockFall>,
    /// `CU_DEVICE_ATTRIBUTE_CLOCK_RATE` in kHz, where it is not `clock_mhz`'s.
    pub clock_attribute_khz: Option<u32>,
    /// NVML's current memory clock in MHz where it is below the maximum (a P2 state).
    pub memory_p2_mhz: Option<u32>,
    pub l2_bytes: u64,
    pub memory_bytes: u64,
    pub context_bytes: u64,
    pub blocks_per_sm: u32,
    pub driver_version: i32,
    pub init: InitBehaviour,
    pub reject: Option<String>,
    /// A kernel (entry name) whose launches fault.
    pub fault: Option<String>,
    /// A kernel (entry name) whose launches never finish.
    pub hang: Option<String>,
    /// Kernels (entry names) each launch of which leaves one word of its output wrong.
    pub wrong: Vec<String>,
    pub trace: Option<PathBuf>,
    /// NVML: watts drawn while work runs.
    pub power_w: u32,
    /// NVML: milliseconds between the energy counter's updates.
    pub energy_ms: u32,
    /// NVML: the watts its power reading reports whatever the device does; `None`: the last
    /// second's average.
    pub power_reading: Option<u32>,
    /// NVML: the clock-event reason bits while work runs.
    pub throttle: u64,
    pub nvml_reasons: NvmlReasons,
    /// NVML: processes other than the caller listed on each device.
    pub others: u32,
    /// The ptxas the linker compiles with.
    pub ptxas: Option<PathBuf>,
    /// NVML: the scripted job it reports.
    pub workload: Option<Workload>,
    /// NVML: the process id the scripted job is listed under.
    pub job_pid: u32,
    /// NVML: whether the GPM metrics answer; `None`: from compute capability 9.0.
    pub gpm: Option<Gpm>,
    /// NVML: seconds after its start when the device is lost.
    pub vanish_secs: Option<f64>,
    /// Where each kernel's dynamic shared memory starts.
    pub dynamic_shared_base: ptxsim::DynamicSharedBase,
    /// The code a `fault` kernel's launch leaves sticky.
    pub fault_code: u32,
    /// A display's watchdog: seconds a kernel may run before the driver ends it.
    pub watchdog_secs: Option<f64>,
}

/// A clock falling over launches, as a power-capped part's falls while a load settles: START
/// MHz at the device's first launch, END from its LAUNCHES-th on, linear between.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockFall {
    pub start_mhz: u32,
    pub end_mhz: u32,
    pub launches: u64,
}

impl ClockFall {
    /// Parses `START:END:LAUNCHES` (END at most START, both positive; LAUNCHES at least 2).
    fn parse(value: &str) -> Result<ClockFall, String> {
        let wrong = || format!("clock_fall=`{value}` is not START:END:LAUNCHES (MHz, MHz, count)");
        let mut parts = value.split(':').map(str::trim);
        let (Some(start), Some(end), Some(launches), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(wrong());
        };
        let fall = ClockFall {
            start_mhz: start.parse().map_err(|_| wrong())?,
            end_mhz: end.parse().map_err(|_| wrong())?,
            launches: launches.parse().map_err(|_| wrong())?,
        };
        if fall.end_mhz == 0 || fall.end_mhz > fall.start_mhz || fall.launches < 2 {
            return Err(format!(
                "clock_fall=`{value}`: the clock must fall (0 < END <= START) over at least 2 \
                 launches"
            ));
        }
        Ok(fall)
    }

    /// The clock of the device's `launch`-th launch (0: its first), whole MHz.
    pub fn mhz_at(&self, launch: u64) -> u32 {
        let along = launch.min(self.launches - 1) as f64 / (self.launches - 1) as f64;
        let fall = f64::from(self.start_mhz - self.end_mhz) * along;
        (f64::from(self.start_mhz) - fall).round() as u32
    }
}

/// What NVML's GPM entry points do.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gpm {
    /// The device supports GPM, and the metrics answer.
    Yes,
    /// The device does not support GPM (`isSupportedDevice` 0, the sample calls
    /// `NOT_SUPPORTED`), as before Hopper.
    No,
    /// NVML is too old: every `nvmlGpm…` call answers `FUNCTION_NOT_FOUND`.
    Absent,
}

/// Which of NVML's two calls for the current clock-event reasons answer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum NvmlReasons {
    Both,
    /// Only `nvmlDeviceGetCurrentClocksEventReasons` (the deprecated name answers
    /// `NVML_ERROR_FUNCTION_NOT_FOUND`).
    EventsOnly,
    /// Only the deprecated `nvmlDeviceGetCurrentClocksThrottleReasons`.
    ThrottleOnly,
}

/// NVML's clock-event reason bits (nvml.h, `nvmlClocksEventReason*`) by the names `throttle`
/// takes.
pub const REASONS: [(&str, u64); 9] = [
    ("gpu_idle", 0x1),
    ("applications_clocks", 0x2),
    ("sw_power_cap", 0x4),
    ("hw_slowdown", 0x8),
    ("sync_boost", 0x10),
    ("sw_thermal_slowdown", 0x20),
    ("hw_thermal_slowdown", 0x40),
    ("hw_power_brake", 0x80),
    ("display_clock", 0x100),
];

impl Default for Config {
    fn default() -> Self {
        Config {
            devices: 1,
            name: "roofprobe simulated GPU".to_string(),
            cc: (8, 9),
            sms: 2,
            clock_mhz: 64,
            clock_fall: None,
            clock_attribute_khz: None,
            memory_p2_mhz: None,
            l2_bytes: 32 << 10,
            memory_bytes: 1 << 20,
            context_bytes: 128 << 10,
            blocks_per_sm: 1,
            driver_version: 12040,
            init: InitBehaviour::Succeed,
            reject: None,
            fault: None,
            hang: None,
            wrong: Vec::new(),
            trace: None,
            power_w: 300,
            energy_ms: 100,
            power_reading: None,
            throttle: 0,
            nvml_reasons: NvmlReasons::Both,
            others: 0,
            ptxas: None,
            workload: None,
            job_pid: 4_100_000,
            gpm: None,
            vanish_secs: None,
            dynamic_shared_base: ptxsim::DynamicSharedBase::AsDeclared,
            fault_code: 700,
            watchdog_secs: None,
        }
    }
}

fn bytes(value: &str) -> Result<u64, String> {
    let v = value.trim();
    let (digits, shift) = match v.char_indices().last() {
        Some((i, 'K' | 'k')) => (&v[..i], 10),
        Some((i, 'M' | 'm')) => (&v[..i], 20),
        Some((i, 'G' | 'g')) => (&v[..i], 30),
        _ => (v, 0),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| format!("`{value}` is not a size"))
}

fn number<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("{key}=`{value}` is not a number"))
}

impl Config {
    /// Parses `key=value,key=value`.
    pub fn parse(text: &str) -> Result<Config, String> {
        let mut c = Config::default();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("`{item}` is not key=value"))?;
            match key.trim() {
                "devices" => c.devices = number(key, value)?,
                "name" => c.name = value.to_string(),
                "cc" => {
                    let (major, minor) = value
                        .split_once('.')
                        .ok_or_else(|| format!("cc=`{value}` is not major.minor"))?;
                    c.cc = (number(key, major)?, number(key, minor)?);
                }
                "sms" => c.sms = number(key, value)?,
                "clock_mhz" => c.clock_mhz = number(key, value)?,
                "clock_fall" => c.clock_fall = Some(ClockFall::parse(value)?),
                "clock_attribute" => c.clock_attribute_khz = Some(number(key, value)?),
                "memory_p2" => {
                    c.memory_p2_mhz = Some(
                        number(key, value)
                            .ok()
                            .filter(|mhz| (1..MEMORY_CLOCK_MHZ).contains(mhz))
                            .ok_or_else(|| {
                                format!(
                                    "memory_p2=`{value}`: a clock in MHz below the maximum, \
                                     {MEMORY_CLOCK_MHZ}"
                                )
                            })?,
                    )
                }
                "l2" => c.l2_bytes = bytes(value)?,
                "memory" => c.memory_bytes = bytes(value)?,
                "context" => c.context_bytes = bytes(value)?,
                "blocks_per_sm" => c.blocks_per_sm = number(key, value)?,
                "driver" => c.driver_version = number(key, value)?,
                "init" => {
                    c.init = match value {
                        "hang" => InitBehaviour::Hang,
                        code => InitBehaviour::Fail(number(key, code)?),
                    }
                }
                "reject" => c.reject = Some(value.to_string()),
                "fault" => c.fault = Some(value.to_string()),
                "hang" => c.hang = Some(value.to_string()),
                "wrong" => {
                    c.wrong = value.split('+').map(|n| n.trim().to_string()).collect();
                    if c.wrong.iter().any(String::is_empty) {
                        return Err(format!("wrong=`{value}`: kernel names, `+`-separated"));
                    }
                }
                "trace" => c.trace = Some(PathBuf::from(value)),
                "ptxas" => c.ptxas = Some(PathBuf::from(value)),
                "power_w" => c.power_w = number(key, value)?,
                "energy_ms" => c.energy_ms = number(key, value)?,
                "power_reading" => {
                    c.power_reading = match value {
                        "average" => None,
                        watts => Some(number(key, watts)?),
                    }
                }
                "throttle" => {
                    for name in value.split('+').map(str::trim) {
                        let (_, bit) = REASONS
                            .iter()
                            .find(|(n, _)| *n == name)
                            .ok_or_else(|| format!("throttle: unknown reason `{name}`"))?;
                        c.throttle |= bit;
                    }
                }
                "nvml_reasons" => {
                    c.nvml_reasons = match value {
                        "both" => NvmlReasons::Both,
                        "events" => NvmlReasons::EventsOnly,
                        "throttle" => NvmlReasons::ThrottleOnly,
                        other => {
                            return Err(format!("nvml_reasons=`{other}`: both, events or throttle"))
                        }
                    }
                }
                "others" => c.others = number(key, value)?,
                "workload" => c.workload = Some(Workload::parse(value)?),
                "job_pid" => c.job_pid = number(key, value)?,
                "gpm" => {
                    c.gpm = Some(match value {
                        "yes" => Gpm::Yes,
                        "no" => Gpm::No,
                        "absent" => Gpm::Absent,
                        other => return Err(format!("gpm=`{other}`: yes, no or absent")),
                    })
                }
                "vanish" => {
                    c.vanish_secs = Some(
                        number::<f64>(key, value.trim_end_matches('s'))
                            .ok()
                            .filter(|s| s.is_finite() && *s >= 0.0)
                            .ok_or_else(|| format!("vanish=`{value}` is not a time in seconds"))?,
                    )
                }
                "fault_code" => c.fault_code = number(key, value)?,
                "watchdog" => {
                    c.watchdog_secs = Some(
                        number::<f64>(key, value.trim_end_matches('s'))
                            .ok()
                            .filter(|s| s.is_finite() && *s > 0.0)
                            .ok_or_else(|| {
                                format!("watchdog=`{value}` is not a time in seconds")
                            })?,
                    )
                }
                "smem_base" => {
                    c.dynamic_shared_base = match value {
                        "declared" => ptxsim::DynamicSharedBase::AsDeclared,
                        "misaligned" => ptxsim::DynamicSharedBase::Misaligned,
                        other => {
                            return Err(format!("smem_base=`{other}`: declared or misaligned"))
                        }
                    }
                }
                other => return Err(format!("unknown setting `{other}`")),
            }
        }
        if c.sms == 0 || c.clock_mhz == 0 || c.blocks_per_sm == 0 {
            return Err("sms, clock_mhz and blocks_per_sm must be positive".to_string());
        }
        if c.context_bytes >= c.memory_bytes {
            return Err("the context must take less than the device's memory".to_string());
        }
        Ok(c)
    }

    /// The SM clock the device's `launch`-th kernel launch (0: its first) runs at.
    pub fn launch_clock_mhz(&self, launch: u64) -> u32 {
        self.clock_fall
            .map_or(self.clock_mhz, |fall| fall.mhz_at(launch))
    }

    /// The configuration the environment asks for.
    pub fn from_env() -> Result<Config, String> {
        match std::env::var("SIMCUDA") {
            Ok(text) => Config::parse(&text).map_err(|e| format!("SIMCUDA: {e}")),
            Err(_) => Ok(Config::default()),
        }
    }

    /// The newest PTX ISA version this driver version JIT-compiles (CUDA's release notes: 12.0
    /// reads PTX 8.0, each 12.x minor release one more, 12.6 stays at 8.5, 12.8 reads 8.7, 12.9
    /// 8.8, 13.0 9.0).
    pub fn max_ptx_version(&self) -> (u32, u32) {
        let major = self.driver_version / 1000;
        let minor = (self.driver_version % 1000) / 10;
        match (major, minor) {
            (..=11, _) => (7, 8),
            (12, 0..=5) => (8, minor as u32),
            (12, 6) => (8, 5),
            (12, 7) => (8, 6),
            (12, 8) => (8, 7),
            (12, _) => (8, 8),
            (_, m) => (9, m as u32),
        }
    }

    /// What the GPM entry points do on this device: `gpm`, else yes from compute capability
    /// 9.0 (Hopper), where NVML's GPM begins.
    pub fn gpm(&self) -> Gpm {
        self.gpm
            .unwrap_or(if self.cc.0 >= 9 { Gpm::Yes } else { Gpm::No })
    }

    /// Threads one SM holds at once, by compute capability (CUDA C++ Programming Guide,
    /// "Compute Capabilities"): 1536 on 8.6, 8.9 and 12.x, else 2048.
    pub fn max_threads_per_sm(&self) -> u32 {
        match self.cc {
            (8, 6) | (8, 9) | (12, _) => 1536,
            _ => 2048,
        }
    }

    /// Shared memory per SM and the most one block may opt into, bytes (the same guide).
    pub fn shared_bytes(&self) -> (u32, u32) {
        match self.cc {
            (8, 0) | (8, 7) => (164 << 10, 163 << 10),
            (9, 0) | (10, _) => (228 << 10, 227 << 10),
            _ => (100 << 10, 99 << 10),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_mistakes_are_named() {
        let c = Config::parse("sms=4, cc=9.0, memory=64M, l2=1M, init=hang, name=X").unwrap();
        assert_eq!((c.sms, c.cc, c.memory_bytes), (4, (9, 0), 64 << 20));
        assert_eq!(
            (c.l2_bytes, c.init, c.name.as_str()),
            (1 << 20, InitBehaviour::Hang, "X")
        );
        assert_eq!(Config::parse("").unwrap(), Config::default());
        assert!(Config::parse("smz=4").unwrap_err().contains("smz"));
        assert!(Config::parse("memory=4X").unwrap_err().contains("4X"));
        assert!(Config::parse("sms=0").is_err());
        assert!(Config::parse("memory=1M,context=2M").is_err());
        let nvml = Config::parse("throttle=sw_power_cap+hw_slowdown,nvml_reasons=events").unwrap();
        assert_eq!(
            (nvml.throttle, nvml.nvml_reasons),
            (0x4 | 0x8, NvmlReasons::EventsOnly)
        );
        assert!(Config::parse("throttle=slow").unwrap_err().contains("slow"));
        assert_eq!(
            Config::parse("clock_attribute=0")
                .unwrap()
                .clock_attribute_khz,
            Some(0)
        );
        assert!(Config::parse("nvml_reasons=new").is_err());
        let watched = Config::parse("workload=2s sm=90; 1s dram=50,gpm=absent,vanish=3s").unwrap();
        assert_eq!(watched.workload.as_ref().unwrap().phases.len(), 2);
        assert_eq!(
            (watched.gpm(), watched.vanish_secs),
            (Gpm::Absent, Some(3.0))
        );
        assert_eq!(Config::parse("cc=9.0").unwrap().gpm(), Gpm::Yes);
        assert_eq!(Config::parse("cc=8.0").unwrap().gpm(), Gpm::No);
        assert!(Config::parse("gpm=maybe").is_err());
        assert!(Config::parse("workload=soon").is_err());
        assert_eq!(Config::default().wrong, Vec::<String>::new());
        assert_eq!(
            Config::parse("wrong=triad_f32").unwrap().wrong,
            ["triad_f32"]
        );
        assert_eq!(
            Config::parse("wrong=triad_f32+dot_f64").unwrap().wrong,
            ["triad_f32", "dot_f64"]
        );
        for misspelt in ["wrong=", "wrong=triad_f32+", "wrongs=triad_f32"] {
            assert!(Config::parse(misspelt).is_err(), "{misspelt}");
        }
    }

    #[test]
    fn a_clock_falls_over_launches_and_then_holds() {
        let c = Config::parse("clock_fall=400:60:6").unwrap();
        let clocks: Vec<u32> = (0..8).map(|k| c.launch_clock_mhz(k)).collect();
        assert_eq!(clocks, [400, 332, 264, 196, 128, 60, 60, 60]);
        // the attribute's clock stays; without a fall every launch runs at it
        assert_eq!(c.clock_mhz, 64);
        assert_eq!(Config::default().launch_clock_mhz(1000), 64);
        for wrong in [
            "400:60",
            "60:400:6",
            "400:0:6",
            "400:60:1",
            "400:60:6:1",
            "a:b:c",
        ] {
            let e = Config::parse(&format!("clock_fall={wrong}")).unwrap_err();
            assert!(e.contains("clock_fall"), "{wrong}: {e}");
        }
    }

    #[test]
    fn ptx_versions_follow_the_driver() {
        let v = |driver| {
            Config {
                driver_version: driver,
                ..Config::default()
            }
            .max_ptx_version()
        };
        assert_eq!(v(12000), (8, 0));
        assert_eq!(v(12040), (8, 4));
        assert_eq!(v(12060), (8, 5));
        assert_eq!(v(12090), (8, 8));
        assert_eq!(v(13000), (9, 0));
    }
}
