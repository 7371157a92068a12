//! The `flags` column's vocabulary: each reason a valid figure is suspect ([`Flag`]), as a row
//! writes it (`high_cv(12.0%)`) and as a reader checks it. Which rows earn which flag is
//! decided above, in `analysis::suspect`; the names and their written form are part of the
//! record, so they live beside it.

/// One reason a figure is suspect, with the value that tripped it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Flag {
    /// The CV of the per-launch times.
    HighCv(f64),
    /// Measured / theoretical peak.
    BelowTheory(f64),
    /// Measured / roof.
    AboveRoof(f64),
    /// CPUs' worth of other processes' time.
    BusyHost(f64),
    /// Other processes on the GPU.
    BusyGpu(u32),
}

impl Flag {
    /// Every flag's name, in the order rows list them.
    pub const NAMES: [&'static str; 5] = [
        "high_cv",
        "below_theory",
        "above_roof",
        "busy_host",
        "busy_gpu",
    ];

    /// The name scripts match (`high_cv`), the text before the parenthesis.
    pub fn name(&self) -> &'static str {
        match self {
            Flag::HighCv(_) => "high_cv",
            Flag::BelowTheory(_) => "below_theory",
            Flag::AboveRoof(_) => "above_roof",
            Flag::BusyHost(_) => "busy_host",
            Flag::BusyGpu(_) => "busy_gpu",
        }
    }

    /// What the flag means, for the summary.
    pub fn meaning(name: &str) -> &'static str {
        match name {
            "high_cv" => "the per-launch times varied more than the CV bound",
            "below_theory" => "a peak far below its theory at the clock it ran at",
            "above_roof" => "above its own roof by more than the noise",
            "busy_host" => "other processes used the host's CPUs while it ran",
            "busy_gpu" => "other processes were on the GPU while it ran",
            _ => "",
        }
    }
}

impl std::fmt::Display for Flag {
    /// `name(value)`, as the `flags` column writes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let value = match *self {
            Flag::HighCv(x) | Flag::BelowTheory(x) | Flag::AboveRoof(x) => {
                format!("{:.1}%", x * 100.0)
            }
            Flag::BusyHost(cpus) => format!("{cpus:.2} CPUs"),
            Flag::BusyGpu(1) => "1 process".to_string(),
            Flag::BusyGpu(n) => format!("{n} processes"),
        };
        write!(f, "{}({value})", self.name())
    }
}

/// Flags as the `flags` column writes them.
pub fn column(flags: &[Flag]) -> String {
    flags
        .iter()
        .map(Flag::to_string)
        .collect::<Vec<_>>()
        .join(";")
}

/// The flag names in a `flags` column (`high_cv(12.0%);busy_host(1.00 CPUs)` → `high_cv`,
/// `busy_host`).
pub fn names(column: &str) -> impl Iterator<Item = &str> {
    column
        .split(';')
        .map(|f| f.split('(').next().unwrap_or_default().trim())
        .filter(|f| !f.is_empty())
}

/// Checks a `flags` column as a reader finds it: empty, or `;`-separated `name(value)` flags
/// whose names are [`Flag::NAMES`]. Anything else (a formula, a name no roofprobe writes) is
/// damage, never a reason a reader passes on.
pub fn check_column(column: &str) -> Result<(), String> {
    if column.is_empty() {
        return Ok(());
    }
    for flag in column.split(';') {
        let known = flag
            .strip_suffix(')')
            .and_then(|f| f.split_once('('))
            .is_some_and(|(name, value)| {
                Flag::NAMES.contains(&name) && !value.is_empty() && !value.contains(['(', ')'])
            });
        if !known {
            return Err(format!(
                "`flags` holds `{flag}`; expected `;`-separated `name(value)` flags named {}",
                Flag::NAMES.join(", ")
            ));
        }
    }
    Ok(())
}
