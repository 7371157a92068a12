//! Thread-block clusters: the cluster special registers, `barrier.cluster`, `mapa` with a
//! remote `mbarrier.arrive`, and a TMA box multicast to every CTA of the cluster; and their
//! hazards as errors, each next to the clean kernel.

mod common;

use ptxsim::{Arg, LaunchConfig, Memory, Module, Schedule, Swizzle, TensorMap};

const HEADER: &str = ".version 8.0\n.target sm_90a\n.address_size 64\n";

/// Each CTA of a cluster of 2 (32 threads): thread 0 makes a `full` barrier (1 arrival and the
/// box's bytes) and a `done` barrier (1 arrival: the other CTA's); after a cluster barrier,
/// thread 0 of rank r loads half the box (rows 4r..4r+3 of 8 x 8 u32) and multicasts it to
/// both CTAs, which all wait for the whole box and dump it to `out + rank * 256`; then thread
/// 0 arrives on the other CTA's `done` barrier and waits on its own; a last cluster barrier
/// keeps every CTA alive while the other may still arrive. `ids` gets six cluster registers
/// per CTA. `$SYNC$`, `$ARRIVE$`, `$MASK$` and `$END$` are what the hazard twins change.
fn kernel() -> String {
    format!(
        r#"{HEADER}
.visible .entry mc(.param .u64 out, .param .u64 ids, .param .align 64 .b8 tmap[128])
.reqnctapercluster 2, 1, 1
{{
    .reg .pred %p<4>;
    .reg .b16 %rs<4>;
    .reg .b32 %r<32>;
    .reg .b64 %rd<16>;
    .shared .align 1024 .b8 buf[256];
    .shared .align 8 .b64 full;
    .shared .align 8 .b64 done;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd7, [ids];
    mov.u64 %rd2, tmap;
    cvta.param.u64 %rd3, %rd2;
    mov.u32 %r4, full;
    mov.u32 %r5, buf;
    mov.u32 %r10, done;
    mov.u32 %r6, %tid.x;
    mov.u32 %r11, %cluster_ctarank;
    setp.ne.u32 %p1, %r6, 0;
    @%p1 bra made;
    // the cluster registers
    mov.u32 %r20, %ctaid.x;
    mul.wide.u32 %rd8, %r20, 24;
    add.u64 %rd8, %rd7, %rd8;
    st.global.u32 [%rd8], %r11;
    mov.u32 %r21, %cluster_nctarank;
    st.global.u32 [%rd8+4], %r21;
    mov.u32 %r21, %clusterid.x;
    st.global.u32 [%rd8+8], %r21;
    mov.u32 %r21, %nclusterid.x;
    st.global.u32 [%rd8+12], %r21;
    mov.u32 %r21, %cluster_ctaid.x;
    st.global.u32 [%rd8+16], %r21;
    mov.u32 %r21, %cluster_nctaid.x;
    st.global.u32 [%rd8+20], %r21;
    mbarrier.init.shared::cta.b64 [%r4], 1;
    mbarrier.init.shared::cta.b64 [%r10], 1;
    fence.mbarrier_init.release.cluster;
made:
    $SYNC$
    @%p1 bra wait;
    mbarrier.arrive.expect_tx.shared::cta.b64 _, [%r4], 256;
    shl.b32 %r12, %r11, 7;
    add.u32 %r13, %r5, %r12;        // this CTA's half of the box
    shl.b32 %r14, %r11, 2;          // its first row
    mov.u32 %r15, 0;
    mov.b16 %rs1, $MASK$;
    cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%r13], [%rd3, {{%r15, %r14}}], [%r4], %rs1;
wait:
    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r4], 0;
    @!%p2 bra wait;
    shl.b32 %r7, %r6, 2;
    mov.u32 %r18, %ctaid.x;
    mul.wide.u32 %rd9, %r18, 256;
    add.u64 %rd9, %rd1, %rd9;
dump:
    setp.ge.u32 %p3, %r7, 256;
    @%p3 bra dumped;
    add.u32 %r8, %r5, %r7;
    ld.shared.u32 %r9, [%r8];
    cvt.u64.u32 %rd4, %r7;
    add.u64 %rd5, %rd9, %rd4;
    st.global.u32 [%rd5], %r9;
    add.u32 %r7, %r7, 128;
    bra dump;
dumped:
    @%p1 bra fin;
    xor.b32 %r16, %r11, 1;
    mapa.shared::cluster.u32 %r17, %r10, %r16;
    $ARRIVE$
    $WAIT_DONE$
fin:
    $END$
    ret;
}}
"#
    )
}

const SYNC: &str =
    "barrier.cluster.arrive.release.aligned;\n    barrier.cluster.wait.acquire.aligned;";
const ARRIVE: &str = "mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%r17];";
const END: &str = "barrier.cluster.arrive;\n    barrier.cluster.wait;";
const WAIT_DONE: &str = "wait_done:\n    mbarrier.try_wait.parity.shared::cta.b64 %p2, [%r10], 0;\n    @!%p2 bra wait_done;";

fn variant(sync: &str, arrive: &str, mask: &str, end: &str) -> String {
    kernel()
        .replace("$SYNC$", sync)
        .replace("$ARRIVE$", arrive)
        .replace("$MASK$", mask)
        .replace("$END$", end)
        .replace("$WAIT_DONE$", WAIT_DONE)
}

const DIMS: [u64; 2] = [8, 8];

fn value(x: u64, y: u64) -> u32 {
    (y * 100 + x) as u32 + 7
}

struct Run {
    boxes: Vec<u32>,
    ids: Vec<u32>,
}

fn run(text: &str, grid: u32, schedule: Schedule) -> Result<Run, ptxsim::Error> {
    let m = common::module("cluster", text);
    let mut config = LaunchConfig::new((grid, 1, 1), (32, 1, 1), 0);
    config.schedule = schedule;
    run_module(&m, &config)
}

fn run_module(m: &Module, config: &LaunchConfig) -> Result<Run, ptxsim::Error> {
    let grid = config.grid.0;
    let mut mem = Memory::new();
    let data: Vec<u32> = (0..DIMS[1])
        .flat_map(|y| (0..DIMS[0]).map(move |x| value(x, y)))
        .collect();
    let base = mem.alloc_from(&data);
    let map = TensorMap {
        base: base.addr(),
        elem_bytes: 4,
        dims: DIMS,
        strides_bytes: [DIMS[0] * 4],
        box_dims: [8, 4],
        swizzle: Swizzle::None,
        oob_fill: ptxsim::OobFill::Zero,
    };
    let out = mem.alloc(grid as usize * 256);
    let ids = mem.alloc(grid as usize * 24);
    m.launch_with(
        "mc",
        config,
        &[
            Arg::Ptr(out),
            Arg::Ptr(ids),
            Arg::Bytes(map.encode().to_vec()),
        ],
        &mut mem,
    )?;
    Ok(Run {
        boxes: mem.read::<u32>(out, grid as usize * 64)?,
        ids: mem.read::<u32>(ids, grid as usize * 6)?,
    })
}

fn err_of<T>(r: Result<T, ptxsim::Error>) -> String {
    match r {
        Ok(_) => panic!("runs, but must fail"),
        Err(e) => e.to_string(),
    }
}

const SCHEDULES: [Schedule; 4] = [
    Schedule::InOrder,
    Schedule::Shuffled { seed: 1 },
    Schedule::Shuffled { seed: 2 },
    Schedule::Shuffled { seed: 3 },
];

#[test]
fn a_multicast_box_lands_in_both_ctas_and_barriers_pass_between_them() {
    let text = variant(SYNC, ARRIVE, "3", END);
    let want: Vec<u32> = (0..8u64)
        .flat_map(|y| (0..8u64).map(move |x| value(x, y)))
        .collect();
    for schedule in SCHEDULES {
        let r = run(&text, 4, schedule).unwrap();
        // Each CTA holds the whole box: its own half and the other's.
        for (cta, got) in r.boxes.chunks(64).enumerate() {
            assert_eq!(got, &want[..], "CTA {cta}, {schedule:?}");
        }
        // Per CTA: rank, CTAs per cluster, cluster id, clusters, position, cluster width.
        let ids: Vec<[u32; 6]> = r
            .ids
            .chunks(6)
            .map(|c| c.try_into().expect("six"))
            .collect();
        assert_eq!(
            ids,
            vec![
                [0, 2, 0, 2, 0, 2],
                [1, 2, 0, 2, 1, 2],
                [0, 2, 1, 2, 0, 2],
                [1, 2, 1, 2, 1, 2],
            ],
            "{schedule:?}"
        );
    }
}

#[test]
fn cluster_hazards_are_errors() {
    // Only this CTA in the mask: half of each box never comes, and the phase never completes.
    let e = err_of(run(&variant(SYNC, ARRIVE, "1", END), 2, Schedule::InOrder));
    assert!(e.contains("deadlock"), "{e}");
    // A CTA beyond the cluster in the mask.
    let e = err_of(run(&variant(SYNC, ARRIVE, "7", END), 2, Schedule::InOrder));
    assert!(e.contains("ctaMask 0x0007"), "{e}");
    // No cluster barrier between the other CTA's mbarrier.init and the multicast that
    // completes on it.
    let e = err_of(run(
        &variant("bar.sync 0;", ARRIVE, "3", END),
        2,
        Schedule::InOrder,
    ));
    assert!(
        e.contains("no barrier.cluster phase completed since"),
        "{e}"
    );
    // The handshake on `done` keeps each CTA alive until the other arrived, so the kernel
    // needs no cluster barrier at the end; without the handshake's wait, rank 1 exits (in
    // this schedule) before rank 0 arrives on its barrier.
    run(&variant(SYNC, ARRIVE, "3", ""), 2, Schedule::InOrder).unwrap();
    let e = err_of(run(
        &variant(SYNC, ARRIVE, "3", "").replace(WAIT_DONE, ""),
        2,
        Schedule::InOrder,
    ));
    assert!(e.contains("every thread of that CTA has exited"), "{e}");
    // The remote arrival left out: each CTA waits forever on its `done` barrier.
    let e = err_of(run(&variant(SYNC, "", "3", END), 2, Schedule::InOrder));
    assert!(e.contains("deadlock"), "{e}");
    // A mapa address used as this CTA's.
    let e = err_of(run(
        &variant(
            SYNC,
            "mbarrier.arrive.release.cluster.shared::cta.b64 _, [%r17];",
            "3",
            END,
        ),
        2,
        Schedule::InOrder,
    ));
    assert!(e.contains("a shared::cluster address from mapa"), "{e}");
    // Waiting without arriving.
    let e = err_of(run(
        &variant("barrier.cluster.wait;", ARRIVE, "3", END),
        2,
        Schedule::InOrder,
    ));
    assert!(e.contains("without a barrier.cluster.arrive"), "{e}");
    // A grid that is not a whole number of clusters.
    let e = err_of(run(&variant(SYNC, ARRIVE, "3", END), 3, Schedule::InOrder));
    assert!(e.contains("not a whole number of clusters"), "{e}");
    // A launch shape that contradicts .reqnctapercluster.
    let m = common::module("cluster", &variant(SYNC, ARRIVE, "3", END));
    let mut config = LaunchConfig::new((4, 1, 1), (32, 1, 1), 0);
    config.cluster = Some((4, 1, 1));
    let e = err_of(run_module(&m, &config));
    assert!(e.contains("declares .reqnctapercluster"), "{e}");
}

#[test]
fn cluster_forms_need_ptx_7_8_or_8_0_and_sm_90() {
    for (body, what) in [
        ("barrier.cluster.arrive;", "barrier.cluster"),
        ("mov.u32 %r1, %cluster_ctarank;", "%cluster_ctarank"),
        ("mapa.shared::cluster.u32 %r1, %r2, 1;", "mapa"),
    ] {
        let text = format!(
            ".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{{\n    .reg .b32 %r<4>;\n    mov.u32 %r2, 0;\n    {body}\n    ret;\n}}\n"
        );
        let e = match Module::parse(&text) {
            Ok(_) => panic!("{what} parses under sm_80"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("sm_90"), "{what}: {e}");
    }
}
