"""Builds boltpack._boltpack with the project's CMake (python/CMakeLists.txt)
for the Python running pip, and puts it in the package."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        # BOLTPACK_BUILD_DIR: a build folder of the project configured with
        # -DBOLTPACK_PYTHON=ON for this Python, whose objects are reused.
        reuse = os.environ.get("BOLTPACK_BUILD_DIR")
        build = Path(reuse).resolve() if reuse else Path(self.build_temp).resolve() / "cmake"
        build.mkdir(parents=True, exist_ok=True)
        jobs = os.environ.get("BOLTPACK_JOBS", str(os.cpu_count() or 2))
        configure = ["cmake", "-S", str(PROJECT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                     "-DBOLTPACK_PYTHON=ON", "-DBOLTPACK_TESTS=OFF", "-DBOLTPACK_BENCH=OFF",
                     f"-DPython3_EXECUTABLE={sys.executable}"]
        if shutil.which("ninja"):
            configure += ["-G", "Ninja"]
        if shutil.which("ccache"):
            configure += ["-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        if not reuse:
            subprocess.run(configure, check=True)
        subprocess.run(["cmake", "--build", str(build), "--target", "_boltpack", "-j", jobs], check=True)
        built = next((build / "python" / "boltpack").glob("_boltpack*.so"))
        target = Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(built, target)


setup(ext_modules=[Extension("boltpack._boltpack", sources=[])], cmdclass={"build_ext": CMakeBuild})
