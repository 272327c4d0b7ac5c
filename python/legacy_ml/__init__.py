"""legacy_ml: small Llama-family models from Python, through ctypes over
libml.so (include/legacy_ml.h). No compiled extension, no dependency; numpy,
when present, makes Model.logits return an array.

    import legacy_ml
    with legacy_ml.Model("model.mlb", tokenizer="tokenizer.bin") as m:
        print(m.generate("Once upon a time", max_tokens=64, temperature=0))
        for piece in m.stream("Lily", max_tokens=32, seed=42):
            print(piece, end="", flush=True)

The package holds a libml.so per ISA of this architecture; at import the
fastest one whose own CPU check (lml_cpu_check) passes is loaded.
LEGACY_ML_ISA=<isa> forces one (an error if this CPU cannot run it)."""
import codecs
import contextlib
import ctypes as C
import operator
import os
import queue
import signal
import threading
import time

__all__ = ["Model", "LegacyMLError", "build_info"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_LIBDIR = os.path.join(_HERE, "lib")


class LegacyMLError(Exception):
    """A failed library call: .status is the code's name ("LML_E_IO"), the
    message the library's reason."""

    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


# ---- the C types of include/legacy_ml.h -------------------------------------

class _Error(C.Structure):
    _fields_ = [("message", C.c_char * 512)]


class _ModelOptions(C.Structure):
    _fields_ = [("tokenizer", C.c_char_p), ("no_tokenizer", C.c_int), ("threads", C.c_int), ("context", C.c_int),
                ("batch", C.c_int), ("load", C.c_int), ("all_logits", C.c_int)]


class _ModelInfo(C.Structure):
    _fields_ = [(n, C.c_int) for n in ("vocab", "context", "train_context", "dim", "n_layers", "n_heads",
                                       "n_kv_heads", "hidden_dim", "threads", "batch")] + \
               [("weights", C.c_char_p), ("storage", C.c_char_p), ("weight_bytes", C.c_size_t),
                ("arena_bytes", C.c_size_t), ("kv_bytes", C.c_size_t), ("decode_bytes", C.c_size_t)] + \
               [(n, C.c_int) for n in ("file_version", "head_dim", "qkv_bias", "qk_norm")] + \
               [("rope_scaling", C.c_char_p), ("embeds_tokenizer", C.c_int), ("chat_template_bytes", C.c_size_t),
                ("tokenizer", C.c_char_p)] + \
               [(n, C.c_int) for n in ("bos", "eos", "eot", "add_bos", "byte_level", "f16_scales")]


class _SamplerOptions(C.Structure):
    _fields_ = [("temperature", C.c_float), ("top_p", C.c_float), ("top_k", C.c_int), ("min_p", C.c_float),
                ("repeat_penalty", C.c_float), ("repeat_last_n", C.c_int), ("seed", C.c_ulonglong)]


_TOKEN_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int, C.POINTER(C.c_char), C.c_size_t)
_PROMPT_FN = C.CFUNCTYPE(None, C.c_void_p, C.c_int)
_LOGITS_FN = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int, C.POINTER(C.c_float), C.c_int)


class _ChatMessage(C.Structure):
    _fields_ = [("role", C.c_int), ("content", C.c_char_p)]


_ROLES = {"system": 0, "developer": 0, "user": 1, "assistant": 2}  # lml_role; "developer" as ml_server


class _Callbacks(C.Structure):
    _fields_ = [("on_token", _TOKEN_FN), ("on_prompt_done", _PROMPT_FN), ("on_logits", _LOGITS_FN),
                ("ud", C.c_void_p)]


def _declare(lib):
    P, I, S = C.c_void_p, C.c_int, C.c_size_t
    E = C.POINTER(_Error)
    sigs = {
        "lml_status_name": (C.c_char_p, [I]),
        "lml_version": (C.c_char_p, []),
        "lml_build_isa": (C.c_char_p, []),
        "lml_cpu_check": (I, [E]),
        "lml_model_open": (I, [C.POINTER(P), C.c_char_p, C.POINTER(_ModelOptions), E]),
        "lml_model_close": (None, [P]),
        "lml_model_get_info": (None, [P, C.POINTER(_ModelInfo)]),
        "lml_tokenize_capacity": (S, [C.c_char_p]),
        "lml_tokenize": (I, [P, C.c_char_p, I, C.POINTER(I), S, C.POINTER(I), E]),
        "lml_token_piece": (C.POINTER(C.c_char), [P, I, I, C.POINTER(S)]),
        "lml_eval": (I, [P, C.POINTER(I), I, I, _LOGITS_FN, P, E]),
        "lml_generate": (I, [P, C.POINTER(I), I, I, C.POINTER(_SamplerOptions), C.POINTER(_Callbacks),
                             C.POINTER(I), E]),
        "lml_model_set_stop_tokens": (I, [P, C.POINTER(I), I, E]),
        "lml_chat_open": (I, [C.POINTER(P), P, C.c_char_p, S, E]),
        "lml_chat_close": (None, [P]),
        "lml_chat_end_of_turn": (I, [P]),
        "lml_chat_capacity": (S, [P, C.POINTER(_ChatMessage), I]),
        "lml_chat_render": (I, [P, C.POINTER(_ChatMessage), I, I, C.POINTER(I), S, C.POINTER(I), E]),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    return lib


# ---- picking the build --------------------------------------------------------

def _built_isas():
    try:
        with open(os.path.join(_LIBDIR, "isas.txt")) as f:
            return [line.strip() for line in f if line.strip()]
    except OSError:
        return []


def _try(isa):
    """(lib, None) if this CPU runs isa's library, else (None, reason)."""
    path = os.path.join(_LIBDIR, isa, "libml.so")
    if not os.path.isfile(path):
        return None, f"no library for ISA '{isa}' in {_LIBDIR} (built: {' '.join(_built_isas()) or 'none'})"
    lib = _declare(C.CDLL(path))
    err = _Error()
    if lib.lml_cpu_check(C.byref(err)):
        return None, err.message.decode("utf-8", "replace")
    return lib, None


def _load():
    forced = os.environ.get("LEGACY_ML_ISA")
    if forced:
        lib, why = _try(forced)
        if lib is None:
            raise ImportError(f"legacy_ml: LEGACY_ML_ISA={forced}: {why}")
        return lib
    reasons = []
    for isa in reversed(_built_isas()):  # fastest first
        lib, why = _try(isa)
        if lib is not None:
            return lib
        reasons.append(why)
    raise ImportError("legacy_ml: no usable libml.so: " + ("; ".join(reasons) or f"none in {_LIBDIR}"))


_lib = _load()


def build_info():
    """The loaded library: version, ISA, the ISAs built, its path."""
    return {"version": _lib.lml_version().decode(), "isa": _lib.lml_build_isa().decode(),
            "built": _built_isas(), "library": _lib._name}


def _check(status, err):
    if status:
        raise LegacyMLError(_lib.lml_status_name(status).decode(), err.message.decode("utf-8", "replace"))


_INT_MAX = 2**31 - 1
_FLT_MIN = 1.1754943508222875e-38  # the smallest normal C float


def _int_arg(name, v, lo, hi=_INT_MAX):
    """v (any integer: int, numpy's) as a C int in lo..hi, or ValueError
    (ctypes would wrap it silently)."""
    try:
        i = operator.index(v)
    except TypeError:
        i = None
    if i is None or isinstance(v, bool) or not lo <= i <= hi:
        raise ValueError(f"{name}: expected an integer in {lo}..{hi}, got {v!r}")
    return i


@contextlib.contextmanager
def _deferred_sigint(state):
    """Ctrl-C during a library call, in the main thread with Python's own
    handler: noted in state["sigint"] (the callbacks then stop the call)
    and raised as KeyboardInterrupt once the call has returned. Raised
    inside a ctypes callback it would be printed and dropped."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return

    def note(signum, frame):
        state["sigint"] = True

    old = signal.signal(signal.SIGINT, note)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)
    if state["sigint"]:
        raise KeyboardInterrupt


def _utf8(name, text):
    """text as UTF-8 bytes for a C string: a str without NUL (C would end it there)."""
    if not isinstance(text, str):
        raise TypeError(f"{name}: expected a str, got {type(text).__name__}")
    if "\0" in text:
        raise ValueError(f"{name}: holds a NUL character, which would end the text there")
    return text.encode("utf-8")


# ---- stop strings -------------------------------------------------------------

class _StopText:
    """Text in, text out, up to a stop string: what may start one is held
    back until it cannot (so a stop string is never yielded)."""

    def __init__(self, stops):
        self.stops = [s for s in (stops or []) if s]
        self.held = ""
        self.stopped = False

    def feed(self, text):
        if self.stopped:
            return ""
        t = self.held + text
        hits = [i for i in (t.find(s) for s in self.stops) if i >= 0]
        if hits:
            self.stopped, self.held = True, ""
            return t[:min(hits)]
        keep = 0  # the longest tail of t that begins a stop string
        for s in self.stops:
            for n in range(min(len(s) - 1, len(t)), keep, -1):
                if s.startswith(t[-n:]):
                    keep = n
                    break
        self.held = t[len(t) - keep:] if keep else ""
        return t[:len(t) - keep]

    def flush(self):
        out, self.held = ("" if self.stopped else self.held), ""
        return out


# ---- the model ------------------------------------------------------------------

class Model:
    """A .mlb model (tools/convert.py) and its tokenizer: a llama2.c
    tokenizer.bin or a BPE tokenizer file (tools/tokfile.py); without
    tokenizer=, the one a .mlb version 2 model embeds. Use it from one thread
    at a time; close() (or a with block) frees it. While a stream() is
    running on it (until its loop ends or it is closed), other calls raise
    LegacyMLError, and close() stops the stream first.

    context caps the context and its KV cache (the context attribute): by
    default at 4096 tokens, or the model's if shorter (its train_context);
    context=0 takes the model's whole context."""

    def __init__(self, path, tokenizer=None, threads=None, context=None, batch=None, mmap=None):
        self._h, self._stream = None, None
        self._lock = threading.Lock()  # held by a running generation: one call on the handle at a time
        for name, v, lo in (("threads", threads, 1), ("context", context, 0), ("batch", batch, 1)):
            if v is not None:
                _int_arg(name, v, lo)
        # the library's 0 is its default cap; its -1 (LML_CONTEXT_MODEL) is our 0
        ctx = 0 if context is None else context or -1
        opts = _ModelOptions(tokenizer=os.fsencode(tokenizer) if tokenizer is not None else None,
                             threads=threads or 0, context=ctx, batch=batch or 0,
                             load=0 if mmap is None else 1 if mmap else 2, all_logits=1)
        h, err = C.c_void_p(), _Error()
        _check(_lib.lml_model_open(C.byref(h), os.fsencode(path), C.byref(opts), C.byref(err)), err)
        self._h = h
        info = _ModelInfo()
        _lib.lml_model_get_info(h, C.byref(info))
        self.vocab, self.context, self.train_context = info.vocab, info.context, info.train_context
        # None: no tokenizer (a version-1 file without tokenizer=): logits only
        self.tokenizer_kind = info.tokenizer.decode() if info.tokenizer else None
        self._bos, self._eos, self._eot, self._add_bos = info.bos, info.eos, info.eot, bool(info.add_bos)

    # -- lifetime --
    def close(self):
        stop_stream = self._stream  # read once: the stream's own end may clear it meanwhile
        if stop_stream is not None:  # a stream still running: stop it and wait for its thread
            stop_stream()
            self._stream = self._stream_thread = None
        if self._h is not None:
            _lib.lml_model_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _handle(self):
        if self._h is None:
            raise LegacyMLError("LML_E_ARG", "the model is closed")
        if self._stream is not None and threading.current_thread() is not self._stream_thread:
            raise LegacyMLError("LML_E_ARG", "a stream() is running on this model: finish its loop, or close() "
                                "it, first")
        return self._h

    # -- tokens --
    def tokenize(self, text, bos=None):
        """Token ids of text; BOS first when bos (default: the tokenizer's
        rule; a vocabulary without BOS never gets one)."""
        if bos is None:
            bos = self._add_bos
        b = _utf8("text", text)
        cap = _lib.lml_tokenize_capacity(b)
        buf, n, err = (C.c_int * cap)(), C.c_int(), _Error()
        _check(_lib.lml_tokenize(self._handle(), b, 1 if bos else 0, buf, cap, C.byref(n), C.byref(err)), err)
        return list(buf[:n.value])

    def _piece(self, prev, token):
        n = C.c_size_t()
        p = _lib.lml_token_piece(self._handle(), prev, token, C.byref(n))
        return C.string_at(p, n.value) if p else b""

    def detokenize(self, ids):
        """The text of ids (BOS, EOS and BPE control tokens give none;
        invalid UTF-8 is replaced)."""
        if self.tokenizer_kind is None:
            raise LegacyMLError("LML_E_ARG", "this model has no tokenizer (give one: Model(path, tokenizer=...))")
        out, prev = [], -1
        for t in ids:
            t = int(t)
            if not 0 <= t < self.vocab:
                raise LegacyMLError("LML_E_ARG", f"token: expected an id in 0..{self.vocab - 1}, got {t}")
            if t not in (self._bos, self._eos):
                out.append(self._piece(prev, t))
            prev = t
        return b"".join(out).decode("utf-8", "replace")

    # -- logits --
    def logits(self, ids):
        """Every position's logits of ids run from position 0: an (n, vocab)
        float32 numpy array, or a list of lists without numpy."""
        ids = [_int_arg("token", int(t), -_INT_MAX - 1) for t in ids]  # the library checks the vocab
        rows, state = [], {"raised": None, "sigint": False}

        def each(ud, pos, lp, vocab):
            try:
                if state["sigint"]:
                    return 1
                rows.append(bytes(C.string_at(lp, vocab * 4)))
                return 0
            except BaseException as e:  # raised again below, after the library returns (ctypes drops it)
                state["raised"] = e
                return 1

        fn = _LOGITS_FN(each)
        arr, err = (C.c_int * max(len(ids), 1))(*ids), _Error()
        h = self._handle()
        with _deferred_sigint(state):
            status = _lib.lml_eval(h, arr, len(ids), 0, fn, None, C.byref(err))
        if state["raised"] is not None:
            raise state["raised"]
        _check(status, err)
        try:
            import numpy as np
            return np.frombuffer(b"".join(rows), dtype=np.float32).reshape(len(rows), self.vocab).copy()
        except ImportError:
            import array
            out = []
            for r in rows:
                a = array.array("f")
                a.frombytes(r)
                out.append(a.tolist())
            return out

    # -- generation --
    def _run(self, prompt, max_tokens, temperature, top_p, top_k, min_p, repeat_penalty, repeat_last_n, seed,
             on_text, ids=None, steps=None, stop=None):
        """Generate after prompt (or the prompt's ids, and then positions to
        run); on_text(str) gets the new text as it comes and returns True to
        stop."""
        max_tokens = _int_arg("max_tokens", max_tokens, 0, 2**62)
        top_k = _int_arg("top_k", top_k, -_INT_MAX - 1)  # the library checks the range; this, that it fits
        repeat_last_n = _int_arg("repeat_last_n", repeat_last_n, -_INT_MAX - 1)
        if seed is not None:
            seed = _int_arg("seed", seed, 0, 2**64 - 1)
        if ids is None:
            ids = self.tokenize(prompt)
        # positions to run: the prompt, then max_tokens new tokens (the last is sampled, not run)
        steps = min(len(ids) + max_tokens - 1 if steps is None else steps, self.context)
        if len(ids) > self.context:
            raise LegacyMLError("LML_E_ARG", f"prompt: {len(ids)} tokens, more than the context of {self.context}")
        if seed is None:
            seed = time.time_ns() & 0xFFFFFFFFFFFFFFFF
        if isinstance(top_p, (int, float)) and 0 < top_p < _FLT_MIN:
            top_p = _FLT_MIN  # not 0 (top-p off) by rounding to a C float
        so = _SamplerOptions(temperature, top_p, top_k, min_p, repeat_penalty, repeat_last_n, seed)
        dec = codecs.getincrementaldecoder("utf-8")("replace")
        state = {"prompt": True, "raised": None, "sigint": False}

        def on_token(ud, token, piece, n):
            try:
                if state["sigint"] or (stop is not None and stop()):
                    return 1
                if state["prompt"]:
                    return 0
                text = dec.decode(C.string_at(piece, n) if piece else b"")
                return 1 if text and on_text(text) else 0
            except BaseException as e:  # on_text's error (or a handler's): stop, raise it below (ctypes drops it)
                state["raised"] = e
                return 1

        def on_prompt_done(ud, n_prompt):
            state["prompt"] = False

        cb = _Callbacks(_TOKEN_FN(on_token), _PROMPT_FN(on_prompt_done), _LOGITS_FN(), None)
        arr, err, n_pos = (C.c_int * len(ids))(*ids), _Error(), C.c_int()
        if max_tokens == 0:
            return
        h = self._handle()
        if not self._lock.acquire(blocking=False):
            raise LegacyMLError("LML_E_ARG", "the model is generating already (one call at a time)")
        try:
            with _deferred_sigint(state):
                status = _lib.lml_generate(h, arr, len(ids), steps, C.byref(so), C.byref(cb), C.byref(n_pos),
                                           C.byref(err))
        finally:
            self._lock.release()
        if state["raised"] is not None:
            raise state["raised"]
        _check(status, err)
        tail = dec.decode(b"", final=True)
        if tail:
            on_text(tail)

    def generate(self, prompt, max_tokens=256, temperature=1.0, top_p=0.9, seed=None, stop=None, top_k=0,
                 min_p=0.0, repeat_penalty=1.0, repeat_last_n=64):
        """The text generated after prompt (not the prompt itself): up to
        max_tokens tokens, the end of the story, or a stop string (not
        included). temperature=0: greedy."""
        st, out = _StopText(stop), []

        def on_text(t):
            out.append(st.feed(t))
            return st.stopped

        self._run(prompt, max_tokens, temperature, top_p, top_k, min_p, repeat_penalty, repeat_last_n, seed, on_text)
        out.append(st.flush())
        return "".join(out)

    def chat(self, messages, template=None, max_tokens=256, temperature=1.0, top_p=0.9, seed=None, stop=None,
             top_k=0, min_p=0.0, repeat_penalty=1.0, repeat_last_n=64):
        """The assistant's reply to messages, a list of {"role": "system" |
        "user" | "assistant", "content": str}, through a chat template: the
        model's own (.mlb version 2), or template= "chatml", "llama3",
        "zephyr", "llama2" or "deepseek-r1". Control tokens go in by id,
        message text as text. The reply ends at the template's end of turn,
        after max_tokens tokens (as ml_server's max_tokens), or at a stop
        string."""
        if not isinstance(messages, (list, tuple)) or not messages:
            raise ValueError("messages: expected a non-empty list of {'role': ..., 'content': ...}")
        msgs, keep = (_ChatMessage * len(messages))(), []
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or m.get("role") not in _ROLES or not isinstance(m.get("content"), str):
                raise ValueError(f"messages[{i}]: expected a role (system, user, assistant) and a str content")
            keep.append(_utf8(f"messages[{i}] content", m["content"]))
            msgs[i].role, msgs[i].content = _ROLES[m["role"]], keep[-1]
        if not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValueError(f"max_tokens: expected an integer >= 1, got {max_tokens!r}")
        h, err, n = C.c_void_p(), _Error(), C.c_int()
        max_text = sum(len(b) for b in keep) + 64 * (len(keep) + 1)  # the messages and the template's text
        if template is not None and not isinstance(template, str):
            raise TypeError(f"template: expected a str, got {type(template).__name__}")
        _check(_lib.lml_chat_open(C.byref(h), self._handle(), _utf8("template", template) if template is not None else None,
                                  max_text, C.byref(err)), err)
        try:
            cap = _lib.lml_chat_capacity(h, msgs, len(msgs))
            buf = (C.c_int * cap)()
            _check(_lib.lml_chat_render(h, msgs, len(msgs), 1, buf, cap, C.byref(n), C.byref(err)), err)
            eot = _lib.lml_chat_end_of_turn(h)
        finally:
            _lib.lml_chat_close(h)
        ids = list(buf[:n.value])
        if len(ids) >= self.context:
            raise LegacyMLError("LML_E_ARG", f"messages: {len(ids)} tokens, the context holds {self.context}")
        # The template's end of turn, and the model's EOS and EOT (ml_server's stops).
        stops = [eot] + [t for t in (self._eos, self._eot) if t >= 0 and t != eot]
        arr = (C.c_int * len(stops))(*stops)
        _check(_lib.lml_model_set_stop_tokens(self._h, arr, len(stops), C.byref(err)), err)
        st, out = _StopText(stop), []

        def on_text(t):
            out.append(st.feed(t))
            return st.stopped

        try:
            self._run(None, max_tokens, temperature, top_p, top_k, min_p, repeat_penalty, repeat_last_n, seed,
                      on_text, ids=ids)
        finally:
            _lib.lml_model_set_stop_tokens(self._h, None, 0, None)
        out.append(st.flush())
        return "".join(out)

    def stream(self, prompt, max_tokens=256, temperature=1.0, top_p=0.9, seed=None, stop=None, top_k=0,
               min_p=0.0, repeat_penalty=1.0, repeat_last_n=64):
        """generate() piece by piece: yields the text as it is generated (the
        pieces join to generate()'s text). The generation runs in a thread;
        leaving the loop early stops it."""
        self._handle()
        q, st, quit_ = queue.Queue(maxsize=64), _StopText(stop), threading.Event()
        done = object()

        def stop_and_join():  # also close()'s, from any thread
            quit_.set()
            while th.is_alive():  # unblock a full queue
                try:
                    q.get_nowait()
                except queue.Empty:
                    th.join(0.01)

        def on_text(t):
            s = st.feed(t)
            if s:
                q.put(s)
            return st.stopped or quit_.is_set()

        def work():
            try:
                self._run(prompt, max_tokens, temperature, top_p, top_k, min_p, repeat_penalty, repeat_last_n, seed,
                          on_text, stop=quit_.is_set)
                rest = st.flush()
                if rest and not quit_.is_set():
                    q.put(rest)
                q.put(done)
            except BaseException as e:  # raised again in the caller's thread
                q.put(e)

        th = threading.Thread(target=work, daemon=True)
        self._stream, self._stream_thread = stop_and_join, th
        th.start()
        try:
            while True:
                try:
                    item = q.get(timeout=0.05)
                except queue.Empty:
                    if th.is_alive():
                        continue
                    break  # stopped by close() (which emptied the queue)
                if item is done:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop_and_join()
            self._stream = self._stream_thread = None
