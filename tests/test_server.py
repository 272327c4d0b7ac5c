#!/usr/bin/env python3
"""ml_server with real clients, on the shipped stories260K over loopback:
the official openai package (completions, chat, streaming, stop, usage,
seed), curl, raw sockets for malformed requests (each gets a 4xx with a JSON
error and the server keeps serving), clients that stall (half a request, a
stream they stop reading or read too slowly: another client waits at most
--timeout more than the reply's own generation time, and the slot is freed)
or leave mid-stream (close, reset), the API key and the queue limit, a bounded load test (200 requests from 8
clients at once: none lost, none failed, RSS flat), a clean SIGTERM, and a GGUF file as the model.
Greedy text equals ml_run's for the same prompt, byte for byte.
env: BUILD (folder with ml_server and ml_run)."""
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_checks import Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build/scalar")
M = os.path.join(ROOT, "models/stories260K")
MODEL = [os.path.join(M, "stories260K_q8_0.mlb"), os.path.join(M, "tok512.bin")]
PROMPT = "Once upon a time"

checks = Checks()
report = checks.report


def start(*extra):
    """ml_server on a free port; returns (process, port)."""
    exe = os.path.join(BUILD, "ml_server")
    p = subprocess.Popen([exe, "-m", MODEL[0], "-z", MODEL[1], "--port", "0", "--chat-template", "zephyr",
                          "--timeout", "1000", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    port = int(line.split("127.0.0.1:")[1].split(",")[0]) if "127.0.0.1:" in line else 0
    return p, port, line


def raw(port, data, read=True, timeout=5):
    """Send bytes, return (status, body) of the reply (or (0, '') when none)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if not read:
            return s
        buf = b""
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            buf += b
            if b"\r\n\r\n" in buf:
                head, _, body = buf.partition(b"\r\n\r\n")
                cl = [int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length:")]
                if cl and len(body) >= cl[0]:
                    break
    finally:
        if read:
            s.close()
    if not buf.startswith(b"HTTP/1.1 "):
        return 0, ""
    head, _, body = buf.partition(b"\r\n\r\n")
    return int(head.split()[1]), body.decode("utf-8", "replace")


def post(path, body, extra=b""):
    b = body if isinstance(body, bytes) else json.dumps(body).encode()
    return (b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + extra +
            b"Content-Length: " + str(len(b)).encode() + b"\r\nConnection: close\r\n\r\n" + b)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(next(l for l in f if l.startswith("VmRSS:")).split()[1])


def ml_run_text(n_steps):
    out = subprocess.run([os.path.join(BUILD, "ml_run"), "-m", MODEL[0], "-z", MODEL[1], "-i", PROMPT, "--temp", "0",
                          "-n", str(n_steps)], capture_output=True)
    return out.stdout


def test_openai(port):
    import openai
    c = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0, timeout=20)
    models = c.models.list()
    report(len(models.data) == 1 and models.data[0].id == "stories260K_q8_0.mlb", "openai: models.list")
    r = c.completions.create(model="x", prompt=PROMPT, max_tokens=40, temperature=0)
    u = r.usage
    report(u.completion_tokens == 40 and u.total_tokens == u.prompt_tokens + 40 and r.choices[0].finish_reason == "length",
           f"openai: completion usage {u.prompt_tokens}+{u.completion_tokens}, finish {r.choices[0].finish_reason}")
    want = ml_run_text(u.prompt_tokens + 40 - 1)
    got = (PROMPT + r.choices[0].text + "\n").encode()
    report(got == want, "openai: greedy completion == ml_run's text, byte for byte")
    s = c.completions.create(model="x", prompt=PROMPT, max_tokens=40, temperature=0, stream=True)
    report("".join(ch.choices[0].text for ch in s if ch.choices) == r.choices[0].text,
           "openai: a streamed completion == the whole one")
    stop = r.choices[0].text[10:16]
    r2 = c.completions.create(model="x", prompt=PROMPT, max_tokens=40, temperature=0, stop=[stop])
    report(r2.choices[0].text == r.choices[0].text[:r.choices[0].text.index(stop)] and
           r2.choices[0].finish_reason == "stop", f"openai: stop {stop!r} ends the text before it")
    a = c.completions.create(model="x", prompt=PROMPT, max_tokens=30, temperature=1, top_p=0.9, seed=7).choices[0].text
    b = c.completions.create(model="x", prompt=PROMPT, max_tokens=30, temperature=1, top_p=0.9, seed=7).choices[0].text
    d = c.completions.create(model="x", prompt=PROMPT, max_tokens=30, temperature=1, top_p=0.9, seed=8).choices[0].text
    report(a == b and a != d, "openai: a seed reproduces a sampled text, another seed changes it")
    msgs = [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me a story."}]
    ch = c.chat.completions.create(model="x", messages=msgs, max_tokens=24, temperature=0)
    report(ch.choices[0].message.role == "assistant" and ch.usage.completion_tokens >= 1 and
           ch.usage.prompt_tokens > 10, f"openai: chat completion ({ch.usage.prompt_tokens} prompt tokens)")
    st = c.chat.completions.create(model="x", messages=msgs, max_tokens=24, temperature=0, stream=True,
                                   stream_options={"include_usage": True})
    parts, usage = [], None
    for e in st:
        if e.choices and e.choices[0].delta.content:
            parts.append(e.choices[0].delta.content)
        if e.usage:
            usage = e.usage
    report("".join(parts) == ch.choices[0].message.content and usage and
           usage.completion_tokens == ch.usage.completion_tokens, "openai: streamed chat == the whole one, usage at the end")


def test_curl(port):
    out = subprocess.run(["curl", "-sS", "-N", f"http://127.0.0.1:{port}/v1/completions", "-H",
                          "Content-Type: application/json", "-d",
                          json.dumps({"prompt": PROMPT, "max_tokens": 5, "stream": True})],
                         capture_output=True, text=True, timeout=20)
    events = [l for l in out.stdout.split("\n") if l.startswith("data: ")]
    report(out.returncode == 0 and events and events[-1] == "data: [DONE]" and len(events) >= 3,
           f"curl: a stream of {len(events)} events ending in data: [DONE]")
    out = subprocess.run(["curl", "-sS", f"http://127.0.0.1:{port}/health"], capture_output=True, text=True, timeout=10)
    report(json.loads(out.stdout).get("status") == "ok", "curl: /health")


MALFORMED = [
    ("bad JSON", post("/v1/completions", b'{"prompt": "a",'), 400),
    ("trailing bytes", post("/v1/completions", b'{"prompt": "a"} x'), 400),
    ("prompt of the wrong type", post("/v1/completions", {"prompt": 3}), 400),
    ("max_tokens a string", post("/v1/completions", {"prompt": "a", "max_tokens": "9"}), 400),
    ("max_tokens huge", post("/v1/completions", {"prompt": "a", "max_tokens": 1e300}), 400),
    ("max_tokens over the limit", post("/v1/completions", {"prompt": "a", "max_tokens": 10 ** 9}), 400),
    ("temperature out of range", post("/v1/completions", {"prompt": "a", "temperature": 7}), 400),
    ("stop of the wrong type", post("/v1/completions", {"prompt": "a", "stop": 5}), 400),
    ("stream not a boolean", post("/v1/completions", {"prompt": "a", "stream": "yes"}), 400),
    ("messages not an array", post("/v1/chat/completions", {"messages": "hi"}), 400),
    ("a message without content", post("/v1/chat/completions", {"messages": [{"role": "user"}]}), 400),
    ("an unknown role", post("/v1/chat/completions", {"messages": [{"role": "tool", "content": "x"}]}), 400),
    ("an image part", post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}]}), 400),
    ("a text part without text", post("/v1/chat/completions", {"messages": [{"role": "user", "content": [
        {"type": "text"}]}]}), 400),
    ("bad UTF-8", post("/v1/completions", b'{"prompt": "a\xff\xfe"}'), 400),
    ("a lone surrogate", post("/v1/completions", b'{"prompt": "\\ud800"}'), 400),
    ("\\u0000", post("/v1/completions", b'{"prompt": "a\\u0000b"}'), 400),
    ("nested too deep", post("/v1/completions", b"[" * 100 + b"]" * 100), 400),
    ("the body not an object", post("/v1/completions", b"[1, 2]"), 400),
    ("an unknown path", b"GET /v2/nothing HTTP/1.1\r\nHost: x\r\n\r\n", 404),
    ("a wrong method", b"GET /v1/completions HTTP/1.1\r\nHost: x\r\n\r\n", 405),
    ("oversized headers", b"GET /health HTTP/1.1\r\nX-Big: " + b"a" * 20000 + b"\r\n\r\n", 431),
    ("a huge Content-Length", b"POST /v1/completions HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 413),
    ("a chunked body", b"POST /v1/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 411),
    ("a bad request line", b"HELLO\r\n\r\n", 400),
    ("HTTP/2", b"GET /health HTTP/2.0\r\n\r\n", 505),
    ("a prompt beyond the context", post("/v1/completions", {"prompt": "the " * 2000}), 400),
    ("top_k negative", post("/v1/completions", {"prompt": "a", "top_k": -1}), 400),
    ("top_k not an integer", post("/v1/completions", {"prompt": "a", "top_k": 2.5}), 400),
    ("min_p over 1", post("/v1/completions", {"prompt": "a", "min_p": 1.5}), 400),
    ("repeat_penalty 0", post("/v1/completions", {"prompt": "a", "repeat_penalty": 0}), 400),
    ("repeat_last_n -2", post("/v1/completions", {"prompt": "a", "repeat_last_n": -2}), 400),
    ("a presence penalty (OpenAI's additive one is not ours)",
     post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}], "presence_penalty": 0.5}), 400),
    ("a frequency penalty", post("/v1/completions", {"prompt": "a", "frequency_penalty": -1}), 400),
    ("log probabilities", post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                        "logprobs": True}), 400),
    ("top log probabilities", post("/v1/completions", {"prompt": "a", "top_logprobs": 3}), 400),
    ("llama.cpp's n_probs", post("/v1/completions", {"prompt": "a", "n_probs": 5}), 400),
    ("best_of 2", post("/v1/completions", {"prompt": "a", "best_of": 2}), 400),
    ("echo", post("/v1/completions", {"prompt": "a", "echo": True}), 400),
    ("a logit bias", post("/v1/completions", {"prompt": "a", "logit_bias": {"5": 10}}), 400),
    ("tools", post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                            "tools": [{"type": "function", "function": {"name": "f"}}]}), 400),
    ("a JSON response format", post("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}],
                                                             "response_format": {"type": "json_object"}}), 400),
]


def test_malformed(port):
    for what, data, want in MALFORMED:
        status, body = raw(port, data)
        try:
            err = json.loads(body)["error"]["message"]
        except (ValueError, KeyError, TypeError):
            err = None
        report(status == want and err, f"malformed: {what} -> {status} {err!r} (expected {want})")
    # A truncated body: the client stops sending; after the timeout, 408.
    t0 = time.time()
    status, body = raw(port, post("/v1/completions", {"prompt": "a"})[:-5])
    report(status == 408 and time.time() - t0 < 4, f"malformed: a truncated body -> {status} after the timeout")
    report(raw(port, b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")[0] == 200, "malformed: still serving after them")


def completion(port, **kw):
    status, body = raw(port, post("/v1/completions", dict(prompt=PROMPT, **kw)))
    return json.loads(body)["choices"][0]["text"] if status == 200 else f"HTTP {status}: {body[:200]!r}"


def test_edges(port):
    # Tiny temperature and top_p: the greedy limit, not NaN's garbage or top-p off.
    greedy = json.loads(raw(port, post("/v1/completions", {"prompt": PROMPT, "max_tokens": 12,
                                                               "temperature": 0}))[1])["choices"][0]["text"]
    # llama.cpp's sampling fields are ml_run's options: top_k 1 and min_p 1 keep the top token alone (greedy
    # at any temperature and seed); a repeat penalty gives ml_run's text with --repeat-penalty; the
    # OpenAI fields that ask for nothing are accepted.
    for kw in ({"top_k": 1}, {"min_p": 1.0}):
        got = [completion(port, max_tokens=12, temperature=1.5, seed=k, **kw) for k in range(3)]
        report(got == [greedy] * 3, f"sampling: {kw} at temperature 1.5 gives the greedy text, every seed ({got!r})")
    n_prompt = json.loads(raw(port, post("/v1/completions", {"prompt": PROMPT, "max_tokens": 1}))[1])["usage"][
        "prompt_tokens"]
    for pen, last in ((1.5, None), (1.5, 8), (0.7, -1)):
        kw = {"repeat_penalty": pen, **({"repeat_last_n": last} if last is not None else {})}
        got = completion(port, max_tokens=60, temperature=0, **kw)
        want = subprocess.run([os.path.join(BUILD, "ml_run"), "-m", MODEL[0], "-z", MODEL[1], "-i", PROMPT, "--temp",
                               "0", "-n", str(n_prompt + 60 - 1), "--repeat-penalty", str(pen), "--repeat-last-n",
                               str(64 if last is None else last)], capture_output=True).stdout
        report((PROMPT + got + "\n").encode() == want and got != completion(port, max_tokens=60, temperature=0),
               f"sampling: {kw} gives ml_run's text with --repeat-penalty (the window 64 by default), not the plain one")
    got = completion(port, max_tokens=12, temperature=0, presence_penalty=0, frequency_penalty=0, logprobs=False,
                     top_logprobs=0, top_k=0, min_p=0, repeat_penalty=1, n_probs=0, best_of=1, echo=False,
                     logit_bias={}, tools=[], response_format={"type": "text"})
    report(got == greedy, f"sampling: the fields at their 'off' values change nothing ({got!r})")
    for kw in ({"temperature": 1e-40}, {"temperature": 2, "top_p": 1e-300}):
        got = [json.loads(raw(port, post("/v1/completions", dict(prompt=PROMPT, max_tokens=12, seed=k, **kw)))[1])
               ["choices"][0]["text"] for k in range(3)]
        report(got == [greedy] * 3, f"edges: {kw} gives the greedy text, every seed ({got!r})")
    # A message's content as text parts (OpenAI's newer form) is their text joined by "\n", as
    # llama.cpp's server reads it.
    chat = [json.loads(raw(port, post("/v1/chat/completions", {"messages": m, "max_tokens": 12, "temperature": 0}))[1])
            for m in ([{"role": "system", "content": "Be kind."}, {"role": "user", "content": "Tell me\na story."}],
                      [{"role": "system", "content": [{"type": "text", "text": "Be kind."}]},
                       {"role": "user", "content": [{"type": "text", "text": "Tell me"}, {"type": "text", "text": "a story."}]}])]
    report("choices" in chat[1] and chat[0] == {**chat[1], "id": chat[0]["id"], "created": chat[0]["created"]},
           f"edges: content as text parts reads as their text joined by newlines ({str(chat[1])[:120]})")
    # HTTP/1.0 cannot take chunks: the stream ends with the connection.
    b = json.dumps({"prompt": PROMPT, "max_tokens": 6, "stream": True, "temperature": 0}).encode()
    s = raw(port, b"POST /v1/completions HTTP/1.0\r\nContent-Length: " + str(len(b)).encode() + b"\r\n\r\n" + b,
            read=False)
    data = b""
    while (chunk := s.recv(65536)):
        data += chunk
    s.close()
    head, _, body = data.partition(b"\r\n\r\n")
    events = [e for e in body.split(b"\n\n") if e]
    report(b"chunked" not in head.lower() and b"connection: close" in head.lower() and
           all(e.startswith(b"data: ") for e in events) and events[-1] == b"data: [DONE]",
           f"edges: an HTTP/1.0 stream is plain events, then the close ({head[:120]!r} {body[:60]!r})")
    # A request line's verdict does not depend on how its bytes arrive.
    req = b"GET /health?" + b"a" * 1000 + b" HTTP/1.1\r\nConnection: close\r\n\r\n"
    s = raw(port, req[:500], read=False)
    time.sleep(0.2)
    s.sendall(req[500:])
    got = s.recv(200)
    s.close()
    report(got.startswith(b"HTTP/1.1 200"), f"edges: a long query string sent in two parts -> {got[:20]!r}")
    # A body over --max-body: the 413 is read, not lost to a reset.
    big = b'{"prompt": "' + b"a" * 3_000_000 + b'"}'
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    got = b""
    try:
        s.sendall(b"POST /v1/completions HTTP/1.1\r\nContent-Length: " + str(len(big)).encode() + b"\r\n\r\n")
        try:
            s.sendall(big)
        except OSError:
            pass
        got = s.recv(200)
    except OSError as e:
        got = repr(e).encode()
    s.close()
    report(got.startswith(b"HTTP/1.1 413"), f"edges: a body too large -> {got[:40]!r}")


def test_stalled_and_gone(port, proc):
    # A stalled client (half a head) does not block another's request.
    s = raw(port, b"POST /v1/completions HTTP/1.1\r\nContent-Le", read=False)
    t0 = time.time()
    ok = raw(port, post("/v1/completions", {"prompt": PROMPT, "max_tokens": 8}))[0] == 200
    report(ok and time.time() - t0 < 0.9, f"clients: a stalled client does not hold up another ({time.time() - t0:.2f} s)")
    s.close()
    # A client that leaves mid-stream frees its slot; the next is served.
    s = raw(port, post("/v1/completions", {"prompt": PROMPT, "max_tokens": 400, "stream": True}), read=False)
    s.recv(100)
    s.close()
    t0 = time.time()
    ok = raw(port, post("/v1/completions", {"prompt": PROMPT, "max_tokens": 4}))[0] == 200
    report(ok and time.time() - t0 < 2, "clients: one that leaves mid-stream frees its slot")


def reader(timeout=10, rcvbuf=None, linger0=False):
    """A raw client socket: a fixed receive buffer (no autotuning), or a close that resets."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    if linger0:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
    s.settimeout(timeout)
    return s


def until_closed(s, limit):
    """Read until the server closes s (EOF or reset); the seconds it took, or None."""
    t0 = time.time()
    s.settimeout(0.2)
    while time.time() - t0 < limit:
        try:
            if not s.recv(1 << 20):
                return time.time() - t0
        except socket.timeout:
            continue
        except OSError:
            return time.time() - t0
    return None


def test_slow_clients():
    """Clients that stall or leave, on a server with --timeout 1000, 3 slots and a 64 KiB model name
    (every event of a stream carries it: 480 tokens are 30 MiB, more than the sockets' buffers hold,
    so a client that does not read blocks the server's writes)."""
    tmo = 1.0
    p, port, _ = start("--max-queue", "3", "--name", "m" * 65536)
    short = post("/v1/completions", {"prompt": PROMPT, "max_tokens": 8, "temperature": 0})
    long = post("/v1/completions", {"prompt": PROMPT, "max_tokens": 480, "temperature": 0, "stream": True})
    whole = post("/v1/completions", {"prompt": PROMPT, "max_tokens": 480, "temperature": 0})

    def text(body):
        try:
            return json.loads(body)["choices"][0]["text"]
        except (ValueError, KeyError, IndexError, TypeError):
            return None

    def timed():
        t0 = time.time()
        st, body = raw(port, short, timeout=30)
        return st == 200 and text(body) == want, time.time() - t0

    def slots_free(what):
        """All 3 slots take a connection again (a slot still held gives a 503)."""
        idle = [raw(port, b"GET /health HTTP/1.1\r\n", read=False) for _ in range(2)]
        time.sleep(0.05)
        st = raw(port, b"GET /health HTTP/1.1\r\nConnection: close\r\n\r\n")[0]
        for s in idle:
            s.close()
        report(st == 200, f"slow clients: {what}: every slot free again ({st})")

    try:
        st, body = raw(port, short)
        want = text(body)
        report(st == 200 and want, "slow clients: the reference reply")
        # The bound for a client held up by one that stalls: --timeout, plus the time the other's
        # reply takes to generate when its client reads (requests are served in turn).
        t0 = time.time()
        st = raw(port, whole, timeout=30)[0]
        bound = tmo + (time.time() - t0) + 1.0
        report(st == 200, f"slow clients: a reply of 480 tokens in {time.time() - t0:.2f} s: the bound is {bound:.2f} s")
        # (c) Half a head and half a body stall in two slots: the third client is served at once; at the
        # timeout the half body gets its 408, the half head is closed, and both slots are free.
        s1 = raw(port, b"POST /v1/completions HTTP/1.1\r\nContent-Le", read=False)
        s2 = raw(port, short[:-5], read=False)
        time.sleep(0.05)
        ok, dt = timed()
        report(ok and dt < tmo / 2, f"slow clients: half a head and half a body stalled, another is served in {dt:.2f} s")
        t1, t2 = until_closed(s1, tmo + 2), until_closed(s2, tmo + 2)
        report(t1 is not None and t2 is not None, "slow clients: the stalled requests are closed at the timeout")
        s1.close(), s2.close()
        slots_free("after the stalled requests")
        # (a) A stream whose client never reads (a 1 KiB receive buffer): the server's write waits
        # at most --timeout, the reply ends there and its slot is freed.
        a = reader(rcvbuf=1024)
        a.connect(("127.0.0.1", port))
        a.sendall(long)
        time.sleep(0.2)
        ok, dt = timed()
        report(ok and dt < bound, f"slow clients: one that stops reading holds another up {dt:.2f} s "
               f"(--timeout {tmo:.0f} s), which gets the right reply")
        report(until_closed(a, 3) is not None, "slow clients: the server closed the one that stopped reading")
        a.close()
        slots_free("after the stopped reader")
        # (a) A client that reads, but slower than the reply comes: each wait ends in time, yet the
        # waits of one reply add up to --timeout at most.
        a = reader(rcvbuf=262144)
        a.connect(("127.0.0.1", port))
        a.sendall(long)
        stop = threading.Event()

        def trickle():
            while not stop.is_set():
                try:
                    if not a.recv(1 << 20):
                        return
                except OSError:
                    return
                time.sleep(0.1)
        th = threading.Thread(target=trickle)
        th.start()
        time.sleep(0.2)
        ok, dt = timed()
        stop.set()
        th.join()
        report(ok and dt < bound, f"slow clients: one that reads slowly holds another up {dt:.2f} s")
        a.close()
        # (b) Clients that leave mid-stream (a close, a reset) or mid-reply (no stream): the next
        # is served at once and right.
        for what, linger0, body in [("closes mid-stream", False, long), ("resets mid-stream", True, long),
                                    ("closes mid-reply", False, whole)]:
            a = reader(linger0=linger0)
            a.connect(("127.0.0.1", port))
            a.sendall(body)
            if body is long:
                a.recv(100)
            a.close()
            ok, dt = timed()
            report(ok and dt < 0.5, f"slow clients: after one that {what}, the next is served in {dt:.2f} s")
        slots_free("after the clients that left")
    finally:
        p.terminate()
        p.wait(5)
    left = [int(k) for k in re.findall(r"the client left after (\d+) tokens", p.stderr.read())]
    report(len(left) >= 4 and all(k < 480 for k in left), f"slow clients: the server ended those replies early {left}")


def test_load(port, proc):
    results, lock = [], threading.Lock()

    def client(n):
        for i in range(n):
            st, body = raw(port, post("/v1/completions", {"prompt": PROMPT, "max_tokens": 8, "seed": i}), timeout=30)
            with lock:
                results.append(st == 200 and json.loads(body)["usage"]["completion_tokens"] >= 1)

    def burst(total):
        ts = [threading.Thread(target=client, args=(total // 8,)) for _ in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    burst(40)  # warm: every pooled buffer touched
    r0 = rss_kib(proc.pid)
    results.clear()
    t0 = time.time()
    burst(200)
    dt = time.time() - t0
    r1 = rss_kib(proc.pid)
    report(len(results) == 200 and all(results), f"load: 200 requests from 8 clients at once, {sum(results)} answered "
           f"200 OK ({200 / dt:.0f} req/s)")
    report(r1 - r0 < 1024, f"load: RSS flat ({r0} -> {r1} KiB)")


def test_key_and_queue():
    p, port, _ = start("--api-key", "sesame", "--max-queue", "2")
    try:
        report(raw(port, b"GET /v1/models HTTP/1.1\r\n\r\n")[0] == 401, "key: no key -> 401")
        report(raw(port, b"GET /v1/models HTTP/1.1\r\nAuthorization: Bearer sesame\r\nConnection: close\r\n\r\n")[0]
               == 200, "key: the key -> 200")
        report(raw(port, b"GET /v1/models HTTP/1.1\r\nAuthorization: bearer sesame\r\nConnection: close\r\n\r\n")[0]
               == 200, "key: the scheme in any case ('bearer') -> 200")
        idle = [raw(port, b"GET /health HTTP/1.1\r\n", read=False) for _ in range(2)]
        time.sleep(0.1)
        st = raw(port, b"GET /health HTTP/1.1\r\n\r\n")[0]
        report(st == 503, f"queue: a third connection beyond --max-queue 2 -> {st}")
        for s in idle:
            s.close()
    finally:
        p.terminate()
        p.wait(5)


def test_stop_mid_reply():
    """SIGTERM while a stream is generating and another request waits: the stream ends with an error
    event (no finish_reason "stop", no [DONE]: it was cut), the waiting one gets a 503, not a bare close.
    The stream's events carry a 64 KiB model name and its client reads one a 20 ms, so the reply lasts
    seconds and the waiting request is read (between two tokens) well before the signal."""
    p, port, _ = start("--timeout", "5000", "--name", "m" * 65536)
    got, rc = b"", None
    try:
        a = reader()
        a.connect(("127.0.0.1", port))
        a.sendall(post("/v1/completions", {"prompt": PROMPT, "max_tokens": 480, "temperature": 0, "stream": True}))
        got = a.recv(1 << 16)

        def slow():
            nonlocal got
            while True:
                try:
                    b = a.recv(1 << 16)
                except OSError:
                    return
                if not b:
                    return
                got += b
                time.sleep(0.02)
        th = threading.Thread(target=slow)
        th.start()
        b = raw(port, post("/v1/completions", {"prompt": PROMPT, "max_tokens": 4}), read=False)
        time.sleep(0.5)
        p.send_signal(15)
        rc = p.wait(10)
        th.join(10)
        waiting = b.recv(200)
        b.close(), a.close()
    finally:
        if rc is None:
            p.kill()
            p.wait(5)
    events = [e for e in got.split(b"\r\n") if e.startswith(b"data: ")]
    last = events[-1] if events else b""
    report(rc == 0 and b'"error"' in last and b"stopping" in last and b"[DONE]" not in got and
           b'"finish_reason":"stop"' not in got, f"stop: SIGTERM mid-stream ends it with an error event ({last[:100]!r})")
    report(waiting.startswith(b"HTTP/1.1 503"), f"stop: a request still waiting gets a 503 ({waiting[:40]!r})")


def test_gguf():
    """-m X.gguf: converted once into the cache (said on stderr), served
    under X.gguf's name; the second start reuses the cached file. The GGUF is
    the fuzzer's K-quant seed (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16, Q4_K tensors)."""
    import tempfile
    gguf = os.path.join(ROOT, "fuzz", "corpus", "gguf", "llama_kquant_mix.gguf")
    with tempfile.TemporaryDirectory() as cache:
        for run in ("first", "second"):
            p = subprocess.Popen([os.path.join(BUILD, "ml_server"), "-m", gguf, "--port", "0"], text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=dict(os.environ, ML_CACHE_DIR=cache))
            line = p.stdout.readline()
            port = int(line.split("127.0.0.1:")[1].split(",")[0]) if "127.0.0.1:" in line else 0
            try:
                st, body = raw(port, b"GET /v1/models HTTP/1.1\r\nConnection: close\r\n\r\n") if port else (0, "")
                models = json.loads(body)["data"] if st == 200 else []
                body = json.dumps({"prompt": "a", "max_tokens": 4, "temperature": 0}).encode()
                st2, reply = raw(port, b"POST /v1/completions HTTP/1.1\r\nConnection: close\r\nContent-Length: %d"
                                 b"\r\n\r\n%s" % (len(body), body)) if port else (0, "")
                usage = json.loads(reply).get("usage", {}) if st2 == 200 else {}
            finally:
                p.send_signal(2)
                p.wait(10)
            err = p.stderr.read()
            report(port > 0 and [m["id"] for m in models] == ["llama_kquant_mix.gguf"] and
                   usage.get("completion_tokens") == 4 and ("converting" in err) == (run == "first") and
                   len(os.listdir(cache)) == 1,
                   f"gguf: -m X.gguf, {run} start: served as X.gguf ({line.strip()[:80]}; models {models}; "
                   f"completion {st2} {usage}; stderr {err.strip()[:160]})")


def main():
    exe = os.path.join(BUILD, "ml_server")
    if not os.path.exists(exe):
        report(False, f"{exe} not built")
        return
    try:
        import openai  # noqa: F401
        have_openai = True
    except ImportError:
        have_openai = False
    p, port, line = start()
    report(port > 0 and "stories260K" in line and "build" in line, f"start: {line.strip()}")
    try:
        if have_openai:
            test_openai(port)
        else:
            checks.skip("openai: the openai package is not installed (pip install openai)")
        test_curl(port)
        test_malformed(port)
        test_edges(port)
        test_stalled_and_gone(port, p)
        test_load(port, p)
    finally:
        p.send_signal(2)
        try:
            rc = p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            rc = -1
    err = p.stderr.read()
    report(rc == 0 and "stopped" in err, f"stop: SIGINT ends it cleanly (exit {rc})")
    report("client left" in err, "stop: the server saw the client that left")
    test_key_and_queue()
    test_slow_clients()
    test_stop_mid_reply()
    test_gguf()
    r = subprocess.run([exe, "-m", MODEL[0], "--max-head", "200"], capture_output=True, text=True, timeout=30)
    report(r.returncode == 2 and "512..1048576, got '200'" in r.stderr,
           f"options: a value out of range is refused, the range and the value said: {r.stderr.strip()[:120]}")
    test_bad_options(exe)
    test_context(exe)


def test_context(exe):
    """The context: 4096 by default for a model trained for 8192 (its KV cache
    with it), all of it with -c 0, N with -c N; -c -1 refused."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        model, tok = os.path.join(d, "long.mlb"), os.path.join(d, "long.bin")
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "gen_random.py"), model, "--vocab", "320",
                        "--max-seq", "8192", "--tokenizer", tok], check=True, capture_output=True)
        for args, want in (((), 4096), (("-c", "0"), 8192), (("-c", "100"), 100), (("--ctx-size", "100"), 100)):
            p = subprocess.Popen([exe, "-m", model, "-z", tok, "--port", "0", *args], text=True,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            line = p.stdout.readline()
            p.send_signal(2)
            p.wait(10)
            report(f"context {want}," in line, f"context: {' '.join(args) or 'no -c'} serves {want} of 8192: {line.strip()[:120]}")
        p = subprocess.Popen([exe, "--model", model, "-z", tok, "--port", "0", "--alias", "mine", "--threads", "1",
                              "--batch-size", "8"], text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        line = p.stdout.readline()
        p.send_signal(2)
        p.wait(10)
        report("model mine (" in line and "context 4096," in line,
               f"llama-server's --model, --alias, --threads, --batch-size taken: {line.strip()[:120]}")
        r = subprocess.run([exe, "-m", model, "-z", tok, "-c", "-1"], capture_output=True, text=True, timeout=30)
        report(r.returncode == 2 and "0..1048576, got '-1'" in r.stderr, f"context: -c -1 refused: {r.stderr.strip()[:120]}")


def test_bad_options(exe):
    """Options that cannot work are refused before the model is read (here a file that does not
    exist: its error would come first otherwise): an empty --api-key, which no client could send, a
    --host that is no address, a port in use, a --max-queue beyond the open-files limit (where the
    clients past the limit would wait unanswered and the server spin)."""
    import resource
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    held.listen()
    used = str(held.getsockname()[1])

    def low_limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
    try:
        for what, args, want, limit in [
                ("an empty --api-key", ["--api-key", ""], "--api-key needs a non-empty key", None),
                ("a --host that is a name", ["--host", "localhost"], "is not an IPv4 address", None),
                ("a port in use", ["--port", used], "cannot listen on 127.0.0.1:" + used, None),
                ("--max-queue beyond the open files", ["--max-queue", "100"], "the limit is 40 (ulimit -n)", low_limit)]:
            r = subprocess.run([exe, "-m", "/nonexistent.mlb", *args], capture_output=True, text=True, timeout=30,
                               preexec_fn=limit)
            report(r.returncode in (1, 2) and want in r.stderr and "nonexistent" not in r.stderr,
                   f"options: {what} is refused before the model is read (exit {r.returncode}: {r.stderr.strip()[:120]})")
    finally:
        held.close()
    p = subprocess.Popen([exe, "-m", MODEL[0], "-z", MODEL[1], "--port", "0", "--max-queue", "16"], text=True,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=low_limit)
    line = p.stdout.readline()
    p.terminate()
    p.wait(10)
    report("listening" in line, f"options: the default --max-queue fits 40 open files ({line.strip()[:60]})")


if __name__ == "__main__":
    checks.run(main)
