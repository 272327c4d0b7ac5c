#!/usr/bin/env python3
"""The pure logic of tools/bench_vs_llamacpp.py, without llama.cpp: parsing
llama-bench's JSON and ml_bench's #row lines (recorded outputs), the table
made from recorded figures (medians, ratio ranges, our pp128 from ml_bench's
own prompt figure), --from, the
shape table read from app/bench_shapes.h, and the random GGUF writer, read
back with our own GGUF reader (tools/gguf_in.py; needs the gguf package).
Building and running llama.cpp is the tool's job, never CI's.

Run from the repo root: python3 tests/test_bench_vs_llamacpp.py.
Protocol: tests/py_checks.py.
"""
import argparse
import contextlib
import io
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(1, os.path.join(os.path.dirname(HERE), "tools"))
import bench_vs_llamacpp as bv  # noqa: E402
import gguf_random  # noqa: E402
import mlb  # noqa: E402
from gen_random import tokenizer_pieces  # noqa: E402
from py_checks import Checks  # noqa: E402

checks = Checks()
report = checks.report

# llama-bench -o json (0.3.8), trimmed to the fields the tool reads and a few others.
LLAMA_JSON = json.dumps([
    {"model_type": "llama ?B Q8_0", "n_threads": 1, "n_prompt": 128, "n_gen": 0, "avg_ts": 8561.2, "stddev_ts": 40.1},
    {"model_type": "llama ?B Q8_0", "n_threads": 1, "n_prompt": 0, "n_gen": 128, "avg_ts": 930.5, "stddev_ts": 3.2},
    {"model_type": "llama ?B Q8_0", "n_threads": 2, "n_prompt": 128, "n_gen": 0, "avg_ts": 11881.0, "stddev_ts": 90.0},
    {"model_type": "llama ?B Q8_0", "n_threads": 2, "n_prompt": 0, "n_gen": 128, "avg_ts": 1300.0, "stddev_ts": 9.0},
])
# ml_bench --model-only --shape stories15M --wtype q8_0 -t 1,2 --reps 3 --bw -p 128 --rows
ML_BENCH = """ml_bench: avx512vnni build, median of 3 runs
model decode, 128 tokens from position 0; prompt (pp), 128 tokens from position 0 in batches of 64:
  stories15M   q8_0  1T    1160.0 tok/s    0.862 ms/token    8.7 GB/s  RSS  1080.0 MiB  (1100.0-1170.0 tok/s; weights in memory)
  stories15M   q8_0  1T   55.0% of the read bandwidth measured next: 15.6 GB/s (median 15.1)
#row bw avx512vnni stories15M_q8_0_1T 15.60
#row model avx512vnni stories15M_q8_0_1T 1160.00
  stories15M   q8_0  1T    9000.0 tok/s  pp128, -b 64  (8800.0-9100.0 tok/s)
#row pp128 avx512vnni stories15M_q8_0_1T 9000.00
  stories15M   q8_0  2T    1700.0 tok/s    0.588 ms/token   12.7 GB/s  RSS  1080.0 MiB  (1650.0-1710.0 tok/s; weights in memory)
#row bw avx512vnni stories15M_q8_0_2T 28.00
#row model avx512vnni stories15M_q8_0_2T 1700.00
  stories15M   q8_0  2T   14000.0 tok/s  pp128, -b 64  (13000.0-14100.0 tok/s)
#row pp128 avx512vnni stories15M_q8_0_2T 14000.00
"""


def parsing():
    lb = bv.parse_llama_bench(LLAMA_JSON)
    report(lb == {("pp128", 1): 8561.2, ("tg128", 1): 930.5, ("pp128", 2): 11881.0, ("tg128", 2): 1300.0},
           f"llama-bench JSON -> (test, threads): tok/s: {lb}")
    ours = bv.parse_ml_bench(ML_BENCH)
    report(ours == {("stories15M", "q8_0", 1): {"tg128": 1160.0, "pp128": 9000.0, "bw": 15.6},
                    ("stories15M", "q8_0", 2): {"tg128": 1700.0, "pp128": 14000.0, "bw": 28.0}},
           f"ml_bench #row model/pp128/bw lines -> decode and prompt tok/s and GB/s: {ours}")
    report(bv.parse_ml_bench("  stories15M q8_0 1T 1160.0 tok/s\n") == {},
           "ml_bench's prose is not parsed, only its #row lines")


def rounds(tests=bv.TESTS):
    """Three rounds of recorded figures: llama.cpp tg 1T 1000, 900, 1100;
    ours 1200, 1250, 990 (ratios 1.2, 1.389, 0.9); pp as recorded above."""
    records = []
    for rnd, (lt, ot) in enumerate([(1000.0, 1200.0), (900.0, 1250.0), (1100.0, 990.0)], 1):
        lb = bv.parse_llama_bench(LLAMA_JSON)
        lb[("tg128", 1)] = lt
        ours = bv.parse_ml_bench(ML_BENCH)
        ours[("stories15M", "q8_0", 1)]["tg128"] = ot
        bv.record_round(records, rnd, "native", "stories15M", "q8_0", lb, ours, tests)
    bv.record_round(records, 1, "legacy", "stories110M", "q4_0", {("tg128", 1): 61.0, ("pp128", 1): 80.0},
                    {("stories110M", "q4_0", 1): {"tg128": 150.0, "pp128": 400.0}}, tests)
    return records


def table():
    records = rounds()
    report(len(records) == 14, f"3 rounds x 2 tests x 2 thread counts + 2 legacy figures: {len(records)} records")
    t = bv.format_table(records)
    lines = t.splitlines()
    row = next((l for l in lines if l.startswith("| stories15M | Q8_0 | 1 | tg128 |")), "")
    report(row == "| stories15M | Q8_0 | 1 | tg128 | 1000 | 1200 | 1.20 (0.90-1.39) | 15.6 |",
           f"tg128 1T: the medians, the ratio's median and range, the bandwidth: {row!r}")
    row = next((l for l in lines if l.startswith("| stories15M | Q8_0 | 2 | pp128 |")), "")
    report(row == "| stories15M | Q8_0 | 2 | pp128 | 11881 | 14000 | 1.18 | 28.0 |",
           f"pp128: ml_bench's own prompt figure against llama-bench's: {row!r}")
    order = [l.split(" | ")[2:4] for l in lines if l.startswith("| stories15M")]
    report(order == [["1", "tg128"], ["1", "pp128"], ["2", "tg128"], ["2", "pp128"]],
           f"rows by threads, decode first: {order}")
    legacy = lines.index(next(l for l in lines if l.startswith("ours (sse41 build)")))
    report(legacy > 0 and lines[legacy + 4] == "| stories110M | Q4_0 | 1 | tg128 | 61.0 | 150 | 2.46 | - |"
           and lines[legacy + 5] == "| stories110M | Q4_0 | 1 | pp128 | 80.0 | 400 | 5.00 | - |",
           f"a legacy section of its own, no bandwidth when none was measured: {lines[legacy:legacy + 6]}")
    only_tg = rounds(("tg128",))
    report(all(r["test"] == "tg128" for r in only_tg) and len(only_tg) == 7, "--tests tg128 keeps only decode rows")
    ours = bv.parse_ml_bench(ML_BENCH)
    rs = []
    bv.record_round(rs, 1, "native", "stories15M", "q8_0", bv.parse_llama_bench(LLAMA_JSON), ours, bv.TESTS)
    t = bv.format_table(rs)
    report("| stories15M | Q8_0 | 1 | pp128 | 8561 | 9000 | 1.05 | 15.6 |" in t and "decode)" not in t,
           "our pp128 is ml_bench's prompt figure, never our decode figure")
    del ours[("stories15M", "q8_0", 2)]["pp128"]
    try:
        bv.record_round([], 1, "native", "stories15M", "q8_0", bv.parse_llama_bench(LLAMA_JSON), ours, bv.TESTS)
        report(False, "a pp128 figure missing on our side is an error, not our decode figure")
    except ValueError as e:
        report("pp128" in str(e) and "2T" in str(e), f"a pp128 figure missing on our side is an error: {e}")
    try:
        bv.record_round([], 1, "native", "tinyllama", "q8_0", bv.parse_llama_bench(LLAMA_JSON), ours, bv.TESTS)
        report(False, "a figure missing on our side is an error")
    except ValueError as e:
        report("tinyllama q8_0 1T" in str(e), f"a figure missing on our side is an error: {e}")


def plan():
    opts = argparse.Namespace(shapes=["stories15M", "tinyllama"], types=["q4_0"], threads=[1, 2],
                              tests=["tg128"], legacy_shapes=["stories15M"])
    p = bv.plan_of(opts)
    report(p == [("native", "stories15M", "q4_0", [1, 2], ["tg128"]), ("native", "tinyllama", "q4_0", [1, 2], ["tg128"]),
                 ("legacy", "stories15M", "q4_0", [1], ["tg128"])],
           f"the plan: the native rows as asked, then the legacy rows (the same tests, 1 thread): {p}")
    opts.tests = ["tg128", "pp128"]
    report(bv.plan_of(opts)[-1] == ("legacy", "stories15M", "q4_0", [1], ["tg128", "pp128"]),
           "legacy rows run the prompt test too when asked")
    cmd = bv.ours_cmd("ml_bench", "stories15M", "q8_0", [1, 2], 3)
    report(cmd[-2:] == ["-p", "128"] and "--rows" in cmd and "--bw" in cmd and "--f16-scales" not in cmd,
           f"ml_bench is asked for its pp128 figure and its #row lines (--rows): {cmd}")
    cmd = bv.ours_cmd("ml_bench", "tinyllama", "q4_0", [1], 3, f16=True, depth=1024)
    report(cmd[-5:] == ["-d", "1024", "-p", "0", "--f16-scales"],
           f"at depth, ml_bench decodes after -d D with no prompt figure, fp16 scales when asked: {cmd}")
    cmd = bv.batched_cmd("llama-batched-bench", "m.gguf", 1024, 2)
    report(cmd[cmd.index("-npp") + 1] == "1024" and cmd[cmd.index("-ntg") + 1] == "128" and
           cmd[cmd.index("-npl") + 1] == "1" and cmd[cmd.index("-t") + 1] == "2" and "--no-mmap" in cmd and
           int(cmd[cmd.index("-c") + 1]) >= 1024 + 128,
           f"llama-batched-bench: 128 tokens after a 1024-token prompt, one sequence, 2 threads: {cmd}")
    report("-mmp" not in bv.llama_cmd("llama-bench", "m.gguf", bv.TESTS, [1], 3, mmap=True) and
           "--no-mmap" not in bv.batched_cmd("b", "m.gguf", 8, 1, mmap=True),
           "--llama-mmap: llama.cpp with its default load (no -mmp 0, no --no-mmap)")


def autogroup(tmp):
    """The warning about session-grouped scheduling, from the sysctl's file."""
    f = os.path.join(tmp, "autogroup")
    for value, warned in (("1\n", True), ("0\n", False)):
        with open(f, "w") as fh:
            fh.write(value)
        w = bv.autogroup_warning(f)
        report(bool(w) == warned and (not w or "sched_autogroup_enabled=0" in w),
               f"sched_autogroup_enabled {value.strip()}: {'a warning naming the sysctl' if warned else 'no warning'}")
    report(bv.autogroup_warning(os.path.join(tmp, "missing")) is None, "no such file: no warning")


def depth_and_scales():
    """llama-batched-bench's JSON lines and ml_bench's tg128@dD and fp16-scale rows."""
    jsonl = ('main: n_kv_max = 1280\n{"n_kv_max": 1280, "n_threads": 2, "pp": 1024, "tg": 128, "pl": 1, '
             '"n_kv": 1152, "t_pp": 9.5, "speed_pp": 107.7, "t_tg": 7.1, "speed_tg": 17.96, "t": 16.6, "speed": 69.3}\n')
    report(bv.parse_batched_bench(jsonl, 1024) == {("tg128@d1024", 2): 17.96},
           "llama-batched-bench jsonl -> S_TG at that depth and thread count")
    rows = ("#row tg128@d1024 avx512vnni tinyllama_q4_0_f16_2T 19.50\n"
            "#row model avx512vnni qwen2.5-0.5b_q8_0_1T 30.25\n")
    ours = bv.parse_ml_bench(rows)
    report(ours == {("tinyllama", "q4_0_f16", 2): {"tg128@d1024": 19.5}, ("qwen2.5-0.5b", "q8_0", 1): {"tg128": 30.25}},
           f"ml_bench rows: fp16-scale labels and shape names with dots and dashes: {ours}")
    records = []
    bv.record_round(records, 1, "native", "tinyllama", "q4_0", {("tg128@d1024", 2): 18.0},
                    {("tinyllama", "q4_0", 2): {"tg128@d1024": 18.0}, ("tinyllama", "q4_0_f16", 2): {"tg128@d1024": 19.5}},
                    ["tg128@d1024"], ["f32", "f16"])
    report([(r["wtype"], r["ours"] / r["llama"]) for r in records] == [("q4_0", 1.0), ("q4_0_f16", 19.5 / 18.0)],
           f"one llama.cpp figure, one record per scale type of ours: {records}")
    report("Q4_0 (fp16 scales)" in bv.format_table(records), "the table names the fp16-scale rows")


def from_file(tmp):
    path = os.path.join(tmp, "saved.json")
    with open(path, "w") as f:
        json.dump({"header": "$ tools/bench_vs_llamacpp.py (recorded)", "records": rounds()}, f)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        rc = bv.main(["--from", path])
    text = out.getvalue()
    report(rc == 0 and text.startswith("$ tools/bench_vs_llamacpp.py (recorded)\n")
           and text.rstrip("\n").endswith(bv.format_table(rounds())),
           "--from FILE prints the saved header and the table of the saved figures")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            bv.main(["--types", "q5_0", "--from", path])
            code = 0
        except SystemExit as e:
            code = e.code
    report(code == 2 and "q5_0" in err.getvalue(), f"--types q5_0 is refused (exit {code})")


def shapes():
    s = gguf_random.bench_shapes()
    report(list(s) == ["stories15M", "stories110M", "tinyllama"]
           and s["tinyllama"] == dict(dim=2048, n_layers=22, n_heads=32, n_kv_heads=4, hidden_dim=5632,
                                      vocab=32000, max_seq=2048, shared_classifier=0)
           and s["stories15M"]["shared_classifier"] == 1,
           f"app/bench_shapes.h's table: {s}")


def tokenizer_reader():
    pieces = tokenizer_pieces(300)
    buf = mlb.tokenizer_bytes(pieces)
    report(mlb.tokenizer_pieces_from(buf, 300) == pieces, "tokenizer.bin bytes -> the same 300 pieces and scores")
    try:
        mlb.tokenizer_pieces_from(buf[:-3], 300)
        report(False, "a truncated tokenizer.bin is refused")
    except mlb.MlbError as e:
        report("token 299" in str(e), f"a truncated tokenizer.bin is refused: {e}")


def gguf_writer(tmp):
    try:
        import gguf  # noqa: F401
        import gguf_in
    except ImportError as e:
        checks.skip(f"random GGUF writer: the gguf package is not importable ({e}); tests/test_gguf.py fails for it")
        return
    pieces = tokenizer_pieces(300)
    tok = os.path.join(tmp, "tok.bin")
    with open(tok, "wb") as f:
        f.write(mlb.tokenizer_bytes(pieces))
    cfg = dict(dim=64, n_layers=2, n_heads=4, n_kv_heads=2, hidden_dim=160, vocab=300, max_seq=32,
               shared_classifier=0)
    path = os.path.join(tmp, "r.gguf")
    gguf_random.write_f32(path, cfg, tokenizer=tok)
    src = gguf_in.GGUFSource(path)
    got = {k: src.cfg[k] for k in cfg}
    report(got == cfg, f"the written GGUF's hyper-parameters read back: {got}")
    report(src.tokenizer == mlb.tokenizer_bytes(pieces), "its vocabulary reads back as the same tokenizer.bin")
    report(src.what.endswith("tensors: 21 F32"), f"all 2 x 9 + 3 tensors F32: {src.what}")
    report(os.path.getsize(path) > gguf_random.f32_bytes(cfg), "f32_bytes counts every weight")


def main():
    parsing()
    depth_and_scales()
    table()
    plan()
    shapes()
    tokenizer_reader()
    with tempfile.TemporaryDirectory() as tmp:
        from_file(tmp)
        autogroup(tmp)
        gguf_writer(tmp)


if __name__ == "__main__":
    checks.run(main)
