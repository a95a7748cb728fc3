"""Builds the C extensions; everything else is in pyproject.toml.

Each extension is named after the package it serves (profscope.models.<feature>._name) and its
source sits in that package's folder; the shared headers are in models/native/."""

import sys
from glob import glob

import numpy
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

WARNINGS = ["-Wall", "-Wextra"]  # GCC and Clang spellings; MSVC gets its defaults


class BuildExt(build_ext):
    """Adds the warning flags when the compiler understands them (GCC, Clang: compiler_type "unix")."""

    def build_extensions(self):
        if self.compiler.compiler_type in ("unix", "mingw32", "cygwin"):
            for ext in self.extensions:
                ext.extra_compile_args = [*ext.extra_compile_args, *WARNINGS]
        super().build_extensions()


EXTENSIONS = [  # (module, source, what it does)
    ("profscope.models.core._protowire", "models/core/_protowire.c"),  # protobuf wire decoding
    ("profscope.models.core._tfrecord", "models/core/_tfrecord.c"),  # TFRecord framing, CRC-32C
    ("profscope.models.data._lanes", "models/data/_lanes.c"),  # lane packing
    ("profscope.models.data._nesting", "models/data/_nesting.c"),  # parents by time containment
    ("profscope.models.data._jsonrows", "models/data/_jsonrows.c"),  # JSON text of numpy columns, for exports
    ("profscope.models.formats._labels", "models/formats/_labels.c"),  # timeline.py's label pattern
    ("profscope.models.formats._stepstats", "models/formats/_stepstats.c"),  # timeline.py's memory analysis
    ("profscope.models.formats._logscan", "models/formats/_logscan.c"),  # __LOG_MEMORY__ lines, their replay
    ("profscope.models.formats._memory_json", "models/formats/_memory_json.c"),  # MemoryProfile JSON into columns
    ("profscope.models.formats._chrome_json", "models/formats/_chrome_json.c"),  # Chrome trace JSON into columns
    ("profscope.models.formats._torch_snapshot", "models/formats/_torch_snapshot.c"),  # CUDA snapshot pickle
    ("profscope.models.formats.xspace._steps", "models/formats/xspace/_steps.c"),  # XProf's event order, step groups
    ("profscope.models.formats.xspace._trace", "models/formats/xspace/_trace.c"),  # trace_viewer JSON rows of XEvents
    ("profscope.models.sql._parquet", "models/sql/_parquet.c"),  # Parquet value encodings
    ("profscope.models.analysis.xprof._heap", "models/analysis/xprof/_heap.c"),  # XLA heap simulator replay
]
HEADERS = [*sorted(glob("models/native/*.h")), "models/formats/_labels.h"]  # a change to one rebuilds every extension

WINDOWS_LIBRARIES = ["bcrypt"]  # portable.h's seed: BCryptGenRandom

setup(
    ext_modules=[
        Extension(name, [source], include_dirs=[numpy.get_include(), "models/native"], depends=HEADERS,
                  extra_compile_args=["-O2"], libraries=WINDOWS_LIBRARIES if sys.platform == "win32" else [])
        for name, source in EXTENSIONS
    ],
    cmdclass={"build_ext": BuildExt},
)
