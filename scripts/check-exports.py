#!/usr/bin/env python3
"""The exports, loaded by the estimators themselves (`roofprobe export --format …`).

Usage: check-exports.py ROOFPROBE CALIBRATION.json WORKDIR

For each format: export the calibration, load the file with the tool's own loader (llm-analysis
and AIConfigurator, where installed) or against the schema its source defines (Calculon,
LLM-Viewer: not on PyPI), run one memory-bound estimate; then halve the measured DRAM bandwidth
in the calibration (its derived figures kept consistent, as roofprobe's reader checks), export
again, and require the estimate to take 1.8-2.2 times as long. Where the calibration has a size
fit (`size_efficiency`), AIConfigurator's empirical memory op must also be the fit's line. Prints one line per tool; exits
1 on the first failure. A tool that is not installed is reported `absent` (exit 0) unless
ROOFPROBE_REQUIRE_TOOLS=1, where it fails.

The figures given with --set are what no run measures (node topology, on-chip buffer, the
tensor rates a host CPU run lacks): test inputs, not measurements.
"""
import json
import os
import subprocess
import sys

ROOFPROBE, CALIBRATION, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
REQUIRE = os.environ.get("ROOFPROBE_REQUIRE_TOOLS") == "1"
LOW, HIGH = 1.8, 2.2


def fail(msg):
    print(f"check-exports: FAIL: {msg}")
    sys.exit(1)


def halved(path, out):
    """The calibration with its DRAM ceiling halved; efficiencies and DRAM ridge points follow,
    the classified points (placed against the old roof) are dropped."""
    cal = json.load(open(path))
    for m in cal["memory_ceilings"]:
        if m["level"] == "dram" and m.get("gbps"):
            m["gbps"] /= 2
            if m.get("spec_gbps"):
                m["efficiency"] = m["gbps"] / m["spec_gbps"]
                m["above_spec"] = m["gbps"] > m["spec_gbps"]
            dram = m["gbps"]
    for r in cal.get("ridge_points", []):
        if r["memory"] == "dram" and r.get("flop_per_byte"):
            c = next(c for c in cal["compute_ceilings"]
                     if c["family"] == r["family"] and c["precision"] == r["precision"])
            r["flop_per_byte"] = c["gflops"] / dram
    # a size fit halves too: its bandwidths halve and its times (the constant too) double
    for fit in cal.get("size_efficiency", []):
        fit["asymptotic_gbps"] /= 2
        fit["constant_secs"] *= 2
        for p in fit["points"]:
            p["secs"] *= 2
            p["gbps"] /= 2
    cal["points"] = []
    json.dump(cal, open(out, "w"), indent=2)


def export(fmt, cal, sets, name):
    out = os.path.join(WORK, name)
    args = [ROOFPROBE, "export", cal, "--format", fmt, "-o", out, "--force"]
    for s in sets:
        args += ["--set", s]
    p = subprocess.run(args, capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"{fmt}: export exited {p.returncode}: {p.stderr.strip()}")
    return out


def ratio_ok(tool, base, half):
    r = half / base
    print(f"check-exports: {tool}: memory-bound estimate {base:.6g} s, halved bandwidth "
          f"{half:.6g} s, ratio {r:.3f}")
    if not LOW <= r <= HIGH:
        fail(f"{tool}: ratio {r:.3f} outside {LOW}-{HIGH}: the tool did not follow our bandwidth")


def absent(tool, why):
    if REQUIRE:
        fail(f"{tool} is not installed ({why}) and ROOFPROBE_REQUIRE_TOOLS=1")
    print(f"check-exports: {tool}: absent ({why}); skipped")


def llm_analysis(base_cal, half_cal):
    try:
        from llm_analysis import analysis, config
    except ImportError as e:
        return absent("llm-analysis", e)
    sets = ["mem_per_GPU_in_GB=24", "intra_node_bandwidth_in_GB_per_sec=1",
            "intra_node_min_message_latency=1e-5", "peak_fp16_TFLOPS=1000"]
    latencies = []
    for cal, d in [(base_cal, "llm-analysis-base"), (half_cal, "llm-analysis-half")]:
        os.makedirs(os.path.join(WORK, d), exist_ok=True)
        export("llm-analysis", cal, sets, os.path.join(d, "gpu.json"))
        gpus = config.read_configs(os.path.join(WORK, d), type="gpu")  # the tool's loader
        (gpu,) = gpus.values()
        model = config.get_model_config_by_name("EleutherAI_gpt-neo-125m")
        a = analysis.LLMAnalysis(model, gpu, flops_efficiency=1.0, hbm_memory_efficiency=1.0)
        s = a.inference(batch_size_per_gpu=1, seq_len=128, num_tokens_to_generate=8)
        latencies.append(s["decode_latency"])
    ratio_ok("llm-analysis (decode latency, gpt-neo-125m, batch 1)", *latencies)


def aiconfigurator(base_cal, half_cal):
    try:
        from aiconfigurator_core.sdk import engine, operations, perf_database
    except ImportError as e:
        return absent("aiconfigurator-core", e)
    sets = ["data_dir=data/roofprobe", "node.num_gpus_per_node=1", "node.inter_node_bw=1e9",
            "node.intra_node_bw=1e9"]
    latencies = []
    for cal, name in [(base_cal, "base"), (half_cal, "half")]:
        root = os.path.join(WORK, f"aic-{name}")
        # an empty perf-data folder: the engine then models memory ops from the YAML alone
        os.makedirs(os.path.join(root, "data", "roofprobe", "trtllm", "1.0.0"), exist_ok=True)
        export("aiconfigurator", cal, sets, os.path.join(f"aic-{name}", "roofprobe.yaml"))
        db = perf_database.PerfDatabase("roofprobe", "trtllm", "1.0.0", systems_root=root,
                                        database_mode="SOL")
        op = operations.ElementWise("roofprobe_check", 1, 8192, 8192, 0.8)
        r = engine._evaluate_single_op(db, op, is_context=True, batch_size=1, s=1, x=4096)
        latencies.append(float(r) / 1e3)  # ms
    ratio_ok("aiconfigurator-core (element-wise op, 4096 x 8192, SOL)", *latencies)


def aiconfigurator_fit(cal_path):
    """Where the calibration has a size fit (`size_efficiency`): AIConfigurator's empirical
    memory op must be the fit's line, bytes / (mem_bw x factor) + constant = bytes / BW + a.
    The op's bytes are read back from its speed-of-light time (bytes / mem_bw)."""
    cal = json.load(open(cal_path))
    fits = {f["kernel"]: f for f in cal.get("size_efficiency", [])}
    fit = fits.get("triad") or fits.get("copy")
    if fit is None:
        return
    try:
        from aiconfigurator_core.sdk import common, engine, operations, perf_database
    except ImportError as e:
        return absent("aiconfigurator-core", e)
    sets = ["data_dir=data/roofprobe", "node.num_gpus_per_node=1", "node.inter_node_bw=1e9",
            "node.intra_node_bw=1e9"]
    root = os.path.join(WORK, "aic-fit")
    os.makedirs(os.path.join(root, "data", "roofprobe", "trtllm", "1.0.0"), exist_ok=True)
    path = export("aiconfigurator", cal_path, sets, os.path.join("aic-fit", "roofprobe.yaml"))
    mem_bw = next(float(line.split(":")[1].split("#")[0]) for line in open(path)
                  if line.strip().startswith("mem_bw:"))
    db = perf_database.PerfDatabase("roofprobe", "trtllm", "1.0.0", systems_root=root)
    for n in (64, 8192):
        ms = {}
        for mode in (common.DatabaseMode.SOL, common.DatabaseMode.EMPIRICAL):
            db.set_default_database_mode(mode)
            op = operations.ElementWise("roofprobe_check", 1, n, n, 0.8)
            ms[mode] = float(engine._evaluate_single_op(db, op, is_context=True, batch_size=1,
                                                        s=1, x=4096))
        op_bytes = ms[common.DatabaseMode.SOL] / 1e3 * mem_bw
        want = op_bytes / (fit["asymptotic_gbps"] * 1e9) + fit["constant_secs"]
        got = ms[common.DatabaseMode.EMPIRICAL] / 1e3
        print(f"check-exports: aiconfigurator-core (empirical memory op, {op_bytes:.6g} bytes): "
              f"{got:.6g} s, the fit's line {want:.6g} s")
        if abs(got / want - 1) > 1e-6:
            fail("aiconfigurator-core: its empirical memory op is not the size fit's line")


def calculon(base_cal, half_cal):
    """Calculon is not on PyPI: its file is held to what calculon/system.py, processor.py and
    memory.py read and assert, and a memory op's time is computed as Memory.throughput does."""
    times = []
    for cal, name in [(base_cal, "calculon-base.json"), (half_cal, "calculon-half.json")]:
        cfg = json.load(open(export("calculon", cal, [], name)))
        for engine_name in ("matrix", "vector"):
            for dtype, p in cfg.get(engine_name, {}).items():
                assert dtype in ("float8", "float16", "float32", "bfloat16"), dtype
                assert p["tflops"] > 0
                last = None
                for gflops, eff in p["gflops_efficiency"]:
                    assert 0 < eff <= 1.0, eff
                    assert last is None or gflops < last
                    last = gflops
                assert last == 0, "the curve must reach size 0"
        mem = cfg["mem1"]
        assert mem["GBps"] > 0
        assert all(0 < e <= 1.0 for _, e in mem["MB_efficiency"])
        assert mem["MB_efficiency"][-1][0] == 0
        assert cfg["processing_mode"] in ("roofline", "no_overlap")
        op_bytes = 1e9

        def throughput(size):
            for mb, eff in mem["MB_efficiency"]:
                if size >= mb * 1e6:
                    return mem["GBps"] * 1e9 * eff
        times.append(op_bytes / throughput(op_bytes))
    ratio_ok("calculon (schema from its source; 1 GB memory op)", *times)


def llm_viewer(base_cal, half_cal):
    """LLM-Viewer is not on PyPI: its file is held to what model_analyzer.get_hardware_info
    reads, and a memory-bound op's time is bytes over `bandwidth`, as its roofline does."""
    times = []
    sets = ["onchip_buffer=1e6", "FP16=1e12"]
    for cal, name in [(base_cal, "llm-viewer-base.py"), (half_cal, "llm-viewer-half.py")]:
        scope = {}
        exec(open(export("llm-viewer", cal, sets, name)).read(), scope)
        (hw,) = scope["hardware_params"].values()
        bandwidth, max_ops, onchip = hw["bandwidth"], hw["FP16"], hw["onchip_buffer"]
        assert all(isinstance(v, float) and v > 0 for v in (bandwidth, max_ops, onchip))
        times.append(1e9 / bandwidth)
    ratio_ok("llm-viewer (schema from its source; 1 GB memory op)", *times)


def cross_check(cal_path):
    """`roofprobe estimate` and llm-analysis on the same inputs: Llama-2-7B (its own shipped
    config, our preset), batch 1, 128 prompt tokens, 8 generated, the host's measured bandwidth
    and f32 peak as the compute for both. Where the run measured GEMMs, our prefill runs at the
    measured GEMM's rate and our decode step moves its bytes at the measured matrix-vector
    product's, rather than at the ceilings: llm-analysis gets the same shares of the ceilings as
    its `flops_efficiency` and `hbm_memory_efficiency`. docs/estimate.md explains the gap."""
    try:
        from llm_analysis import analysis, config
    except ImportError as e:
        return absent("llm-analysis", e)
    cal = json.load(open(cal_path))
    f32 = next(c for c in cal["compute_ceilings"]
               if c["family"] == "peak" and c["precision"] == "f32")["gflops"]
    d = os.path.join(WORK, "cross-check")
    os.makedirs(d, exist_ok=True)
    export("llm-analysis", cal_path, ["mem_per_GPU_in_GB=24", "intra_node_bandwidth_in_GB_per_sec=1",
                                      "intra_node_min_message_latency=1e-5",
                                      f"peak_fp16_TFLOPS={f32 / 1e3!r}"],
           os.path.join("cross-check", "gpu.json"))
    (gpu,) = config.read_configs(d, type="gpu").values()
    model = config.get_model_config_by_name("NousResearch_Llama-2-7b-hf")
    p = subprocess.run([ROOFPROBE, "estimate", cal_path, "--memory-gib", "24", "--model",
                        "llama-2-7b", "--activations", "fp32", "--prompt", "128", "--generate",
                        "8", "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"estimate exited {p.returncode}: {p.stderr.strip()}")
    report = json.loads(p.stdout)["devices"][0]
    ours = report["answer"]
    dram = report["machine"]["bandwidth_bps"]["value"]
    efficiency = ours["decode_bandwidth_bps"]["value"] / dram
    print(f"check-exports: cross-check decode bandwidth: {efficiency:.3f} of the DRAM ceiling "
          f"({ours['decode_bandwidth_bps']['source']})")
    flops = ours["prefill_compute_flops"]["value"] / (f32 * 1e9)
    print(f"check-exports: cross-check prefill compute: {flops:.3f} of the f32 peak "
          f"({ours['prefill_compute_flops']['source']})")
    theirs = analysis.LLMAnalysis(model, gpu, flops_efficiency=flops,
                                  hbm_memory_efficiency=efficiency) \
        .inference(batch_size_per_gpu=1, seq_len=128, num_tokens_to_generate=8)
    for phase, o, t in [("prefill", ours["prefill"]["time_s"], theirs["prefill_latency"]),
                        ("decode step", ours["decode_step"]["time_s"], theirs["decode_latency"])]:
        print(f"check-exports: cross-check {phase}: roofprobe estimate {o:.6g} s, llm-analysis "
              f"{t:.6g} s, ratio {o / t:.3f}")
        if not 0.9 <= o / t <= 1.1:
            fail(f"cross-check {phase}: estimate and llm-analysis differ by more than 10 %")


os.makedirs(WORK, exist_ok=True)
half = os.path.join(WORK, "halved-dram.json")
halved(CALIBRATION, half)
for check in (llm_analysis, aiconfigurator, calculon, llm_viewer):
    check(CALIBRATION, half)
aiconfigurator_fit(CALIBRATION)
cross_check(CALIBRATION)
print("check-exports: ok")
