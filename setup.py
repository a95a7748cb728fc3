"""Builds the C extensions (models._protowire, models._tfrecord, models._lanes, models._nesting,
models.formats._labels, models.formats._logscan, models._jsonrows,
models.formats._memory_json, models._parquet); everything else is in pyproject.toml."""

import numpy
from setuptools import Extension, setup

# Extensions sharing the static inline helpers of models/_cbuffers.h.
SHARED_HELPERS = [
    ("models._protowire", "models/_protowire.c"),  # protobuf wire decoding
    ("models._tfrecord", "models/_tfrecord.c"),  # TFRecord framing, CRC-32C
    ("models._lanes", "models/_lanes.c"),  # lane packing
    ("models._nesting", "models/_nesting.c"),  # parents by time containment
    ("models.formats._labels", "models/formats/_labels.c"),  # timeline.py's label pattern
    ("models.formats._stepstats", "models/formats/_stepstats.c"),  # timeline.py's memory analysis, Chrome rows
    ("models._jsonrows", "models/_jsonrows.c"),  # JSON text of numpy columns, for exports
    ("models.formats._logscan", "models/formats/_logscan.c"),  # __LOG_MEMORY__ lines, their replay
    ("models.formats._memory_json", "models/formats/_memory_json.c"),  # MemoryProfile JSON into columns
    ("models._parquet", "models/_parquet.c"),  # Parquet value encodings, for models/parquet.py
]

setup(
    ext_modules=[
        *(
            Extension(
                name,
                [source],
                include_dirs=[numpy.get_include(), "models"],
                depends=["models/_cbuffers.h"],
                extra_compile_args=["-O2"],
            )
            for name, source in SHARED_HELPERS
        ),
        Extension(
            "models.formats._chrome_json",
            ["models/formats/_chrome_json.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
        ),
    ]
)
