"""The ``segdex`` namespace: ``segdex.indexcore``, ``segdex.pipelines`` and ``segdex.jobs``.

The three packages live in the repository's top-level folders ``indexcore/``, ``pipelines/`` and ``jobs/``; in a
source checkout ``segdex/indexcore`` (and the others) are relative symlinks to them, and a wheel (or the zip shipped
to Spark executors) installs them inside this package. Either way every import is ``segdex.<package>``: generic
top-level names such as ``jobs`` or ``pipelines`` never meet another distribution's in a shared environment.
"""
