#!/usr/bin/env python3
"""The exports, loaded by the estimators themselves (`roofprobe export --format ...`), with no
`--set`, each made to time a decode step that must follow the measured DRAM bandwidth.

Usage: check-exports.py ROOFPROBE INPUT WORKDIR

INPUT is a results CSV or a calibration JSON. The calibration is halved in its DRAM figures
(the DRAM ceiling, and the size sweep's bandwidths and times; derived figures kept consistent,
as roofprobe's reader checks), and each format is exported from both with no `--set`, loaded by
the tool and made to time a memory-bound decode step at batch 1, in every mode the tool offers
that can time one:

- llm-analysis (its own `read_configs` and `LLMAnalysis.inference`): the decode latency.
- aiconfigurator-core, SOL (its own engine, `run_static` on Qwen3-0.6B's shipped config): the
  time per output token; EMPIRICAL (which times a whole model only from perf data collected on
  a GPU, which no run writes): its memory-bound element-wise op, and where the calibration has a
  size fit within its quality bound, that the op is the fit's line.
- Calculon, in each processing mode (`no_overlap`, as exported, and `roofline`): with its own
  code where CALCULON_SRC names a checkout of its source (it is not on PyPI), a decode step's
  forward of one token; else the file is held to what calculon/system.py, processor.py,
  memory.py and network.py read and assert, and the step timed by their throughput rules.
- LLM-Viewer: its `roofline_model.roofline_analyze` where LLM_VIEWER_SRC names a checkout of its
  source, else the same formula; the file is held to what `model_analyzer.get_hardware_info`
  reads, and a decode step is its linear layers, each on the roofline.

The step's time with the bandwidth halved over its time with the measured one must be 1.9-2.1.
Two cases say more than the ratio:
- On a device whose measured 16-bit rate over its DRAM rate (its ridge) is under 2 FLOP/byte,
  a decode step (about 1 FLOP/byte) is compute-bound: there the loaded configs' compute figures
  are raised 10^6-fold, in the check only, so the step's memory term alone is timed (the
  simulated GPU's interpreter has a ridge of about 0.2). The script says so.
- Calculon's `no_overlap` mode adds compute to memory time: the step's ratio is then below 2 by
  its compute share, and its memory part (the step less the compute time Calculon reports) must
  double.

Prints one line per check (`check-exports: RATIO ...` for each ratio) and exits 1 on the first
failure. A tool that is not installed is reported `absent` (exit 0) unless
ROOFPROBE_REQUIRE_TOOLS=1, where it fails.
"""
import json
import os
import shutil
import subprocess
import sys

ROOFPROBE, INPUT, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
REQUIRE = os.environ.get("ROOFPROBE_REQUIRE_TOOLS") == "1"
CALCULON_SRC = os.environ.get("CALCULON_SRC")
LLM_VIEWER_SRC = os.environ.get("LLM_VIEWER_SRC")
LOW, HIGH = 1.9, 2.1
# The compute figures' factor where the step's memory term is isolated (see the doc above).
ISOLATE = 1e6


def fail(msg):
    print(f"check-exports: FAIL: {msg}")
    sys.exit(1)


def say(msg):
    print(f"check-exports: {msg}", flush=True)


def absent(tool, why):
    if REQUIRE:
        fail(f"{tool} is not installed ({why}) and ROOFPROBE_REQUIRE_TOOLS=1")
    say(f"{tool}: absent ({why}); skipped")


def roofprobe(*args):
    p = subprocess.run([ROOFPROBE, *args], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"roofprobe {' '.join(args)} exited {p.returncode}: {p.stderr.strip()}")
    return p


def export(fmt, cal, name, sets=()):
    """`roofprobe export CAL --format FMT` into WORK/NAME, with no --set unless a check says
    why it gives one."""
    out = os.path.join(WORK, name)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    args = ["export", cal, "--format", fmt, "-o", out, "--force"]
    for s in sets:
        args += ["--set", s]
    roofprobe(*args)
    return out


def halved(path, out):
    """The calibration with its DRAM figures halved: the DRAM ceiling (its efficiency and DRAM
    ridge points following), the size sweep's bandwidths halved and its times (the constant
    too) doubled; the classified points (placed against the old roof) dropped."""
    cal = json.load(open(path))
    dram = None
    for m in cal["memory_ceilings"]:
        if m["level"] == "dram" and m.get("gbps"):
            m["gbps"] /= 2
            if m.get("spec_gbps"):
                m["efficiency"] = m["gbps"] / m["spec_gbps"]
                m["above_spec"] = m["gbps"] > m["spec_gbps"]
            dram = m["gbps"]
    if dram is None:
        fail(f"{path} has no measured DRAM ceiling to halve")
    for r in cal.get("ridge_points", []):
        if r["memory"] == "dram" and r.get("flop_per_byte"):
            c = next(c for c in cal["compute_ceilings"]
                     if c["family"] == r["family"] and c["precision"] == r["precision"])
            r["flop_per_byte"] = c["gflops"] / dram
    for fit in cal.get("size_efficiency", []):
        fit["asymptotic_gbps"] /= 2
        fit["constant_secs"] *= 2
        for p in fit["points"]:
            p["secs"] *= 2
            p["gbps"] /= 2
    cal["points"] = []
    json.dump(cal, open(out, "w"), indent=2)


def ratio_ok(tool, mode, what, base, half, memory_part=None):
    """Requires half / base in LOW-HIGH; where `memory_part` is (base, half) of the step's
    memory term (a mode that adds compute to memory), that term's ratio instead."""
    r = half / base
    line = (f"RATIO {tool} [{mode}] {what}: {base:.6g} s, halved bandwidth {half:.6g} s, "
            f"ratio {r:.3f}")
    if memory_part is not None:
        mr = memory_part[1] / memory_part[0]
        line += (f"; its memory term {memory_part[0]:.6g} s -> {memory_part[1]:.6g} s, ratio "
                 f"{mr:.3f} (the mode adds compute, {(base - memory_part[0]) / base:.1%} of the "
                 f"step)")
        r = mr
    say(line + (" (memory term isolated: compute raised 1e6-fold)" if ISOLATED else ""))
    if not LOW <= r <= HIGH:
        fail(f"{tool} [{mode}]: ratio {r:.3f} outside {LOW}-{HIGH}: the tool did not follow the "
             "measured bandwidth")


# A decode step's model: Llama 2 7B's shape where the device holds it, else a tiny one of the
# same layout (the simulated GPU has 1 MiB). (layers, hidden, heads, ffn, vocab)
LLAMA_2_7B = ("llama-2-7b", 32, 4096, 32, 11008, 32000)
TINY = ("tiny", 2, 64, 4, 256, 256)


def model_for(usable_gib):
    return LLAMA_2_7B if usable_gib >= 16 else TINY


def llm_analysis(base, half):
    try:
        from llm_analysis import analysis, config
    except ImportError as e:
        return absent("llm-analysis", e)
    latencies, shape = [], None
    for cal, d in [(base, "llm-analysis-base"), (half, "llm-analysis-half")]:
        export("llm-analysis", cal, os.path.join(d, "gpu.json"))
        (gpu,) = config.read_configs(os.path.join(WORK, d), type="gpu").values()  # its loader
        if ISOLATED:
            gpu.peak_fp16_TFLOPS *= ISOLATE
            gpu.peak_i8_TFLOPS *= ISOLATE
            gpu.peak_i4_TFLOPS *= ISOLATE
        name, layers, hidden, heads, ffn, vocab = shape = model_for(gpu.mem_per_GPU_in_GB)
        if shape == LLAMA_2_7B:
            model = config.get_model_config_by_name("NousResearch_Llama-2-7b-hf")  # its own
        else:
            model = config.ModelConfig(name=name, num_layers=layers, n_head=heads,
                                       hidden_dim=hidden, vocab_size=vocab, max_seq_len=4096,
                                       ffn_embed_dim=ffn, model_type="llama")
        a = analysis.LLMAnalysis(model, gpu, flops_efficiency=1.0, hbm_memory_efficiency=1.0)
        s = a.inference(batch_size_per_gpu=1, seq_len=16, num_tokens_to_generate=8)
        latencies.append(s["decode_latency"])
    ratio_ok("llm-analysis", "its only mode", f"decode latency, {shape[0]}, batch 1", *latencies)


def aic_root(cal, name):
    """A systems folder holding the export as `roofprobe.yaml` and the (empty) perf-data folder
    its `data_dir` names, which SOL and EMPIRICAL need to exist; the compute figures raised
    where the memory term is isolated."""
    import yaml
    root = os.path.join(WORK, f"aic-{name}")
    path = export("aiconfigurator", cal, os.path.join(f"aic-{name}", "roofprobe.yaml"))
    spec = yaml.safe_load(open(path))
    os.makedirs(os.path.join(root, spec["data_dir"], "trtllm", "1.0.0"), exist_ok=True)
    if ISOLATED:
        for k in ("bfloat16_tc_flops", "int8_tc_flops", "fp8_tc_flops"):
            if k in spec["gpu"]:
                spec["gpu"][k] *= ISOLATE
        yaml.safe_dump(spec, open(path, "w"))
    return root, spec


def aiconfigurator(base, half):
    try:
        from aiconfigurator_core.sdk import common, config, engine, operations, perf_database
        from aiconfigurator_core.sdk.backends.factory import get_backend
        from aiconfigurator_core.sdk.models import get_model
    except ImportError as e:
        return absent("aiconfigurator-core", e)
    sol, empirical = [], []
    for cal, name in [(base, "base"), (half, "half")]:
        root, _ = aic_root(cal, name)
        # SOL: the whole model's decode, its own engine
        db = perf_database.get_database("roofprobe", "trtllm", "1.0.0", systems_paths=root,
                                        allow_missing_data=True, database_mode="SOL",
                                        allow_unlisted_version=True)
        db.set_default_database_mode(common.DatabaseMode.SOL)
        model = get_model("Qwen/Qwen3-0.6B", config.ModelConfig(tp_size=1, pp_size=1), "trtllm")
        summary = get_backend("trtllm").run_static(
            model, db, config.RuntimeConfig(batch_size=1, isl=128, osl=2), mode="static_gen")
        sol.append(float(summary.get_summary_df()["tpot"].iloc[0]) / 1e3)
        # EMPIRICAL: its memory op (bytes / (mem_bw x factor) + constant)
        db = perf_database.get_database("roofprobe", "trtllm", "1.0.0", systems_paths=root,
                                        allow_missing_data=True, database_mode="EMPIRICAL",
                                        allow_unlisted_version=True)
        db.set_default_database_mode(common.DatabaseMode.EMPIRICAL)
        op = operations.ElementWise("roofprobe_check", 1, 8192, 8192, 0.8)
        empirical.append(float(engine._evaluate_single_op(db, op, is_context=True, batch_size=1,
                                                          s=1, x=4096)) / 1e3)
    ratio_ok("aiconfigurator-core", "SOL", "time per output token, Qwen3-0.6B, batch 1", *sol)
    ratio_ok("aiconfigurator-core", "EMPIRICAL", "element-wise memory op, 4096 x 8192",
             *empirical)


def aiconfigurator_fit(cal_path):
    """Where the calibration has a size fit within its quality bound (`size_efficiency`, rms
    relative residual at most 0.1): AIConfigurator's EMPIRICAL memory op must be the fit's line,
    bytes / (mem_bw x factor) + constant = bytes / BW + a. The op's bytes are read back from its
    SOL time (bytes / mem_bw)."""
    cal = json.load(open(cal_path))
    fits = {f["kernel"]: f for f in cal.get("size_efficiency", [])
            if f["rms_relative_residual"] <= 0.1 and len(f["points"]) >= 2}
    fit = fits.get("triad") or fits.get("copy")
    if fit is None:
        return
    try:
        from aiconfigurator_core.sdk import common, engine, operations, perf_database
    except ImportError as e:
        return absent("aiconfigurator-core", e)
    root, spec = aic_root(cal_path, "fit")
    mem_bw = float(spec["gpu"]["mem_bw"])
    db = perf_database.get_database("roofprobe", "trtllm", "1.0.0", systems_paths=root,
                                    allow_missing_data=True, database_mode="EMPIRICAL",
                                    allow_unlisted_version=True)
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
        say(f"aiconfigurator-core [EMPIRICAL] memory op of {op_bytes:.6g} bytes: {got:.6g} s, "
            f"the fit's line {want:.6g} s")
        if abs(got / want - 1) > 1e-6:
            fail("aiconfigurator-core: its empirical memory op is not the size fit's line")


def calculon_schema(cfg):
    """What calculon/system.py, processor.py, memory.py and network.py read and assert."""
    for engine_name in ("matrix", "vector"):
        engine_cfg = cfg[engine_name]
        for dtype in ("float16", "bfloat16"):
            if dtype not in engine_cfg:
                fail(f"calculon: {engine_name}.{dtype} is missing: a {dtype} run fails "
                     f"('Unsupported type: {dtype}')")
        for dtype, p in engine_cfg.items():
            assert dtype in ("float8", "float16", "float32", "bfloat16"), dtype
            assert p["tflops"] > 0
            last = None
            for gflops, eff in p["gflops_efficiency"]:
                assert 0 < eff <= 1.0, eff
                assert last is None or gflops < last
                last = gflops
            assert last == 0, "the curve must reach size 0"
    for tier in ("mem1", "mem2"):
        mem = cfg[tier]
        assert mem["GiB"] >= 0 and mem["GBps"] > 0, tier
        assert all(0 < e <= 1.0 for _, e in mem["MB_efficiency"]), tier
        assert mem["MB_efficiency"][-1][0] == 0, tier
    assert cfg["processing_mode"] in ("roofline", "no_overlap")
    keys = {"bandwidth", "efficiency", "size", "latency", "ops", "must_be_filled",
            "processor_usage"}
    assert cfg["networks"], "Calculon needs a network tier"
    for n in cfg["networks"]:
        assert set(n) == keys, set(n) ^ keys
        assert n["bandwidth"] > 0 and 0 < n["efficiency"] <= 1 and n["size"] >= 0
        assert set(n["ops"]) == {"p2p", "reduce_scatter", "all_gather", "all_reduce"}
        assert 0 <= n["processor_usage"] < 1


def calculon_decode_by_its_rules(cfg, shape):
    """A decode step's forward of one token as Calculon times a layer (calculon/llm/layers.py):
    each product and each vector op at its size's throughput (Processor.throughput,
    Memory.throughput), compute and memory combined by the processing mode. Returns (step,
    compute part, memory part) in seconds."""
    _, layers, hidden, heads, ffn, vocab = shape

    def eff(curve, size, scale):
        for s, e in curve:
            if size >= s * scale:
                return e
        fail("calculon: a size its curve does not cover")

    m, mem = cfg["matrix"]["bfloat16"], cfg["mem1"]
    v = cfg["vector"]["bfloat16"]
    step = compute = memory = 0.0
    products = [(hidden, hidden)] * 4 + [(hidden, ffn), (ffn, hidden)]
    for n_in, n_out in products * layers + [(hidden, vocab)]:
        flops, size = 2.0 * n_in * n_out, 2.0 * (n_in * n_out + n_in + n_out)
        c = flops / (m["tflops"] * 1e12 * eff(m["gflops_efficiency"], flops, 1e9))
        b = size / (mem["GBps"] * 1e9 * eff(mem["MB_efficiency"], size, 1e6))
        step += max(c, b) if cfg["processing_mode"] == "roofline" else c + b
        compute, memory = compute + c, memory + b
    for _ in range(2 * layers):  # the norms: vector ops on the activations
        flops, size = 5.0 * hidden, 4.0 * hidden
        c = flops / (v["tflops"] * 1e12 * eff(v["gflops_efficiency"], flops, 1e9))
        b = size / (mem["GBps"] * 1e9 * eff(mem["MB_efficiency"], size, 1e6))
        step += max(c, b) if cfg["processing_mode"] == "roofline" else c + b
        compute, memory = compute + c, memory + b
    return step, compute, memory


def calculon_decode_with_its_code(path, shape):
    """The decode step's forward of one token, by Calculon itself (CALCULON_SRC): an
    application of the model's shape at seq_size 1, one processor, bfloat16, inference.
    Returns (step, compute part, memory part) in seconds, and whether its statistics (which
    `calculon llm` writes) could be computed."""
    sys.path.insert(0, CALCULON_SRC)
    import logging
    from calculon.llm import Llm
    from calculon.system import System
    name, layers, hidden, heads, ffn, vocab = shape
    app = Llm.Application({"hidden": hidden, "feedforward": ffn, "seq_size": 1,
                           "attn_heads": heads, "attn_size": hidden // heads,
                           "num_blocks": layers})
    exe = Llm.Execution.from_json({
        "num_procs": 1, "tensor_par": 1, "pipeline_par": 1, "data_par": 1,
        "tensor_par_net": 0, "pipeline_par_net": 0, "data_par_net": 0,
        "batch_size": 1, "microbatch_size": 1, "datatype": "bfloat16",
        "fused_activation": True, "attention_type": "multihead",
        "activation_recompute": "none", "pipeline_interleaving": 1,
        "optimizer_sharding": False, "tensor_par_comm_type": "ar",
        "tensor_par_overlap": "none", "seq_par_ag_redo": False, "data_par_overlap": False,
        "weight_offload": False, "activations_offload": False, "optimizer_offload": False,
        "training": False})
    system = System(json.load(open(path)))
    model = Llm(app, logging.getLogger("calculon"))
    model.compile(system, exe)
    model.run(system)
    try:
        model.get_stats_json(False)
        stats = True
    except ZeroDivisionError:
        stats = False
    return (model.get_total_time(), model._fw_flops_time, model._fw_mem_time), stats


def calculon(base, half, usable_gib):
    shape = model_for(usable_gib)
    if CALCULON_SRC:
        how = f"Calculon's own code ({CALCULON_SRC})"
    else:
        how = ("Calculon's schema and throughput rules from its source (not installable from a "
               "registry)")
    for mode, sets in [("no_overlap", ()), ("roofline", ("processing_mode=roofline",))]:
        times = []
        for cal, name in [(base, "base"), (half, "half")]:
            path = export("calculon", cal, f"calculon-{mode}-{name}.json", sets)
            cfg = json.load(open(path))
            calculon_schema(cfg)
            if ISOLATED:
                for engine_name in ("matrix", "vector"):
                    for p in cfg[engine_name].values():
                        p["tflops"] *= ISOLATE
                json.dump(cfg, open(path, "w"))
            if CALCULON_SRC:
                t, stats = calculon_decode_with_its_code(path, shape)
                if mode == "no_overlap" and not stats:
                    fail("calculon: its statistics failed on the exported mode")
                if mode == "roofline" and not stats and name == "base":
                    say("calculon [roofline]: its statistics divide by zero on this "
                        "memory-bound step (Llm.get_act_offload_bw_req), as the export's "
                        "no_overlap avoids")
            else:
                t = calculon_decode_by_its_rules(cfg, shape)
            times.append(t)
        (b, bc, bm), (h, hc, hm) = times
        memory_part = None
        if mode == "no_overlap":
            memory_part = (b - bc, h - hc)
        ratio_ok("calculon", mode, f"decode step forward of one token, {shape[0]}, bf16, by "
                 f"{how}", b, h, memory_part)


def llm_viewer(base, half, usable_gib):
    """A decode step as LLM-Viewer's analyzer times it at batch 1: each linear layer on the
    roofline (`roofline_analyze`: its OPs at min(FP16, intensity x bandwidth)), 16-bit weights
    and activations."""
    if LLM_VIEWER_SRC:
        sys.path.insert(0, LLM_VIEWER_SRC)
        from roofline_model import roofline_analyze
        how = f"LLM-Viewer's own roofline_analyze ({LLM_VIEWER_SRC})"
    else:
        def roofline_analyze(bandwidth, max_ops, ops, memory_access):
            intensity = ops / memory_access
            if intensity < max_ops / bandwidth:
                return intensity, intensity * bandwidth, "memory"
            return intensity, max_ops, "compute"
        how = "LLM-Viewer's roofline formula (not installable from a registry)"
    name, layers, hidden, heads, ffn, vocab = model_for(usable_gib)
    products = [(hidden, hidden)] * 4 + [(hidden, ffn)] * 2 + [(ffn, hidden)]
    times = []
    for cal, file in [(base, "llm-viewer-base.py"), (half, "llm-viewer-half.py")]:
        scope = {}
        exec(open(export("llm-viewer", cal, file)).read(), scope)
        (hw,) = scope["hardware_params"].values()
        # what model_analyzer.get_hardware_info reads
        bandwidth, max_ops, onchip = hw["bandwidth"], hw["FP16"], hw["onchip_buffer"]
        assert all(isinstance(v, float) and v > 0 for v in (bandwidth, max_ops, onchip)), hw
        if ISOLATED:
            max_ops *= ISOLATE
        t = 0.0
        for n_in, n_out in products * layers + [(hidden, vocab)]:
            ops = 2.0 * n_in * n_out
            memory = 2.0 * (n_in * n_out + n_in + n_out)
            _, performance, _ = roofline_analyze(bandwidth, max_ops, ops, memory)
            t += ops / performance
        times.append(t)
    ratio_ok("llm-viewer", "its only mode", f"decode step's linear layers, {name}, by {how}",
             *times)


def cross_check(cal_path):
    """`roofprobe estimate` and llm-analysis on the same inputs: Llama-2-7B (its own shipped
    config, our preset), batch 1, 128 prompt tokens, 8 generated, the host's measured bandwidth
    and f32 peak as the compute for both (llm-analysis's 16-bit rate given as the f32 peak, for
    this comparison only). Where the run measured GEMMs, our prefill runs at the measured GEMM's
    rate and our decode step moves its bytes at the measured matrix-vector product's, rather
    than at the ceilings: llm-analysis gets the same shares of the ceilings as its
    `flops_efficiency` and `hbm_memory_efficiency`. docs/estimate.md explains the gap."""
    try:
        from llm_analysis import analysis, config
    except ImportError as e:
        return absent("llm-analysis", e)
    cal = json.load(open(cal_path))
    f32 = next(c for c in cal["compute_ceilings"]
               if c["family"] == "peak" and c["precision"] == "f32")["gflops"]
    d = os.path.join(WORK, "cross-check")
    export("llm-analysis", cal_path, os.path.join("cross-check", "gpu.json"),
           [f"peak_fp16_TFLOPS={f32 / 1e3!r}"])
    (gpu,) = config.read_configs(d, type="gpu").values()
    model = config.get_model_config_by_name("NousResearch_Llama-2-7b-hf")
    p = roofprobe("estimate", cal_path, "--model", "llama-2-7b", "--activations", "fp32",
                  "--prompt", "128", "--generate", "8", "--json")
    report = json.loads(p.stdout)["devices"][0]
    ours = report["answer"]
    dram = report["machine"]["bandwidth_bps"]["value"]
    efficiency = ours["decode_bandwidth_bps"]["value"] / dram
    say(f"cross-check decode bandwidth: {efficiency:.3f} of the DRAM ceiling "
        f"({ours['decode_bandwidth_bps']['source']})")
    flops = ours["prefill_compute_flops"]["value"] / (f32 * 1e9)
    say(f"cross-check prefill compute: {flops:.3f} of the f32 peak "
        f"({ours['prefill_compute_flops']['source']})")
    theirs = analysis.LLMAnalysis(model, gpu, flops_efficiency=flops,
                                  hbm_memory_efficiency=min(efficiency, 1.0)) \
        .inference(batch_size_per_gpu=1, seq_len=128, num_tokens_to_generate=8)
    for phase, o, t in [("prefill", ours["prefill"]["time_s"], theirs["prefill_latency"]),
                        ("decode step", ours["decode_step"]["time_s"], theirs["decode_latency"])]:
        say(f"cross-check {phase}: roofprobe estimate {o:.6g} s, llm-analysis {t:.6g} s, "
            f"ratio {o / t:.3f}")
        if not 0.9 <= o / t <= 1.1:
            fail(f"cross-check {phase}: estimate and llm-analysis differ by more than 10 %")


os.makedirs(WORK, exist_ok=True)
base = os.path.join(WORK, "calibration.json")
if INPUT.endswith(".json"):
    shutil.copy(INPUT, base)
else:
    roofprobe("export", INPUT, "-o", base, "--force")
half = os.path.join(WORK, "halved-dram.json")
halved(base, half)
# The device's ridge for 16-bit work and what a model may use, as llm-analysis's export says
probe = json.load(open(export("llm-analysis", base, "probe/gpu.json")))
ridge = probe["peak_fp16_TFLOPS"] * 1e3 / probe["hbm_bandwidth_in_GB_per_sec"]
usable_gib = probe["mem_per_GPU_in_GB"]
ISOLATED = ridge < 2
say(f"{INPUT}: 16-bit ridge {ridge:.3g} FLOP/byte, {usable_gib:.3g} GiB usable"
    + ("; a decode step is compute-bound here: its memory term is isolated" if ISOLATED else ""))
llm_analysis(base, half)
aiconfigurator(base, half)
calculon(base, half, usable_gib)
llm_viewer(base, half, usable_gib)
aiconfigurator_fit(base)
if usable_gib >= 16 and not ISOLATED:
    cross_check(base)
say("ok")
