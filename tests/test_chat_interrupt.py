#!/usr/bin/env python3
"""Ctrl-C in `ml_run --chat` stops the current reply, not the program: the
chat runs on a pseudo-terminal (its controlling terminal, as in a shell), a
long reply of a random-weight model (tools/gen_random.py; seeded, so the
reply has no end of turn for its first 1900 tokens on every build) is
interrupted by typing Ctrl-C once it streams, with the output held back by
Ctrl-S (so the program waits in a write, which the signal must not cut
short: a piece was lost that way) and let go by Ctrl-Q; the reply stops
early (stderr:
"[reply stopped after K tokens]", K below -n), the prompt comes back, the
next turn is answered, and Ctrl-D at the prompt ends the chat with exit 0.
The turns are checked against a run through a pipe that caps every reply
at K tokens (-n K): the same first reply byte for byte, and the same second
reply as far as both go (the interrupted chat kept a consistent KV cache and
sampler). A few seconds on any x86 build.
env: BUILD (folder with ml_run), PYTHON, RUNNER (skipped under an emulator)."""
import fcntl
import os
import re
import select
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_checks import Checks  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("BUILD", "build/scalar")
LIMIT = 1900  # -n: a reply of the model below takes seconds to run out
GEN = ["--dim", "256", "--n-layers", "4", "--n-heads", "8", "--n-kv-heads", "2", "--hidden-dim", "512",
       "--vocab", "320", "--max-seq", "2048", "--seed", "5"]
OPTS = ["--chat-template", "zephyr", "--temp", "1.6", "-s", "1", "-t", "2"]
Q1, Q2 = b"Hello there", b"Tell me more"

checks = Checks()
report = checks.report


class Tty:
    """ml_run --chat on a new pseudo-terminal, its controlling terminal:
    Ctrl-C typed on it is a SIGINT from the terminal, Ctrl-D an end of input,
    Ctrl-S and Ctrl-Q stop and restart its output (IXON). No echo, no output
    processing (the bytes are the program's), and NOFLSH: Ctrl-C does not
    discard output not read yet."""

    def __init__(self, args, err_path):
        master, slave = os.openpty()
        a = termios.tcgetattr(slave)
        a[0] |= termios.IXON
        a[1] &= ~termios.OPOST
        a[3] = (a[3] & ~termios.ECHO) | termios.NOFLSH | termios.ISIG | termios.ICANON
        termios.tcsetattr(slave, termios.TCSANOW, a)
        self.err_path = err_path
        with open(err_path, "wb") as err:
            self.p = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=err, start_new_session=True,
                                      preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.fd, self.out = master, b""

    def err(self):
        with open(self.err_path, "rb") as f:
            return f.read().decode("utf-8", "replace")

    def wait(self, cond, timeout):
        """Read until cond(self) holds; False after timeout seconds or at the end."""
        end = time.time() + timeout
        while not cond(self):
            left = end - time.time()
            if left <= 0:
                return False
            if select.select([self.fd], [], [], min(left, 0.05))[0]:
                try:
                    b = os.read(self.fd, 65536)
                except OSError:  # EIO: the program closed the terminal
                    b = b""
                if not b:
                    return cond(self)
                self.out += b
        return True

    def type(self, b):
        os.write(self.fd, b)

    def close(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        os.close(self.fd)


def stopped(err):
    return [int(k) for k in re.findall(r"^\[reply stopped after (\d+) tokens\]$", err, re.M)]


def main():
    exe = os.path.join(BUILD, "ml_run")
    if not os.path.exists(exe):
        report(False, f"{exe} not built")
        return
    if os.environ.get("RUNNER"):
        checks.skip(f"Ctrl-C on a terminal: not under {os.environ['RUNNER']}")
        return
    with tempfile.TemporaryDirectory() as tmp:
        model, tok = os.path.join(tmp, "r.mlb"), os.path.join(tmp, "t.bin")
        g = subprocess.run([os.environ.get("PYTHON", sys.executable), os.path.join(ROOT, "tools", "gen_random.py"),
                            model, *GEN, "--tokenizer", tok], capture_output=True, text=True)
        if g.returncode:
            report(False, f"gen_random.py: {g.stderr[-300:]}")
            return
        run(exe, model, tok, tmp)


def run(exe, model, tok, tmp):
    base = [exe, "--chat", "-m", model, "-z", tok, *OPTS]
    try:
        t = Tty([*base, "-n", str(LIMIT)], os.path.join(tmp, "err"))
    except OSError as e:
        checks.skip(f"Ctrl-C on a terminal: no pseudo-terminal here ({e})")
        return
    try:
        report(t.wait(lambda t: t.out == b"> ", 20), f"tty: the prompt marker ({t.out[:40]!r})")
        t.type(Q1 + b"\n")
        # The reply streams: some of its bytes have come; then Ctrl-S, and Ctrl-C while the program waits to
        # write its next piece, then Ctrl-Q.
        report(t.wait(lambda t: len(t.out) >= 2 + 8, 20), f"tty: the first reply streams ({len(t.out) - 2} bytes)")
        t0 = time.time()
        t.type(b"\x13")
        time.sleep(0.2)
        t.type(b"\x03")
        time.sleep(0.1)
        t.type(b"\x11")
        back = t.wait(lambda t: len(stopped(t.err())) == 1 and t.out.endswith(b"\n> "), 20)
        ks = stopped(t.err())
        k1 = ks[0] if ks else LIMIT
        report(back and 0 < k1 < LIMIT, f"tty: Ctrl-C stops the reply after {k1} of at most {LIMIT} tokens "
               f"({time.time() - t0:.2f} s) and the prompt comes back")
        report(t.p.poll() is None, "tty: the program runs on after Ctrl-C")
        reply1 = t.out[2:-3]
        # The next turn is answered: interrupted too once it is longer than the capped run's, or to its end.
        capped = subprocess.run([*base, "-n", str(k1)], input=Q1 + b"\n" + Q2 + b"\n", capture_output=True, timeout=60)
        parts = capped.stdout.split(b"\n> ")
        want1, want2 = (parts[0][2:], parts[1]) if len(parts) == 3 and parts[2] == b"\n" else (None, None)
        report(capped.returncode == 0 and want1 is not None,
               f"pipe: the same chat with -n {k1}, two replies, exit {capped.returncode}")
        mark = len(t.out)
        t.type(Q2 + b"\n")
        n_want = len(want2 or b"")
        ended = t.wait(lambda t: len(t.out) > mark and t.out.endswith(b"\n> ") or len(t.out) - mark >= n_want + 8, 20)
        if not (ended and t.out.endswith(b"\n> ")):
            t.type(b"\x03")
        back = t.wait(lambda t: t.out.endswith(b"\n> ") and len(t.out) > mark, 20)
        reply2 = t.out[mark:-3]
        report(back and t.p.poll() is None and len(reply2) > 0,
               f"tty: the next turn is answered ({len(reply2)} bytes, {len(stopped(t.err()))} replies stopped)")
        report(want1 is not None and reply1 == want1, f"tty: the stopped reply is the capped run's ({len(reply1)} bytes)")
        n = min(len(reply2), n_want)
        report(want2 is not None and n > 0 and reply2[:n] == want2[:n],
               f"tty: the next reply is the capped run's, as far as both go ({n} bytes): the cache went on right")
        report(t.err().count("[prefill: ") == 2, "tty: each turn prefilled once")
        t.type(b"\x04")
        try:
            rc = t.p.wait(20)
        except subprocess.TimeoutExpired:
            rc = None
        report(rc == 0, f"tty: Ctrl-D at the prompt ends the chat, exit {rc}")
    finally:
        t.close()


if __name__ == "__main__":
    checks.run(main)
