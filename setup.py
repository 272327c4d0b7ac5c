"""Builds libml.so for every ISA this C compiler targets (`make lib`, one
after the other, each with -j<cpus>) into the package's lib/<isa>/; the
package (python/legacy_ml) picks the best one this CPU runs at import."""
import os
import re
import shutil
import subprocess
import tempfile

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(ROOT, "core", "version.h")) as f:
        return re.search(r'#define ML_VERSION "([^"]+)"', f.read()).group(1)


class BuildLibs(build_py):
    def run(self):
        super().run()
        make = os.environ.get("MAKE", "make")
        isas = subprocess.check_output([make, "-s", "print-isas"], cwd=ROOT, text=True).split()
        forced = os.environ.get("LEGACY_ML_BUILD_ISAS")  # e.g. "scalar avx2": a faster build
        if forced:
            isas = [i for i in isas if i in forced.split()]
        jobs = str(os.cpu_count() or 2)
        dest = os.path.join(self.build_lib, "legacy_ml", "lib")
        shutil.rmtree(dest, ignore_errors=True)
        with tempfile.TemporaryDirectory(prefix="legacy-ml-build-") as tmp:
            for isa in isas:
                build = os.path.join(tmp, isa)
                print(f"legacy_ml: building libml.so for {isa}", flush=True)
                subprocess.check_call([make, "-s", f"-j{jobs}", "lib", f"ISA={isa}", "THREADS=pthread",
                                       f"BUILD={build}"], cwd=ROOT)
                os.makedirs(os.path.join(dest, isa))
                shutil.copyfile(os.path.join(build, "lib", "libml.so"), os.path.join(dest, isa, "libml.so"))
        with open(os.path.join(dest, "isas.txt"), "w") as f:
            f.write("\n".join(isas) + "\n")  # lowest first


class BinaryDistribution(Distribution):
    """The wheel holds shared libraries: a platform wheel, not a pure one."""

    def has_ext_modules(self):
        return True


setup(version=version(), cmdclass={"build_py": BuildLibs}, distclass=BinaryDistribution)
