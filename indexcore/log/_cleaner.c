/* The log cleaner's native kernel: Kafka's SkimpyOffsetMap (digest -> latest offset) and the two per-batch loops
 * of a cleaning round over the batches that need no producer or transaction state: Cleaner.buildOffsetMapForSegment
 * and Cleaner.cleanInto's filter (log/cleaner.py holds the rules; this file runs them for "plain" batches).
 *
 * A plain batch: magic 2, uncompressed, neither transactional nor control, no producer id. Every other batch, and
 * a plain one whose records do not parse, is handed back to Python at its position (status SPECIAL), which
 * handles that one batch and calls again after it. A plain batch kept whole is handed back as COPY (Python appends
 * its bytes and indexes it); one whose cleaning rebuilds it (some records kept, or a tombstone kept that needs a
 * delete horizon) as REBUILT with the bytes MemoryRecordsBuilder writes (records re-encoded with attributes 0 and
 * timestamp deltas from the new base, the CRC-32C through the scan kernel's function); one with nothing kept is
 * dropped here, its counts added.
 *
 * Digests are MD5 (Kafka 4.4's SkimpyOffsetMap) through libcrypto's one-shot MD5(), whose address the caller
 * passes (found with ctypes, as the scan kernel's CRC-32C function). The map answers what Kafka's answers: which
 * digests it holds, their offsets, its size and the latest offset; its table is a plain open-addressing one that
 * grows with the keys (Kafka's probing order never shows in a result).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scan/_layout.h"

#define DIGEST 16
#define RECORD_OVERHEAD_V0 14
#define DELETE_HORIZON_FLAG_MASK 64
#define TIMESTAMP_TYPE_MASK 8

enum { END = 0, FULL = 1, SPECIAL = 2, COPY = 3, REBUILT = 4 };
enum { PLAIN = -1 }; /* next_plain: a plain batch, its records parsed */

typedef unsigned char *(*md5_fn)(const unsigned char *d, size_t n, unsigned char *md);
/* crc32c_extend(crc, data, n) of google-crc32c, or a "raw" one taking and returning the uninverted register (the
 * crc32c package's hardware function): as the scan kernel calls them (scan/native.py). */
typedef uint32_t (*crc32c_fn)(uint32_t crc, const uint8_t *data, size_t n);

typedef struct {
    uint8_t digest[DIGEST];
    int64_t offset; /* -1: an empty slot */
} entry_t;

typedef struct {
    PyObject_HEAD
    entry_t *table;
    uint64_t mask; /* capacity - 1, capacity a power of two */
    Py_ssize_t size;
    Py_ssize_t slots; /* Kafka's slots: size never passes it */
    int64_t latest_offset;
    md5_fn md5;
    long long plain_batches; /* batches build and filter handled here, since the map was made */
    crc32c_fn crc; /* NULL: no rebuilding here */
    int crc_raw;
} OffsetMap;

static int64_t be64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}
static int32_t be32(const uint8_t *p) { return (int32_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]); }
static int16_t be16(const uint8_t *p) { return (int16_t)((uint16_t)p[0] << 8 | p[1]); }

/* A zig-zag varint (varlong) at *pos below end; 0 when truncated or too long. */
static int read_varint(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pos, int64_t *out) {
    uint64_t raw = 0;
    int shift = 0;
    for (;;) {
        if (*pos >= end) return 0;
        uint8_t b = buf[(*pos)++];
        raw |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
        if (shift > 63) return 0;
    }
    *out = (int64_t)(raw >> 1) ^ -(int64_t)(raw & 1);
    return 1;
}

/* A length-prefixed field (-1: null); 0 when it runs past end. */
static int read_field(const uint8_t *buf, Py_ssize_t end, Py_ssize_t *pos, const uint8_t **data, int64_t *len) {
    if (!read_varint(buf, end, pos, len)) return 0;
    if (*len < 0) { *data = NULL; return 1; }
    if (*pos + *len > end) return 0;
    *data = buf + *pos;
    *pos += *len;
    return 1;
}

typedef struct {
    int64_t timestamp_delta;
    int64_t offset_delta;
    const uint8_t *key, *value;
    int64_t key_len, value_len;
    int value_null;
    int64_t headers; /* header count */
    Py_ssize_t headers_at; /* the first header's position */
    int kept;
} rec_t;

/* The records of a plain batch, checked as records.v2_records checks them; -1 when they do not parse. */
static Py_ssize_t parse_records(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end, int32_t count, rec_t **recs,
                                Py_ssize_t *cap) {
    if (count < 0) return -1;
    if (count > *cap) {
        rec_t *grown = realloc(*recs, sizeof(rec_t) * (size_t)count);
        if (!grown) return -1;
        *recs = grown;
        *cap = count;
    }
    Py_ssize_t pos = start;
    for (int32_t i = 0; i < count; i++) {
        int64_t length;
        const uint8_t *value, *hk, *hv;
        int64_t value_len, hk_len, hv_len;
        rec_t *r = &(*recs)[i];
        if (!read_varint(buf, end, &pos, &length)) return -1;
        Py_ssize_t rec_end = pos + length;
        if (length < 0 || rec_end > end) return -1;
        pos += 1; /* attributes */
        if (!read_varint(buf, end, &pos, &r->timestamp_delta)) return -1;
        if (!read_varint(buf, end, &pos, &r->offset_delta)) return -1;
        if (!read_field(buf, end, &pos, &r->key, &r->key_len)) return -1;
        if (!read_field(buf, end, &pos, &value, &value_len)) return -1;
        r->value = value;
        r->value_len = value_len;
        r->value_null = value == NULL;
        int64_t headers;
        if (!read_varint(buf, end, &pos, &headers)) return -1;
        r->headers = headers;
        r->headers_at = pos;
        for (int64_t h = 0; h < headers; h++) {
            if (!read_field(buf, end, &pos, &hk, &hk_len)) return -1;
            if (!read_field(buf, end, &pos, &hv, &hv_len)) return -1;
        }
        if (pos != rec_end) return -1;
        if (i == count - 1 && pos != end) return -1;
    }
    return count;
}

static entry_t *find_slot(OffsetMap *m, const uint8_t *digest) {
    uint64_t h;
    memcpy(&h, digest, 8);
    for (uint64_t i = h & m->mask;; i = (i + 1) & m->mask) {
        entry_t *e = &m->table[i];
        if (e->offset < 0 || memcmp(e->digest, digest, DIGEST) == 0) return e;
    }
}

static int grow(OffsetMap *m) {
    uint64_t cap = (m->mask + 1) * 2;
    entry_t *old = m->table, *table = malloc(sizeof(entry_t) * cap);
    if (!table) return 0;
    for (uint64_t i = 0; i < cap; i++) table[i].offset = -1;
    uint64_t old_cap = m->mask + 1;
    m->table = table;
    m->mask = cap - 1;
    for (uint64_t i = 0; i < old_cap; i++) {
        if (old[i].offset >= 0) *find_slot(m, old[i].digest) = old[i];
    }
    free(old);
    return 1;
}

/* SkimpyOffsetMap.put; 0 on no memory. */
static int map_put(OffsetMap *m, const uint8_t *key, size_t len, int64_t offset) {
    uint8_t digest[DIGEST];
    m->md5(key, len, digest);
    entry_t *e = find_slot(m, digest);
    if (e->offset < 0) {
        memcpy(e->digest, digest, DIGEST);
        m->size++;
    }
    e->offset = offset;
    m->latest_offset = offset;
    if ((uint64_t)m->size * 10 > (m->mask + 1) * 7 && !grow(m)) return 0;
    return 1;
}

static int64_t map_get(OffsetMap *m, const uint8_t *key, size_t len) {
    uint8_t digest[DIGEST];
    m->md5(key, len, digest);
    entry_t *e = find_slot(m, digest);
    return e->offset;
}

static int plain(const uint8_t *b) {
    int16_t attributes = be16(b + ATTRIBUTES_OFFSET);
    return b[MAGIC_OFFSET] == 2 && !(attributes & (COMPRESSION_CODEC_MASK | TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK))
        && be64(b + PRODUCER_ID_OFFSET) == -1;
}

static int map_clear_table(OffsetMap *m, uint64_t cap) {
    entry_t *table = malloc(sizeof(entry_t) * cap);
    if (!table) return 0;
    for (uint64_t i = 0; i < cap; i++) table[i].offset = -1;
    free(m->table);
    m->table = table;
    m->mask = cap - 1;
    m->size = 0;
    return 1;
}

static int OffsetMap_init(OffsetMap *m, PyObject *args, PyObject *kw) {
    Py_ssize_t slots;
    unsigned long long address, crc_address = 0;
    int crc_raw = 0;
    if (!PyArg_ParseTuple(args, "nK|Kp", &slots, &address, &crc_address, &crc_raw)) return -1;
    m->slots = slots;
    m->md5 = (md5_fn)(uintptr_t)address;
    m->crc = (crc32c_fn)(uintptr_t)crc_address;
    m->crc_raw = crc_raw;
    if (m->crc) { /* the CRC-32C check value */
        uint32_t c = m->crc_raw ? ~m->crc(0xFFFFFFFFu, (const uint8_t *)"123456789", 9)
                                : m->crc(0, (const uint8_t *)"123456789", 9);
        if (c != 0xE3069283u) {
            PyErr_SetString(PyExc_ValueError, "the CRC-32C function given does not compute CRC-32C");
            return -1;
        }
    }
    m->latest_offset = -1;
    if (!map_clear_table(m, 1024)) { PyErr_NoMemory(); return -1; }
    return 0;
}

static void OffsetMap_dealloc(OffsetMap *m) {
    free(m->table);
    Py_TYPE(m)->tp_free((PyObject *)m);
}

static PyObject *OffsetMap_put(OffsetMap *m, PyObject *args) {
    Py_buffer key;
    long long offset;
    if (!PyArg_ParseTuple(args, "y*L", &key, &offset)) return NULL;
    if (m->size >= m->slots) {
        PyBuffer_Release(&key);
        PyErr_SetString(PyExc_ValueError, "attempted to add a new entry to a full offset map");
        return NULL;
    }
    int ok = map_put(m, key.buf, (size_t)key.len, offset);
    PyBuffer_Release(&key);
    if (!ok) return PyErr_NoMemory();
    Py_RETURN_NONE;
}

static PyObject *OffsetMap_get(OffsetMap *m, PyObject *args) {
    Py_buffer key;
    if (!PyArg_ParseTuple(args, "y*", &key)) return NULL;
    int64_t offset = map_get(m, key.buf, (size_t)key.len);
    PyBuffer_Release(&key);
    return PyLong_FromLongLong(offset);
}

static PyObject *OffsetMap_clear(OffsetMap *m, PyObject *unused) {
    if (!map_clear_table(m, 1024)) return PyErr_NoMemory();
    m->latest_offset = -1;
    Py_RETURN_NONE;
}

/* The batch at pos, as both loops take it: END when no whole batch is left (a partial one at the end), SPECIAL when
 * it is Python's (a bad size, not plain, records that do not parse), else PLAIN with its end and records count and
 * its records in *recs. */
static int next_plain(const uint8_t *buf, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t *end, int32_t *count,
                      rec_t **recs, Py_ssize_t *cap) {
    if (pos >= n - HEADER_SIZE_UP_TO_MAGIC) return END;
    const uint8_t *b = buf + pos;
    int32_t size = be32(b + LENGTH_OFFSET);
    if (size < RECORD_OVERHEAD_V0) return SPECIAL;
    if (pos > n - LOG_OVERHEAD - size) return END;
    if (size < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD || !plain(b)) return SPECIAL;
    *end = pos + LOG_OVERHEAD + size;
    *count = be32(b + RECORDS_COUNT_OFFSET);
    return parse_records(buf, pos + RECORDS_OFFSET, *end, *count, recs, cap) < 0 ? SPECIAL : PLAIN;
}

/* build(buf, position, start, max_desired) -> (status, position): Cleaner.buildOffsetMapForSegment's loop over
 * plain batches from position. END: no whole batch left; FULL: the map reached max_desired keys at a record
 * (the round ends there); SPECIAL: the batch at position is Python's. */
static PyObject *OffsetMap_build(OffsetMap *m, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    long long start;
    Py_ssize_t max_desired;
    long long plain_batches = 0; /* added to the map's count under the GIL: threads filter with one map */
    if (!PyArg_ParseTuple(args, "y*nLn", &view, &pos, &start, &max_desired)) return NULL;
    const uint8_t *buf = view.buf;
    Py_ssize_t n = view.len;
    rec_t *recs = NULL;
    Py_ssize_t cap = 0;
    int status = END, nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        Py_ssize_t end;
        int32_t count;
        int next = next_plain(buf, n, pos, &end, &count, &recs, &cap);
        if (next != PLAIN) { status = next; break; }
        const uint8_t *b = buf + pos;
        int64_t base = be64(b + BASE_OFFSET_OFFSET);
        for (int32_t i = 0; i < count && status == END; i++) {
            int64_t offset = base + recs[i].offset_delta;
            if (recs[i].key == NULL || offset < start) continue;
            if (m->size < max_desired) {
                if (!map_put(m, recs[i].key, (size_t)recs[i].key_len, offset)) { nomem = 1; status = FULL; }
            } else {
                status = FULL;
            }
        }
        if (status != END) break;
        int64_t last = base + be32(b + LAST_OFFSET_DELTA_OFFSET);
        if (last >= start) m->latest_offset = last;
        plain_batches++;
        pos = end;
    }
    Py_END_ALLOW_THREADS
    m->plain_batches += plain_batches;
    free(recs);
    PyBuffer_Release(&view);
    if (nomem) return PyErr_NoMemory();
    return Py_BuildValue("(in)", status, pos);
}


static uint8_t *write_varint(uint8_t *op, int64_t value) {
    uint64_t z = ((uint64_t)value << 1) ^ (uint64_t)(value >> 63);
    while (z >= 0x80) {
        *op++ = (uint8_t)((z & 0x7F) | 0x80);
        z >>= 7;
    }
    *op++ = (uint8_t)z;
    return op;
}

static size_t varint_size(int64_t value) {
    uint8_t scratch[10];
    return (size_t)(write_varint(scratch, value) - scratch);
}

static uint8_t *write_field(uint8_t *op, const uint8_t *data, int64_t len) {
    if (data == NULL) return write_varint(op, -1);
    op = write_varint(op, len);
    memcpy(op, data, (size_t)len);
    return op + len;
}

static void put_be64(uint8_t *p, int64_t v) { for (int i = 7; i >= 0; i--, v = (int64_t)((uint64_t)v >> 8)) p[i] = (uint8_t)v; }
static void put_be32(uint8_t *p, int32_t v) { for (int i = 3; i >= 0; i--, v = (int32_t)((uint32_t)v >> 8)) p[i] = (uint8_t)v; }
static void put_be16(uint8_t *p, int16_t v) { p[0] = (uint8_t)((uint16_t)v >> 8); p[1] = (uint8_t)v; }

/* One kept record as DefaultRecord.writeTo writes it (attributes 0), its timestamp delta from the new base. */
static uint8_t *write_record(uint8_t *op, const uint8_t *buf, Py_ssize_t end, const rec_t *r, int64_t ts_delta) {
    uint8_t body[32]; /* the fixed-size head: attributes, two varlongs */
    uint8_t *bp = body;
    *bp++ = 0;
    bp = write_varint(bp, ts_delta);
    bp = write_varint(bp, r->offset_delta);
    size_t len = (size_t)(bp - body) + varint_size(r->key == NULL ? -1 : r->key_len)
        + (r->key ? (size_t)r->key_len : 0) + varint_size(r->value_null ? -1 : r->value_len)
        + (r->value_null ? 0 : (size_t)r->value_len) + varint_size(r->headers);
    Py_ssize_t hp = r->headers_at;
    for (int64_t h = 0; h < r->headers; h++) {
        const uint8_t *hk, *hv;
        int64_t hk_len, hv_len;
        read_field(buf, end, &hp, &hk, &hk_len);
        read_field(buf, end, &hp, &hv, &hv_len);
        len += varint_size(hk ? hk_len : -1) + (hk ? (size_t)hk_len : 0) + varint_size(hv ? hv_len : -1)
            + (hv ? (size_t)hv_len : 0);
    }
    op = write_varint(op, (int64_t)len);
    memcpy(op, body, (size_t)(bp - body));
    op += bp - body;
    op = write_field(op, r->key, r->key_len);
    op = write_field(op, r->value_null ? NULL : r->value, r->value_len);
    op = write_varint(op, r->headers);
    hp = r->headers_at;
    for (int64_t h = 0; h < r->headers; h++) {
        const uint8_t *hk, *hv;
        int64_t hk_len, hv_len;
        read_field(buf, end, &hp, &hk, &hk_len);
        read_field(buf, end, &hp, &hv, &hv_len);
        op = write_field(op, hk, hk_len);
        op = write_field(op, hv, hv_len);
    }
    return op;
}

/* MemoryRecordsBuilder over a plain batch's kept records (memory_records_builder.rebuild_batch): into out (room for
 * the batch's size + 13 bytes a record), its length returned. */
static size_t rebuild(const OffsetMap *m, const uint8_t *buf, Py_ssize_t pos, Py_ssize_t end, const rec_t *recs,
                      int32_t count, int32_t kept, int64_t horizon, uint8_t *out) {
    const uint8_t *b = buf + pos;
    int16_t attributes = be16(b + ATTRIBUTES_OFFSET) & ~DELETE_HORIZON_FLAG_MASK;
    int log_append = (attributes & TIMESTAMP_TYPE_MASK) != 0;
    int64_t orig_base_ts = be64(b + BASE_TIMESTAMP_OFFSET), orig_max_ts = be64(b + MAX_TIMESTAMP_OFFSET);
    int64_t base_ts = NO_TIMESTAMP, max_ts = NO_TIMESTAMP;
    int first = 1;
    for (int32_t i = 0; i < count; i++) {
        if (!recs[i].kept) continue;
        int64_t ts = log_append ? orig_max_ts : orig_base_ts + recs[i].timestamp_delta;
        if (first) { base_ts = ts; first = 0; }
        if (ts > max_ts) max_ts = ts;
    }
    if (horizon >= 0) {
        attributes |= DELETE_HORIZON_FLAG_MASK;
        base_ts = horizon;
    }
    if (log_append) max_ts = orig_max_ts;
    uint8_t *op = out + RECORD_BATCH_OVERHEAD;
    for (int32_t i = 0; i < count; i++) {
        if (!recs[i].kept) continue;
        int64_t ts = log_append ? orig_max_ts : orig_base_ts + recs[i].timestamp_delta;
        op = write_record(op, buf, end, &recs[i], ts - base_ts);
    }
    size_t size = (size_t)(op - out);
    memcpy(out, b, RECORD_BATCH_OVERHEAD); /* base offset, leader epoch, producer fields, last offset delta kept */
    put_be32(out + LENGTH_OFFSET, (int32_t)(size - LOG_OVERHEAD));
    out[MAGIC_OFFSET] = 2;
    put_be16(out + ATTRIBUTES_OFFSET, attributes);
    put_be64(out + BASE_TIMESTAMP_OFFSET, base_ts);
    put_be64(out + MAX_TIMESTAMP_OFFSET, max_ts);
    put_be32(out + RECORDS_COUNT_OFFSET, kept);
    const uint8_t *crc_from = out + ATTRIBUTES_OFFSET;
    size_t crc_len = size - ATTRIBUTES_OFFSET;
    uint32_t crc = m->crc_raw ? ~m->crc(0xFFFFFFFFu, crc_from, crc_len) : m->crc(0, crc_from, crc_len);
    put_be32(out + CRC_OFFSET, (int32_t)crc);
    return size;
}

/* Whether data is well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF): a header key
 * that is not would be rewritten by Java's String round trip, which the Python path does as Java does. */
static int utf8_valid(const uint8_t *p, int64_t n) {
    int64_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) { i++; continue; }
        int len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; }
        else return 0;
        if (i + len > n) return 0;
        for (int k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
            return 0;
        i += len;
    }
    return 1;
}

/* Whether every kept record's header keys survive a String round trip unchanged. */
static int header_keys_valid(const uint8_t *buf, Py_ssize_t end, const rec_t *recs, int32_t count) {
    for (int32_t i = 0; i < count; i++) {
        if (!recs[i].kept) continue;
        Py_ssize_t hp = recs[i].headers_at;
        for (int64_t h = 0; h < recs[i].headers; h++) {
            const uint8_t *hk, *hv;
            int64_t hk_len, hv_len;
            read_field(buf, end, &hp, &hk, &hk_len);
            read_field(buf, end, &hp, &hv, &hv_len);
            if (hk == NULL || !utf8_valid(hk, hk_len)) return 0; /* a null key: Python's path decides */
        }
    }
    return 1;
}

/* filter(buf, position, now_ms, high_watermark, delete_retention_ms) -> (status, position, size, records_read,
 * records_kept, tombstones_removed, tombstones_kept, bytes_read, rebuilt, max_offset): cleanInto over plain batches
 * from position
 * (the batch ending at the high watermark is Python's: it stays even when emptied). COPY: the batch at position
 * (size bytes) is kept whole; REBUILT: it is kept as the bytes rebuilt (with a CRC function given, else SPECIAL). The
 * counts are those of the batches dropped here and of the COPY or REBUILT batch; max_offset is the kept batch's
 * largest kept record's offset (filterTo's maxOffset: the last offset of one kept whole). */
static PyObject *OffsetMap_filter(OffsetMap *m, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    long long now_ms, high_watermark, delete_retention_ms;
    long long plain_batches = 0; /* added to the map's count under the GIL: threads filter with one map */
    if (!PyArg_ParseTuple(args, "y*nLLL", &view, &pos, &now_ms, &high_watermark, &delete_retention_ms)) return NULL;
    const uint8_t *buf = view.buf;
    Py_ssize_t n = view.len, size_out = 0;
    long long read = 0, kept_total = 0, tomb_removed = 0, tomb_kept = 0, bytes_read = 0;
    rec_t *recs = NULL;
    Py_ssize_t cap = 0;
    uint8_t *rebuilt = NULL;
    size_t rebuilt_size = 0;
    int status = END, nomem = 0;
    long long max_offset = -1;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        Py_ssize_t end;
        int32_t count;
        int next = next_plain(buf, n, pos, &end, &count, &recs, &cap);
        if (next != PLAIN) { status = next; break; }
        const uint8_t *b = buf + pos;
        int32_t size = (int32_t)(end - pos - LOG_OVERHEAD);
        int64_t base = be64(b + BASE_OFFSET_OFFSET);
        int64_t last = base + be32(b + LAST_OFFSET_DELTA_OFFSET);
        if (last + 1 == high_watermark) { status = SPECIAL; break; }
        int16_t attributes = be16(b + ATTRIBUTES_OFFSET);
        int has_horizon = (attributes & DELETE_HORIZON_FLAG_MASK) != 0;
        int64_t horizon_now = has_horizon ? be64(b + BASE_TIMESTAMP_OFFSET) : NO_TIMESTAMP;
        int retain_deletes = !has_horizon || now_ms < horizon_now;
        int32_t kept = 0, kept_tombstones = 0, removed_tombstones = 0;
        int64_t max_kept = -1;
        for (int32_t i = 0; i < count; i++) {
            rec_t *r = &recs[i];
            int64_t offset = base + r->offset_delta;
            if (offset > m->latest_offset) r->kept = 1;
            else if (r->key == NULL) r->kept = 0;
            else r->kept = offset >= map_get(m, r->key, (size_t)r->key_len) && (!r->value_null || retain_deletes);
            if (r->kept) { kept++; kept_tombstones += r->value_null; if (offset > max_kept) max_kept = offset; }
            else removed_tombstones += r->value_null;
        }
        if (kept == 0) { /* DELETE_EMPTY with nothing kept: the batch goes */
            plain_batches++;
            read += count;
            tomb_removed += removed_tombstones;
            bytes_read += LOG_OVERHEAD + size;
            pos = end;
            continue;
        }
        int need_horizon = kept_tombstones && !has_horizon;
        if (kept < count || need_horizon) { /* rebuilt, with the horizon stamped where a tombstone needs one */
            if (!m->crc || !header_keys_valid(buf, end, recs, count)) { status = SPECIAL; break; }
            rebuilt = malloc((size_t)(LOG_OVERHEAD + size) + 13 * (size_t)count + RECORD_BATCH_OVERHEAD);
            if (!rebuilt) { nomem = 1; break; }
            int64_t horizon = need_horizon ? now_ms + delete_retention_ms : horizon_now;
            rebuilt_size = rebuild(m, buf, pos, end, recs, count, kept, horizon, rebuilt);
            status = REBUILT;
        } else {
            status = COPY;
        }
        read += count;
        kept_total += kept;
        tomb_kept += kept_tombstones;
        tomb_removed += removed_tombstones;
        bytes_read += LOG_OVERHEAD + size;
        size_out = LOG_OVERHEAD + size;
        max_offset = status == REBUILT ? max_kept : last;
        plain_batches++;
        break;
    }
    Py_END_ALLOW_THREADS
    m->plain_batches += plain_batches;
    free(recs);
    PyBuffer_Release(&view);
    if (nomem) return PyErr_NoMemory();
    PyObject *bytes = Py_None;
    if (rebuilt) {
        bytes = PyBytes_FromStringAndSize((const char *)rebuilt, (Py_ssize_t)rebuilt_size);
        free(rebuilt);
        if (!bytes) return NULL;
    } else {
        Py_INCREF(bytes);
    }
    return Py_BuildValue("(innLLLLLNL)", status, pos, size_out, read, kept_total, tomb_removed, tomb_kept, bytes_read,
                         bytes, max_offset);
}

static PyObject *OffsetMap_get_size(OffsetMap *m, void *closure) { return PyLong_FromSsize_t(m->size); }
static PyObject *OffsetMap_get_plain(OffsetMap *m, void *closure) { return PyLong_FromLongLong(m->plain_batches); }
static PyObject *OffsetMap_get_latest(OffsetMap *m, void *closure) { return PyLong_FromLongLong(m->latest_offset); }
static int OffsetMap_set_latest(OffsetMap *m, PyObject *value, void *closure) {
    long long v = PyLong_AsLongLong(value);
    if (v == -1 && PyErr_Occurred()) return -1;
    m->latest_offset = v;
    return 0;
}


static PyTypeObject OffsetMapType;

/* merge(other, limit) -> bool: another map's keys put into this one, each with other's offset (the partial map of a
 * later range: its offsets are the later ones), and its latest offset taken, when the keys this map would then hold
 * stay below limit; False, nothing changed, otherwise. */
static PyObject *OffsetMap_merge(OffsetMap *m, PyObject *args) {
    OffsetMap *o;
    Py_ssize_t limit;
    if (!PyArg_ParseTuple(args, "O!n", &OffsetMapType, &o, &limit)) return NULL;
    Py_ssize_t fresh = 0;
    uint64_t cap = o->mask + 1;
    for (uint64_t i = 0; i < cap; i++) {
        if (o->table[i].offset >= 0 && find_slot(m, o->table[i].digest)->offset < 0) fresh++;
    }
    if (m->size + fresh >= limit) Py_RETURN_FALSE;
    for (uint64_t i = 0; i < cap; i++) {
        if (o->table[i].offset < 0) continue;
        entry_t *e = find_slot(m, o->table[i].digest);
        if (e->offset < 0) {
            memcpy(e->digest, o->table[i].digest, DIGEST);
            m->size++;
        }
        e->offset = o->table[i].offset;
        if ((uint64_t)m->size * 10 > (m->mask + 1) * 7 && !grow(m)) return PyErr_NoMemory();
    }
    m->latest_offset = o->latest_offset;
    Py_RETURN_TRUE;
}

/* next_txn(buf, position) -> position: from position past every whole batch that is neither transactional nor
 * control (a v0/v1 entry never is), to the first that is or that Python must read (a size below a v0 record's, a
 * magic above 2), or to len(buf) when no whole batch is left. */
static PyObject *next_txn(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "y*n", &view, &pos)) return NULL;
    const uint8_t *buf = view.buf;
    Py_ssize_t n = view.len;
    Py_BEGIN_ALLOW_THREADS
    for (;;) {
        if (pos >= n - HEADER_SIZE_UP_TO_MAGIC) { pos = n; break; }
        const uint8_t *b = buf + pos;
        int32_t size = be32(b + LENGTH_OFFSET);
        if (size < RECORD_OVERHEAD_V0 || b[MAGIC_OFFSET] > 2) break;
        if (pos > n - LOG_OVERHEAD - size) { pos = n; break; }
        if (b[MAGIC_OFFSET] == 2) {
            if (size < RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) break;
            if (be16(b + ATTRIBUTES_OFFSET) & (TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK)) break;
        }
        pos += LOG_OVERHEAD + size;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(pos);
}

static PyMethodDef OffsetMap_methods[] = {
    {"put", (PyCFunction)OffsetMap_put, METH_VARARGS, "put(key, offset): the key's latest offset."},
    {"get", (PyCFunction)OffsetMap_get, METH_VARARGS, "get(key): the key's latest offset, -1 when absent."},
    {"clear", (PyCFunction)OffsetMap_clear, METH_NOARGS, "clear(): no keys, latest offset -1."},
    {"build", (PyCFunction)OffsetMap_build, METH_VARARGS, "The offset map's loop over plain batches."},
    {"filter", (PyCFunction)OffsetMap_filter, METH_VARARGS, "cleanInto's loop over plain batches."},
    {"merge", (PyCFunction)OffsetMap_merge, METH_VARARGS, "merge(other, limit): a later range's keys, if they fit."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef OffsetMap_getset[] = {
    {"size", (getter)OffsetMap_get_size, NULL, "distinct keys put", NULL},
    {"plain_batches", (getter)OffsetMap_get_plain, NULL, "batches the loops handled in C", NULL},
    {"latest_offset", (getter)OffsetMap_get_latest, (setter)OffsetMap_set_latest, "the last offset put or passed", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject OffsetMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "segdex.indexcore.log._cleaner.OffsetMap",
    .tp_basicsize = sizeof(OffsetMap),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "OffsetMap(slots, md5_address): SkimpyOffsetMap's answers, and the cleaner's loops over plain batches.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)OffsetMap_init,
    .tp_dealloc = (destructor)OffsetMap_dealloc,
    .tp_methods = OffsetMap_methods,
    .tp_getset = OffsetMap_getset,
};

static PyMethodDef module_methods[] = {
    {"next_txn", next_txn, METH_VARARGS, "next_txn(buf, position): the next transactional or control batch."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "segdex.indexcore.log._cleaner", "Native kernel of the log cleaner.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__cleaner(void) {
    if (PyType_Ready(&OffsetMapType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    Py_INCREF(&OffsetMapType);
    if (PyModule_AddObject(m, "OffsetMap", (PyObject *)&OffsetMapType) < 0) return NULL;
    PyModule_AddIntConstant(m, "END", END);
    PyModule_AddIntConstant(m, "FULL", FULL);
    PyModule_AddIntConstant(m, "SPECIAL", SPECIAL);
    PyModule_AddIntConstant(m, "COPY", COPY);
    PyModule_AddIntConstant(m, "REBUILT", REBUILT);
    return m;
}
