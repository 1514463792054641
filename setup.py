"""Build of the optional native kernels (the scan's, the cleaner's, snappy-java's snappy); everything else about
the package is in pyproject.toml.

``optional=True``: when no C compiler or Python headers are present the install still succeeds and
``indexcore.scan`` falls back to the pure-Python ``scan_simple``, the cleaner to its Python loops.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "segdex.indexcore.log.scan._fastscan",
            sources=["indexcore/log/scan/_fastscan.c"],
            depends=["indexcore/log/scan/_layout.h"],
            extra_compile_args=["-O3", "-std=gnu11", "-pthread"],
            extra_link_args=["-pthread"],
            optional=True,
        ),
        Extension(
            "segdex.indexcore.log._cleaner",
            sources=["indexcore/log/_cleaner.c"],
            depends=["indexcore/log/scan/_layout.h"],
            include_dirs=["indexcore/log"],
            extra_compile_args=["-O3", "-std=gnu11"],
            optional=True,
        ),
        Extension(  # no -march: snappy-java's bytes are those of a build without SSE4.2's CRC32 hash
            "segdex.indexcore.record._snappy",
            sources=["indexcore/record/_snappy.c"],
            extra_compile_args=["-O2", "-std=gnu11"],
            optional=True,
        ),
    ]
)
