"""What a caller asks of a run, and what every task of that run shares.

``RunRequest`` is what ``reindex.run``, ``recover.run`` and ``cleaning.plan``/``apply`` take: the log dirs, where
the metadata goes, the configs and the options, named, in one frozen value, instead of a dozen parameters passed
by position. ``RunContext`` is the frozen, picklable value the driver (``reindex.run``) makes from it and hands
to every Spark task, instead of ``mode, run_id, scanned_at, native, normalize`` passed down one by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from segdex.indexcore.config.log_config import LogConfig, TopicConfigResolver

MODE_VERIFY = "verify"
MODE_REINDEX = "reindex"
MODE_RECOVER = "recover"
MODES = (MODE_VERIFY, MODE_REINDEX, MODE_RECOVER)
WRITING_MODES = (MODE_REINDEX, MODE_RECOVER)


@dataclass(frozen=True)
class RunContext:
    """One run of ``verify``, ``reindex`` or ``recover``.

    ``native`` picks the scan kernel (True: the C kernel, required; False: the Python one; None: C when built).
    ``normalize`` also rewrites index files that are valid but differ from a rebuild (``equivalent``); recover
    always does, as it leaves every index file as Kafka's recovery writes it.
    """

    command: str
    run_id: str
    scanned_at: datetime
    native: bool | None = None
    normalize: bool = False
    single_threaded_kernel: bool = False  # a wave with a task for every CPU: no CRC helper thread per task

    def __post_init__(self) -> None:
        if self.command not in MODES:
            raise ValueError(f"command must be one of {', '.join(MODES)}, got {self.command!r}")

    @property
    def writing(self) -> bool:
        """Whether the command writes index files (reindex, recover) or only reads (verify)."""
        return self.command in WRITING_MODES


@dataclass(frozen=True)
class RunRequest:
    """One run as its caller asks for it (the CLI, the demo, a test); the command itself is ``reindex.run``'s
    ``mode``.

    ``log_dirs``: the Kafka log dirs, as given (symlinks resolved by the run). ``metadata_path``: the Delta tables'
    directory. ``config``: every topic's default config; ``topic_configs``: a topic's own, where given.
    ``arguments``: the command line, for the ``runs`` table. ``native``, ``normalize``: see ``RunContext``.
    ``now_ms``: the broker clock (producer expiry, the cleaner's horizons; None: now, where the run needs one).
    ``resolver``: the configs with where each value came from (the ``topic_configs`` table). ``allow_unloadable``:
    also write in a log dir a broker's start trips on (``reindex.discover``). ``quarantine``: where removed bytes
    go (``recover --truncate``, ``clean --apply``); None keeps nothing (recover: cuts nothing).
    """

    log_dirs: Sequence[str]
    metadata_path: str = ""
    config: LogConfig = field(default_factory=LogConfig)
    topic_configs: Mapping[str, LogConfig] = field(default_factory=dict)
    arguments: Sequence[str] = ()
    native: bool | None = None
    normalize: bool = False
    now_ms: int | None = None
    resolver: TopicConfigResolver | None = None
    allow_unloadable: bool = False
    quarantine: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.log_dirs, str):
            raise TypeError("log_dirs is a list of log dirs, not one path")
        object.__setattr__(self, "log_dirs", [str(d) for d in self.log_dirs])
        object.__setattr__(self, "arguments", [str(a) for a in self.arguments])
