"""Kafka's ``CleanerConfig``: the broker's ``log.cleaner.*`` settings, and what each cleaner thread gets of them.

Defaults as Kafka 4.4 ships them (``CleanerConfig``): one thread, a 128 MiB dedupe buffer filled to 0.9, 512 KiB of
I/O buffers, MD5 for the offset map's keys. Each thread gets the dedupe buffer divided by the threads (capped at
``Integer.MAX_VALUE``) and half of its share of the I/O buffer for reading, half for writing
(``LogCleaner.CleanerThread``).
"""

from __future__ import annotations

from dataclasses import dataclass

INT32_MAX = 2**31 - 1

LOG_CLEANER_THREADS_PROP = "log.cleaner.threads"
LOG_CLEANER_DEDUPE_BUFFER_SIZE_PROP = "log.cleaner.dedupe.buffer.size"
LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR_PROP = "log.cleaner.io.buffer.load.factor"
LOG_CLEANER_IO_BUFFER_SIZE_PROP = "log.cleaner.io.buffer.size"
LOG_CLEANER_ENABLE_PROP = "log.cleaner.enable"
MESSAGE_MAX_BYTES = "message.max.bytes"  # the topics' max.message.bytes default, and how far the buffers grow
# the broker settings a cleaner thread is built from (``log.cleaner.enable`` aside: segdex plans what the cleaner
# would do, enabled or not)
CLEANER_PROPS = frozenset({LOG_CLEANER_THREADS_PROP, LOG_CLEANER_DEDUPE_BUFFER_SIZE_PROP,
                           LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR_PROP, LOG_CLEANER_IO_BUFFER_SIZE_PROP,
                           MESSAGE_MAX_BYTES})
HASH_ALGORITHM = "MD5"  # CleanerConfig.HASH_ALGORITHM in Kafka 4.4 (and 3.9)


@dataclass(frozen=True)
class CleanerConfig:
    """The broker's cleaner settings (``CleanerConfig``)."""

    num_threads: int = 1
    dedupe_buffer_size: int = 134_217_728
    dedupe_buffer_load_factor: float = 0.9
    io_buffer_size: int = 524_288
    max_message_size: int = 1_048_588  # message.max.bytes: how far the I/O buffers may grow
    enable_cleaner: bool = True
    hash_algorithm: str = HASH_ALGORITHM

    @property
    def offset_map_memory(self) -> int:
        """Each cleaner thread's offset map (``LogCleaner.CleanerThread``: the dedupe buffer divided among the
        threads, capped at Integer.MAX_VALUE)."""
        return min(self.dedupe_buffer_size // self.num_threads, INT32_MAX)

    @property
    def thread_io_buffer_size(self) -> int:
        """Each thread's read buffer, and its write buffer: ``ioBufferSize / numThreads / 2``."""
        return self.io_buffer_size // self.num_threads // 2

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> CleanerConfig:
        """From a broker's properties (``server.properties`` as read by ``broker_config``); absent keys keep
        Kafka's defaults. Raises ``ValueError`` on a value Kafka's config would refuse."""
        def get(name: str, kind, default, minimum=None):
            raw = props.get(name)
            if raw is None:
                return default
            value = kind(raw.strip())
            if minimum is not None and value < minimum:
                raise ValueError(f"{name}={raw.strip()}: must be at least {minimum}")
            return value

        config = cls(
            num_threads=get(LOG_CLEANER_THREADS_PROP, int, 1, 0) or 1,
            dedupe_buffer_size=get(LOG_CLEANER_DEDUPE_BUFFER_SIZE_PROP, int, 134_217_728),
            dedupe_buffer_load_factor=get(LOG_CLEANER_DEDUPE_BUFFER_LOAD_FACTOR_PROP, float, 0.9),
            io_buffer_size=get(LOG_CLEANER_IO_BUFFER_SIZE_PROP, int, 524_288, 0),
            max_message_size=get(MESSAGE_MAX_BYTES, int, 1_048_588, 0),
            enable_cleaner=get(LOG_CLEANER_ENABLE_PROP, lambda s: s.lower() == "true", True),
        )
        if config.thread_io_buffer_size == 0:  # Kafka starts, and its cleaner thread never gets past a segment
            raise ValueError(f"{LOG_CLEANER_IO_BUFFER_SIZE_PROP}={config.io_buffer_size}: each cleaner thread's read "
                             f"buffer would be 0 bytes (the size / {config.num_threads} threads / 2), which reads no "
                             f"batch: Kafka's cleaner would loop on its first segment forever")
        if config.dedupe_buffer_size // config.num_threads <= 1024 * 1024:  # KafkaConfig.validateValues
            raise ValueError(f"{LOG_CLEANER_DEDUPE_BUFFER_SIZE_PROP}={config.dedupe_buffer_size}: must be at least 1MB "
                             f"per cleaner thread ({config.num_threads} threads; Kafka refuses to start)")
        return config
