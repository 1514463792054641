"""What every task of one run shares: the command, the run's id and start time, and the scan's options.

One frozen, picklable value made by the driver (``reindex.run``) and handed to every Spark task, instead of
``mode, run_id, scanned_at, native, normalize`` passed down one by one.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

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
