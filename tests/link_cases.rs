//! The host-link catalogue (roofprobe::cases::link): the copy sizes and their caps, the transfers' names and directions, the fill patterns and the PCIe figures read from a row's note.

use roofprobe::cases::link::*;

#[test]
fn sizes_follow_the_documented_steps_and_caps() {
    let all = sizes(Transfer::HostToDevice, u64::MAX);
    assert_eq!(all.len(), 10);
    assert_eq!((all[0], all[9]), (4 << 10, 1 << 30));
    assert!(all.windows(2).all(|w| w[1] == 4 * w[0]));
    let secondary = sizes(Transfer::HostToDevicePageable, u64::MAX);
    assert_eq!(secondary, [4 << 10, 64 << 10, 1 << 20, 16 << 20]);
    for t in [
        Transfer::DeviceToHostBidirectional,
        Transfer::HostToDeviceSm,
        Transfer::DeviceToHostSm,
    ] {
        assert_eq!(sizes(t, u64::MAX), secondary, "{t:?}");
    }
    assert_eq!(sizes(Transfer::DeviceLocal, u64::MAX), [256 << 20]);
    // a small device: capped
    assert_eq!(
        sizes(Transfer::DeviceToHost, 200 << 10),
        [4 << 10, 16 << 10, 64 << 10]
    );
    assert_eq!(sizes(Transfer::DeviceLocal, 200 << 10), [128 << 10]);
    assert!(sizes(Transfer::DeviceLocal, 1000).is_empty());
    assert!(sizes(Transfer::HostToDevice, 1000).is_empty());
}

#[test]
fn a_case_counts_its_copy_once_and_names_its_kib() {
    let c = case(Transfer::HostToDeviceBidirectional, 1 << 20);
    assert_eq!(
        c.id(),
        "link/host_to_device_bidirectional_memcpy_ce/u8/1024"
    );
    assert_eq!(c.work.bytes(), 1 << 20);
    assert_eq!(c.working_set_bytes, 2 << 20);
    assert_eq!(copy_bytes(&c), 1 << 20);
    for t in Transfer::ALL {
        assert_eq!(Transfer::parse(t.as_str()), Some(t));
        // nvbandwidth's names, with our pageable copies named after them
        let engine = if t.sm() { "_memcpy_sm" } else { "_ce" };
        assert!(
            t.as_str().ends_with(engine) || t == Transfer::DeviceLocal,
            "{t:?}"
        );
        assert_eq!(
            t.peer(),
            t.as_str().starts_with("device_to_device_"),
            "{t:?}"
        );
    }
    let sm = case(Transfer::DeviceToHostSm, 64 << 10);
    assert_eq!(sm.id(), "link/device_to_host_memcpy_sm/u8/64");
    assert_eq!(
        (sm.working_set_bytes, copy_bytes(&sm)),
        (64 << 10, 64 << 10)
    );
    assert!(Transfer::HostToDeviceSm.to_device() && !Transfer::DeviceToHostSm.to_device());
    assert!(Transfer::HostToDeviceSm.over_link() && !Transfer::HostToDeviceSm.pageable());
    assert_eq!(Transfer::parse("triad"), None);
    // a peer copy names its peer, not its KiB
    let p = peer_case(Transfer::PeerWriteBidirectional, 256 << 20, 3);
    assert_eq!(
        p.id(),
        "link/device_to_device_bidirectional_memcpy_write_ce/u8/3"
    );
    assert_eq!(
        (copy_bytes(&p), p.working_set_bytes),
        (256 << 20, 512 << 20)
    );
    assert_eq!(peer_of(&p), Some(3));
    assert_eq!(peer_of(&case(Transfer::HostToDevice, 4 << 10)), None);
    assert!(!Transfer::PeerRead.over_link() && Transfer::PeerRead.peer_reads());
    assert!(!Transfer::PeerWrite.peer_reads() && !Transfer::PeerWrite.to_device());
    assert_eq!(sizes(Transfer::PeerRead, u64::MAX), [256 << 20]);
    assert_eq!(sizes(Transfer::PeerRead, 200 << 10), [128 << 10]);
}

#[test]
fn the_pattern_has_no_zero_and_fill_writes_it() {
    for len in [0usize, 1, 7, 8, 4099] {
        let mut buf = vec![0u8; len];
        fill(&mut buf, 42);
        for (i, &b) in buf.iter().enumerate() {
            assert_eq!(b, pattern(42, i as u64), "{len} {i}");
            assert_ne!(b, 0);
        }
    }
    // seeds and offsets give different bytes
    assert_ne!(
        (0..64).map(|i| pattern(1, i)).collect::<Vec<_>>(),
        (0..64).map(|i| pattern(2, i)).collect::<Vec<_>>()
    );
}

#[test]
fn windows_cover_small_buffers_whole_and_large_ones_to_their_last_byte() {
    let whole = check_windows(4096);
    assert_eq!((whole.len(), whole[0].clone()), (1, 0..4096));
    let w = check_windows(1 << 30);
    assert_eq!(w.len() as u64, CHECK_WINDOWS + 1);
    assert_eq!(w.last().unwrap().end, 1 << 30);
    assert!(w
        .iter()
        .all(|r| r.end <= 1 << 30 && r.end - r.start == WINDOW_BYTES));
}

/// The check passes a faithful copy and fails a copy short of its last byte, one with a
/// byte changed in a window, one shifted by a word, and a destination never written.
#[test]
fn the_sampled_check_catches_truncated_shifted_and_missing_copies() {
    let len = 1u64 << 20;
    let mut good = vec![0u8; len as usize];
    fill(&mut good, 7);
    let check = |dst: &[u8]| {
        check_sampled::<()>(len, 7, "the destination", |r| {
            Ok(dst[r.start as usize..r.end as usize].to_vec())
        })
        .unwrap()
    };
    assert!(check(&good).valid);
    let mut short = good.clone();
    *short.last_mut().unwrap() = 0;
    let v = check(&short);
    assert!(
        !v.valid && v.detail.contains(&format!("[{}]", len - 1)),
        "{}",
        v.detail
    );
    let mut changed = good.clone();
    changed[(len / CHECK_WINDOWS * 3) as usize + 5] ^= 0x10;
    assert!(!check(&changed).valid);
    let mut shifted = vec![0u8; len as usize];
    shifted[8..].copy_from_slice(&good[..len as usize - 8]);
    assert!(!check(&shifted).valid);
    let v = check(&vec![0u8; len as usize]);
    assert!(
        !v.valid && v.detail.starts_with("266240 of 266240 sampled bytes"),
        "{}",
        v.detail
    );
    // a short read is invalid, not a pass
    let v = check_sampled::<()>(len, 7, "d", |r| {
        Ok(good[r.start as usize..r.end as usize - 1].to_vec())
    })
    .unwrap();
    assert!(
        !v.valid && v.detail.contains("read 4095 bytes"),
        "{}",
        v.detail
    );
}

#[test]
fn nominal_rates_and_the_note_round_trip() {
    let gen5 = PcieLink {
        generation: 5,
        width: 16,
    };
    assert!((pcie_nominal_gbps(gen5).unwrap() - 63.015).abs() < 0.01);
    let gen4x8 = PcieLink {
        generation: 4,
        width: 8,
    };
    assert!((pcie_nominal_gbps(gen4x8).unwrap() - 15.75).abs() < 0.01);
    assert!(
        (pcie_nominal_gbps(PcieLink {
            generation: 1,
            width: 1
        })
        .unwrap()
            - 0.25)
            .abs()
            < 1e-9
    );
    assert_eq!(
        pcie_nominal_gbps(PcieLink {
            generation: 9,
            width: 16
        }),
        None
    );
    assert_eq!(
        pcie_nominal_gbps(PcieLink {
            generation: 5,
            width: 0
        }),
        None
    );
    let note = link_note(Ok((gen4x8, Some(gen5))));
    assert_eq!(
        note,
        "PCIe Gen4 x8 (NVML current; max Gen5 x16): 15.8 GB/s per direction nominal"
    );
    assert_eq!(link_in_note(&format!("pinned; {note}")), Some(gen4x8));
    let none = link_note(Err("NVML absent".into()));
    assert!(none.contains("NVML absent") && none.contains("held against nothing"));
    assert_eq!(link_in_note(&none), None);
    assert_eq!(link_in_note("PCIe Genx x16"), None);
}
