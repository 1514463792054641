"""The ``segdex`` namespace: ``segdex.indexcore``, ``segdex.pipelines`` and ``segdex.jobs``.

The three packages live in the repository's top-level folders ``indexcore/``, ``pipelines/`` and ``jobs/``;
packaging alone maps them under this name (``package-dir`` in ``pyproject.toml``): a wheel installs them inside this
package, an editable install's import finder points each name at its folder, and the zip shipped to Spark
executors lays them out as a wheel does. Every import is ``segdex.<package>``: generic top-level names such as
``jobs`` or ``pipelines`` never meet another distribution's in a shared environment.
"""
