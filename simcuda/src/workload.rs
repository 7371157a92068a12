//! A scripted job for the simulated NVML to report: phases of set activity (SM, DRAM, tensor
//! and the other pipes), each for a set time, and the memory the job holds, steady or growing
//! (up to the device's whole memory: out of memory). `roofprobe watch` is tested against it:
//! the levels a phase sets are what a right reading of NVML must find.
//!
//! The script is the `workload` setting ([`crate::config`]): phases separated by `;`, each a
//! duration and then `key=value` levels separated by spaces (no commas: they separate the
//! settings):
//!
//! ```text
//! workload=2s sm=95 dram=80 tensor=5 mem=40%; 2s sm=98 dram=15 tensor=85 mem=40%;
//!          2s sm=12 dram=3 mem=40%; 2s sm=60 dram=30 tensor=30 mem=40%..100%
//! ```
//!
//! | key | meaning | default |
//! | --- | --- | --- |
//! | `sm` | GPM's SM activity (`SM_UTIL`), % | 0 |
//! | `occ` | GPM's SM occupancy, % | half of `sm` |
//! | `dram` | GPM's DRAM bandwidth utilisation, %; NVML's memory-controller utilisation too | 0 |
//! | `tensor` | GPM's HMMA tensor pipe activity (and `ANY_TENSOR`), % | 0 |
//! | `imma`, `dfma` | GPM's IMMA and DFMA tensor pipe activity, % | 0 |
//! | `fp64`, `fp32`, `fp16` | GPM's FP64, FP32 and FP16 pipe activity, % | 0 |
//! | `util` | NVML's GPU utilisation (time a kernel ran), % | 100 where `sm` ≥ 25, else 4 × `sm` |
//! | `mem` | memory the job holds, % of the device's: `40%`, or `40%..100%` growing evenly over the phase | 0 |
//! | `pcie_tx`, `pcie_rx` | GPM's PCIe bytes per second (`K`, `M`, `G` suffixes) | 0 |
//!
//! The script's clock starts when NVML is initialised in the process that reads it (the
//! watcher): its phases follow one after the other, and after the last the job has ended (the
//! device idle, its memory free). Memory that reaches 100 % is out of memory: the job ends
//! there, whatever the phase had left.

/// One phase: how long, and its levels.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub secs: f64,
    pub levels: Levels,
    /// Memory held, as a fraction of the device's, at the phase's start and end.
    pub mem_from: f64,
    pub mem_to: f64,
}

/// What the job does at a moment (or on average over a span): percentages, and PCIe bytes per
/// second.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Levels {
    pub sm: f64,
    pub occupancy: f64,
    pub dram: f64,
    pub tensor: f64,
    pub imma: f64,
    pub dfma: f64,
    pub fp64: f64,
    pub fp32: f64,
    pub fp16: f64,
    pub util: f64,
    pub pcie_tx: f64,
    pub pcie_rx: f64,
}

impl Levels {
    fn scaled_add(&mut self, other: &Levels, weight: f64) {
        let pairs: [(&mut f64, f64); 12] = [
            (&mut self.sm, other.sm),
            (&mut self.occupancy, other.occupancy),
            (&mut self.dram, other.dram),
            (&mut self.tensor, other.tensor),
            (&mut self.imma, other.imma),
            (&mut self.dfma, other.dfma),
            (&mut self.fp64, other.fp64),
            (&mut self.fp32, other.fp32),
            (&mut self.fp16, other.fp16),
            (&mut self.util, other.util),
            (&mut self.pcie_tx, other.pcie_tx),
            (&mut self.pcie_rx, other.pcie_rx),
        ];
        for (mine, theirs) in pairs {
            *mine += theirs * weight;
        }
    }

    /// The busiest of the job's engines now, %: what the clocks, power and temperature follow.
    pub fn load(&self) -> f64 {
        [self.sm, self.dram, self.tensor]
            .into_iter()
            .fold(0.0, f64::max)
    }
}

/// A parsed script.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Workload {
    pub phases: Vec<Phase>,
}

fn percent(key: &str, value: &str) -> Result<f64, String> {
    let v: f64 = value
        .trim()
        .trim_end_matches('%')
        .parse()
        .map_err(|_| format!("workload: {key}=`{value}` is not a percentage"))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(format!("workload: {key}=`{value}` is not within 0..100"));
    }
    Ok(v)
}

/// A percentage that may pass 100 (memory asked beyond the device's).
fn growth(key: &str, value: &str) -> Result<f64, String> {
    value
        .trim()
        .trim_end_matches('%')
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v >= 0.0)
        .ok_or_else(|| format!("workload: {key}=`{value}` is not a percentage"))
}

fn rate(key: &str, value: &str) -> Result<f64, String> {
    let v = value.trim();
    let (digits, factor) = match v.char_indices().last() {
        Some((i, 'K' | 'k')) => (&v[..i], 1e3),
        Some((i, 'M' | 'm')) => (&v[..i], 1e6),
        Some((i, 'G' | 'g')) => (&v[..i], 1e9),
        _ => (v, 1.0),
    };
    digits
        .parse::<f64>()
        .ok()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .map(|x| x * factor)
        .ok_or_else(|| format!("workload: {key}=`{value}` is not a rate in bytes per second"))
}

impl Workload {
    /// Parses `DURATION key=value …; DURATION …`.
    pub fn parse(text: &str) -> Result<Workload, String> {
        let mut phases = Vec::new();
        for part in text.split(';').map(str::trim).filter(|s| !s.is_empty()) {
            let mut words = part.split_whitespace();
            let duration = words.next().unwrap_or_default();
            let secs: f64 = duration
                .trim_end_matches('s')
                .parse()
                .ok()
                .filter(|s: &f64| s.is_finite() && *s > 0.0)
                .ok_or_else(|| {
                    format!("workload: a phase starts with its duration (`2s`), not `{duration}`")
                })?;
            let mut l = Levels::default();
            let (mut occupancy, mut util) = (None, None);
            let (mut mem_from, mut mem_to) = (0.0, 0.0);
            for word in words {
                let (key, value) = word
                    .split_once('=')
                    .ok_or_else(|| format!("workload: `{word}` is not key=value"))?;
                match key {
                    "sm" => l.sm = percent(key, value)?,
                    "occ" => occupancy = Some(percent(key, value)?),
                    "dram" => l.dram = percent(key, value)?,
                    "tensor" => l.tensor = percent(key, value)?,
                    "imma" => l.imma = percent(key, value)?,
                    "dfma" => l.dfma = percent(key, value)?,
                    "fp64" => l.fp64 = percent(key, value)?,
                    "fp32" => l.fp32 = percent(key, value)?,
                    "fp16" => l.fp16 = percent(key, value)?,
                    "util" => util = Some(percent(key, value)?),
                    "pcie_tx" => l.pcie_tx = rate(key, value)?,
                    "pcie_rx" => l.pcie_rx = rate(key, value)?,
                    "mem" => {
                        // (past 100 %: the job asks for more than the device has, and runs out
                        // on the way)
                        let (a, b) = value.split_once("..").unwrap_or((value, value));
                        mem_from = percent(key, a)? / 100.0;
                        mem_to = growth(key, b)? / 100.0;
                    }
                    other => return Err(format!("workload: unknown level `{other}`")),
                }
            }
            l.occupancy = occupancy.unwrap_or(l.sm / 2.0);
            l.util = util.unwrap_or(if l.sm >= 25.0 { 100.0 } else { 4.0 * l.sm });
            phases.push(Phase {
                secs,
                levels: l,
                mem_from,
                mem_to,
            });
        }
        if phases.is_empty() {
            return Err("workload: no phase".to_string());
        }
        Ok(Workload { phases })
    }

    /// When the job ends, seconds from the script's start: after its last phase, or where its
    /// memory reaches the whole device (out of memory).
    pub fn end_secs(&self) -> f64 {
        let mut start = 0.0;
        for p in &self.phases {
            if p.mem_to >= 1.0 && p.mem_to > p.mem_from {
                return start + p.secs * (1.0 - p.mem_from) / (p.mem_to - p.mem_from);
            }
            if p.mem_from >= 1.0 {
                return start;
            }
            start += p.secs;
        }
        start
    }

    /// The phase running at `t` seconds and when it started; `None` once the job has ended.
    fn phase_at(&self, t: f64) -> Option<(&Phase, f64)> {
        if t < 0.0 || t >= self.end_secs() {
            return None;
        }
        let mut start = 0.0;
        for p in &self.phases {
            if t < start + p.secs {
                return Some((p, start));
            }
            start += p.secs;
        }
        None
    }

    /// The levels at `t` seconds (idle before the start and after the end).
    pub fn at(&self, t: f64) -> Levels {
        self.phase_at(t).map(|(p, _)| p.levels).unwrap_or_default()
    }

    /// The mean levels over `from..to` seconds, each phase weighted by the time it ran within
    /// them: what GPM reports between two samples.
    pub fn mean(&self, from: f64, to: f64) -> Levels {
        let mut out = Levels::default();
        let span = to - from;
        if span <= 0.0 {
            return self.at(to);
        }
        let end = self.end_secs();
        let mut start: f64 = 0.0;
        for p in &self.phases {
            let (a, b) = (start.max(from), (start + p.secs).min(to).min(end));
            if b > a {
                out.scaled_add(&p.levels, (b - a) / span);
            }
            start += p.secs;
        }
        out
    }

    /// The memory the job holds at `t` seconds, as a fraction of the device's (0 once it ended).
    pub fn memory_at(&self, t: f64) -> f64 {
        match self.phase_at(t) {
            Some((p, start)) => {
                let f = ((t - start) / p.secs).clamp(0.0, 1.0);
                (p.mem_from + f * (p.mem_to - p.mem_from)).min(1.0)
            }
            None => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_script_parses_and_its_mistakes_are_named() {
        let w =
            Workload::parse("2s sm=95 dram=80 tensor=5 mem=40%; 1.5s sm=10 mem=40%..60%").unwrap();
        assert_eq!(w.phases.len(), 2);
        assert_eq!(w.phases[0].levels.dram, 80.0);
        assert_eq!(w.phases[0].levels.util, 100.0);
        assert_eq!(w.phases[1].levels.util, 40.0);
        assert_eq!((w.phases[1].mem_from, w.phases[1].mem_to), (0.4, 0.6));
        assert!(Workload::parse("sm=3").unwrap_err().contains("duration"));
        assert!(Workload::parse("2s dram=120")
            .unwrap_err()
            .contains("0..100"));
        assert!(Workload::parse("2s hbm=3").unwrap_err().contains("hbm"));
        assert!(Workload::parse(" ; ").is_err());
    }

    /// A mean over a span weighs each phase by its time in it; memory grows evenly and the job
    /// ends where it reaches the whole device.
    #[test]
    fn means_follow_the_phases_and_memory_runs_out() {
        let w = Workload::parse("2s dram=80; 2s dram=20 mem=50%..100%").unwrap();
        assert_eq!(w.mean(0.5, 1.5).dram, 80.0);
        assert!((w.mean(1.5, 2.5).dram - 50.0).abs() < 1e-9);
        assert!((w.memory_at(3.0) - 0.75).abs() < 1e-9);
        assert_eq!(w.end_secs(), 4.0);
        assert_eq!(w.at(4.5), Levels::default());
        assert_eq!(w.memory_at(4.5), 0.0);
        let oom = Workload::parse("1s mem=50%..150%").unwrap();
        assert!((oom.end_secs() - 0.5).abs() < 1e-9);
        // after the job the mean counts idle time
        assert!((w.mean(3.0, 5.0).dram - 10.0).abs() < 1e-9);
    }
}
