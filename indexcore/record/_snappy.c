/* Raw snappy compression byte for byte as snappy-java 1.1.10.x (Kafka 4.4's, and 3.9's 1.1.10.5) writes it: the
 * Google snappy 1.1.10 its jar bundles for Linux x86_64, built without SSE4.2 or ARM CRC (so the multiplicative hash,
 * 1.1.9's ((bytes * kMagic) >> 18) & mask, and 1.1.x's 2^14-entry table). Other Python snappy libraries give other
 * bytes: cramjam and python-snappy compress as snappy 1.1.8, pyarrow and pysnappy bundle 1.2.x (a table twice as
 * big). Only the bytes produced matter here; the original's speed tricks are replaced by their plain meaning.
 *
 * A compress-only C port of snappy::RawCompress (snappy.cc 1.1.10: Compress, CalculateTableSize, CompressFragment,
 * EmitLiteral, EmitCopy, FindMatchLength), under Google's licence:
 *
 * Copyright 2005 and onwards Google Inc. All rights reserved.
 *
 * Redistribution and use in source and binary forms, with or without modification, are permitted provided that the
 * following conditions are met:
 *   * Redistributions of source code must retain the above copyright notice, this list of conditions and the
 *     following disclaimer.
 *   * Redistributions in binary form must reproduce the above copyright notice, this list of conditions and the
 *     following disclaimer in the documentation and/or other materials provided with the distribution.
 *   * Neither the name of Google Inc. nor the names of its contributors may be used to endorse or promote products
 *     derived from this software without specific prior written permission.
 *
 * THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS "AS IS" AND ANY EXPRESS OR IMPLIED WARRANTIES,
 * INCLUDING, BUT NOT LIMITED TO, THE IMPLIED WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE ARE
 * DISCLAIMED. IN NO EVENT SHALL THE COPYRIGHT OWNER OR CONTRIBUTORS BE LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL,
 * SPECIAL, EXEMPLARY, OR CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF SUBSTITUTE GOODS OR
 * SERVICES; LOSS OF USE, DATA, OR PROFITS; OR BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY,
 * WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE OR OTHERWISE) ARISING IN ANY WAY OUT OF THE
 * USE OF THIS SOFTWARE, EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define SNAPPY_BLOCK_SIZE 65536u
#define SNAPPY_MIN_TABLE 256u
#define SNAPPY_MAX_TABLE 16384u /* kMaxHashTableBits = 14 (1.2.x: 15) */
#define SNAPPY_INPUT_MARGIN 15u

static inline uint32_t ld32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* 1.1.9+ hash (commit 6835abd): ((bytes * kMagic) >> 18) & (table_size - 1); 1.1.8 and the Rust snap
 * crate used (bytes * kMagic) >> (32 - log2(table_size)), which differs for tables < 2^14. */
static inline uint32_t hash_index(uint32_t bytes, uint32_t table_mask) {
    return ((bytes * 0x1e35a7bdu) >> 18) & table_mask;
}

static uint32_t table_size_for(size_t n) {
    if (n > SNAPPY_MAX_TABLE) return SNAPPY_MAX_TABLE;
    if (n < SNAPPY_MIN_TABLE) return SNAPPY_MIN_TABLE;
    uint32_t t = 1;
    while (t < n) t <<= 1; /* Log2Ceiling */
    return t;
}

static uint8_t *emit_literal(uint8_t *op, const uint8_t *lit, size_t len) {
    size_t n = len - 1;
    if (n < 60) {
        *op++ = (uint8_t)(n << 2);
    } else {
        int count = 0;
        for (size_t v = n; v; v >>= 8) count++;
        *op++ = (uint8_t)((59 + count) << 2);
        for (int i = 0; i < count; i++) *op++ = (uint8_t)(n >> (8 * i));
    }
    memcpy(op, lit, len);
    return op + len;
}

static uint8_t *emit_copy_at_most_64(uint8_t *op, size_t offset, size_t len) {
    if (len < 12 && offset < 2048) { /* COPY_1_BYTE_OFFSET */
        *op++ = (uint8_t)(1 | ((len - 4) << 2) | ((offset >> 8) << 5));
        *op++ = (uint8_t)offset;
    } else { /* COPY_2_BYTE_OFFSET */
        *op++ = (uint8_t)(2 | ((len - 1) << 2));
        *op++ = (uint8_t)offset;
        *op++ = (uint8_t)(offset >> 8);
    }
    return op;
}

static uint8_t *emit_copy(uint8_t *op, size_t offset, size_t len) {
    if (len < 12) return emit_copy_at_most_64(op, offset, len);
    while (len >= 68) {
        op = emit_copy_at_most_64(op, offset, 64);
        len -= 64;
    }
    if (len > 64) {
        op = emit_copy_at_most_64(op, offset, 60);
        len -= 60;
    }
    return emit_copy_at_most_64(op, offset, len);
}

static size_t match_length(const uint8_t *s1, const uint8_t *s2, const uint8_t *s2_limit) {
    size_t m = 0;
    while (s2 + m < s2_limit && s1[m] == s2[m]) m++;
    return m;
}

static uint8_t *compress_fragment(const uint8_t *in, size_t n, uint8_t *op, uint16_t *table,
                                  uint32_t table_size) {
    const uint32_t mask = table_size - 1;
    size_t ip = 0, next_emit, cand;
    memset(table, 0, table_size * sizeof(uint16_t));
    if (n >= SNAPPY_INPUT_MARGIN) {
        const size_t ip_limit = n - SNAPPY_INPUT_MARGIN;
        for (;;) {
            next_emit = ip++;
            uint32_t skip = 32;
            if (ip + 16 <= ip_limit) { /* ip may be ip_limit + 1 when n == 15 */
                for (uint32_t i = 0; i < 16; i++) {
                    uint32_t dword = ld32(in + ip + i);
                    uint16_t *e = &table[hash_index(dword, mask)];
                    cand = *e;
                    *e = (uint16_t)(ip + i);
                    if (ld32(in + cand) == dword) {
                        ip += i;
                        op = emit_literal(op, in + next_emit, ip - next_emit);
                        goto emit_match;
                    }
                }
                ip += 16;
                skip += 16;
            }
            for (;;) {
                uint32_t dword = ld32(in + ip);
                uint16_t *e = &table[hash_index(dword, mask)];
                uint32_t step = skip >> 5;
                skip += step;
                size_t next_ip = ip + step;
                if (next_ip > ip_limit) {
                    ip = next_emit;
                    goto emit_remainder;
                }
                cand = *e;
                *e = (uint16_t)ip;
                if (dword == ld32(in + cand)) break;
                ip = next_ip;
            }
            op = emit_literal(op, in + next_emit, ip - next_emit);
        emit_match:
            do {
                size_t base = ip;
                size_t matched = 4 + match_length(in + cand + 4, in + ip + 4, in + n);
                ip += matched;
                op = emit_copy(op, base - cand, matched);
                if (ip >= ip_limit) goto emit_remainder;
                table[hash_index(ld32(in + ip - 1), mask)] = (uint16_t)(ip - 1);
                uint16_t *e = &table[hash_index(ld32(in + ip), mask)];
                cand = *e;
                *e = (uint16_t)ip;
            } while (ld32(in + ip) == ld32(in + cand));
        }
    }
emit_remainder:
    if (ip < n) op = emit_literal(op, in + ip, n - ip);
    return op;
}

/* Worst-case output size (snappy::MaxCompressedLength). */
static size_t snappy1110_max_compressed_length(size_t n) { return 32 + n + n / 6; }

/* Compresses in[0..n) into out (at least snappy1110_max_compressed_length(n) bytes); returns the length. */
static size_t snappy1110_compress(const uint8_t *in, size_t n, uint8_t *out) {
    uint16_t table[SNAPPY_MAX_TABLE];
    uint8_t *op = out;
    size_t v = n; /* varint32 of the uncompressed length */
    while (v >= 0x80) {
        *op++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *op++ = (uint8_t)v;
    for (size_t pos = 0; pos < n;) {
        size_t frag = n - pos < SNAPPY_BLOCK_SIZE ? n - pos : SNAPPY_BLOCK_SIZE;
        op = compress_fragment(in + pos, frag, op, table, table_size_for(frag));
        pos += frag;
    }
    return (size_t)(op - out);
}


static PyObject *compress_raw(PyObject *self, PyObject *arg) {
    Py_buffer in;
    if (PyObject_GetBuffer(arg, &in, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)snappy1110_max_compressed_length((size_t)in.len));
    if (out) {
        size_t k;
        Py_BEGIN_ALLOW_THREADS
        k = snappy1110_compress((const uint8_t *)in.buf, (size_t)in.len, (uint8_t *)PyBytes_AS_STRING(out));
        Py_END_ALLOW_THREADS
        if (_PyBytes_Resize(&out, (Py_ssize_t)k) < 0) out = NULL;
    }
    PyBuffer_Release(&in);
    return out;
}

static PyMethodDef methods[] = {
    {"compress_raw", compress_raw, METH_O, "compress_raw(data): raw snappy as snappy-java 1.1.10.x writes it"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "segdex.indexcore.record._snappy", "snappy-java's raw snappy compression.", -1, methods,
};

PyMODINIT_FUNC PyInit__snappy(void) { return PyModule_Create(&module_def); }
