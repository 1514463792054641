"""Build of the optional native scan kernel; everything else about the package is in pyproject.toml.

``optional=True``: when no C compiler or Python headers are present the install still succeeds and
``indexcore.scan`` falls back to the pure-Python ``scan_simple``.
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
        )
    ]
)
