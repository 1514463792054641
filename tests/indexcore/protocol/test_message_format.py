"""Kafka's generated message format as ``indexcore.message_format`` reads and renders it, on bytes built here.

Every input is built by hand with ``struct.pack`` from the wire rules of Kafka's generated ``Message.read``
(``MessageDataGenerator``): int16/int32 lengths and counts with -1 for null in non-flexible versions; uvarint
``length + 1`` (0 for null) in flexible versions; after every flexible struct a tagged-field section (uvarint count,
then uvarint tag, uvarint size, the bytes), unknown tags skipped; a non-tagged nullable struct starts with a byte
(negative: null). The expected JSON follows the generated ``*JsonConverter.write`` rules (``JsonConverterGenerator``
and ``FieldSpec.generateNonDefaultValueCheck``): fields in declaration order, bytes as base64, a tagged field only
when it differs from its default; a field whose schema default is JSON ``null`` has the *empty* default (Kafka's
``FieldSpec`` turns a null default into ""), so an empty value is skipped and a null one printed as ``null``.
Java's UTF-8 decoding (``new String(bytes, UTF_8)``) gives the expected text of malformed strings.

The schemas are written out in the tests (small ones in the style of Kafka's JSON message specs), so the expected
values never come from segdex's own schema tables.
"""

from __future__ import annotations

import struct

import pytest

from segdex.indexcore.protocol.message_format import (
    ANY_VERSION,
    Array,
    Field,
    Message,
    MessageFormatException,
    Struct,
    _Reader,
    java_utf8,
    read_message,
    struct_json,
)
from tests.support.kafka_bytes import cstr, i8, i32, i64, s16, uv


def flexible(name: str, *fields: Field) -> Message:
    return Message(name, Struct(fields), (0, 0), flexible_from=0)


def fixed(name: str, *fields: Field, versions: tuple[int, int] = (0, 0)) -> Message:
    return Message(name, Struct(fields), versions)


def decode_json(message: Message, data: bytes, version: int = 0) -> dict:
    return struct_json(message.struct, read_message(message, data, version))


def error_of(message: Message, data: bytes, version: int = 0) -> str:
    with pytest.raises(MessageFormatException) as info:
        read_message(message, data, version)
    return str(info.value)


# --- unsigned varints ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("data", "value"), [
    (b"\x00", 0), (b"\x7f", 127), (b"\x80\x01", 128), (b"\xc9\x01", 201), (b"\xff\xff\x03", 65535),
    (b"\x80\x80\x01", 1 << 14), (b"\x81\x82\x83\x04", 1 | (2 << 7) | (3 << 14) | (4 << 21)),
    (b"\x80\x80\x80\x80\x01", 1 << 28), (b"\xff\xff\xff\xff\x07", 0x7FFFFFFF), (b"\xff\xff\xff\xff\x0f", -1),
])
def test_unsigned_varint_decodes_seven_bits_a_byte_low_group_first(data: bytes, value: int):
    """``ByteUtils.readUnsignedVarint``: groups of 7 bits, least significant first, up to 5 bytes, into a Java
    ``int`` (32 bits set read -1)."""
    r = _Reader(data)
    assert (r.uvarint(), r.pos) == (value, len(data))


def test_unsigned_varint_of_six_bytes_is_refused():
    """A 5th byte with its continuation bit set makes the varint too long, in Kafka's words (the value read so far
    in hexadecimal)."""
    with pytest.raises(MessageFormatException) as info:
        _Reader(b"\x80\x80\x80\x80\x80\x01").uvarint()
    assert str(info.value) == "Varint is too long, the most significant bit in the 5th byte is set, converted value: 0"
    with pytest.raises(MessageFormatException) as info:
        _Reader(b"\xff\xff\xff\xff\xff").uvarint()
    assert str(info.value).endswith("converted value: ffffffff")


def test_compact_string_with_a_two_byte_length():
    """A flexible string of 200 bytes: its length + 1 = 201 is the uvarint C9 01."""
    msg = flexible("Demo", Field("name", "string"))
    assert decode_json(msg, b"\xc9\x01" + b"x" * 200 + uv(0)) == {"name": "x" * 200}


# --- reading past the end -----------------------------------------------------------------------------------

def test_truncated_field_names_the_field_position_and_bytes_left():
    """A read past the end of the bytes is refused, naming the field, the position and the bytes left."""
    msg = fixed("Demo", Field("a", "int32"), Field("b", "int64"))
    assert error_of(msg, i32(1) + b"\x00\x00\x00") == "b: needs 8 bytes at position 4, 3 left"


def test_truncated_nested_field_names_its_path():
    """Inside an array of structs the path is ``array.field``."""
    msg = fixed("Demo", Field("members", Array(Struct((Field("memberId", "string"),)))))
    data = i32(1) + struct.pack(">h", 5) + b"ab"
    assert error_of(msg, data) == "members.memberId: needs 5 bytes at position 6, 2 left"


def test_missing_tagged_section_is_a_message_level_error():
    """A flexible struct must end with its tagged-field count: its absence is the message's, not a field's."""
    msg = flexible("Demo", Field("epoch", "int32"))
    assert error_of(msg, i32(7)) == "message: needs 1 bytes at position 4, 0 left"


# --- versions -----------------------------------------------------------------------------------------------

def test_version_outside_the_valid_versions_is_refused():
    """``validVersions`` bounds what can be read; the error names the message and its range."""
    msg = fixed("Demo", Field("a", "int32"), versions=(2, 5))
    assert error_of(msg, i32(1), 7) == "Demo: version 7 is not in the supported range 2-5"
    assert error_of(msg, i32(1), 1) == "Demo: version 1 is not in the supported range 2-5"


def test_field_versions_include_their_upper_bound():
    """A field with ``"versions": "1-3"`` is read at versions 1, 2 and 3, and absent at 0 and 4."""
    msg = fixed("Demo", Field("a", "int32"), Field("b", "int64", versions=(1, 3)), versions=(0, 4))
    for version in (1, 3):
        assert decode_json(msg, i32(1) + i64(2), version) == {"a": 1, "b": 2}
    for version in (0, 4):
        assert decode_json(msg, i32(1) + i64(2), version) == {"a": 1}


# --- nullability --------------------------------------------------------------------------------------------

NULLABLE_STRUCT = fixed("Demo", Field("s", Struct((Field("x", "int32"),)), nullable=ANY_VERSION),
                        Field("after", "int8"))


@pytest.mark.parametrize(("data", "expected"), [
    (b"\xff" + i8(3), {"s": None, "after": 3}),
    (b"\x80" + i8(3), {"s": None, "after": 3}),
    (b"\x00" + i32(7) + i8(3), {"s": {"x": 7}, "after": 3}),
    (b"\x01" + i32(7) + i8(3), {"s": {"x": 7}, "after": 3}),
])
def test_non_flexible_nullable_struct_marker_is_a_signed_byte(data: bytes, expected: dict):
    """Kafka's generated reader: ``if (_readable.readByte() < 0) null else new Struct(...)``: 0 is present."""
    assert decode_json(NULLABLE_STRUCT, data) == expected


def test_null_for_a_non_nullable_string_is_refused():
    """Kafka's text: ``non-nullable field <name> was serialized as null``."""
    msg = fixed("Demo", Field("metadata", "string"))
    assert error_of(msg, s16(None)) == "non-nullable field metadata was serialized as null"


def test_null_array_element_is_refused():
    """Array elements are never nullable: a string element of length -1 is a format error."""
    msg = fixed("Demo", Field("topics", Array("string"), nullable=ANY_VERSION))
    assert decode_json(msg, i32(-1)) == {"topics": None}
    with pytest.raises(MessageFormatException, match="^non-nullable field topics"):
        read_message(msg, i32(2) + s16("a") + s16(None), 0)


def test_unknown_schema_type_is_a_programming_error():
    msg = fixed("Demo", Field("ratio", "float32"))
    with pytest.raises(ValueError) as info:
        read_message(msg, b"\x00" * 8, 0)
    assert str(info.value) == "unknown schema type 'float32'"


# --- tagged fields ------------------------------------------------------------------------------------------

TAGGED = flexible("Demo", Field("a", "int32"), Field("t", "int64", tag=1, default=0))


def test_unknown_tagged_field_is_skipped_and_the_next_one_read():
    """Unknown tags are kept by Kafka as raw tagged fields (never printed); the known ones after them are read."""
    data = i32(5) + uv(2) + uv(7) + uv(3) + b"xyz" + uv(1) + uv(8) + i64(99)
    assert decode_json(TAGGED, data) == {"a": 5, "t": 99}
    data = i32(5) + uv(2) + uv(1) + uv(8) + i64(99) + uv(30) + uv(2) + b"zz"
    assert decode_json(TAGGED, data) == {"a": 5, "t": 99}


def test_tagged_field_at_its_default_is_not_printed():
    assert decode_json(TAGGED, i32(5) + uv(1) + uv(1) + uv(8) + i64(0)) == {"a": 5}
    assert decode_json(TAGGED, i32(5) + uv(0)) == {"a": 5}


@pytest.mark.parametrize(("size", "holds"), [(9, 8), (4, 8)])
def test_tagged_field_whose_size_disagrees_with_its_value(size: int, holds: int):
    """The declared size of a known tagged field must be exactly what its value takes."""
    data = i32(5) + uv(1) + uv(1) + uv(size) + i64(99) + b"\x00" * 8
    assert error_of(TAGGED, data) == f"tagged field t declares {size} bytes but holds {holds}"


def test_truncated_tagged_field_names_the_field():
    data = i32(5) + uv(1) + uv(1) + uv(8) + b"abc"
    assert error_of(TAGGED, data) == "t: needs 8 bytes at position 7, 3 left"


def tagged_json(field: Field, value_bytes: bytes | None) -> dict:
    """A flexible message ``{a: int32, <field> tagged as 0}``, with the tag present when ``value_bytes``."""
    msg = flexible("Demo", Field("a", "int32"), field)
    tags = uv(0) if value_bytes is None else uv(1) + uv(0) + uv(len(value_bytes)) + value_bytes
    return decode_json(msg, i32(1) + tags)


def test_tagged_string_with_a_non_empty_default():
    """``"default": "abc"``: ``if (!x.equals("abc"))`` prints; an empty string differs from it."""
    f = Field("s", "string", tag=0, default="abc")
    assert tagged_json(f, cstr("")) == {"a": 1, "s": ""}
    assert tagged_json(f, cstr("abc")) == {"a": 1}
    assert tagged_json(f, cstr("abd")) == {"a": 1, "s": "abd"}


def test_tagged_nullable_string_with_the_empty_default():
    """No default (or JSON null): the default is ""; ``x == null || !x.equals("")`` prints null and non-empty."""
    f = Field("s", "string", nullable=ANY_VERSION, tag=0)
    assert tagged_json(f, cstr("")) == {"a": 1}
    assert tagged_json(f, cstr(None)) == {"a": 1, "s": None}
    assert tagged_json(f, cstr("z")) == {"a": 1, "s": "z"}


def test_tagged_nullable_bytes_with_the_empty_default():
    """``x == null || x.length != 0``: empty bytes skipped, null printed, others as base64."""
    f = Field("b", "bytes", nullable=ANY_VERSION, tag=0)
    assert tagged_json(f, uv(1)) == {"a": 1}
    assert tagged_json(f, uv(0)) == {"a": 1, "b": None}
    assert tagged_json(f, uv(3) + b"\x01\x02") == {"a": 1, "b": "AQI="}


def test_tagged_nullable_array_with_the_empty_default():
    """``x == null || !x.isEmpty()``: an empty array skipped, null printed, others printed."""
    f = Field("ids", Array("int32"), nullable=ANY_VERSION, tag=0)
    assert tagged_json(f, uv(1)) == {"a": 1}
    assert tagged_json(f, uv(0)) == {"a": 1, "ids": None}
    assert tagged_json(f, uv(3) + i32(4) + i32(-2)) == {"a": 1, "ids": [4, -2]}


def test_tagged_nullable_struct_with_the_empty_default():
    """``x == null || !x.equals(new S())``: a struct equal to a new one skipped, others printed; a tagged nullable
    struct's marker is an unsigned varint (0: null)."""
    f = Field("s", Struct((Field("timeout", "int32", default=-1), Field("names", Array("string"), default=[]))),
              nullable=ANY_VERSION, tag=0)
    assert tagged_json(f, uv(1) + i32(-1) + uv(1) + uv(0)) == {"a": 1}
    assert tagged_json(f, uv(0)) == {"a": 1, "s": None}
    assert tagged_json(f, uv(1) + i32(45000) + uv(1) + uv(0)) == {"a": 1, "s": {"timeout": 45000,
                                                                                          "names": []}}
    assert tagged_json(f, uv(1) + i32(-1) + uv(2) + cstr("x") + uv(0)) == {"a": 1, "s": {"timeout": -1,
                                                                                                  "names": ["x"]}}


def test_uuid_and_bytes_rendering():
    """``Uuid.toString``: URL-safe base64 without padding; bytes: standard base64 (Jackson's ``BinaryNode``)."""
    msg = fixed("Demo", Field("id", "uuid"), Field("blob", "bytes"), Field("list", Array("bytes")))
    uuid = bytes([0xFB, 0xFF] + list(range(14)))
    data = uuid + i32(3) + b"\xfb\xff\xfe" + i32(1) + i32(1) + b"\xff"
    assert decode_json(msg, data) == {"id": "-_8AAQIDBAUGBwgJCgsMDQ", "blob": "+//+", "list": ["/w=="]}


# --- Java's UTF-8 -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("data", "text"), [
    (b"\xee\x80\x80\xff", "\ue000\ufffd"),              # U+E000, just past the surrogates, is a character
    (b"\xed\x9f\xbf\xff", "\ud7ff\ufffd"),              # U+D7FF, just below them
    (b"\xed\xa0\x80\xff", "\ufffd\ufffd"),              # an encoded surrogate: one U+FFFD for the three bytes
    (b"\xf0\x90\x80\x80\xff", "\U00010000\ufffd"),      # the first supplementary code point
    (b"\xf4\x8f\xbf\xbf\xff", "\U0010ffff\ufffd"),      # the last code point
    (b"\xf4\x90\x80\x80", "\ufffd" * 4),                # past U+10FFFF: the lead, then three lone continuations
])
def test_java_utf8_code_point_bounds(data: bytes, text: str):
    """``new String(bytes, UTF_8)`` on text that also holds a malformed byte (0xFF is never valid)."""
    assert java_utf8(data) == text


@pytest.mark.parametrize(("data", "text"), [
    (b"\xf0\xc0\x80\x80", "\ufffd" * 4),  # F0 then C0, a lead byte: the F0 alone, then C0 and each 80
    (b"\xf0\xc0", "\ufffd" * 2),
    (b"\xf0\xc0A", "\ufffd\ufffdA"),
    (b"A\xc3", "A\ufffd"),  # a two-byte lead cut by the end: one U+FFFD, and nothing after it
    (b"A\xdf", "A\ufffd"),
    (b"\xc2\xc2", "\ufffd\ufffd"),
])
def test_java_utf8_at_a_bad_second_byte_and_a_cut_two_byte_sequence(data: bytes, text: str):
    """``new String(bytes, UTF_8)`` as JDK 17 decoded these bytes (recorded). Mutation testing changes the code at
    these inputs to no effect: C0 after F0 is outside F0's second-byte range 90..BF and no continuation byte
    either (either test rejects it), and a two-byte lead cut by the end ends the input whether or not it says
    so."""
    assert java_utf8(data) == text


def test_a_tagged_struct_equal_to_its_empty_default_is_not_printed():
    """``FieldSpec``: a struct's empty default is ``new S()``, each field at its own default (0, the zero UUID,
    "", empty bytes); the converter skips a tagged struct equal to it, present or not, and prints any other."""
    inner = Struct((Field("a", "int32"), Field("u", "uuid"), Field("s", "string"), Field("b", "bytes")))
    msg = flexible("M", Field("x", "int32"), Field("t", inner, tag=0))

    def body(a: int) -> bytes:
        t = i32(a) + bytes(16) + cstr("") + uv(1) + uv(0)  # a, u, s, b (compact: length + 1), no tags
        return i32(7) + uv(1) + uv(0) + uv(len(t)) + t

    assert struct_json(msg.struct, read_message(msg, body(0), 0)) == {"x": 7}
    assert struct_json(msg.struct, read_message(msg, i32(7) + uv(0), 0)) == {"x": 7}
    assert struct_json(msg.struct, read_message(msg, body(1), 0)) == {
        "x": 7, "t": {"a": 1, "u": "AAAAAAAAAAAAAAAAAAAAAA", "s": "", "b": ""}}


def test_uint16_float64_and_bool_read_as_kafkas_readable_reads_them():
    """The metadata log's other primitives: a port (``uint16``, 0-65535), a quota (``float64``), a flag (``bool``:
    any byte but 0 is true)."""
    msg = fixed("Demo", Field("port", "uint16"), Field("value", "float64"), Field("on", "bool"), Field("off", "bool"))
    data = read_message(msg, (65535).to_bytes(2, "big") + struct.pack(">d", 1.5) + b"\x02\x00", 0)
    assert data == {"port": 65535, "value": 1.5, "on": True, "off": False}
