"""Kafka's generated message format, read and rendered as Kafka's tools render it.

Kafka describes the records of its internal topics (``__consumer_offsets``, ``__transaction_state``) with the
same message schemas as its protocol, and its code generator writes for each one a reader (``Message.read`` over
a ``Readable``) and a ``*JsonConverter`` that ``kafka-dump-log`` prints. This module is the reader and the
converter's rules for the schemas ``coordinator_records`` declares:

- a version selects the fields present (``versions``) and whether the encoding is *flexible*;
- non-flexible: strings are int16 length + UTF-8 (-1: null), bytes int32 length, arrays int32 count (-1: null);
- flexible: the same with unsigned-varint ``length + 1`` (0: null), then a tagged-field section after every
  struct: uvarint count, then per field uvarint tag, uvarint size, the bytes. Tagged fields not in the schema
  are skipped, as Kafka keeps them as unknown tagged fields and never prints them;
- JSON (``*JsonConverter.write``): fields in declaration order, int64 as numbers, bytes as base64, a UUID as
  Kafka's ``Uuid.toString`` (URL-safe base64, no padding). A tagged field is printed only when it differs from
  its default; for a tagged struct or array whose default is null the test is "not empty" (a null value is
  printed as ``null``), as the generated code compares with an empty instance.
"""

from __future__ import annotations

import base64
import json
import struct
from dataclasses import dataclass, field
from typing import Any

from segdex.indexcore.errors import SegdexError
from segdex.indexcore.utils.byte_utils import IllegalArgument, int8, read_unsigned_varint

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
FLOAT64 = struct.Struct(">d")
UUID_LENGTH = 16
ANY_VERSION = (0, 32767)
FIXED = {"int8": INT8, "int16": INT16, "int32": INT32, "int64": INT64, "uint16": UINT16, "float64": FLOAT64}


class MessageFormatException(SegdexError):
    """Bytes that do not hold the message the schema describes (Kafka: a RuntimeException from ``read``)."""


class _NullDefault:
    """A field whose default is Java's null (``"default": "null"`` on a nullable field): absent means null, and
    the JSON converter prints it whenever it is not null, empty or not."""

    def __repr__(self) -> str:
        return "NULL"


NULL = _NullDefault()


@dataclass(frozen=True)
class Array:
    """``[]T`` in a schema: an array of a primitive type name or of a ``Struct``."""

    element: Any


@dataclass(frozen=True)
class Field:
    """One field: its JSON name, type, the versions that hold it, the versions where it may be null, and for a
    tagged field its tag (present only in flexible versions, after the struct's other fields)."""

    name: str
    type: Any  # "int8" | "int16" | "uint16" | "int32" | "int64" | "float64" | "bool" | "uuid" | "string" | "bytes"
    # | Array | Struct
    versions: tuple[int, int] = ANY_VERSION
    nullable: tuple[int, int] | None = None
    tag: int | None = None
    default: Any = None


@dataclass(frozen=True)
class Struct:
    fields: tuple[Field, ...]


@dataclass(frozen=True)
class Message:
    """A top-level schema: its name, valid versions, and the first flexible version (None: never flexible)."""

    name: str
    struct: Struct
    valid_versions: tuple[int, int] = (0, 0)
    flexible_from: int | None = None

    def is_flexible(self, version: int) -> bool:
        return self.flexible_from is not None and version >= self.flexible_from


def _within(version: int, versions: tuple[int, int] | None) -> bool:
    return versions is not None and versions[0] <= version <= versions[1]


@dataclass
class _Reader:
    """A ``ByteBufferAccessor``: reads primitives at a moving position, and never past the end."""

    data: bytes
    pos: int = 0
    flexible: bool = False
    version: int = 0
    path: list[str] = field(default_factory=list)

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            where = ".".join(self.path) or "message"
            raise MessageFormatException(f"{where}: needs {n} bytes at position {self.pos}, "
                                         f"{len(self.data) - self.pos} left")
        out = self.data[self.pos:self.pos + n]
        self.pos += n
        return out

    def fixed(self, layout: struct.Struct) -> int:
        return layout.unpack(self.take(layout.size))[0]

    def uvarint(self) -> int:
        """``readUnsignedVarint`` (``ByteUtils``: a Java ``int``)."""
        try:
            return read_unsigned_varint(self._signed_byte)
        except IllegalArgument as e:
            raise MessageFormatException(str(e)) from None

    def _signed_byte(self) -> int:
        return int8(self.take(1)[0])

    def length(self, non_flexible: struct.Struct) -> int:
        """A string/bytes length or array count: -1 for null."""
        return self.uvarint() - 1 if self.flexible else self.fixed(non_flexible)


REPLACEMENT = "\ufffd"


def _cont(b: int) -> bool:
    return b & 0xC0 == 0x80


def _java_seq2(data: bytes, i: int, b1: int) -> tuple[str, int, bool]:
    """A C2..DF lead at ``i - 1``: (text, next index, stop)."""
    if i < len(data):
        if _cont(data[i]):
            return chr(((b1 & 0x1F) << 6) | (data[i] & 0x3F)), i + 1, False
        return REPLACEMENT, i, False
    return REPLACEMENT, i, True


def _java_seq3(data: bytes, i: int, b1: int) -> tuple[str, int, bool]:
    """An E0..EF lead: Java's ``isMalformed3``/``malformed3`` (1 or 2 bytes per U+FFFD), a surrogate is one."""
    n = len(data)
    bad_b2 = i < n and ((b1 == 0xE0 and data[i] & 0xE0 == 0x80) or not _cont(data[i]))
    if i + 1 < n:
        b2, b3 = data[i], data[i + 1]
        if bad_b2 or not _cont(b3):
            return REPLACEMENT, i if bad_b2 else i + 1, False
        c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
        return (REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c)), i + 2, False
    return REPLACEMENT, i, not bad_b2  # cut by the end: one U+FFFD, and the rest is dropped


def _java_seq4(data: bytes, i: int, b1: int) -> tuple[str, int, bool]:
    """An F0..F7 lead: Java's ``isMalformed4``/``malformed4`` and its end-of-input rules."""
    n = len(data)
    bad_b2 = i < n and ((b1 == 0xF0 and data[i] & 0xF0 == 0x80) or (b1 == 0xF4 and data[i] & 0xF0 != 0x80)
                        or not _cont(data[i]))
    if i + 2 < n:
        b2, b3, b4 = data[i], data[i + 1], data[i + 2]
        uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
        if _cont(b2) and _cont(b3) and _cont(b4) and 0x10000 <= uc <= 0x10FFFF:
            return chr(uc), i + 3, False
        if b1 > 0xF4 or bad_b2:
            return REPLACEMENT, i, False
        return REPLACEMENT, i + 1 if not _cont(b3) else i + 2, False
    if b1 > 0xF4 or bad_b2:
        return REPLACEMENT, i, False
    i += 1
    return REPLACEMENT, i, not (i < n and not _cont(data[i]))


def java_utf8(data: bytes) -> str:
    """``new String(bytes, UTF_8)`` as Java decodes it: valid UTF-8 as Python reads it, but malformed bytes
    replaced by U+FFFD in Java's own units (``String.decodeUTF8_UTF16``), which differ from Python's "maximal
    subpart" rule: one U+FFFD for an encoded surrogate or for ``ED B8``, one for a sequence cut by the end."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    i, n = 0, len(data)
    while i < n:
        b1 = data[i]
        i += 1
        if b1 < 0x80:
            out.append(chr(b1))
            continue
        seq = _java_seq2 if 0xC2 <= b1 <= 0xDF else _java_seq3 if 0xE0 <= b1 <= 0xEF else \
            _java_seq4 if 0xF0 <= b1 <= 0xF7 else None
        if seq is None:
            out.append(REPLACEMENT)
            continue
        text, i, stop = seq(data, i, b1)
        out.append(text)
        if stop:
            break
    return "".join(out)


def _read_value(r: _Reader, f: Field, ftype: Any, element: bool = False) -> Any:
    """One value of ``ftype``; ``f.nullable`` applies to the field itself, never to an array's elements."""
    nullable = not element and _within(r.version, f.nullable)
    if isinstance(ftype, str) and ftype in FIXED:
        return r.fixed(FIXED[ftype])
    if ftype == "bool":  # Readable.readByte() != 0
        return r.fixed(INT8) != 0
    if ftype == "uuid":
        return r.take(UUID_LENGTH)
    if isinstance(ftype, Struct):
        # a nullable struct starts with a presence marker: uvarint 0 (flexible) or a negative int8 for null
        if nullable and (r.uvarint() == 0 if r.flexible else r.fixed(INT8) < 0):
            return None
        return read_struct(r, ftype)
    if ftype in ("string", "bytes") or isinstance(ftype, Array):
        n = r.length(INT16 if ftype == "string" else INT32)
        if n < 0:
            if not nullable:
                raise MessageFormatException(f"non-nullable field {f.name} was serialized as null")
            return None
        if ftype == "string":
            return java_utf8(r.take(n))
        if ftype == "bytes":
            return r.take(n)
        return [_read_value(r, f, ftype.element, element=True) for _ in range(n)]
    raise ValueError(f"unknown schema type {ftype!r}")


def read_struct(r: _Reader, schema: Struct) -> dict[str, Any]:
    """The fields of ``schema`` at ``r.version`` (tagged ones: their value, or their default when absent)."""
    out: dict[str, Any] = {}
    tagged: dict[int, Field] = {}
    for f in schema.fields:
        if f.tag is not None:
            if r.flexible and _within(r.version, f.versions):
                tagged[f.tag] = f
                out[f.name] = default_value(f)
            continue
        if not _within(r.version, f.versions):
            continue
        r.path.append(f.name)
        out[f.name] = _read_value(r, f, f.type)
        r.path.pop()
    if r.flexible:
        for _ in range(r.uvarint()):
            tag, size = r.uvarint(), r.uvarint()
            known = tagged.get(tag)
            if known is None:
                r.take(size)  # an unknown tagged field: kept by Kafka, never printed
                continue
            end = r.pos + size
            r.path.append(known.name)
            out[known.name] = _read_value(r, known, known.type)
            r.path.pop()
            if r.pos != end:
                raise MessageFormatException(f"tagged field {known.name} declares {size} bytes but holds "
                                             f"{size + r.pos - end}")
    return out


def read_message(message: Message, data: bytes, version: int, whole: bool = False) -> dict[str, Any]:
    """``new Message(readable, version)``: the message at ``version`` from ``data`` (trailing bytes ignored, or
    with ``whole`` refused as ``AbstractApiMessageSerde.read`` refuses them)."""
    if not message.valid_versions[0] <= version <= message.valid_versions[1]:
        raise MessageFormatException(f"{message.name}: version {version} is not in the supported range "
                                     f"{message.valid_versions[0]}-{message.valid_versions[1]}")
    r = _Reader(bytes(data), flexible=message.is_flexible(version), version=version)
    out = read_struct(r, message.struct)
    if whole and r.pos < len(r.data):
        raise MessageFormatException(f"Found {len(r.data) - r.pos} byte(s) of garbage after {message.name}")
    return out


def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """An unsigned varint at ``pos`` (``_Reader.uvarint``): (value, the position after it)."""
    r = _Reader(bytes(data), pos)
    return r.uvarint(), r.pos


def uuid_string(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def default_value(f: Field) -> Any:
    """The value a generated message holds for a field it did not read (an absent tagged field): the field's
    default, where ``None`` is Kafka's empty default (``FieldSpec``: a schema's ``"default": null`` is ``""``,
    which makes a struct ``new S()`` with its own fields' defaults, an array ``new ArrayList<>(0)``, empty bytes,
    an empty string, a zero number or the zero UUID)."""
    if f.default is NULL:
        return None
    if f.default is not None:
        return f.default
    if isinstance(f.type, Struct):
        return {g.name: default_value(g) for g in f.type.fields}
    if isinstance(f.type, Array):
        return []
    return {"string": "", "bytes": b"", "uuid": bytes(16), "bool": False, "float64": 0.0}.get(f.type, 0)


def _is_empty_default(f: Field, value: Any) -> bool:
    """The generated converter's test for skipping a tagged field (``generateNonDefaultValueCheck``): the value
    equals the default; a null where the default is not null is printed."""
    if f.default is NULL:
        return value is None
    return value is not None and value == default_value(f)


def _json_value(ftype: Any, value: Any) -> Any:
    if value is None:
        return None
    if ftype == "uuid":
        return uuid_string(value)
    if ftype == "bytes":
        return base64.b64encode(value).decode("ascii")
    if isinstance(ftype, Struct):
        return struct_json(ftype, value)
    if isinstance(ftype, Array):
        return [_json_value(ftype.element, v) for v in value]
    return value


def struct_json(schema: Struct, values: dict[str, Any]) -> dict[str, Any]:
    """``*JsonConverter.write(struct, version)`` as a dict in Kafka's field order. The version needs no passing:
    ``values`` (``read_message`` of that version) holds exactly the fields the version has."""
    out: dict[str, Any] = {}
    for f in schema.fields:
        if f.name not in values:
            continue
        value = values[f.name]
        if f.tag is not None and _is_empty_default(f, value):
            continue
        out[f.name] = value if not isinstance(f.type, (Struct, Array)) and f.type not in ("uuid", "bytes") \
            else _json_value(f.type, value)
    return out


def json_text(obj: Any) -> str:
    """Jackson's ``ObjectNode.toString``, as Kafka's tools print a converter's JSON: no spaces, non-ASCII as is."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
