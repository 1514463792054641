"""The Delta tables under a metadata directory, behind one store with typed operations.

``MetadataStore(path, spark)`` offers:

* ``upsert(table, rows, scope=None)``: MERGE rows on the table's keys; a matched row is rewritten only when one
  of its fact columns changed (so a re-run with the same facts changes nothing); with a ``Scope`` the table's
  rows of that scope that the new rows do not hold any more (segments deleted, partitions moved away) are
  deleted in the same commit ("replace a scope");
* ``append(table, rows)``: add rows (a run's record);
* ``read(name)`` / ``read_df(name)`` / ``exists(name)`` / ``tables()`` / ``register_views()``.

Two writers, same tables: the ``deltalake`` package (delta-rs, no JVM jars) by default, Delta Lake on Spark
when the session has it loaded (``SEGDEX_DELTA_WRITER=deltalake|spark`` forces one). No value of the user's
(a log dir path, a topic) is ever pasted into SQL text: a scope's stale rows go into the MERGE source as
tombstones (``_segdex_op = 'delete'``), and the Spark writer uses Delta's Python API. Commit conflicts are
retried on the writers' typed exceptions (delta-rs ``CommitFailedError``, Delta-on-Spark's
``DELTA_CONCURRENT_*`` error classes); on a local filesystem the embedded writer also serializes writers of
one table with a lock file, so no MERGE is lost.

Tables on object storage (``s3://bucket/prefix``, ``s3a://``) are written by delta-rs only, by many processes at
once (one per broker): delta-rs commits ``_delta_log/N.json`` with S3's conditional PUT, and each commit of a
store carries a Delta transaction identifier (a ``txn`` action: the store's app id, and the count of its commits
to that table). When a commit's outcome is unknown (an error after the PUT may have gone through, a conflict, a
failed read of the other writers' commits), the table is read again, the commits past its listing read by key: a
``txn`` version at or past the commit's says it landed, otherwise it is tried again after a jittered backoff, a
bounded number of times. Rows never ride in the commit that creates a table (``_create_remote``). So each
commit's rows land once. Endpoint, region and credentials come from the standard AWS environment and profile
chain, as delta-rs reads it; errors name the table and the reason, never a credential.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import random
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, is_dataclass
from typing import Any

import pyarrow as pa

from segdex.indexcore.errors import SegdexError

from . import aws_env, fleet
from .engine import Engine
from .schemas import TableSpec, as_columns
from .spark_tasks import is_connect
from .ticker import Ticker

WRITER_ENV = "SEGDEX_DELTA_WRITER"
DEFAULT_RETRIES = 20
TIMEOUT_ENV = "SEGDEX_STORE_TIMEOUT"  # seconds after which a commit's retries stop (checked after each failure)
DEFAULT_TIMEOUT_S = 900.0
WAIT_REPORT_S = 5.0  # a commit pending this long gets a line, and another each time as long again
OP_COLUMN = "_segdex_op"  # in the MERGE source only: 'upsert' or 'delete' (a stale row of the scope)
_LOCK_NAME = "_segdex_writer.lock"
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()


class MetadataStoreError(SegdexError):
    """A metadata table could not be written or read."""


class TableNotFoundError(MetadataStoreError):
    """No Delta table at the expected place (no run has written it yet)."""


class CommitConflictError(MetadataStoreError):
    """Concurrent writers kept conflicting after every retry."""


class CommitOutcomeUnknown(MetadataStoreError):
    """A commit failed with an unknown outcome, and the table could not be read to decide whether it landed."""


class StorageAccessError(MetadataStoreError):
    """The object store refused or could not be reached: credentials, a missing bucket, the endpoint down. Not
    worth a retry of the commit (delta-rs's HTTP client has retried the request already)."""


OBJECT_STORE_SCHEMES = ("s3", "s3a")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# what delta-rs's object store says, mapped to one line for the user (first match wins)
_UNREACHABLE = "the object store cannot be reached (check AWS_ENDPOINT_URL, AWS_REGION and the network)"
_SLOW = ("the object store did not answer in time (each request waits AWS_TIMEOUT, 30s by default, and is retried; "
         "check the endpoint's load and the network)")
_STORAGE_FAILURES = (
    (("SignatureDoesNotMatch", "InvalidAccessKeyId", "lacked the necessary privileges", "403 Forbidden",
      "ExpiredToken", "InvalidToken", "AccessDenied"),
     "the object store refused the credentials (check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, "
     "AWS_SESSION_TOKEN or AWS_PROFILE)"),
    # delta-rs's chain found nothing: no keys, no profile it reads, no instance role
    (("an error occurred while loading credentials", "no providers in chain provided credentials",
      "no credentials found in chain"),
     "no AWS credentials were found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)"),
    (("NoSuchBucket",), "the bucket does not exist"),
    (("tcp connect error", "client error (Connect)", "dns error", "Connection refused"), _UNREACHABLE),
    (("operation timed out", "timed out", "deadline has elapsed"), _SLOW),
    (("error sending request",), _UNREACHABLE),
)


@dataclass(frozen=True)
class Scope:
    """The rows of a table one run rewrites as a whole: those whose ``column`` is in ``values``, except the rows
    whose ``keep_columns`` values are in ``keep`` (e.g. partitions that could not be scanned keep theirs)."""

    column: str
    values: frozenset[str]
    keep_columns: tuple[str, ...] = ()
    keep: frozenset[tuple] = field(default_factory=frozenset)


def table_path(path: str, name: str) -> str:
    """Location of table ``name`` under the metadata directory ``path`` (a local path or URI)."""
    return path.rstrip("/") + "/" + name


def _is_local(path: str) -> bool:
    return "://" not in path or path.startswith("file://")


def is_object_store(path: str) -> bool:
    """Whether ``path`` is a location on object storage (``s3://``, ``s3a://``), where delta-rs is the writer."""
    return path.split("://", 1)[0].lower() in OBJECT_STORE_SCHEMES if "://" in path else False


_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


def check_object_store_uri(path: str) -> str | None:
    """Why ``path`` is not a usable ``s3://bucket/prefix`` URI (None when it is): a bucket name by S3's rules,
    no credentials or query in the URI (they come from the environment and profile chain)."""
    scheme, _, rest = path.partition("://")
    bucket, _, prefix = rest.partition("/")
    if "@" in bucket or "?" in path or "#" in path:
        return "credentials, queries or fragments do not belong in the URI (the AWS environment gives them)"
    if not bucket:
        return f"no bucket in the URI ({scheme}://BUCKET/PREFIX)"
    if not _BUCKET.match(bucket) or ".." in bucket:
        return f"{bucket!r} is not a valid bucket name"
    if "//" in prefix.rstrip("/"):
        return "an empty path segment in the prefix"
    return None


def _secrets() -> list[str]:
    return [v for k in ("AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN") if len(v := os.environ.get(k, "")) >= 4]


def storage_failure(exc: BaseException) -> str | None:
    """The one-line reason when ``exc`` says the object store refused or is unreachable; None otherwise."""
    text = str(exc)
    for needles, reason in _STORAGE_FAILURES:
        if any(n in text for n in needles):
            return reason
    return None


_DETERMINISTIC = ("type_coercion", "Error during planning", "Schema error", "Invalid data type", "Parser error")


def _answer_lost(reason: str) -> bool:
    """Whether a store failure may have come after the commit's PUT landed (a timeout, a connection cut): the
    table is read again before the failure is reported; a refusal or a missing bucket wrote nothing."""
    return reason in (_UNREACHABLE, _SLOW)


def _may_be_transient(exc: BaseException) -> bool:
    """Whether a failed commit is worth reading the table again and retrying: I/O and Delta log errors (a race
    with other writers, a lost answer) are; a schema or plan error, or a Python error, is not."""
    from deltalake.exceptions import DeltaError, DeltaProtocolError, SchemaMismatchError

    if isinstance(exc, (SchemaMismatchError, DeltaProtocolError)) or not isinstance(exc, (OSError, DeltaError)):
        return False
    return not any(n in str(exc) for n in _DETERMINISTIC)


def one_line(exc: BaseException) -> str:
    """``exc`` as one line without terminal colours, and without any credential of the environment in it."""
    lines = [ln.strip(" ↳") for ln in _ANSI.sub("", str(exc)).splitlines() if ln.strip(" ↳")]
    text = lines[0] if lines else type(exc).__name__
    for secret in _secrets():
        text = text.replace(secret, "***")
    return text


def _local(path: str) -> str:
    return path[len("file://"):] if path.startswith("file://") else path


def writer_is_spark() -> bool:
    """Whether ``SEGDEX_DELTA_WRITER=spark`` asks for Delta Lake on Spark as the writer."""
    return os.environ.get(WRITER_ENV, "").strip().lower() == "spark"


def spark_has_delta(spark: Engine | None) -> bool:
    """Whether this session can read and write Delta through Spark (delta-spark loaded, or forced by env). A
    Spark Connect session never writes through Spark: delta-spark's Python API (MERGE, OPTIMIZE, VACUUM) needs
    Delta's Connect plugin on the server; segdex writes those tables with delta-rs from this process instead."""
    forced = os.environ.get(WRITER_ENV, "").strip().lower()
    if forced in ("deltalake", "embedded") or is_connect(spark):
        return False
    if forced == "spark":
        return True
    return spark_reads_delta(spark)


def spark_reads_delta(spark: Engine | None) -> bool:
    """Whether this session (classic, or a Spark Connect server) has Delta's reader and catalog loaded."""
    if spark is None:
        return False
    try:
        ext = spark.conf.get("spark.sql.extensions", "") or ""
        catalog = spark.conf.get("spark.sql.catalog.spark_catalog", "") or ""
    except Exception:
        return False
    return "delta" in ext.lower() or "delta" in catalog.lower()


def to_arrow(rows_or_arrow: Any, schema: pa.Schema) -> pa.Table:
    """Rows (typed rows of ``schemas``, dicts, Spark Rows), a pyarrow Table/RecordBatch, or a Spark DataFrame, as
    a pyarrow Table of ``schema``."""
    if isinstance(rows_or_arrow, pa.Table):
        table = rows_or_arrow
    elif isinstance(rows_or_arrow, pa.RecordBatch):
        table = pa.Table.from_batches([rows_or_arrow])
    elif hasattr(rows_or_arrow, "toArrow"):  # Spark DataFrame
        table = rows_or_arrow.toArrow()
    else:
        rows = [as_columns(r) if is_dataclass(r) else r.asDict() if hasattr(r, "asDict") else dict(r)
                for r in rows_or_arrow]
        return pa.Table.from_pylist(rows, schema=schema)
    for name in schema.names:  # columns the caller does not give (the origin, stamped later) are null
        if name not in table.schema.names:
            table = table.append_column(schema.field(name), pa.nulls(table.num_rows, schema.field(name).type))
    table = table.select(schema.names)
    return table.cast(schema)


def scan(dt: Any, columns: Sequence[str] | None = None) -> pa.Table:
    """The rows of the Delta table ``dt`` (its loaded version) as a pyarrow Table of its own schema, read by
    delta-rs's engine (DataFusion) rather than ``DeltaTable.to_pyarrow_table``.

    Why: ``to_pyarrow_table`` scans with pyarrow's dataset over a Python filesystem object (delta-rs's storage
    handler wrapped in ``pyarrow.fs.PyFileSystem``). pyarrow's scan finishes in its own thread pool, and the worker
    that drops the last reference to the dataset's fragments may do so after the caller has returned; at
    interpreter exit that worker's ``PyGILState_Ensure`` (``~OwnedRefNoGIL``) meets the finalizing interpreter,
    which ends the thread with ``pthread_exit``, a forced unwind through a ``noexcept`` C++ frame:
    ``std::terminate``, "terminate called without an active exception", exit 134: seen in about one exit in two
    after reading a table Delta Lake on Spark wrote, one in ten for a delta-rs one. delta-rs's own scan holds no
    Python object in any thread."""
    from deltalake import QueryBuilder

    schema = pa.schema(dt.schema().to_arrow())
    names = list(columns) if columns else schema.names
    select = ", ".join('"' + n.replace('"', '""') + '"' for n in names)
    result = pa.table(QueryBuilder().register("t", dt).execute(f"SELECT {select} FROM t").read_all())
    return result.select(names).cast(pa.schema([schema.field(n) for n in names]))


def spark_schema(schema: pa.Schema) -> Any:
    """The Spark StructType matching an arrow schema."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(schema)


def _dedupe(table: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Keep the last row per key, as MERGE needs at most one source row per target row."""
    if table.num_rows < 2:
        return table
    seen: dict[tuple, int] = {}
    cols = [table.column(k).to_pylist() for k in keys]
    for i, key in enumerate(zip(*cols, strict=True)):
        seen[key] = i
    if len(seen) == table.num_rows:
        return table
    return table.take(sorted(seen.values()))


def _quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def _merge_predicate(keys: Sequence[str], broker: int | None = None) -> str:
    """Keys equal; the origin keys NULL-safely (rows written before they existed hold NULL there). ``broker``:
    every source row is that broker's, said as a literal on the partition column so that Delta's conflict check
    sees MERGEs of different brokers as disjoint (an int, never a user's text)."""
    null_safe = len(fleet.ORIGIN_KEYS) if fleet.has_origin_keys(keys) else 0
    terms = [f"(t.{_quote(k)} IS NOT DISTINCT FROM s.{_quote(k)})" if i < null_safe
             else f"t.{_quote(k)} = s.{_quote(k)}" for i, k in enumerate(keys)]
    if broker is not None:
        terms.insert(0, f"t.broker_id = {int(broker)}")
    return " AND ".join(terms)


def _own_rows(current: pa.Table, table: TableSpec, scope: Scope) -> pa.Table:
    """The rows of ``current`` (the scope's log dirs) that this run's brokers own: their cluster and broker ids
    are those of the log dirs' ``meta.properties``, or NULL (rows written before the origin columns existed).
    Another broker's log dir at the same path is another broker's rows: never replaced by this run."""
    if not fleet.has_origin_keys(table.keys):  # (the brokers table has a broker_id of its own: not an origin)
        return current
    for k in fleet.ORIGIN_KEYS:
        if k not in current.schema.names:  # a table written before the columns existed: every row is NULL there
            current = current.append_column(table.schema.field(k), pa.nulls(current.num_rows,
                                                                             table.schema.field(k).type))
    owners = fleet.scope_origins(scope.values)
    pairs = zip(current.column("cluster_id").to_pylist(), current.column("broker_id").to_pylist(), strict=True)
    keep = [i for i, (c, b) in enumerate(pairs) if (c is None and b is None) or (c, b) in owners]
    return current.take(pa.array(keep, pa.int64()))


def _with_origin_columns(dt: Any, table: TableSpec) -> Any:
    """``dt`` with the origin columns ``table`` has and it lacks, added by schema evolution (one metadata commit;
    its rows read NULL there): the MERGE predicate names them, which merge_schema alone cannot satisfy."""
    from deltalake import Field

    present = set(dt.schema().to_arrow().names)
    missing = [f for f in fleet.ORIGIN_FIELDS if f.name in table.schema.names and f.name not in present]
    if not missing:
        return dt
    dt.alter.add_columns([Field(f.name, "integer" if pa.types.is_int32(f.type) else "string", nullable=True)
                          for f in missing])
    return dt


def _one_broker(data: pa.Table) -> int | None:
    if "broker_id" not in data.schema.names or data.num_rows == 0:
        return None
    brokers = set(data.column("broker_id").to_pylist())
    return brokers.pop() if len(brokers) == 1 and None not in brokers else None


def _changed(columns: Sequence[str], distinct: str) -> str:
    return " OR ".join(f"(t.{_quote(c)} {distinct} s.{_quote(c)})" for c in columns)


@contextlib.contextmanager
def _writer_lock(path: str) -> Iterator[None]:
    """Serialize local writers of one table (advisory lock next to it); a no-op for remote storage."""
    if not _is_local(path):
        yield
        return
    parent = os.path.dirname(os.path.abspath(_local(path)))
    os.makedirs(parent, exist_ok=True)
    lock_path = os.path.join(parent, f".{os.path.basename(_local(path))}{_LOCK_NAME}")
    with _THREAD_LOCKS_GUARD:  # POSIX locks are per process: threads of one process need their own lock
        thread_lock = _THREAD_LOCKS.setdefault(lock_path, threading.Lock())
    with thread_lock:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX)
            yield
        finally:
            with contextlib.suppress(OSError):
                fcntl.lockf(fd, fcntl.LOCK_UN)
            os.close(fd)


def is_commit_conflict(exc: BaseException) -> bool:
    """A writer's typed signal that another commit won the race (worth a retry)."""
    from deltalake.exceptions import CommitFailedError

    if isinstance(exc, CommitFailedError):
        return True
    condition = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    with contextlib.suppress(Exception):
        if condition is not None and (condition() or "").startswith("DELTA_CONCURRENT"):
            return True
    with contextlib.suppress(ImportError):
        from delta.exceptions import ConcurrentModificationException

        return isinstance(exc, ConcurrentModificationException)
    return False


_wait_sink: list[Callable[[str], None]] = []


def report_waits(sink: Callable[[str], None] | None) -> None:
    """Where a line goes while a commit waits on the store (every ``WAIT_REPORT_S`` seconds: the table, how long,
    which attempt); None: nowhere. The CLI sends them to stderr unless ``--no-progress``."""
    _wait_sink[:] = [sink] if sink is not None else []


def store_timeout_s() -> float:
    """``SEGDEX_STORE_TIMEOUT`` (seconds one commit may take, retries included), or the default."""
    raw = os.environ.get(TIMEOUT_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        raise MetadataStoreError(f"{TIMEOUT_ENV}={raw!r}: not a number of seconds") from None
    if value <= 0:
        raise MetadataStoreError(f"{TIMEOUT_ENV}={raw!r}: must be more than 0 seconds")
    return value


class _Waiting(Ticker):
    """A commit in progress: its attempt, and a thread that reports it while it waits (when a sink is set)."""

    def __init__(self, where: str, sink: Callable[[str], None] | None, every: float) -> None:
        super().__init__(every, "segdex-store-wait", active=sink is not None)
        self.where, self.sink = where, sink
        self.attempt = 1

    def tick(self, elapsed_s: float) -> None:
        assert self.sink is not None
        self.sink(f"metadata: {self.where}: waiting on the store for {elapsed_s:.0f}s (attempt {self.attempt})")


def _retry(fn, retries: int) -> Any:
    delay = 0.05
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as e:
            if not is_commit_conflict(e):
                raise
            if attempt == retries:
                raise CommitConflictError(f"commit conflicts after {retries} retries: {e}") from e
            time.sleep(delay * (1 + random.random()))
            delay = min(delay * 2, 2.0)
    return None


def _log_key(version: int | None) -> str:
    """A file of the table's Delta log, by key: commit ``version`` (``_delta_log/<20 digits>.json``), or None for
    ``_delta_log/_last_checkpoint``."""
    return "_delta_log/_last_checkpoint" if version is None else f"_delta_log/{version:020d}.json"


def _key_present(uri: str, key: str) -> bool:
    """Whether ``key`` (a path under the table ``uri``) is there: one HEAD through delta-rs's own object store,
    configured as its commits are, never a listing (``_commits_from`` says why)."""
    from deltalake.fs import DeltaStorageHandler

    try:
        DeltaStorageHandler(uri).open_input_file(key).close()
    except FileNotFoundError:
        return False
    return True


def _commits_from(uri: str, version: int) -> Iterator[list[dict]]:
    """The actions of the table's commits ``version``, ``version + 1``, ... each read by its key, up to the first
    key that is not there.

    Why by key: delta-rs's snapshot is what a listing of ``_delta_log/`` shows, and a listing of some
    S3-compatible stores leaves out objects written moments before while other writers write (s3proxy's
    filesystem backend: listings taken during 6 writers' PUTs left out up to 112 objects whose PUTs had
    returned, objects a HEAD then found).
    A GET of a key sees every PUT that has returned. So a commit of this run's that landed is found even where
    the listing has not caught up with it."""
    from deltalake.fs import DeltaStorageHandler

    handler = DeltaStorageHandler(uri)
    while True:
        try:
            with handler.open_input_file(_log_key(version)) as commit:
                body = commit.read()
        except FileNotFoundError:
            return
        yield [json.loads(line) for line in body.splitlines() if line.strip()]
        version += 1


class MetadataStore:
    """The Delta tables under ``path``, written and read through ``spark`` when it has Delta, else delta-rs."""

    def __init__(self, path: str, spark: Engine | None = None, retries: int = DEFAULT_RETRIES,
                 app_id: str | None = None) -> None:
        self.path = path
        self.spark = spark
        self.retries = retries
        # the Delta transaction identifier of this store's commits (one per run): app id, and per table a version
        self.app_id = app_id or f"segdex-{uuid.uuid4().hex}"
        self._txn_versions: dict[str, int] = {}
        self._txn_guard = threading.Lock()
        self._known_tables: set[str] = set()  # tables on object storage this store saw or created (_create_remote)
        self.commit_attempts: dict[str, int] = {}  # table -> attempts its last commit took (1 = no retry)
        self.timeout_s = store_timeout_s()
        self.wait_report_s = WAIT_REPORT_S
        if self.remote:
            try:
                aws_env.complete_from_profile()
            except aws_env.ProfileError as e:
                raise StorageAccessError(f"{path}: {e}") from None

    @property
    def remote(self) -> bool:
        return is_object_store(self.path)

    @property
    def through_spark(self) -> bool:
        if self.remote:  # Delta Lake on Spark has no log store safe for many writers on S3: delta-rs writes
            return False
        return spark_has_delta(self.spark)

    def _next_txn(self, name: str) -> int:
        with self._txn_guard:
            self._txn_versions[name] = self._txn_versions.get(name, 0) + 1
            return self._txn_versions[name]

    def committed_version(self, name: str) -> int:
        """The last version of this store's app id committed to table ``name`` (-1: none, or no table): the
        ``txn`` of the table's snapshot and, on object storage, of the commits past it read by key
        (``_commits_from``), so that a listing that lags behind never hides a commit that landed."""
        from deltalake import DeltaTable

        uri = self.uri(name)
        found, past = -1, 0
        if DeltaTable.is_deltatable(uri):
            dt = DeltaTable(uri)
            txn = dt.transaction_version(self.app_id)
            found, past = (-1 if txn is None else int(txn)), dt.version() + 1
        elif not self.remote:
            return -1
        elif _key_present(uri, _log_key(None)):  # a table whose first commits are cleaned up: listed short
            raise MetadataStoreError(f"{uri}: the listing of the table's log left out its commits")
        if self.remote:
            for actions in _commits_from(uri, past):
                for action in actions:
                    txn = action.get("txn")
                    if txn and txn.get("appId") == self.app_id:
                        found = max(found, int(txn["version"]))
        return found

    def _landed(self, name: str, version: int) -> bool:
        """Whether the commit of ``version`` is in the table, read again. A read that fails (a listing taken while
        other writers commit) is read again a few times; an outcome that still cannot be read is an error, never a
        "no": retrying a commit that did land would write its rows twice."""
        last: Exception | None = None
        for attempt in range(8):
            try:
                return self.committed_version(name) >= version
            except Exception as e:  # noqa: BLE001 - any failed read is read again; a refusal stops at once
                if (reason := storage_failure(e)) is not None:
                    raise StorageAccessError(f"{self.uri(name)}: {reason}") from None
                last = e
                time.sleep(0.05 * (attempt + 1) * (0.5 + random.random()))
        raise CommitOutcomeUnknown(f"{self.uri(name)}: whether the commit landed cannot be read: "
                                   f"{one_line(last) if last else 'no answer'}") from None

    def commit_once(self, name: str, attempt_fn) -> int:
        """Run ``attempt_fn(commit_properties)`` until its commit is in table ``name``, exactly once: the commit
        carries this store's ``txn`` (app id, next version); after an error the table is read again and the
        commit counts as done when that ``txn`` is there; otherwise it is tried again after a jittered backoff,
        ``self.retries`` times at most and until ``SEGDEX_STORE_TIMEOUT`` has passed. Refusals and an unreachable
        store stop at once with one line. While it waits, a line every ``WAIT_REPORT_S`` (``report_waits``)."""
        from deltalake import CommitProperties, Transaction

        version = self._next_txn(name)
        props = CommitProperties(app_transactions=[Transaction(self.app_id, version)],
                                 max_commit_retries=self.retries)
        deadline = time.monotonic() + self.timeout_s
        delay = 0.05
        with _Waiting(self.uri(name), next(iter(_wait_sink), None), self.wait_report_s) as waiting:
            for attempt in range(self.retries + 1):
                waiting.attempt = attempt + 1
                try:
                    attempt_fn(props)
                    self.commit_attempts[name] = attempt + 1
                    return attempt
                except Exception as e:
                    reason = storage_failure(e)
                    if reason is not None and not _answer_lost(reason):  # refused: nothing was written
                        raise StorageAccessError(f"{self.uri(name)}: {reason}") from None
                    if reason is None and not _may_be_transient(e):  # a plan, schema or data error: every time
                        raise
                    if self._landed(name, version):  # the outcome was unknown; the table says it landed
                        self.commit_attempts[name] = attempt + 1
                        return attempt
                    if reason is not None:  # the store stopped answering; the commit is not there
                        raise StorageAccessError(f"{self.uri(name)}: {reason}") from None
                    if attempt == self.retries:
                        raise CommitConflictError(f"{self.uri(name)}: commit not done after {self.retries} "
                                                  f"retries: {one_line(e)}") from None
                    if time.monotonic() >= deadline:
                        raise StorageAccessError(f"{self.uri(name)}: the commit did not complete within "
                                                 f"{self.timeout_s:g}s ({TIMEOUT_ENV}), {attempt + 1} attempts: "
                                                 f"{one_line(e)}") from None
                time.sleep(min(delay * (0.5 + random.random()), max(0.0, deadline - time.monotonic())))
                delay = min(delay * 2, 2.0)
        return self.retries

    def uri(self, name: str) -> str:
        return table_path(self.path, name)

    # -- reading ------------------------------------------------------------------------------------------------

    def exists(self, name: str) -> bool:
        uri = self.uri(name)
        if _is_local(uri):
            return os.path.isdir(os.path.join(_local(uri), "_delta_log"))
        from deltalake import DeltaTable

        try:
            with _Waiting(uri, next(iter(_wait_sink), None), self.wait_report_s):
                return DeltaTable.is_deltatable(uri)
        except OSError as e:
            if (reason := storage_failure(e)) is None:
                raise  # another failure (a listing cut short): a commit attempt reads the table again
            raise StorageAccessError(f"{uri}: {reason}") from None

    def open(self, name: str) -> Any:
        """Table ``name`` as a delta-rs ``DeltaTable`` (its current version), read as ``_open`` reads it."""
        return self._open(self.uri(name))

    def _open(self, uri: str) -> Any:
        """The table at ``uri``, read again a few times when the log read fails while other writers commit (a
        listing taken between two of their commits); refusals and an unreachable store fail at once."""
        from deltalake import DeltaTable

        for attempt in range(5):
            try:
                return DeltaTable(uri)
            except Exception as e:
                if not self.remote:
                    raise
                if (reason := storage_failure(e)) is not None:
                    raise StorageAccessError(f"{uri}: {reason}") from None
                if attempt == 4:
                    raise MetadataStoreError(f"{uri}: the table's log could not be read: {one_line(e)}") from None
                time.sleep(0.1 * (attempt + 1) * (0.5 + random.random()))
        return None

    def tables(self) -> list[str]:
        """Names of the Delta tables directly under the metadata directory. On object storage, which of segdex's
        own tables (``schemas``) are there: a listing of the bucket would need rights a reader may not have."""
        if self.remote:
            from . import schemas

            names = sorted({v.name for v in vars(schemas).values() if isinstance(v, TableSpec)})
            return [n for n in names if self.exists(n)]
        local = _local(self.path)
        if not _is_local(self.path) or not os.path.isdir(local):
            return []
        return sorted(n for n in os.listdir(local) if os.path.isdir(os.path.join(local, n, "_delta_log")))

    def read(self, name: str, columns: Sequence[str] | None = None) -> pa.Table:
        """The current state of a table as a pyarrow Table (delta-rs reader, no Spark)."""

        uri = self.uri(name)
        if not self.exists(name):
            raise TableNotFoundError(f"{uri}: no Delta table (run `segdex reindex` or `segdex verify` first)")
        dt = self._open(uri)
        present = set(dt.schema().to_arrow().names) if columns else set()
        return scan(dt, [c for c in columns if c in present] if columns else None)

    def read_df(self, name: str) -> Any:
        """The current state of a table as a Spark DataFrame (Spark's Delta reader where it reads, on object
        storage through s3a; else what delta-rs reads)."""
        if self.through_spark or (self.remote and self.reads_through_catalog):
            return self.spark.read.format("delta").load(self.uri(name))
        table = self.read(name)
        schema = spark_schema(table.schema)
        return self.spark.createDataFrame(table, schema=schema) if table.num_rows else \
            self.spark.createDataFrame([], schema)

    @property
    def reads_through_catalog(self) -> bool:
        """Whether ``register_views`` makes catalog entries over the paths (Spark's Delta reader: Spark's own time
        travel), rather than views of what delta-rs reads."""
        return os.environ.get(WRITER_ENV, "").strip().lower() not in ("deltalake", "embedded") \
            and spark_reads_delta(self.spark) and spark_has_delta(self.spark)

    def register_view(self, name: str, view: str, as_of: int | datetime.datetime | None = None) -> None:
        """Table ``name`` as of a version or a time (delta-rs), as the temporary view ``view``."""

        uri = self.uri(name)
        if not self.exists(name):
            raise TableNotFoundError(f"{uri}: no Delta table")
        dt = self._open(uri)
        if isinstance(as_of, datetime.datetime):
            first = min(h["timestamp"] for h in dt.history())  # ms since the epoch, as Delta's commitInfo
            if as_of.timestamp() * 1000 < first:
                raise ValueError(f"the timestamp is before the table's first version "
                                 f"({datetime.datetime.fromtimestamp(first / 1000, datetime.UTC):%Y-%m-%d %H:%M:%S})")
        if as_of is not None:
            dt.load_as_version(as_of)
        table = scan(dt)
        schema = spark_schema(table.schema)
        df = self.spark.createDataFrame(table, schema=schema) if table.num_rows else \
            self.spark.createDataFrame([], schema)
        df.createOrReplaceTempView(view)

    def register_views(self, names: Iterable[str] | None = None) -> list[str]:
        """Make each table queryable by its name; returns the names registered. Through Spark's Delta reader a
        table is a session catalog entry over its path (so ``VERSION AS OF``/``TIMESTAMP AS OF`` time travel
        works); through delta-rs, a temporary view of its current state."""
        registered = []
        catalog = self.reads_through_catalog
        for name in (list(names) if names is not None else self.tables()):
            if catalog:
                self.spark.sql(f"DROP TABLE IF EXISTS {_quote(name)}")
                uri = self.uri(name)  # a catalog entry's relative location would be read under the warehouse dir
                location = os.path.abspath(_local(uri)) if _is_local(uri) else uri
                self.spark.catalog.createTable(name, path=location, source="delta")
            else:
                self.read_df(name).createOrReplaceTempView(name)
            registered.append(name)
        return registered

    # -- writing ------------------------------------------------------------------------------------------------

    def append(self, table: TableSpec, rows: Any) -> int:
        """Add rows to ``table`` (created when absent); returns how many."""
        table = fleet.with_origin(table)
        data = fleet.stamp(to_arrow(rows, table.schema))
        if self.through_spark:
            df = self._spark_df(data, table.schema)
            _retry(lambda: df.write.format("delta").mode("append").save(self.uri(table.name)), self.retries)
            return data.num_rows
        from deltalake import write_deltalake

        if data.num_rows == 0 and self.exists(table.name):
            return 0
        if self.remote:
            self._create_remote(table, data.schema)
            self.commit_once(table.name, lambda props: write_deltalake(
                self.uri(table.name), data, mode="append", schema_mode="merge", commit_properties=props))
            return data.num_rows
        with _writer_lock(self.uri(table.name)):
            _retry(lambda: write_deltalake(self.uri(table.name), data, mode="append", schema_mode="merge"),
                   self.retries)
        return data.num_rows

    def upsert(self, table: TableSpec, rows: Any, scope: Scope | None = None) -> int:
        """MERGE ``rows`` on ``table.keys`` (a matched row is rewritten only when a fact column changed); with
        ``scope``, also delete that scope's rows the new rows no longer hold. Returns the rows merged."""
        if not table.keys:
            raise ValueError(f"{table.name}: upsert needs merge keys")
        table = fleet.with_origin(table)
        data = _dedupe(fleet.stamp(to_arrow(rows, table.schema)), table.keys)
        uri = self.uri(table.name)
        if self.through_spark:
            _retry(lambda: self._merge_spark(table, data, scope), self.retries)
            return data.num_rows
        if self.remote:
            self._create_remote(table, data.schema)
            self.commit_once(table.name, lambda props: self._merge_deltalake(table, data, scope, props))
            return data.num_rows
        with _writer_lock(uri):
            _retry(lambda: self._merge_deltalake(table, data, scope), self.retries)
        return data.num_rows

    def _create_remote(self, table: TableSpec, schema: pa.Schema) -> None:
        """Create ``table`` on object storage, empty, when it is not there: rows never ride in the commit that
        creates a table.

        Why: delta-rs commits a new table as version 0, and a writer that finds version 0 taken commits the same
        actions at the next free version with no conflict check (``PreparedCommit``). Its own version 0 may be
        the one that was taken: a 5xx answered its PUT after the object was written, object_store's HTTP client
        retried the PUT, and the store answered 412, "already exists". With rows in it, they would land twice;
        an empty create done twice only states the schema again. Racing creators are expected (every broker of a
        fleet's first run): a failed create counts as done when the table is there afterwards."""
        from deltalake import DeltaTable

        uri = self.uri(table.name)
        if table.name in self._known_tables:
            return
        for attempt in range(5):
            try:
                # asked by key (the first commit, the last checkpoint's pointer), not by a listing, which may lag
                # behind (_commits_from) and show no commit of a table that is there
                if _key_present(uri, _log_key(0)) or _key_present(uri, _log_key(None)):
                    self._known_tables.add(table.name)
                    return
                DeltaTable.create(uri, schema=schema, mode="ignore", partition_by=self._partitioning(table))
                self._known_tables.add(table.name)
                return
            except Exception as e:
                reason = storage_failure(e)
                if reason is not None and not _answer_lost(reason):
                    raise StorageAccessError(f"{uri}: {reason}") from None
                if reason is None and not _may_be_transient(e):
                    raise
                if attempt == 4:
                    raise MetadataStoreError(f"{uri}: the table could not be created: {one_line(e)}") from None
            time.sleep(0.05 * (attempt + 1) * (0.5 + random.random()))

    def _partitioning(self, table: TableSpec) -> list[str] | None:
        """New tables on object storage with an origin are partitioned by broker: one broker's rerun replaces
        files of its own partition only, so Delta's conflict check sees the brokers' commits as disjoint (and
        merge skips the other brokers' files). Only ``_create_remote`` asks, for a table it found absent (an
        existing table keeps its own partitioning); local tables keep no partitions (one writer at a time)."""
        return ["broker_id"] if fleet.has_origin_keys(table.keys) else None

    def _read_existing(self, name: str, columns: list[str]) -> pa.Table | None:
        """``read`` of a table ``exists`` just saw, read again a few times while another writer is creating it on
        object storage (its first commit listed, not yet readable); None when it never becomes readable."""
        for attempt in range(6):
            try:
                return self.read(name, columns=columns)
            except TableNotFoundError:
                time.sleep(0.1 * (attempt + 1) * (0.5 + random.random()))
        return None

    def _stale(self, table: TableSpec, data: pa.Table, scope: Scope | None) -> pa.Table:
        """Tombstones: the scope's current keys that ``data`` does not hold (read, compared in Python)."""
        empty = pa.table({k: pa.array([], table.schema.field(k).type) for k in table.keys})
        if scope is None or not scope.values or not self.exists(table.name):
            return empty
        current = self._read_existing(table.name, list(dict.fromkeys((*table.keys, scope.column,
                                                                       *scope.keep_columns))))
        if current is None:  # created by another writer this moment, not readable yet: nothing of ours to drop
            return empty
        import pyarrow.compute as pc  # only where stale rows are looked for: 0.03 s of every command's start

        current = current.filter(pc.is_in(current.column(scope.column), pa.array(sorted(scope.values))))
        current = _own_rows(current, table, scope)
        fresh = set(zip(*(data.column(k).to_pylist() for k in table.keys), strict=True))
        keep_cols = [current.column(c).to_pylist() for c in scope.keep_columns]
        stale = []
        for i, key in enumerate(zip(*(current.column(k).to_pylist() for k in table.keys), strict=True)):
            if key in fresh:
                continue
            if scope.keep_columns and tuple(col[i] for col in keep_cols) in scope.keep:
                continue
            stale.append(i)
        return current.take(pa.array(stale, pa.int64())).select(list(table.keys)).cast(pa.schema([table.schema.field(k)
                                                                             for k in table.keys]))

    def _source(self, table: TableSpec, data: pa.Table, scope: Scope | None) -> tuple[pa.Table, bool]:
        """The MERGE source: the rows to upsert, then the scope's tombstones, tagged in ``OP_COLUMN``."""
        stale = self._stale(table, data, scope)
        upserts = data.append_column(OP_COLUMN, pa.array(["upsert"] * data.num_rows, pa.string()))
        if not stale.num_rows:
            return upserts, False
        filler = {n: pa.nulls(stale.num_rows, table.schema.field(n).type) for n in table.schema.names
                  if n not in table.keys}
        deletes = pa.table({**{k: stale.column(k) for k in table.keys}, **filler}).select(table.schema.names)
        deletes = deletes.cast(table.schema).append_column(OP_COLUMN,
                                                           pa.array(["delete"] * stale.num_rows, pa.string()))
        return pa.concat_tables([upserts, deletes]), True

    def _merge_deltalake(self, table: TableSpec, data: pa.Table, scope: Scope | None,
                         props: Any = None) -> None:
        from deltalake import DeltaTable, write_deltalake

        uri = self.uri(table.name)
        if not self.remote and not DeltaTable.is_deltatable(uri):
            # a new local table holds what MERGE would insert: one commit, no MERGE to plan (the caller holds
            # _writer_lock: no one else creates it). On object storage _create_remote made the table already
            write_deltalake(uri, data, mode="append", commit_properties=props)
            return
        source, deletes = self._source(table, data, scope)
        columns = {c: f"s.{_quote(c)}" for c in table.schema.names}
        # merge_schema: tables written by an older segdex gain the columns added since (runs.files_failed)
        dt = _with_origin_columns(DeltaTable(uri), table)
        broker = _one_broker(data) if "broker_id" in dt.metadata().partition_columns else None
        merger = dt.merge(source, predicate=_merge_predicate(table.keys, broker), source_alias="s",
                                       target_alias="t", merge_schema=True, commit_properties=props)
        if deletes:
            merger = merger.when_matched_delete(predicate=f"s.{OP_COLUMN} = 'delete'")
        facts = table.fact_columns
        changed = f" AND ({_changed(facts, 'IS DISTINCT FROM')})" if facts else ""
        merger = merger.when_matched_update(updates=columns, predicate=f"s.{OP_COLUMN} = 'upsert'{changed}")
        merger = merger.when_not_matched_insert(updates=columns, predicate=f"s.{OP_COLUMN} = 'upsert'")
        merger.execute()

    def _spark_df(self, data: pa.Table, schema: pa.Schema) -> Any:
        struct = spark_schema(schema)
        return self.spark.createDataFrame(data, schema=struct) if data.num_rows else \
            self.spark.createDataFrame([], struct)

    def _merge_spark(self, table: TableSpec, data: pa.Table, scope: Scope | None) -> None:
        from delta.tables import DeltaTable as SparkDeltaTable

        uri = self.uri(table.name)
        if not self.exists(table.name):
            self._spark_df(table.schema.empty_table(), table.schema).write.format("delta").mode("append").save(uri)
        else:
            from deltalake import DeltaTable

            _with_origin_columns(DeltaTable(uri), table)
        self.spark.conf.set("spark.databricks.delta.schema.autoMerge.enabled", "true")  # columns added since
        source, deletes = self._source(table, data, scope)
        df = self._spark_df(source, source.schema)
        columns = {c: f"s.{_quote(c)}" for c in table.schema.names}
        merger = SparkDeltaTable.forPath(self.spark, uri).alias("t").merge(df.alias("s"),
                                                                           _merge_predicate(table.keys))
        if deletes:
            merger = merger.whenMatchedDelete(condition=f"s.{OP_COLUMN} = 'delete'")
        facts = table.fact_columns
        changed = f" AND ({_changed(facts, 'IS DISTINCT FROM')})" if facts else ""
        merger = merger.whenMatchedUpdate(condition=f"s.{OP_COLUMN} = 'upsert'{changed}", set=columns)
        merger = merger.whenNotMatchedInsert(condition=f"s.{OP_COLUMN} = 'upsert'", values=columns)
        merger.execute()


# -- module-level conveniences (tests, small callers) -------------------------------------------------------------


def write_table(spark: Engine | None, path: str, table: TableSpec, rows_or_arrow: Any,
                scope: Scope | None = None) -> int:
    """Upsert (a table with merge keys) or append (one without) ``rows_or_arrow`` into ``path/<table.name>``; see
    ``MetadataStore``."""
    store = MetadataStore(path, spark)
    return store.upsert(table, rows_or_arrow, scope) if table.keys else store.append(table, rows_or_arrow)


def read_arrow(path: str, name: str) -> pa.Table:
    return MetadataStore(path).read(name)


def read_table(spark: Engine, path: str, name: str) -> Any:
    return MetadataStore(path, spark).read_df(name)


def table_names(path: str) -> list[str]:
    return MetadataStore(path).tables()


def register_views(spark: Engine, path: str, names: Iterable[str] | None = None) -> list[str]:
    return MetadataStore(path, spark).register_views(names)


def rows_of(table: pa.Table) -> list[dict]:
    """A pyarrow Table as a list of dicts (for tests and small tables)."""
    return table.to_pylist()


def sort_rows(rows: Iterable[Mapping[str, Any]], keys: Sequence[str]) -> list[dict]:
    return sorted((dict(r) for r in rows), key=lambda r: tuple(r[k] for k in keys))
