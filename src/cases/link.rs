//! The link family: copies between the host and a GPU over its link (PCIe here), and within the
//! GPU, with the copy engines (`cuMemcpy*Async`) or with the SMs (a copy kernel), at sizes from
//! 4 KiB to 1 GiB.
//!
//! A case is `link/<kernel>/u8/<KiB>`. The kernels are named as nvbandwidth names its tests,
//! so figures compare ([`Transfer`]): `host_to_device_memcpy_ce` and
//! `device_to_host_memcpy_ce` (pinned host memory, `cuMemHostAlloc`), their `_bidirectional_`
//! forms (the same copy while the opposite direction runs on a second stream),
//! `host_to_device_memcpy_sm` and `device_to_host_memcpy_sm` (the SM copies: pinned host memory
//! mapped into the device, `CU_MEMHOSTALLOC_DEVICEMAP`, copied by the STREAM copy kernel over
//! one wave of blocks, 16-byte loads and stores, so the copy engines take no part), and
//! `device_local_copy` (`cuMemcpyDtoDAsync` within the device), and with two GPUs or more the
//! peer-to-peer matrix ([`Transfer::peer`]): `device_to_device_memcpy_read_ce` (the device's
//! copy engines copy from a peer's memory into its own, `cuMemcpyPeerAsync` on its stream),
//! `device_to_device_memcpy_write_ce` (from its own memory into the peer's), and their
//! `_bidirectional_` forms (the opposite copy at once on a second stream). A peer case's
//! parameter is the peer's ordinal, not KiB: `link/device_to_device_memcpy_read_ce/u8/1` on
//! `cuda:0` reads from `cuda:1`, at one size ([`PEER_BYTES`]), as nvbandwidth's matrices are.
//! nvbandwidth measures pinned memory only; the pageable copies (`malloc`ed host memory, which the driver stages through
//! its own pinned buffers) are ours, named after them: `host_to_device_pageable_memcpy_ce`,
//! `device_to_host_pageable_memcpy_ce`.
//!
//! Byte convention, nvbandwidth's: every row counts the bytes of its one copy, once, over that
//! copy's time. A bidirectional row counts its own direction's bytes over its own direction's
//! time, not the sum of both directions (the opposite copy is there to load the link; its own
//! row is the other `_bidirectional_` kernel). `device_local_copy` counts the copy's bytes once
//! too, where the STREAM copy counts each byte read and written (twice the figure for the same
//! time).
//!
//! Sizes ([`sizes`]): the pinned one-direction copies at every 4× from 4 KiB to 1 GiB (ten
//! sizes: what the fit `time = latency + bytes / bandwidth` ([`crate::stats::fit`]) takes its latency
//! and asymptote from); the pageable, bidirectional and SM copies at every 16× from 4 KiB to
//! 16 MiB (four sizes; 16 MiB at 50 GB/s is 0.3 ms against a latency of microseconds, and
//! larger host buffers cost seconds to allocate, pin and fill, which a default run's four
//! minutes do not have); `device_local_copy` at one size, 256 MiB. Each capped so the case's
//! device buffers take at most half the free device memory.
//!
//! The spec is the link's nominal rate per direction ([`pcie_nominal_gbps`]): NVML's current
//! PCIe generation × width, read while the case runs; the row's note records the link it saw
//! ([`link_note`], read back by [`link_in_note`]), or says that NVML could not tell it, and
//! then holds the figure against nothing.
//!
//! Validation ([`check_sampled`]): the source holds a pattern with no zero byte ([`pattern`]),
//! the destination is cleared before the first copy, and after the copies sampled windows of
//! the destination (the whole of it up to 256 KiB; beyond, 64 windows of 4 KiB spread over it
//! and its last 4 KiB) must equal the pattern: a copy that drops, shifts or truncates its bytes
//! fails. This module must not allocate device memory or time anything.

use super::{Case, Family, Param, Precision, Verdict, Work};

/// A link row counts bytes.
pub const PRECISION: Precision = Precision::U8;

/// The smallest copy: 4 KiB.
pub const MIN_BYTES: u64 = 4 << 10;

/// The largest copy: 1 GiB.
pub const MAX_BYTES: u64 = 1 << 30;

/// The largest pageable or bidirectional copy (see the module doc).
pub const SECONDARY_MAX_BYTES: u64 = 16 << 20;

/// The size of the device-local copy.
pub const DEVICE_LOCAL_BYTES: u64 = 256 << 20;

/// The size of a peer-to-peer copy.
pub const PEER_BYTES: u64 = 256 << 20;

/// Windows a sampled check compares, besides the last one.
pub const CHECK_WINDOWS: u64 = 64;

/// Bytes of one window.
pub const WINDOW_BYTES: u64 = 4 << 10;

/// One copy the family times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transfer {
    HostToDevice,
    DeviceToHost,
    HostToDeviceBidirectional,
    DeviceToHostBidirectional,
    HostToDevicePageable,
    DeviceToHostPageable,
    HostToDeviceSm,
    DeviceToHostSm,
    DeviceLocal,
    PeerRead,
    PeerWrite,
    PeerReadBidirectional,
    PeerWriteBidirectional,
}

impl Transfer {
    pub const ALL: [Transfer; 13] = [
        Transfer::HostToDevice,
        Transfer::DeviceToHost,
        Transfer::HostToDeviceBidirectional,
        Transfer::DeviceToHostBidirectional,
        Transfer::HostToDevicePageable,
        Transfer::DeviceToHostPageable,
        Transfer::HostToDeviceSm,
        Transfer::DeviceToHostSm,
        Transfer::DeviceLocal,
        Transfer::PeerRead,
        Transfer::PeerWrite,
        Transfer::PeerReadBidirectional,
        Transfer::PeerWriteBidirectional,
    ];

    /// The kernel name: nvbandwidth's test name where it has one.
    pub fn as_str(self) -> &'static str {
        match self {
            Transfer::HostToDevice => "host_to_device_memcpy_ce",
            Transfer::DeviceToHost => "device_to_host_memcpy_ce",
            Transfer::HostToDeviceBidirectional => "host_to_device_bidirectional_memcpy_ce",
            Transfer::DeviceToHostBidirectional => "device_to_host_bidirectional_memcpy_ce",
            Transfer::HostToDevicePageable => "host_to_device_pageable_memcpy_ce",
            Transfer::DeviceToHostPageable => "device_to_host_pageable_memcpy_ce",
            Transfer::HostToDeviceSm => "host_to_device_memcpy_sm",
            Transfer::DeviceToHostSm => "device_to_host_memcpy_sm",
            Transfer::DeviceLocal => "device_local_copy",
            Transfer::PeerRead => "device_to_device_memcpy_read_ce",
            Transfer::PeerWrite => "device_to_device_memcpy_write_ce",
            Transfer::PeerReadBidirectional => "device_to_device_bidirectional_memcpy_read_ce",
            Transfer::PeerWriteBidirectional => "device_to_device_bidirectional_memcpy_write_ce",
        }
    }

    pub fn parse(kernel: &str) -> Option<Transfer> {
        Transfer::ALL.into_iter().find(|t| t.as_str() == kernel)
    }

    /// Whether the timed copy goes from the host to the device (its source is host memory).
    pub fn to_device(self) -> bool {
        matches!(
            self,
            Transfer::HostToDevice
                | Transfer::HostToDeviceBidirectional
                | Transfer::HostToDevicePageable
                | Transfer::HostToDeviceSm
        )
    }

    /// Whether a kernel on the SMs copies (through host memory mapped into the device), not a
    /// copy engine.
    pub fn sm(self) -> bool {
        matches!(self, Transfer::HostToDeviceSm | Transfer::DeviceToHostSm)
    }

    /// Whether the copy crosses the host link (all but `device_local_copy` and the peer
    /// copies).
    pub fn over_link(self) -> bool {
        self != Transfer::DeviceLocal && !self.peer()
    }

    /// Whether the copy is between this device and a peer GPU (the case's parameter names it).
    pub fn peer(self) -> bool {
        matches!(
            self,
            Transfer::PeerRead
                | Transfer::PeerWrite
                | Transfer::PeerReadBidirectional
                | Transfer::PeerWriteBidirectional
        )
    }

    /// Whether a peer copy reads from the peer into this device (else it writes to the peer).
    pub fn peer_reads(self) -> bool {
        matches!(self, Transfer::PeerRead | Transfer::PeerReadBidirectional)
    }

    /// Whether the host side is pageable memory.
    pub fn pageable(self) -> bool {
        matches!(
            self,
            Transfer::HostToDevicePageable | Transfer::DeviceToHostPageable
        )
    }

    /// Whether the opposite direction runs at the same time on a second stream.
    pub fn bidirectional(self) -> bool {
        matches!(
            self,
            Transfer::HostToDeviceBidirectional
                | Transfer::DeviceToHostBidirectional
                | Transfer::PeerReadBidirectional
                | Transfer::PeerWriteBidirectional
        )
    }

    /// Device buffers of the copy's size the case allocates on its own device (the
    /// bidirectional copies and the device-local copy two, the others one; a peer copy
    /// allocates as many on the peer).
    pub fn device_buffers(self) -> u64 {
        if self.bidirectional() || self == Transfer::DeviceLocal {
            2
        } else {
            1
        }
    }

    /// The pinned one-direction copies, whose fits are the link's figures (fleet, exports).
    pub const FITTED: [Transfer; 2] = [Transfer::HostToDevice, Transfer::DeviceToHost];
}

/// The sizes a transfer is planned at, bytes, smallest first (see the module doc), each at
/// most `cap_bytes`; none when even 4 KiB is above the cap.
pub fn sizes(t: Transfer, cap_bytes: u64) -> Vec<u64> {
    let (step, max) = match t {
        Transfer::HostToDevice | Transfer::DeviceToHost => (4, MAX_BYTES),
        Transfer::DeviceLocal => {
            return vec![DEVICE_LOCAL_BYTES.min(prev_pow2(cap_bytes))]
                .into_iter()
                .filter(|&b| b >= MIN_BYTES)
                .collect()
        }
        _ if t.peer() => {
            return vec![PEER_BYTES.min(prev_pow2(cap_bytes))]
                .into_iter()
                .filter(|&b| b >= MIN_BYTES)
                .collect()
        }
        _ => (16, SECONDARY_MAX_BYTES),
    };
    std::iter::successors(Some(MIN_BYTES), |b| Some(b * step))
        .take_while(|&b| b <= max.min(cap_bytes))
        .collect()
}

/// The largest power of two at most `n` (0 for 0).
fn prev_pow2(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 << (63 - n.leading_zeros())
    }
}

/// The case of `t` at `bytes` (a multiple of 1 KiB).
pub fn case(t: Transfer, bytes: u64) -> Case {
    Case {
        family: Family::Link,
        kernel: t.as_str().to_string(),
        precision: PRECISION,
        param: Some(Param::Count(u32::try_from(bytes >> 10).unwrap_or(u32::MAX))),
        elements: bytes,
        working_set_bytes: bytes * t.device_buffers(),
        // the copy's bytes, once (the module doc's byte convention)
        work: Work {
            bytes_read: bytes,
            bytes_written: 0,
            flops: 0,
        },
    }
}

/// The peer copy `t` at `bytes` between this device and device `peer` (its ordinal is the
/// case's parameter).
pub fn peer_case(t: Transfer, bytes: u64, peer: u32) -> Case {
    Case {
        param: Some(Param::Count(peer)),
        ..case(t, bytes)
    }
}

/// The peer of a peer copy's case: the ordinal its parameter holds.
pub fn peer_of(case: &Case) -> Option<u32> {
    Transfer::parse(&case.kernel)
        .filter(|t| t.peer())
        .and(case.count())
}

/// The bytes one copy of a case moves.
pub fn copy_bytes(case: &Case) -> u64 {
    case.work.bytes_read
}

/// The pattern byte at `offset` of a buffer seeded `seed`: a hash of its 8-byte word, never 0,
/// so a destination cleared to zeros shows every byte a copy missed.
pub fn pattern(seed: u64, offset: u64) -> u8 {
    let word = splitmix(seed ^ (offset / 8));
    (word >> ((offset % 8) * 8)) as u8 | 1
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `buf` with [`pattern`] of `seed` (a word at a time).
pub fn fill(buf: &mut [u8], seed: u64) {
    let done = buf.len() / 8 * 8;
    for (w, chunk) in buf[..done].chunks_exact_mut(8).enumerate() {
        let word = splitmix(seed ^ w as u64) | 0x0101_0101_0101_0101;
        chunk.copy_from_slice(&word.to_le_bytes());
    }
    for (i, b) in buf[done..].iter_mut().enumerate() {
        *b = pattern(seed, (done + i) as u64);
    }
}

/// The byte ranges a check compares in a buffer of `len` bytes: all of it up to
/// [`CHECK_WINDOWS`] × [`WINDOW_BYTES`], else that many windows spread evenly from its start
/// and its last window.
pub fn check_windows(len: u64) -> Vec<std::ops::Range<u64>> {
    if len <= CHECK_WINDOWS * WINDOW_BYTES {
        return std::iter::once(0..len).collect();
    }
    let mut out: Vec<std::ops::Range<u64>> = (0..CHECK_WINDOWS)
        .map(|k| {
            let start = (len / CHECK_WINDOWS * k) & !7;
            start..start + WINDOW_BYTES
        })
        .collect();
    out.push(len - WINDOW_BYTES..len);
    out
}

/// Checks a destination of `len` bytes against [`pattern`] of `seed` in its
/// [`check_windows`]; `read(range)` returns the destination's bytes there. What the windows
/// hold is compared byte by byte; the verdict counts the wrong bytes and shows the first.
pub fn check_sampled<E>(
    len: u64,
    seed: u64,
    what: &str,
    mut read: impl FnMut(std::ops::Range<u64>) -> Result<Vec<u8>, E>,
) -> Result<Verdict, E> {
    let mut wrong = 0u64;
    let mut checked = 0u64;
    let mut first = Vec::new();
    for window in check_windows(len) {
        let got = read(window.clone())?;
        for (i, &b) in got.iter().enumerate() {
            let at = window.start + i as u64;
            let want = pattern(seed, at);
            if b != want {
                wrong += 1;
                if first.len() < super::FAILURES_SHOWN {
                    first.push(format!("[{at}] is {b:#04x}, should be {want:#04x}"));
                }
            }
        }
        checked += got.len() as u64;
        if got.len() as u64 != window.end - window.start {
            return Ok(Verdict::invalid(format!(
                "{what}: read {} bytes of the window at {}, asked {}",
                got.len(),
                window.start,
                window.end - window.start
            )));
        }
    }
    Ok(if wrong == 0 {
        Verdict::valid()
    } else {
        Verdict::invalid(format!(
            "{wrong} of {checked} sampled bytes of {what} wrong: {}",
            first.join("; ")
        ))
    })
}

/// A PCIe link as NVML reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PcieLink {
    pub generation: u32,
    pub width: u32,
}

/// The nominal data rate of a PCIe link per direction, GB/s (10^9 B/s): transfers per second
/// per lane × lanes after the line code (8b/10b for Gen 1–2, 128b/130b for Gen 3–5; Gen 6's
/// FLIT mode counted at its raw 64 GT/s), the figure vendors quote ("Gen5 x16: 64 GB/s" is
/// 63.0 after 128b/130b). `None` for a generation it does not know.
pub fn pcie_nominal_gbps(link: PcieLink) -> Option<f64> {
    let per_lane_gbits = match link.generation {
        1 => 2.5 * 8.0 / 10.0,
        2 => 5.0 * 8.0 / 10.0,
        3 => 8.0 * 128.0 / 130.0,
        4 => 16.0 * 128.0 / 130.0,
        5 => 32.0 * 128.0 / 130.0,
        6 => 64.0,
        _ => return None,
    };
    (link.width > 0).then(|| per_lane_gbits * f64::from(link.width) / 8.0)
}

/// What a row's note says of its link: `PCIe Gen<g> x<w> (...)` where NVML told it, else that
/// it could not, and why.
pub fn link_note(link: Result<(PcieLink, Option<PcieLink>), String>) -> String {
    match link {
        Ok((now, max)) => {
            let nominal = pcie_nominal_gbps(now)
                .map(|g| format!("{g:.1} GB/s per direction nominal"))
                .unwrap_or_else(|| "no nominal rate known for this generation".into());
            let max = max
                .map(|m| format!("; max Gen{} x{}", m.generation, m.width))
                .unwrap_or_default();
            format!(
                "PCIe Gen{} x{} (NVML current{max}): {nominal}",
                now.generation, now.width
            )
        }
        Err(why) => format!("link not known ({why}): held against nothing"),
    }
}

/// The link a row's note records ([`link_note`]), if it records one.
pub fn link_in_note(note: &str) -> Option<PcieLink> {
    let rest = &note[note.find("PCIe Gen")? + "PCIe Gen".len()..];
    let digits = |s: &str| -> Option<(u32, usize)> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        Some((s[..n].parse().ok()?, n))
    };
    let (generation, n) = digits(rest)?;
    let rest = rest[n..].strip_prefix(" x")?;
    let (width, _) = digits(rest)?;
    Some(PcieLink { generation, width })
}
