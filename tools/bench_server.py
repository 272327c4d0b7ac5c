#!/usr/bin/env python3
"""Time to first token and request throughput: ml_server beside llama-server
(llama.cpp 0.3.8's, built by tools/llamacpp_build.py into CACHE at nice 19),
on the same GGUF (random stories15M-shaped weights, Llama-2 vocabulary, Q8_0;
ours converted by tools/convert.py), the Zephyr template, one chat request at
a time (a 7-sentence user message, max_tokens 64, greedy, llama.cpp's prompt
cache off), -t 1 and -t 2; medians of REPS. Needs numpy, gguf, cmake, a C++
compiler; run from the repository root after
make ISA=avx2 THREADS=pthread build/avx2-pthread/ml_server (OURS=path to change).
env: CACHE (default /tmp/llcpp-chat), REPS (default 7), OURS."""
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_random  # noqa: E402
import llamacpp_build  # noqa: E402

CACHE = os.environ.get("CACHE", "/tmp/llcpp-chat")
REPS = int(os.environ.get("REPS", "7"))
USER = " ".join(["The little cat sat on the warm mat and looked at the bird."] * 7)
BODY = {"messages": [{"role": "user", "content": USER}], "max_tokens": 64, "temperature": 0, "ignore_eos": True,
        "cache_prompt": False}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def one(port, stream):
    """One chat request: (time to the first text, text events, seconds) when
    streamed, else (seconds, completion tokens, prompt tokens)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    t0 = time.perf_counter()
    c.request("POST", "/v1/chat/completions", json.dumps(dict(BODY, stream=stream)),
              {"Content-Type": "application/json"})
    r = c.getresponse()
    if not stream:
        d = json.loads(r.read())
        return time.perf_counter() - t0, d["usage"]["completion_tokens"], d["usage"]["prompt_tokens"]
    first, n = None, 0
    for line in iter(r.readline, b""):
        if not line.startswith(b"data: ") or b"[DONE]" in line:
            continue
        d = json.loads(line[6:])
        if d.get("choices") and d["choices"][0].get("delta", {}).get("content"):
            n += 1
            first = first if first is not None else time.perf_counter() - t0
    return first, n, time.perf_counter() - t0


def measure(cmd, port):
    """(median TTFT s, median tok/s, completion tokens, prompt tokens) of a server."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                c.request("GET", "/health")
                if c.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        one(port, True)
        one(port, False)
        ttft = [one(port, True)[0] for _ in range(REPS)]
        runs = [one(port, False) for _ in range(REPS)]
    finally:
        p.terminate()
        p.wait()
    return statistics.median(ttft), statistics.median(n / t for t, n, _ in runs), runs[0][1], runs[0][2]


def main():
    llamacpp_build.TARGETS = ("llama-server", "llama-quantize")
    bins = llamacpp_build.binaries("native", CACHE)
    shapes = gguf_random.bench_shapes()
    gg = gguf_random.model_files("stories15M", shapes["stories15M"], bins["llama-quantize"], CACHE + "/models",
                                 print)["q8_0"]
    mlb_path, tok_path = CACHE + "/models/s15.mlb", CACHE + "/models/s15.tok.bin"
    if not os.path.exists(mlb_path):
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "convert.py"), gg,
                        mlb_path, "--tokenizer", tok_path], check=True, stdout=subprocess.DEVNULL)
    ours = os.environ.get("OURS", "build/avx2-pthread/ml_server")
    for t in (1, 2):
        pl = free_port()
        lc = measure([bins["llama-server"], "-m", gg, "-t", str(t), "-tb", str(t), "-c", "256", "-np", "1",
                      "--port", str(pl), "--chat-template", "zephyr", "--no-mmap"], pl)
        po = free_port()
        us = measure([ours, "-m", mlb_path, "-z", tok_path, "-t", str(t), "--port", str(po),
                      "--chat-template", "zephyr"], po)
        print(f"-t {t}: TTFT ms llama-server {lc[0] * 1e3:.1f}, ml_server {us[0] * 1e3:.1f} (ours/theirs "
              f"{us[0] / lc[0]:.2f}); request tok/s llama-server {lc[1]:.1f}, ml_server {us[1]:.1f} (ratio "
              f"{us[1] / lc[1]:.2f}); completion tokens {lc[2]}/{us[2]}, prompt tokens {lc[3]}/{us[3]}", flush=True)


if __name__ == "__main__":
    main()
