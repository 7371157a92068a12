//! The results row: one [`Record`] per measurement, the single source of truth for the CSV
//! columns (the header is derived from this struct, never written by hand: see
//! [`crate::results::csv`]).
//!
//! Rows are tidy: device identity and run conditions repeat on every row, so files from many
//! machines concatenate and `compare` can read any mix of them. Every row carries the schema
//! version; a reader refuses rows of another schema with the file and line, except the one
//! before ([`SCHEMA_1`]), whose files read with the columns added since left empty.
//!
//! An invalid or failed case keeps its row (`valid = false`, the reason in `status`) but has
//! no figures: time, GB/s and GFLOP/s are empty, never a number. Reading trusts nothing: every
//! row read back is held to [`crate::results::check`] first.

use crate::cases::{Case, Family, Param, Precision, Verdict, Work};
use crate::device::{BackendKind, Conditions, DeviceInfo, Identity};
use crate::stats::{Stopped, Summary};
use crate::text;
use roofprobe_calibration::check::{is_positive, MAX_CELSIUS, MAX_CPUS, MAX_MHZ, MAX_WATTS};
use serde::{Deserialize, Serialize};

/// The CSV schema this build writes and reads.
pub const SCHEMA: &str = "roofprobe-csv/2";

/// The schema before, which this build still reads: its files lack the columns of
/// [`ADDED_IN_2`], which read as empty.
pub const SCHEMA_1: &str = "roofprobe-csv/1";

/// How a skipped row's status starts: a case not run for a reason that is no fault (a reference
/// library that is not installed).
pub const SKIPPED: &str = "skipped: ";

/// No implementation runs a million times faster or slower than another on the same product: a
/// `ratio_to_reference` beyond this either way is damage.
pub const MAX_RATIO: f64 = 1e6;

/// The columns [`SCHEMA`] added to [`SCHEMA_1`]: the device's identity, why sampling stopped,
/// the load other processes put on the machine, the flags of a suspect figure, a GEMM's ratio to
/// its reference implementation, and whether the device was measured while others were
/// (`--parallel`). ([`SCHEMA`] also lets `param` hold an `MxNxK` shape, where [`SCHEMA_1`] held
/// counts only.)
pub const ADDED_IN_2: [&str; 20] = [
    "vendor",
    "cpu_family",
    "cpu_model",
    "microarch",
    "isa",
    "uuid",
    "pci_bus_id",
    "vbios",
    "ecc",
    "mig",
    "power_limit_w",
    "app_clock_mhz",
    "app_memory_clock_mhz",
    "stopped_by",
    "flags",
    "other_cpus_busy",
    "other_gpu_processes",
    "ratio_to_reference",
    "parallel_devices",
    "max_memory_clock_mhz",
];

/// The columns of [`ADDED_IN_2`] that a [`SCHEMA`] file may lack, because they came after its
/// first files were written: such a file reads with them empty, and every figure derived from
/// them falls back to what the file's other columns say (the theoretical DRAM figure to the
/// highest memory clock a row read).
pub const OPTIONAL_IN_2: [&str; 1] = ["max_memory_clock_mhz"];

/// One measurement: a case on a device, its statistics, figures, validity and conditions.
///
/// Field order is column order. Units are in the names: `_s` seconds, `_bytes` bytes,
/// `gbps` 10^9 bytes per second, `gflops` 10^9 operations per second, `_mhz`, `_w`, `_c`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Always [`SCHEMA`].
    pub schema: String,
    /// `<host>-<device>-<UTC stamp>`: the rows of one run of one device share it.
    pub run_id: String,
    /// When this row was measured, RFC 3339 UTC.
    pub timestamp_utc: String,
    pub host: String,
    pub backend: BackendKind,
    /// `cuda:0` or `host`.
    pub device_id: String,
    pub device_name: String,
    /// `9.0`; empty on the host.
    pub compute_capability: String,
    /// SMs, or CPU threads used.
    pub units: u32,
    /// The last-level cache (L2 on a GPU), bytes: DRAM figures need working sets ≥ 4× this.
    pub llc_bytes: u64,
    /// Memory bus width the device reports, for a theoretical DRAM figure; empty on the host.
    pub memory_bus_bits: Option<u32>,
    /// The device's maximum memory clock (NVML's, else the driver attribute's), for a
    /// theoretical DRAM figure: the clock a row reads (`memory_clock_mhz`) may be a lower
    /// state's, as a GeForce board computes in P2. Empty on the host and in files written
    /// before the column existed ([`OPTIONAL_IN_2`]).
    #[serde(default)]
    pub max_memory_clock_mhz: Option<f64>,
    pub driver: String,
    /// The device's identity ([`Identity`]): CPU vendor, family, model, microarchitecture and
    /// the ISA the kernels ran; a GPU's UUID, PCI bus id, VBIOS, ECC and MIG modes, power
    /// limit and application clocks. Empty where unknown or not applicable.
    #[serde(default)]
    pub vendor: String,
    #[serde(default)]
    pub cpu_family: String,
    #[serde(default)]
    pub cpu_model: String,
    #[serde(default)]
    pub microarch: String,
    #[serde(default)]
    pub isa: String,
    #[serde(default)]
    pub uuid: String,
    #[serde(default)]
    pub pci_bus_id: String,
    #[serde(default)]
    pub vbios: String,
    #[serde(default)]
    pub ecc: String,
    #[serde(default)]
    pub mig: String,
    #[serde(default)]
    pub power_limit_w: Option<f64>,
    #[serde(default)]
    pub app_clock_mhz: Option<f64>,
    #[serde(default)]
    pub app_memory_clock_mhz: Option<f64>,
    pub family: Family,
    pub kernel: String,
    pub precision: Precision,
    /// The family's parameter: operations per element in the intensity sweep, KiB of working
    /// set in the cache sweep, `MxNxK` of a GEMM; else empty.
    pub param: Option<Param>,
    /// Elements per array.
    pub elements: u64,
    pub working_set_bytes: u64,
    /// Bytes read + bytes written by one launch (STREAM counting: each element once, no
    /// write-allocate).
    pub bytes: u64,
    /// Arithmetic operations of one launch (2 per FMA per lane).
    pub flops: u64,
    /// Launches timed back to back per sample.
    pub reps: u32,
    pub samples: u32,
    /// Why sampling stopped: `count` (the number fixed up front), `stable` (`--until-stable`:
    /// the CV fell to the target), `time_limit` (it did not within the limit) or `interrupted`
    /// (a signal stopped the run first); empty for a case that was not measured.
    #[serde(default)]
    pub stopped_by: String,
    pub time_min_s: Option<f64>,
    pub time_median_s: Option<f64>,
    pub time_mean_s: Option<f64>,
    pub time_max_s: Option<f64>,
    pub time_stddev_s: Option<f64>,
    /// Coefficient of variation of the per-launch time.
    pub cv: Option<f64>,
    /// bytes / median time / 10^9.
    pub gbps: Option<f64>,
    /// flops / median time / 10^9.
    pub gflops: Option<f64>,
    /// The theoretical peak of the case's arithmetic at `clock_mhz` (units × FMA lanes × 2 ×
    /// clock; `specs::theory`), GFLOP/s; empty where the device's rate is not known, for cases
    /// without arithmetic, and for invalid rows.
    pub theory_gflops: Option<f64>,
    /// Our implementation's GFLOP/s over the reference implementation's on the same shape and
    /// precision, measured just before it in the same run (`gemm`: `simd` over `gemm-crate` on
    /// the host, `ptx` over `cublas` on a GPU); empty where no valid reference ran, and on
    /// reference rows themselves.
    #[serde(default)]
    pub ratio_to_reference: Option<f64>,
    /// flops / bytes; empty when the case moves no bytes.
    pub intensity: Option<f64>,
    pub valid: bool,
    /// `ok`, `invalid: …`, `error: …` or `skipped: …` (not run, no fault).
    pub status: String,
    /// Why a valid figure is suspect, `;`-separated (`high_cv(12.3%)`, `below_theory(48.0%)`,
    /// `above_roof(139.0%)`, `busy_host(1.02 CPUs)`, `busy_gpu(2 processes)`; see
    /// [`crate::analysis::suspect`]); empty when nothing is.
    #[serde(default)]
    pub flags: String,
    /// SM / core clock: the one the case measured while it ran where it measures one (GPU peak,
    /// tensor and sweep kernels: `%clock64` against `%globaltimer` in their block records; host
    /// compute cases: a dependent-add chain on the same cores right after the samples), else
    /// the median of NVML's readings while the samples ran, else observed around the case.
    pub clock_mhz: Option<f64>,
    pub memory_clock_mhz: Option<f64>,
    pub power_w: Option<f64>,
    pub temperature_c: Option<f64>,
    /// Throttle reasons seen, `;`-separated.
    pub throttle: String,
    /// Host rows: CPUs' worth of time other processes (and a hypervisor) used while the case
    /// ran, from `/proc/stat` less this process's own time.
    #[serde(default)]
    pub other_cpus_busy: Option<f64>,
    /// GPU rows: compute and graphics processes on the device other than roofprobe (NVML).
    #[serde(default)]
    pub other_gpu_processes: Option<u32>,
    /// `run --parallel`: how many GPUs were measured at the same time, this one included (their
    /// workers started together and shared the host's link and CPUs); empty when the device was
    /// measured alone, one after another.
    #[serde(default)]
    pub parallel_devices: Option<u32>,
    /// Launch geometry or threads, and how the size was chosen.
    pub note: String,
}

/// A clock reading as a row keeps it: a reading that is not a clock (0, negative, NaN, above
/// [`MAX_MHZ`]) is no clock, so nothing derived from it (a theoretical peak) is 0 or NaN.
pub fn kept_clock(mhz: Option<f64>) -> Option<f64> {
    mhz.filter(|v| is_positive(*v) && *v <= MAX_MHZ)
}

/// Everything about the run that is the same for every row of one device.
#[derive(Clone, Debug)]
pub struct RunIdentity {
    pub run_id: String,
    pub host: String,
    pub device: DeviceInfo,
    /// How many GPUs `run --parallel` measured at once, this one included; `None` when alone.
    pub parallel_devices: Option<u32>,
}

/// How a case ended.
pub enum Outcome<'a> {
    /// Timed and checked.
    Measured {
        summary: &'a Summary,
        reps: u32,
        stopped: Stopped,
        verdict: &'a Verdict,
    },
    /// Could not be prepared, run or checked.
    Failed { error: &'a str },
    /// Not run, for a reason that is no fault (a reference library that is not installed).
    Skipped { why: &'a str },
}

impl Record {
    /// Builds a row. Figures are filled only for a measured case whose verdict is valid.
    pub fn new(
        identity: &RunIdentity,
        timestamp_utc: String,
        case: &Case,
        outcome: Outcome<'_>,
        conditions: &Conditions,
        note: String,
    ) -> Record {
        let d = &identity.device;
        let Work { flops, .. } = case.work;
        let bytes = case.work.bytes();
        // Text from the driver and the OS is stored printable and spreadsheet-safe, and a
        // reading that is not a clock is no clock: the row must pass `check_row` when read back.
        let clock = kept_clock;
        let reading =
            |x: Option<f64>, max: f64| x.filter(|v| v.is_finite() && *v >= 0.0 && *v <= max);
        let id = &d.identity;
        let mut r = Record {
            schema: SCHEMA.to_string(),
            run_id: text::field(&identity.run_id),
            timestamp_utc,
            host: text::field(&identity.host),
            backend: d.backend,
            device_id: text::field(&d.id),
            device_name: text::field(&d.name),
            compute_capability: text::field(&d.compute_capability),
            units: d.units,
            llc_bytes: d.llc_bytes,
            memory_bus_bits: d.memory_bus_bits,
            max_memory_clock_mhz: clock(d.memory_clock_mhz),
            driver: text::field(&d.driver),
            vendor: text::field(&id.vendor),
            cpu_family: text::field(&id.cpu_family),
            cpu_model: text::field(&id.cpu_model),
            microarch: text::field(&id.microarch),
            isa: text::field(&id.isa),
            uuid: text::field(&id.uuid),
            pci_bus_id: text::field(&id.pci_bus_id),
            vbios: text::field(&id.vbios),
            ecc: text::field(&id.ecc),
            mig: text::field(&id.mig),
            power_limit_w: id
                .power_limit_w
                .filter(|w| is_positive(*w) && *w <= MAX_WATTS),
            app_clock_mhz: clock(id.app_clock_mhz),
            app_memory_clock_mhz: clock(id.app_memory_clock_mhz),
            family: case.family,
            kernel: case.kernel.clone(),
            precision: case.precision,
            param: case.param,
            elements: case.elements,
            working_set_bytes: case.working_set_bytes,
            bytes,
            flops,
            reps: 0,
            samples: 0,
            stopped_by: String::new(),
            time_min_s: None,
            time_median_s: None,
            time_mean_s: None,
            time_max_s: None,
            time_stddev_s: None,
            cv: None,
            gbps: None,
            gflops: None,
            theory_gflops: None,
            ratio_to_reference: None,
            intensity: case.work.intensity(),
            valid: false,
            status: String::new(),
            flags: String::new(),
            clock_mhz: clock(conditions.clock_mhz),
            memory_clock_mhz: clock(conditions.memory_clock_mhz),
            power_w: reading(conditions.power_w, MAX_WATTS),
            temperature_c: reading(conditions.temperature_c, MAX_CELSIUS),
            throttle: text::field(&conditions.throttle),
            other_cpus_busy: reading(conditions.other_cpus_busy, MAX_CPUS),
            other_gpu_processes: conditions.other_gpu_processes,
            parallel_devices: identity.parallel_devices.filter(|n| *n > 0),
            note: text::field(&note),
        };
        match outcome {
            Outcome::Measured {
                summary,
                reps,
                stopped,
                verdict,
            } => {
                r.reps = reps;
                r.samples = summary.samples as u32;
                r.stopped_by = stopped.as_str().to_string();
                if verdict.valid {
                    let t = summary.median_secs;
                    r.valid = true;
                    r.status = "ok".to_string();
                    r.time_min_s = Some(summary.min_secs);
                    r.time_median_s = Some(t);
                    r.time_mean_s = Some(summary.mean_secs);
                    r.time_max_s = Some(summary.max_secs);
                    r.time_stddev_s = Some(summary.stddev_secs);
                    r.cv = Some(summary.cv);
                    r.gbps = (bytes > 0).then(|| bytes as f64 / t / 1e9);
                    r.gflops = (flops > 0).then(|| flops as f64 / t / 1e9);
                } else {
                    r.status = text::field(&format!("invalid: {}", verdict.detail));
                }
            }
            Outcome::Failed { error } => {
                r.status = text::field(&format!("error: {error}"));
            }
            Outcome::Skipped { why } => {
                r.status = text::field(&format!("{SKIPPED}{why}"));
            }
        }
        r
    }

    /// Whether the case was skipped (not run, no fault: `skipped: <why>`), not failed.
    pub fn is_skipped(&self) -> bool {
        !self.valid && self.status.starts_with(SKIPPED)
    }

    /// The device's identity, as the row records it.
    pub fn identity(&self) -> Identity {
        Identity {
            vendor: self.vendor.clone(),
            cpu_family: self.cpu_family.clone(),
            cpu_model: self.cpu_model.clone(),
            microarch: self.microarch.clone(),
            isa: self.isa.clone(),
            uuid: self.uuid.clone(),
            pci_bus_id: self.pci_bus_id.clone(),
            vbios: self.vbios.clone(),
            ecc: self.ecc.clone(),
            mig: self.mig.clone(),
            power_limit_w: self.power_limit_w,
            app_clock_mhz: self.app_clock_mhz,
            app_memory_clock_mhz: self.app_memory_clock_mhz,
        }
    }

    /// The row less what [`SCHEMA`] added ([`ADDED_IN_2`]), as a [`SCHEMA_1`] file holds it.
    pub fn without_added_in_2(&self) -> Record {
        Record {
            vendor: String::new(),
            cpu_family: String::new(),
            cpu_model: String::new(),
            microarch: String::new(),
            isa: String::new(),
            uuid: String::new(),
            pci_bus_id: String::new(),
            vbios: String::new(),
            ecc: String::new(),
            mig: String::new(),
            power_limit_w: None,
            app_clock_mhz: None,
            app_memory_clock_mhz: None,
            max_memory_clock_mhz: None,
            stopped_by: String::new(),
            flags: String::new(),
            other_cpus_busy: None,
            other_gpu_processes: None,
            ratio_to_reference: None,
            parallel_devices: None,
            ..self.clone()
        }
    }

    /// The same work done `factor` times as fast: every time divided by it, the figures derived
    /// from them (GB/s, GFLOP/s) multiplied, so a reader's checks still hold. For planting a
    /// slow or fast run in tests of the readers and the fleet.
    pub fn scale_speed(&mut self, factor: f64) {
        for t in [
            &mut self.time_min_s,
            &mut self.time_median_s,
            &mut self.time_mean_s,
            &mut self.time_max_s,
            &mut self.time_stddev_s,
        ] {
            *t = t.map(|t| t / factor);
        }
        self.gbps = self.gbps.map(|g| g * factor);
        self.gflops = self.gflops.map(|g| g * factor);
    }

    /// `family/kernel/precision[/param]`, as [`Case::id`].
    pub fn case_id(&self) -> String {
        match self.param {
            Some(p) => format!("{}/{}/{}/{}", self.family, self.kernel, self.precision, p),
            None => format!("{}/{}/{}", self.family, self.kernel, self.precision),
        }
    }

    /// A launch row's figure, in seconds (`bench::launch`): the timer's least sample (its
    /// resolution), else the median time per launch or round; `None` for another family's row.
    pub fn launch_secs(&self) -> Option<f64> {
        use crate::cases::launch::What;
        if self.family != Family::Launch {
            return None;
        }
        match What::parse(&self.kernel) {
            Some(What::Timer) => self.time_min_s,
            _ => self.time_median_s,
        }
    }
}
