"""Builds the C extensions (models._protowire, models.formats._logscan); everything else is in pyproject.toml."""

import numpy
from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "models._protowire",
            ["models/_protowire.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
        ),
        Extension(
            "models.formats._logscan",
            ["models/formats/_logscan.c"],
            include_dirs=[numpy.get_include()],
            extra_compile_args=["-O2"],
        ),
    ]
)
