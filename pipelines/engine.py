"""What runs a command's tasks: the one-host engine or a Spark session, behind one type.

``Engine`` is what every ``pipelines`` function that hands out tasks or touches the Delta tables takes. Two kinds
satisfy it: ``local_engine.LocalEngine`` (the embedded default: a pool of this machine's processes, no JVM) and a
Spark session, classic or Spark Connect. ``spark_tasks.run_tasks`` runs the same task functions on either;
``interrupts.stop_spark`` stops either; ``metadata_store.MetadataStore`` reads and writes Delta through a Spark
session's own Delta when it has one, else through delta-rs (always, under the one-host engine). Where no engine
is needed (a loop in this process, delta-rs only), functions take ``Engine | None``.

The protocol names only what both kinds have (``stop``); what differs is asked with ``is_local``, never by
importing pyspark here (the one-host engine runs without it).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable


@runtime_checkable
class Engine(Protocol):
    """The one-host engine (``LocalEngine``) or a ``pyspark.sql.SparkSession`` (classic or Spark Connect)."""

    def stop(self) -> None:
        """End the engine's workers (the one-host engine) or the Spark session."""
        ...


def is_local(engine: Engine | None) -> bool:
    """Whether ``engine`` is the one-host engine (its tasks run in this machine's processes, no JVM)."""
    return bool(getattr(engine, "is_local_engine", False))
