"""``utils.byte_utils`` against Kafka 4.4's own ``ByteUtils`` (kafka-clients, run by a small Java program): the
varints and varlongs of 300 drawn byte strings read alike, or refused alike with the same message; then the same
strings read from a stream that ends (-1 past the end)."""

from __future__ import annotations

import os
import random
import subprocess
from pathlib import Path

from segdex.indexcore.utils.byte_utils import IllegalArgument, read_unsigned_varint, read_varint, read_varlong
from tests.support.kafka_harness import KafkaInstall

JAVA = """
import java.io.*;
import java.nio.*;
import java.util.HexFormat;
import org.apache.kafka.common.utils.internals.ByteUtils;

public class Varints {
  static String ask(java.util.concurrent.Callable<Object> c) {
    try { return String.valueOf(c.call()); }
    catch (BufferUnderflowException e) { return "underflow"; }
    catch (Exception e) { return e.getClass().getSimpleName() + ": " + e.getMessage(); }
  }
  public static void main(String[] args) throws IOException {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    for (String line; (line = in.readLine()) != null; ) {
      byte[] b = HexFormat.of().parseHex(line.trim());
      System.out.println(ask(() -> ByteUtils.readUnsignedVarint(ByteBuffer.wrap(b))) + "\\t"
          + ask(() -> ByteUtils.readVarint(ByteBuffer.wrap(b))) + "\\t"
          + ask(() -> ByteUtils.readVarlong(ByteBuffer.wrap(b))) + "\\t"
          + ask(() -> ByteUtils.readVarint(new ByteArrayInputStream(b))));
    }
  }
}
"""


def _buffer(data: bytes):
    pos = [0]

    def get() -> int:
        if pos[0] >= len(data):
            raise IndexError
        b = data[pos[0]]
        pos[0] += 1
        return b - 256 if b > 127 else b
    return get


def _stream(data: bytes):
    pos = [0]

    def get() -> int:
        if pos[0] >= len(data):
            return -1
        b = data[pos[0]]
        pos[0] += 1
        return b - 256 if b > 127 else b
    return get


def _ask(read, get) -> str:
    try:
        return str(read(get))
    except IndexError:
        return "underflow"
    except IllegalArgument as e:
        return f"IllegalArgumentException: {e}"


def test_varints_read_as_kafkas_byte_utils_reads_them(tmp_path: Path):
    rng = random.Random(20261128)
    cases = [b"\x00", b"\x7f", b"\xff\xff\xff\xff\x0f", b"\xff\xff\xff\xff\x8f", b"\x80" * 5, b"\x80" * 10 + b"\x01",
             b"\xff" * 9 + b"\x01", b"\x80"]
    while len(cases) < 300:
        n = rng.randint(1, 11)
        cases.append(bytes(rng.choice([rng.randrange(256), rng.randrange(128, 256), rng.randrange(128)])
                           for _ in range(n)))
    (tmp_path / "Varints.java").write_text(JAVA)
    classpath = f"{KafkaInstall('4.4.0').home / 'libs' / '*'}{os.pathsep}{tmp_path}"
    subprocess.run(["javac", "-cp", classpath, "-d", str(tmp_path), str(tmp_path / "Varints.java")], check=True,
                   timeout=120)
    proc = subprocess.run(["java", "-cp", classpath, "Varints"], check=True, timeout=120, capture_output=True,
                          text=True, input="".join(c.hex() + "\n" for c in cases))
    java = proc.stdout.split("\n")[:len(cases)]
    ours = ["\t".join([_ask(read_unsigned_varint, _buffer(c)), _ask(read_varint, _buffer(c)),
                       _ask(read_varlong, _buffer(c)), _ask(read_varint, _stream(c))]) for c in cases]
    assert ours == java
    assert sum("IllegalArgumentException" in j for j in java) >= 20 and sum("-" in j for j in java) >= 20
