#!/usr/bin/env python3
"""Our decode and prompt speed side by side with llama.cpp's own benchmark, llama-bench.

One command makes the README's comparison table:
  /usr/bin/python3 tools/bench_vs_llamacpp.py        (or: make bench-vs-llamacpp)
It builds llama.cpp from source in a cache folder outside the git tree
(tools/llamacpp_build.py: once, ~6+ minutes per build at nice 19), writes
random-weight GGUF files at ml_bench's shapes there (tools/gguf_random.py:
once; the Q8_0 and Q4_0 files of llama.cpp's own quantizer), builds our
ml_bench, then runs in ROUNDS interleaved rounds, model by model:
  llama-bench -m MODEL.gguf -mmp 0 -p 128 -n 128 -r REPS -t 1,2 -o json
  ml_bench --model-only --shape S --wtype T -t 1,2 --reps REPS --bw -p 128 --rows --f16-scales
(--f16-scales: fp16 block scales, what a Q8_0/Q4_0 GGUF converts to; --scales f32
for the design's fp32 scales, f32,f16 for both against the same llama.cpp figure;
--depth D adds decode after a D-token context: llama-batched-bench -npp D -ntg 128
-npl 1 against ml_bench -d D)
(which of the two goes first alternates from round to round). Both decode
128 tokens from an empty context (tg128) with the weights read into memory,
and run a 128-token prompt from position 0 (pp128: llama-bench's -p 128,
ml_bench's batched prefill at ml_run's default -b). Each round's ratio ours/llama.cpp
comes from figures measured minutes apart, so a noisy neighbour moves both;
the table shows each engine's median tok/s and the ratio's median and range
over the rounds, and the read bandwidth ml_bench measured next to its figure.
Legacy rows: our sse41 build against llama.cpp's SSE4.2 build (every AVX
option off; llama.cpp has no SSE2 build), decode and prompt, 1 thread.
Never through the Python bindings: they ran llama.cpp at half its speed.

--env prints the llama-bench and GGUF file of one shape and type as
LLAMA_BENCH and LLAMA_MODEL, for tools/bench_under_load.sh's llama.cpp columns:
  eval "$(/usr/bin/python3 tools/bench_vs_llamacpp.py --env --shapes stories15M --types q8_0)"

Needs numpy and the gguf package (pip install gguf) in the Python that runs
it, cmake and a C++ compiler, network access for the first run.
env: ROUNDS (default 3), XDG_CACHE_HOME, MODELS (the folder of
llama2-tokenizer/, default ../shared/models). It is a tool, not a test: CI does
not run it (tests/test_bench_vs_llamacpp.py tests its parsing and table).
"""
import argparse
import datetime
import json
import os
import re
import shlex
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import llamacpp_build  # noqa: E402

TESTS = ("tg128", "pp128")
LEGACY_ISA = "sse41"
TIMEOUT = 3600  # seconds for one benchmark program; TinyLlama at 1 thread takes ~2 minutes


# ---------------------------------------------------------------- parsing
def parse_llama_bench(text):
    """llama-bench -o json -> {(test, threads): tok/s (mean over its reps)}."""
    out = {}
    for r in json.loads(text):
        test = f"pp{r['n_prompt']}" if r["n_prompt"] else f"tg{r['n_gen']}"
        out[(test, int(r["n_threads"]))] = float(r["avg_ts"])
    return out


_ROW = re.compile(r"^#row (model|bw|pp\d+|tg\d+@d\d+) \S+ (\S+?)_(q8_0|q4_0)(_f16)?_(\d+)T ([0-9.]+)$", re.M)


def parse_ml_bench(text):
    """ml_bench's '#row model' (decode tok/s), '#row pp128' (prompt tok/s),
    '#row tg128@dD' (decode after a context of D) and '#row bw' (read GB/s)
    lines -> {(shape, wtype, threads): {"tg128": tok/s, "pp128": tok/s,
    "tg128@dD": tok/s, "bw": GB/s}}; wtype "q8_0_f16" for fp16 block scales."""
    out = {}
    for kind, shape, wtype, f16, threads, value in _ROW.findall(text):
        out.setdefault((shape, wtype + f16, int(threads)), {})["tg128" if kind == "model" else kind] = float(value)
    return out


def parse_batched_bench(text, depth):
    """llama-batched-bench --output-format jsonl -> {("tg128@dD", threads): S_TG tok/s}."""
    out = {}
    for line in text.splitlines():
        if line.startswith("{") and '"speed_tg"' in line:
            r = json.loads(line)
            out[(f"tg{r['tg']}@d{depth}", int(r["n_threads"]))] = float(r["speed_tg"])
    return out


# ---------------------------------------------------------------- the table
def _test_order(test):
    return TESTS.index(test) if test in TESTS else len(TESTS)


def record_round(records, rnd, section, shape, wtype, llama, ours, tests, scales=("f32",)):
    """Append one round's figures of one model: llama, ours as parsed above;
    one record per scale type of ours (wtype + "_f16" for fp16 scales)."""
    for (test, threads), tps in sorted(llama.items(), key=lambda kv: (kv[0][1], _test_order(kv[0][0]))):
        if test not in tests:
            continue
        for sc in scales:
            wt = wtype + ("_f16" if sc == "f16" else "")
            mine = ours.get((shape, wt, threads))
            if not mine or test not in mine:
                raise ValueError(f"ml_bench printed no {test} figure for {shape} {wt} {threads}T")
            records.append(dict(round=rnd, section=section, shape=shape, wtype=wt, threads=threads,
                                test=test, llama=tps, ours=mine[test], bw=mine.get("bw")))


def _num(x):
    """tok/s and GB/s with 3-4 significant digits."""
    return f"{x:.0f}" if x >= 100 else f"{x:.1f}" if x >= 10 else f"{x:.2f}"


def _spread(vals, fmt):
    med = statistics.median(vals)
    return fmt(med) if len(vals) == 1 or min(vals) == max(vals) else f"{fmt(med)} ({fmt(min(vals))}-{fmt(max(vals))})"


SECTIONS = {"native": "ours (best build) vs llama.cpp (native build)",
            "legacy": f"ours ({LEGACY_ISA} build) vs llama.cpp (SSE4.2 build, every AVX option off)"}


def format_table(records):
    """Markdown tables, one per section, rows in first-measured order: each
    engine's median tok/s, the median and range of the per-round ratio
    ours / llama.cpp, and the median read bandwidth ml_bench measured."""
    lines = []
    for section, title in SECTIONS.items():
        rows = {}
        for r in records:
            if r["section"] == section:
                rows.setdefault((r["shape"], r["wtype"], r["threads"], r["test"]), []).append(r)
        if not rows:
            continue
        lines += ["", f"{title}, tok/s; median over rounds (range):", "",
                  "| shape | type | threads | test | llama.cpp | ours | ours / llama.cpp | read GB/s |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for (shape, wtype, threads, test), rs in rows.items():
            ours = _num(statistics.median(r["ours"] for r in rs))
            bws = [r["bw"] for r in rs if r["bw"]]
            wname = wtype.upper().replace("_F16", " (fp16 scales)")
            lines.append(f"| {shape} | {wname} | {threads} | {test} | "
                         f"{_num(statistics.median(r['llama'] for r in rs))} | {ours} | "
                         f"{_spread([r['ours'] / r['llama'] for r in rs], lambda x: f'{x:.2f}')} | "
                         f"{_num(statistics.median(bws)) if bws else '-'} |")
    return "\n".join(lines[1:])


# ---------------------------------------------------------------- running
def log(msg):
    llamacpp_build.log(msg)


def run(cmd):
    """stdout of cmd; its stderr passes through; a failure ends the tool."""
    r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, timeout=TIMEOUT)
    if r.returncode:
        sys.exit(f"bench_vs_llamacpp: {' '.join(cmd)} exited with {r.returncode}")
    return r.stdout


def our_build(isa):
    """Path of ml_bench of ISA (THREADS=pthread), made at nice 19."""
    make = ["make", "-s", f"ISA={isa}", "THREADS=pthread"]
    build = run(make + ["print-build"]).strip()
    run(["nice", "-n", "19"] + make + ["-j2", f"{build}/ml_bench"])
    return os.path.join(ROOT, build, "ml_bench")


def best_isa():
    """The fastest build this CPU runs (tools/pick_isa.sh, as `make run`)."""
    probe = our_build("scalar")
    return run(["bash", os.path.join(HERE, "pick_isa.sh"), probe]).strip()


def llama_cmd(bench, model, tests, threads, reps, mmap=False):
    return [bench, "-m", model] + ([] if mmap else ["-mmp", "0"]) + [
            "-p", "128" if "pp128" in tests else "0",
            "-n", "128" if "tg128" in tests else "0", "-r", str(reps),
            "-t", ",".join(map(str, threads)), "-o", "json"]


def batched_cmd(bench, model, depth, threads, mmap=False):
    """llama-batched-bench: 128 tokens decoded after a depth-token prompt, one sequence."""
    return [bench, "-m", model, "-c", str(depth + 256), "-b", "2048", "-ub", "512", "-npp", str(depth),
            "-ntg", "128", "-npl", "1", "-t", str(threads), "-tb", str(threads), "--output-format", "jsonl"] + (
            [] if mmap else ["--no-mmap"])


def ours_cmd(ml_bench, shape, wtype, threads, reps, f16=False, depth=0):
    cmd = [ml_bench, "--model-only", "--shape", shape, "--wtype", wtype,
           "-t", ",".join(map(str, threads)), "--reps", str(reps), "--rows"]
    cmd += ["-d", str(depth), "-p", "0"] if depth else ["--bw", "-p", "128"]
    return cmd + (["--f16-scales"] if f16 else [])


def plan_of(opts):
    """[(section, shape, wtype, threads, tests)] in the order each round runs them."""
    plan = [("native", s, t, opts.threads, opts.tests) for s in opts.shapes for t in opts.types]
    return plan + [("legacy", s, t, [1], opts.tests) for s in opts.legacy_shapes for t in opts.types]


def prepare(opts, plan):
    """llama.cpp's builds ({"native"|"sse42": {target: path}}) and the GGUF
    files ({shape: {wtype: path}}) the plan needs, made if missing."""
    import gguf_random
    cache = opts.cache or llamacpp_build.cache_dir()
    shapes = gguf_random.all_shapes()
    for s in {p[1] for p in plan}:
        if s not in shapes:
            raise ValueError(f"unknown shape {s!r}; ml_bench has {', '.join(shapes)}")
    llama = {k: llamacpp_build.binaries(k, cache) for k in {"native" if p[0] == "native" else "sse42" for p in plan}}
    quantize = next(iter(llama.values()))["llama-quantize"]
    models = {s: gguf_random.model_files(s, shapes[s], quantize, os.path.join(cache, "models"), log)
              for s in {p[1] for p in plan}}
    return llama, models


def autogroup_warning(path="/proc/sys/kernel/sched_autogroup_enabled"):
    """A warning when the kernel groups processes by session: then `nice`
    ranks processes only within a session, and a niced build started from
    another terminal still takes half the CPU from the benchmark (seen
    here: llama-batched-bench at 0.23 tok/s beside niced compilers). None
    when autogrouping is off or unknown."""
    try:
        with open(path) as f:
            on = f.read().strip() == "1"
    except OSError:
        return None
    return ("the kernel groups processes by session (kernel.sched_autogroup_enabled = 1): `nice` does not "
            "keep other sessions' work off the benchmark; for a shared machine: "
            "sysctl kernel.sched_autogroup_enabled=0 (as root)") if on else None


def measure(opts, on_round):
    """All rounds -> records (see record_round); on_round(records, isa,
    rounds done) after each round."""
    warning = autogroup_warning()
    if warning:
        log(f"warning: {warning}")
    plan = plan_of(opts)
    llama, models = prepare(opts, plan)
    isa = opts.isa or best_isa()
    ours = {"native": our_build(isa)}
    if opts.legacy_shapes:
        ours["legacy"] = our_build(LEGACY_ISA)
    log(f"ours: {isa} and {LEGACY_ISA if opts.legacy_shapes else 'no legacy'} builds; "
        f"{opts.rounds} rounds of {len(plan)} models")
    records = []
    for rnd in range(1, opts.rounds + 1):
        for section, shape, wtype, threads, tests in plan:
            bins = llama["native" if section == "native" else "sse42"]
            model = models[shape][wtype]
            scales = opts.scales if section == "native" else ["f32"]
            # One job per program run: (engine, command); llama.cpp's depth
            # figure comes from llama-batched-bench, one thread count a run.
            jobs = [("llama", llama_cmd(bins["llama-bench"], model, tests, threads, opts.reps, opts.llama_mmap))]
            jobs += [("ours", ours_cmd(ours[section], shape, wtype, threads, opts.reps, sc == "f16")) for sc in scales]
            if opts.depth and section == "native":
                jobs += [("depth", batched_cmd(bins["llama-batched-bench"], model, opts.depth, t, opts.llama_mmap))
                         for t in threads]
                jobs += [("ours", ours_cmd(ours[section], shape, wtype, threads, opts.reps, sc == "f16", opts.depth))
                         for sc in scales]
            if rnd % 2 == 0:  # alternate who runs first: a drifting neighbour hurts both alike
                jobs.reverse()
            lb, mine = {}, {}
            for engine, cmd in jobs:
                text = run(cmd)
                if engine == "llama":
                    lb.update(parse_llama_bench(text))
                elif engine == "depth":
                    lb.update(parse_batched_bench(text, opts.depth))
                else:
                    for key, figs in parse_ml_bench(text).items():
                        mine.setdefault(key, {}).update(figs)
            depth_tests = [f"tg128@d{opts.depth}"] if opts.depth and section == "native" else []
            record_round(records, rnd, section, shape, wtype, lb, mine, list(tests) + depth_tests, scales)
        log(f"round {rnd} of {opts.rounds} done")
        on_round(records, isa, rnd)
    return records, isa


def cpu_name():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def _list(allowed):
    def parse(v):
        items = [x for x in v.split(",") if x]
        bad = [x for x in items if allowed and x not in allowed]
        if bad:
            raise argparse.ArgumentTypeError(f"{','.join(bad)}: expected some of {','.join(allowed)}")
        return items
    return parse


def _threads(v):
    try:
        t = [int(x) for x in v.split(",")]
    except ValueError:
        t = []
    if not t or min(t) < 1:
        raise argparse.ArgumentTypeError(f"expected a list like 1,2, got {v!r}")
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(description="ml_bench side by side with llama.cpp's llama-bench "
                                 "(see the top of this file)")
    ap.add_argument("--shapes", type=_list(None), default=["stories15M", "stories110M", "tinyllama"],
                    help="ml_bench shapes (default stories15M,stories110M,tinyllama; also "
                    "smollm2-135m, qwen2.5-0.5b, qwen3-0.6b, llama3.2-1b)")
    ap.add_argument("--types", type=_list(("q8_0", "q4_0")), default=["q8_0", "q4_0"])
    ap.add_argument("--threads", type=_threads, default=[1, 2], help="default 1,2")
    ap.add_argument("--tests", type=_list(TESTS), default=list(TESTS), help="tg128,pp128 (default both)")
    ap.add_argument("--legacy-shapes", type=_list(None), default=["stories15M", "stories110M"],
                    help="shapes of the legacy rows (default stories15M,stories110M; '' for none)")
    ap.add_argument("--scales", type=_list(("f32", "f16")), default=["f16"],
                    help="our block scale types, each measured (default f16: what tools/convert.py and "
                    "ml_run make of a Q8_0/Q4_0 GGUF, the same bytes; f32,f16 for both)")
    ap.add_argument("--depth", type=int, default=0,
                    help="also decode 128 tokens after a context of D tokens: ours ml_bench -d D, "
                    "llama.cpp llama-batched-bench -npp D -ntg 128 -npl 1 (default 0: not measured)")
    ap.add_argument("--llama-mmap", action="store_true",
                    help="llama.cpp with its default load (file mapping) instead of -mmp 0 / --no-mmap")
    ap.add_argument("--rounds", type=int, default=int(os.environ.get("ROUNDS", "3")))
    ap.add_argument("--reps", type=int, default=3, help="runs per figure in each program (default 3)")
    ap.add_argument("--isa", help="our build to compare (default: the best this CPU runs)")
    ap.add_argument("--llamacpp", metavar="VERSION", default=llamacpp_build.VERSION,
                    help=f"the llama-cpp-python sdist whose llama.cpp is built (default {llamacpp_build.VERSION}; "
                    "0.3.16 loads Qwen3), into a cache folder of its own")
    ap.add_argument("--cache", help=f"cache folder (default {llamacpp_build.cache_dir()}, named by --llamacpp)")
    ap.add_argument("--save", metavar="FILE", help="also write the measured figures as JSON")
    ap.add_argument("--from", dest="load", metavar="FILE", help="print the table of a --save file; measure nothing")
    ap.add_argument("--env", action="store_true",
                    help="measure nothing: make llama-bench and the GGUF file of one shape and type, and print "
                    "them as LLAMA_BENCH and LLAMA_MODEL for tools/bench_under_load.sh (eval \"$(...)\")")
    opts = ap.parse_args(argv)
    llamacpp_build.VERSION = opts.llamacpp  # cache_dir(), the download and the report follow it
    if opts.rounds < 1 or opts.reps < 1:
        ap.error("--rounds and --reps must be at least 1")
    if opts.env:
        if len(opts.shapes) != 1 or len(opts.types) != 1:
            ap.error("--env needs one shape (--shapes) and one type (--types)")
        opts.legacy_shapes = []
        try:
            llama, models = prepare(opts, plan_of(opts))
        except (llamacpp_build.BuildError, OSError, ValueError) as e:
            sys.exit(f"bench_vs_llamacpp: {e}")
        print(f"export LLAMA_BENCH={shlex.quote(llama['native']['llama-bench'])}")
        print(f"export LLAMA_MODEL={shlex.quote(models[opts.shapes[0]][opts.types[0]])}")
        return 0
    if opts.load:
        with open(opts.load) as f:
            saved = json.load(f)
        print(saved["header"])
        print(format_table(saved["records"]))
        return 0
    os.chdir(ROOT)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = shlex.join(["tools/bench_vs_llamacpp.py"] + (argv if argv is not None else sys.argv[1:]))

    def header(isa, rounds):
        source = (f"llama.cpp built in {opts.cache}" if opts.cache else
                  f"llama.cpp from llama-cpp-python {llamacpp_build.VERSION}'s sdist")
        return (f"$ {command}  ({rounds} rounds)\n{started}, {cpu_name()}, {os.cpu_count()} CPUs; "
                f"{source}; ours: {isa} build")

    def save(records, isa, rounds):
        """After every round: a run stopped early keeps its finished rounds."""
        if opts.save:
            with open(opts.save, "w") as f:
                json.dump({"header": header(isa, rounds), "records": records}, f, indent=1)

    try:
        records, isa = measure(opts, save)
    except (llamacpp_build.BuildError, OSError, ValueError, subprocess.TimeoutExpired) as e:
        sys.exit(f"bench_vs_llamacpp: {e}")
    print(header(isa, opts.rounds))
    print(format_table(records))
    return 0


if __name__ == "__main__":
    sys.exit(main())
