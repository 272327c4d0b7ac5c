"""llama.cpp's llama-bench and llama-quantize, built from source in a cache
folder outside the git tree, for tools/bench_vs_llamacpp.py.

The source is the llama.cpp that PyPI's llama-cpp-python sdist vendors
(vendor/llama.cpp). Version 0.3.8 measures the same as llama.cpp of
February 2025; the newest sdist at the time of writing, 0.3.36, segfaults in
`llama-bench -p` on an Intel host with its default weight repacking and
renamed `-mmp 0` to `-lm none` (../shared/PERF.md). Two builds:
  native  -DGGML_NATIVE=ON: the best llama.cpp can do on this CPU;
  sse42   GGML_NATIVE=OFF and every AVX, FMA, F16C and AMX option off: its
          oldest x86 build (SSE4.2, an SSSE3 int8 path; it has no SSE2 build),
          for the rows against our legacy builds.
Each is configured and compiled once (about 6 minutes each on 2 cores, at
nice 19: the machine is shared) and reused while its binaries exist.
"""
import os
import shutil
import subprocess
import sys
import tarfile

VERSION = "0.3.8"
TARGETS = ("llama-bench", "llama-quantize", "llama-batched-bench", "llama-lookup")
COMMON = ["-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DBUILD_SHARED_LIBS=OFF",
          "-DLLAMA_BUILD_TESTS=OFF"]
NO_AVX = ["GGML_AVX", "GGML_AVX2", "GGML_AVX_VNNI", "GGML_AVX512", "GGML_AVX512_VBMI",
          "GGML_AVX512_VNNI", "GGML_AVX512_BF16", "GGML_FMA", "GGML_F16C", "GGML_BMI2",
          "GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"]
BUILDS = {"native": ["-DGGML_NATIVE=ON"],
          "sse42": ["-DGGML_NATIVE=OFF"] + [f"-D{o}=OFF" for o in NO_AVX]}


class BuildError(Exception):
    """A step of fetching or building llama.cpp failed; the message says which."""


def cache_dir():
    """${XDG_CACHE_HOME:-~/.cache}/legacy-ml/llama-cpp-<version>."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "legacy-ml", f"llama-cpp-{VERSION}")


def log(msg):
    print(f"bench_vs_llamacpp: {msg}", file=sys.stderr, flush=True)


def _run(cmd, logfile, what):
    with open(logfile, "a") as f:
        f.write(f"$ {' '.join(cmd)}\n")
        f.flush()
        if subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT).returncode:
            raise BuildError(f"{what} failed; see {logfile}")


def source(cache):
    """The llama.cpp source tree (cache/src), downloaded and unpacked once."""
    src = os.path.join(cache, "src")
    if os.path.exists(os.path.join(src, "CMakeLists.txt")):
        return src
    dl = os.path.join(cache, "dl")
    os.makedirs(dl, exist_ok=True)
    log(f"downloading the llama-cpp-python {VERSION} sdist into {dl}")
    # --no-binary for this package only: ":all:" would also build its build
    # requirements (cmake, scikit-build-core, ...) from source, for an hour.
    _run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", "llama-cpp-python",
          f"llama-cpp-python=={VERSION}", "-d", dl], os.path.join(cache, "fetch.log"), "pip download")
    sdist = os.path.join(dl, f"llama_cpp_python-{VERSION}.tar.gz")
    if not os.path.exists(sdist):
        raise BuildError(f"pip download left no {sdist}")
    prefix = f"llama_cpp_python-{VERSION}/vendor/llama.cpp/"
    tmp = src + ".part"
    shutil.rmtree(tmp, ignore_errors=True)
    with tarfile.open(sdist) as tar:
        members = []
        for m in tar.getmembers():
            if m.name.startswith(prefix) and (m.isfile() or m.isdir()):
                m.name = m.name[len(prefix):]
                members.append(m)
        if not members:
            raise BuildError(f"{sdist} has no {prefix}")
        tar.extractall(tmp, members=members)
    os.replace(tmp, src)
    return src


def binaries(kind, cache=None):
    """{target: path} of a build kind ("native" or "sse42"), building it if
    a binary is missing."""
    cache = cache or cache_dir()
    build = os.path.join(cache, f"build-{kind}")
    paths = {t: os.path.join(build, "bin", t) for t in TARGETS}
    if all(os.access(p, os.X_OK) for p in paths.values()):
        return paths
    src = source(cache)
    logfile = os.path.join(cache, f"build-{kind}.log")
    log(f"building llama.cpp ({kind}) at nice 19, ~6+ minutes; log: {logfile}")
    nice = ["nice", "-n", "19"]
    _run(nice + ["cmake", "-S", src, "-B", build] + COMMON + BUILDS[kind], logfile, f"cmake configure ({kind})")
    _run(nice + ["cmake", "--build", build, "-j2", "--target"] + list(TARGETS), logfile, f"cmake build ({kind})")
    missing = [p for p in paths.values() if not os.access(p, os.X_OK)]
    if missing:
        raise BuildError(f"the build ({kind}) made no {', '.join(missing)}; see {logfile}")
    return paths
