"""The Python package against ml_run (ML_RUN: its path; default
build/scalar/ml_run) on the shipped models/stories260K: greedy text, ids and
logits equal; streaming joins to the same text; bad input raises; two models
at once; no leak over 100 open/close cycles. Run by tests/test_python.sh in
the virtual environment `pip install . pytest` made."""
import os
import struct
import subprocess
import sys
import threading

import pytest

import legacy_ml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODEL = os.path.join(ROOT, "models", "stories260K", "stories260K_q8_0.mlb")
TOK = os.path.join(ROOT, "models", "stories260K", "tok512.bin")
ML_RUN = os.environ.get("ML_RUN", os.path.join(ROOT, "build", "scalar", "ml_run"))
PROMPT = "Once upon a time"


def ml_run(*args, tmp=None):
    if not os.access(ML_RUN, os.X_OK):
        pytest.skip(f"no ml_run at {ML_RUN} (ML_RUN=...)")
    r = subprocess.run([ML_RUN, "-m", MODEL, "-z", TOK, *args], capture_output=True, check=True)
    return r.stdout.decode("utf-8")


@pytest.fixture(scope="module")
def model():
    with legacy_ml.Model(MODEL, tokenizer=TOK) as m:
        yield m


def test_build_info():
    info = legacy_ml.build_info()
    assert info["version"].count(".") == 2
    assert info["isa"] in info["built"]
    forced = os.environ.get("LEGACY_ML_ISA")
    assert forced is None or info["isa"] == forced


def test_greedy_text_equals_ml_run(model):
    for n in (24, 0):
        want = ml_run("-i", PROMPT, "-n", str(n), "--temp", "0")
        steps = model.context if n == 0 else n
        # ml_run -n counts the positions run; the last of its new tokens is sampled, not run
        got = model.generate(PROMPT, max_tokens=steps - len(model.tokenize(PROMPT)) + 1, temperature=0)
        assert PROMPT + got + "\n" == want


def test_sampled_text_equals_ml_run(model):
    want = ml_run("-i", PROMPT, "-n", "48", "-s", "42", "--top-p", "0.9", "--temp", "1")
    got = model.generate(PROMPT, max_tokens=48 - len(model.tokenize(PROMPT)) + 1, temperature=1.0, top_p=0.9,
                         seed=42)
    assert PROMPT + got + "\n" == want


def test_ids_equal_ml_run(model, tmp_path):
    ids_path = tmp_path / "ids"
    ml_run("-i", PROMPT, "-n", "0", "--temp", "0", "--ids", str(ids_path))
    want = [int(x) for x in ids_path.read_text().split()]
    prompt_ids = model.tokenize(PROMPT)
    assert prompt_ids == want[:len(prompt_ids)]
    gen = model.generate(PROMPT, max_tokens=model.context, temperature=0)
    assert model.detokenize(want[len(prompt_ids):]) == gen
    assert model.detokenize(want) == PROMPT + gen


def test_logits_equal_ml_run(model, tmp_path):
    path = tmp_path / "logits"
    ml_run("-i", PROMPT, "-n", "12", "--temp", "0", "--logits", str(path), "--ids", str(tmp_path / "ids"))
    ids = [int(x) for x in (tmp_path / "ids").read_text().split()]
    raw = path.read_bytes()
    n = len(raw) // (4 * model.vocab)
    assert n == 12 and len(ids) == 13
    got = model.logits(ids[:n])
    rows = [list(r) for r in got]
    flat = struct.pack(f"<{n * model.vocab}f", *[x for r in rows for x in r])
    assert flat == raw  # bit for bit


def test_stream_joins_to_generate(model):
    for kw in ({"temperature": 0}, {"temperature": 0.8, "seed": 7}, {"temperature": 0, "stop": ["Lily"]}):
        text = model.generate(PROMPT, max_tokens=60, **kw)
        pieces = list(model.stream(PROMPT, max_tokens=60, **kw))
        assert len(pieces) > 3
        assert "".join(pieces) == text


def test_stop_string(model):
    full = model.generate(PROMPT, max_tokens=60, temperature=0)
    word = full.split()[3]
    cut = model.generate(PROMPT, max_tokens=60, temperature=0, stop=[word])
    assert cut == full[:full.find(word)]
    assert word not in cut


def test_max_tokens_counts_new_tokens(model):
    for n in (1, 2, 5):
        pieces = list(model.stream(PROMPT, max_tokens=n, temperature=0))
        assert len(pieces) == n, pieces
        ids = model.tokenize(PROMPT + "".join(pieces))
        assert len(ids) - len(model.tokenize(PROMPT)) == n


def test_close_during_a_stream_stops_it():
    m = legacy_ml.Model(MODEL, tokenizer=TOK)
    it = m.stream(PROMPT, max_tokens=400, seed=1)
    first = next(it)
    with pytest.raises(legacy_ml.LegacyMLError) as e:  # one call on a model at a time
        m.generate(PROMPT, max_tokens=8)
    assert "stream" in str(e.value)
    m.close()
    rest = "".join(it)  # ends: the stream was stopped, the model is gone
    assert first and isinstance(rest, str)
    with pytest.raises(legacy_ml.LegacyMLError):
        m.generate(PROMPT, max_tokens=8)


def test_an_exception_in_generation_is_raised(model):
    class Boom(Exception):
        pass

    class Stop(str):  # a stop string whose test raises, inside the token callback
        def startswith(self, *a):
            raise Boom()

    with pytest.raises(Boom):
        model.generate(PROMPT, max_tokens=50, temperature=0, stop=[Stop("zzzz")])
    assert model.generate(PROMPT, max_tokens=8, temperature=0)  # usable afterwards


@pytest.mark.skipif(not hasattr(os, "kill") or sys.platform.startswith("win"), reason="POSIX signals")
def test_ctrl_c_during_generation_is_raised_and_stops_it(model):
    import signal
    import time

    class Slow(str):  # a stop string whose test takes 2 ms: 500 tokens take a second
        def startswith(self, *a):
            time.sleep(0.002)
            return str.startswith(self, *a)

    # Python's own Ctrl-C handler, as in an interactive session (a background
    # job of a script, as under the test driver, starts with SIGINT ignored)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for _ in range(3):
            timer = threading.Timer(0.15, os.kill, (os.getpid(), signal.SIGINT))
            t0 = time.time()
            timer.start()
            with pytest.raises(KeyboardInterrupt):
                model.generate(PROMPT, max_tokens=500, seed=1, stop=[Slow("zzzzzz")])
            timer.join()
            assert time.time() - t0 < 0.8  # stopped, not run to its end
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, before)
    assert model.generate(PROMPT, max_tokens=8, temperature=0)


def test_numpy_integers_are_integers(model):
    np = pytest.importorskip("numpy")
    assert model.generate(PROMPT, max_tokens=np.int64(6), temperature=0, top_k=np.int32(5), seed=np.uint64(3)) == \
        model.generate(PROMPT, max_tokens=6, temperature=0, top_k=5, seed=3)


def test_out_of_range_integers_and_nul_are_refused(model):
    for kw in ({"top_k": 2**32 + 1}, {"repeat_last_n": 2**40}, {"seed": -1}, {"seed": 2**64}, {"max_tokens": True}):
        with pytest.raises(ValueError):
            model.generate(PROMPT, **kw)
    for kw in ({"context": 2**32 + 5}, {"threads": 2**32 + 1}, {"batch": 2**33}):
        with pytest.raises(ValueError):
            legacy_ml.Model(MODEL, tokenizer=TOK, **kw)
    with pytest.raises(ValueError):
        model.tokenize("Hello\0world")
    with pytest.raises(ValueError):
        model.generate("Once\0 upon a time")
    with pytest.raises(ValueError):
        model.chat([{"role": "user", "content": "a\0b"}], template="zephyr")
    with pytest.raises(TypeError):
        model.tokenize(b"bytes")


def test_stream_stops_early(model):
    it = model.stream(PROMPT, max_tokens=200, temperature=0)
    first = next(it)
    it.close()
    assert first and model.generate(PROMPT, max_tokens=200, temperature=0).startswith(first)


def test_tokenize_roundtrip(model):
    text = "Lily and Tom went to the park. ü"
    ids = model.tokenize(text)
    assert ids[0] == 1 and model.tokenize(text, bos=False) == ids[1:]
    assert model.detokenize(ids) == text


def test_bad_paths_raise(tmp_path):
    with pytest.raises(legacy_ml.LegacyMLError) as e:
        legacy_ml.Model(str(tmp_path / "missing.mlb"), tokenizer=TOK)
    assert e.value.status == "LML_E_IO" and "missing.mlb" in str(e.value)
    with pytest.raises(legacy_ml.LegacyMLError) as e:
        legacy_ml.Model(MODEL, tokenizer=str(tmp_path / "missing.bin"))
    assert "missing.bin" in str(e.value)
    bad = tmp_path / "bad.mlb"
    bad.write_bytes(b"not a model" * 10)
    with pytest.raises(legacy_ml.LegacyMLError) as e:
        legacy_ml.Model(str(bad))
    assert e.value.status == "LML_E_FORMAT"


def test_gguf_path_opens(tmp_path, monkeypatch):
    """A GGUF path opens as ml_run -m opens it: the library converts it once
    into the empty cache ($ML_CACHE_DIR) and uses its own tokenizer; ml_run
    then finds that file (no conversion of its own) and writes the same
    logits, bit for bit; a second open reuses the file. The GGUF is the
    fuzzer's seed mixing Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, F16 and Q4_K tensors
    (random weights, 8 tokens)."""
    if not os.access(ML_RUN, os.X_OK):
        pytest.skip(f"no ml_run at {ML_RUN} (ML_RUN=...)")
    gguf = os.path.join(ROOT, "fuzz", "corpus", "gguf", "llama_kquant_mix.gguf")
    cache = tmp_path / "cache"
    monkeypatch.setenv("ML_CACHE_DIR", str(cache))
    with legacy_ml.Model(gguf) as m:
        prompt = m.tokenize("a")
        cached = sorted(cache.iterdir())
        assert len(cached) == 1 and cached[0].suffix == ".mlb"
        r = subprocess.run([ML_RUN, "-m", gguf, "-i", "a", "-n", "12", "--temp", "0", "--logits",
                            str(tmp_path / "logits"), "--ids", str(tmp_path / "ids")], capture_output=True, check=True)
        assert b"converting" not in r.stderr and sorted(cache.iterdir()) == cached
        ids = [int(x) for x in (tmp_path / "ids").read_text().split()]
        assert len(ids) == 13 and ids[:len(prompt)] == prompt
        rows = [list(r) for r in m.logits(ids[:12])]
        assert struct.pack(f"<{12 * m.vocab}f", *[x for r in rows for x in r]) == (tmp_path / "logits").read_bytes()
    with legacy_ml.Model(gguf) as m:
        assert m.tokenize("a") == prompt and sorted(cache.iterdir()) == cached
    truncated = tmp_path / "cut.gguf"
    truncated.write_bytes(open(gguf, "rb").read()[:600])
    with pytest.raises(legacy_ml.LegacyMLError) as e:
        legacy_ml.Model(str(truncated))
    assert e.value.status == "LML_E_FORMAT" and "cut.gguf" in str(e.value)


def test_bad_arguments_raise(model):
    with pytest.raises(legacy_ml.LegacyMLError) as e:
        model.generate(PROMPT, temperature=-1)
    assert "temperature" in str(e.value)
    with pytest.raises(legacy_ml.LegacyMLError) as e:
        model.generate(PROMPT, top_k=-3)
    assert "top" in str(e.value).lower()
    with pytest.raises(legacy_ml.LegacyMLError):
        model.logits([1, model.vocab + 5])
    with pytest.raises(legacy_ml.LegacyMLError):
        model.detokenize([-1])
    with pytest.raises(ValueError):
        model.generate(PROMPT, max_tokens=-1)
    with pytest.raises(ValueError):
        legacy_ml.Model(MODEL, threads=0)
    with pytest.raises(legacy_ml.LegacyMLError):
        legacy_ml.Model(MODEL).tokenize("no tokenizer")
    with pytest.raises(legacy_ml.LegacyMLError):
        legacy_ml.Model(MODEL).detokenize([1, 2])


def test_closed_model_raises():
    m = legacy_ml.Model(MODEL, tokenizer=TOK)
    m.close()
    m.close()
    with pytest.raises(legacy_ml.LegacyMLError):
        m.tokenize("x")


def test_context_default_cap(tmp_path):
    """A model trained for more than 4096 tokens gets a context (and KV cache)
    of 4096 by default, the whole of it with context=0, N with context=N."""
    path = str(tmp_path / "long.mlb")
    data = bytearray(open(MODEL, "rb").read())
    assert data[:4] == b"MLB1" and struct.unpack_from("<I", data, 32)[0] == 512  # the header's max_seq
    struct.pack_into("<I", data, 32, 8192)  # the weights do not depend on it
    open(path, "wb").write(data)
    with legacy_ml.Model(path) as m:
        assert (m.context, m.train_context) == (4096, 8192)
    with legacy_ml.Model(path, context=0) as m:
        assert m.context == 8192
    with legacy_ml.Model(path, context=5000) as m:
        assert m.context == 5000
    with legacy_ml.Model(MODEL, tokenizer=TOK) as m:
        assert m.context == m.train_context == 512
    with pytest.raises(ValueError):
        legacy_ml.Model(path, context=-1)


def test_two_models_at_once():
    with legacy_ml.Model(MODEL, tokenizer=TOK) as a, legacy_ml.Model(MODEL, tokenizer=TOK, context=64) as b:
        assert b.context == 64
        out = {}

        def run(name, m):
            out[name] = m.generate(PROMPT, max_tokens=40, temperature=0)

        threads = [threading.Thread(target=run, args=(n, m)) for n, m in (("a", a), ("b", b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert out["a"] == out["b"] == a.generate(PROMPT, max_tokens=40, temperature=0)


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/status")
def test_no_leak_over_100_cycles():
    def cycle():
        with legacy_ml.Model(MODEL, tokenizer=TOK, mmap=False) as m:
            m.generate(PROMPT, max_tokens=4, temperature=0)

    for _ in range(10):
        cycle()
    before = rss_kib()
    for _ in range(100):
        cycle()
    grown = rss_kib() - before
    # One model (read, not mapped) is ~1 MiB: a leak of it per cycle would be ~100 MiB.
    assert grown < 8 * 1024, f"RSS grew by {grown} KiB over 100 open/close cycles"


def embedding_copy(tmp_path, template=b""):
    """MODEL as a .mlb version 2 file that embeds TOK (the same arrays; the
    header's version-2 fields at byte 52, the tokenizer at the next multiple
    of 64 after the last array, as tools/mlb.py lays it out), and the chat
    template after it when one is given."""
    data = bytearray(open(MODEL, "rb").read())
    tok = open(TOK, "rb").read()
    off = (len(data) + 63) // 64 * 64
    t_off = (off + len(tok) + 63) // 64 * 64 if template else 0
    data[4:8] = struct.pack("<I", 2)
    data[52:136] = struct.pack("<4I3fI3i2I4Q", 0, 0, 0, 0, 0.0, 0.0, 0.0, 0, 1, 2, -1, 1, 0, off, len(tok), t_off,
                               len(template))
    data += bytes(off - len(data)) + tok
    if template:
        data += bytes(t_off - len(data)) + template
    path = tmp_path / "embeds.mlb"
    path.write_bytes(bytes(data))
    return str(path)


def test_embedded_tokenizer(model, tmp_path):
    with legacy_ml.Model(embedding_copy(tmp_path)) as m:
        assert m.tokenizer_kind == model.tokenizer_kind
        assert m.tokenize(PROMPT) == model.tokenize(PROMPT)
        assert m.generate(PROMPT, max_tokens=40, temperature=0) == model.generate(PROMPT, max_tokens=40,
                                                                                  temperature=0)
    with legacy_ml.Model(MODEL) as m:  # a version-1 file: no tokenizer, logits only
        assert m.tokenizer_kind is None and len(m.logits([1, 2])) == 2
        with pytest.raises(legacy_ml.LegacyMLError) as e:
            m.tokenize(PROMPT)
        assert "no tokenizer" in str(e.value)


# ---- chat (lml_chat_*: the templates ml_server and ml_run --chat use) ----------
CHAT = [{"role": "system", "content": "You are kind."}, {"role": "user", "content": "Hello there"}]


def test_chat_greedy_equals_ml_run_chat(model):
    """One turn of ml_run --chat (zephyr on stories260K, greedy, a reply of
    at most 40 tokens) is the reply of Model.chat with the same messages."""
    if not os.access(ML_RUN, os.X_OK):
        pytest.skip(f"no ml_run at {ML_RUN} (ML_RUN=...)")
    r = subprocess.run([ML_RUN, "--chat", "-m", MODEL, "-z", TOK, "--chat-template", "zephyr", "--temp", "0", "-n", "40",
                        "--system", CHAT[0]["content"]], input=(CHAT[1]["content"] + "\n").encode(),
                       capture_output=True, check=True)
    out = r.stdout.decode("utf-8")
    assert out.startswith("> ") and out.endswith("\n> \n")
    got = model.chat(CHAT, template="zephyr", max_tokens=40, temperature=0)
    assert len(got) > 10 and got == out[2:-4]
    # the stop tokens of the chat are gone afterwards: generate is ml_run's again
    assert PROMPT + model.generate(PROMPT, max_tokens=20, temperature=0) + "\n" == ml_run("-i", PROMPT, "-n",
        str(20 + len(model.tokenize(PROMPT)) - 1), "--temp", "0")


def test_chat_stop_and_sampling(model):
    full = model.chat(CHAT, template="zephyr", max_tokens=60, temperature=0)
    word = full.split()[1]
    assert model.chat(CHAT, template="zephyr", max_tokens=60, temperature=0, stop=[word]) == full[:full.find(word)]
    a = model.chat(CHAT, template="llama2", max_tokens=30, temperature=0.8, seed=3)
    assert a and a == model.chat(CHAT, template="llama2", max_tokens=30, temperature=0.8, seed=3)


def test_chat_template_from_the_model(model, tmp_path):
    zephyr = b"{% for m in messages %}<|user|>\n{{ m.content }}</s>\n<|assistant|>\n{% endfor %}"
    with legacy_ml.Model(embedding_copy(tmp_path, zephyr)) as m:
        assert m.chat(CHAT, max_tokens=30, temperature=0) == model.chat(CHAT, template="zephyr", max_tokens=30,
                                                                         temperature=0)
    with legacy_ml.Model(embedding_copy(tmp_path, b"{{ unknown }}")) as m:
        with pytest.raises(legacy_ml.LegacyMLError) as e:
            m.chat(CHAT)
        assert e.value.status == "LML_E_FORMAT" and "zephyr" in str(e.value)


def test_chat_refusals(model):
    for template, status, text in (("vicuna", "LML_E_ARG", "chatml, llama3, zephyr, llama2, deepseek-r1"),
                                   (None, "LML_E_ARG", "zephyr"),  # stories260K carries no template
                                   ("chatml", "LML_E_FORMAT", "<|im_start|>")):
        with pytest.raises(legacy_ml.LegacyMLError) as e:
            model.chat(CHAT, template=template)
        assert e.value.status == status and text in str(e.value), str(e.value)
    for bad in ([], [{"role": "tool", "content": "x"}], [{"role": "user"}], [{"role": "user", "content": 3}], "hi"):
        with pytest.raises(ValueError):
            model.chat(bad, template="zephyr")
    with pytest.raises(ValueError):
        model.chat(CHAT, template="zephyr", max_tokens=0)
