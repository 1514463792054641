/*
 * indexcore.scan._fastscan: the native twin of indexcore.scan.python_kernel.scan_simple.
 *
 * A kernel advances over valid, plain (non-transactional, non-control) magic-2
 * batches of the accepted partition leader epoch and of at most one producer id
 * (the run's: its last batch is left in the S_RUN_* slots), appending offset/time index
 * entries in file format (big-endian) to two bytearrays, and stops BEFORE any
 * batch that is not such a batch or whose index appends would break a rule;
 * Python's reference loop then handles that batch. Same arguments, same effect
 * on the state slots and bytearrays as scan_simple (see log_segment.py).
 *
 * CRC-32C comes from a library Python finds (indexcore/log/scan/native.py) and
 * hands to make_kernel() as a function address: the crc32c package's hardware
 * crc32c_hw (three interleaved streams: 10 GB/s here, where Google's
 * crc32c_extend of the google-crc32c wheel gives 5.8 GB/s), else Google's.
 * No hand-written CRC here.
 *
 * On a big range a helper thread verifies the CRCs of every other block of
 * HELPER_BLOCK bytes ahead of the scan, which computes the others itself (see
 * helper_t). Only the scan decides anything, in file order: the helper only
 * tells it that a batch's stored CRC is right, or where the first wrong one is.
 *
 * The scan runs without the GIL. The state array and the data buffer are held
 * through the buffer protocol, and so are the bytearrays while the GIL is
 * released, so no other thread can resize them under the scan. Index capacity
 * is reserved ahead in chunks and trimmed to the used size at the end.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

typedef uint32_t (*crc32c_extend_fn)(uint32_t crc, const uint8_t *data, size_t n);

/* A CRC-32C function and its convention: crc32c_extend() takes and returns the finished CRC (0 to start);
 * a "raw" one (Mark Adler's crc32c_hw of the crc32c package) takes and returns the register, inverted on
 * the way in and out. */
typedef struct {
    crc32c_extend_fn fn;
    int raw;
} crc_t;

static inline uint32_t crc_of(crc_t crc, const uint8_t *data, size_t n) {
    return crc.raw ? ~crc.fn(0xFFFFFFFFu, data, n) : crc.fn(0, data, n);
}

/* The state slots and the batch-header layout, generated from indexcore/log/scan/state.py and batch_header.py. */
#include "_layout.h"

#define OFFSET_ENTRY OFFSET_INDEX_ENTRY_SIZE
#define TIME_ENTRY TIME_INDEX_ENTRY_SIZE

static inline uint32_t be32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return __builtin_bswap32(v);
}
static inline uint64_t be64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
}
static inline void put32(uint8_t *p, uint32_t v) {
    v = __builtin_bswap32(v);
    memcpy(p, &v, 4);
}
static inline void put64(uint8_t *p, uint64_t v) {
    v = __builtin_bswap64(v);
    memcpy(p, &v, 8);
}

enum { SCAN_STOP = 0, SCAN_NEED_SPACE = 1 };

/*
 * The scan asks for every cache line PREFETCH_AHEAD bytes before it reaches it. The data comes from the
 * page cache through a fresh mapping, so from memory, and the hardware prefetchers stop at each 4 KiB page:
 * without this the header loads of the next batches wait on memory. Measured over 32 segments, one
 * process: 190 B batches -18 %, 1.1 KiB -9 %, 16 KiB unchanged; every line beats page starts only, and
 * 2 to 6 KiB ahead are alike. (Checking three batches' CRCs in interleaved SSE4.2 streams was tried too: it
 * is slower here, 1.04x at 190 B and 1.25x at 1.1 KiB, as the scan waits on memory, not on the CRC.)
 */
#define PREFETCH_AHEAD 4096
#define CACHE_LINE 64

/*
 * The CRC helper. It walks the batch headers from `start` under the same structural conditions as the
 * scan (so it sees the same batches), and checks the CRC of each batch whose start lies in an odd block
 * ((position - start) / HELPER_BLOCK odd). After each batch it publishes `progress` = the next batch's
 * start: every odd-block batch before `progress` has a right CRC. On a wrong one it publishes `bad` and
 * stops without moving `progress` past it. The scan checks even-block batches itself.
 */
#define HELPER_BLOCK (256 << 10)
#define HELPER_MIN_BYTES (4 << 20)

typedef struct {
    const uint8_t *buf;
    int64_t start, end;
    crc_t crc;
    _Alignas(64) _Atomic int64_t progress;
    _Atomic int64_t bad;
    _Atomic int done;
    _Alignas(64) _Atomic int stop;
} helper_t;

static inline int odd_block(int64_t start, int64_t position) {
    return (int)(((position - start) / HELPER_BLOCK) & 1);
}

static void *helper_main(void *arg) {
    helper_t *hp = (helper_t *)arg;
    const uint8_t *buf = hp->buf;
    const int64_t end = hp->end;
    int64_t pos = hp->start;
    while (pos < end - HEADER_SIZE_UP_TO_MAGIC && pos + RECORD_BATCH_OVERHEAD <= end) {
        if (atomic_load_explicit(&hp->stop, memory_order_relaxed))
            break;
        const uint8_t *h = buf + pos;
        int64_t size = (int64_t)(int32_t)be32(h + LENGTH_OFFSET) + LOG_OVERHEAD;
        if ((int8_t)h[MAGIC_OFFSET] != 2 || size < RECORD_BATCH_OVERHEAD || pos > end - size)
            break;
        if (odd_block(hp->start, pos) && crc_of(hp->crc, h + ATTRIBUTES_OFFSET, (size_t)(size - ATTRIBUTES_OFFSET)) != be32(h + CRC_OFFSET)) {
            atomic_store_explicit(&hp->bad, pos, memory_order_relaxed);
            break;
        }
        pos += size;
        atomic_store_explicit(&hp->progress, pos, memory_order_release);
    }
    atomic_store_explicit(&hp->done, 1, memory_order_release);
    return NULL;
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* 1: the helper vouches for the batch at `position`; 0: its CRC is wrong; -1: the helper cannot say. */
static int helper_verdict(helper_t *hp, int64_t position, int64_t *seen_progress) {
    unsigned spins = 0;
    for (;;) {
        int64_t progress = atomic_load_explicit(&hp->progress, memory_order_acquire);
        *seen_progress = progress;
        if (progress > position)
            return 1;
        if (atomic_load_explicit(&hp->done, memory_order_acquire)) {
            progress = atomic_load_explicit(&hp->progress, memory_order_acquire);
            *seen_progress = progress;
            if (progress > position)
                return 1;
            return atomic_load_explicit(&hp->bad, memory_order_relaxed) == position ? 0 : -1;
        }
        if (++spins < 2000)
            cpu_relax();
        else
            sched_yield();
    }
}

typedef struct {
    int64_t *st;           /* the state slots */
    const uint8_t *buf;
    uint8_t *off;          /* offset index bytes: used, capacity */
    Py_ssize_t off_used, off_cap;
    uint8_t *tim;          /* time index bytes */
    Py_ssize_t tim_used, tim_cap;
    int64_t offset_max, time_max;
    crc_t crc;
    int threads;           /* 2: use a CRC helper thread on a big range */
} scan_ctx;

/* The loop of scan_simple. Runs without the GIL; touches only ctx. */
static int scan(scan_ctx *c) {
    int64_t *st = c->st;
    const uint8_t *buf = c->buf;
    const int64_t end = st[S_END], base = st[S_BASE_OFFSET], interval = st[S_INDEX_INTERVAL];
    const int64_t epoch = st[S_LEADER_EPOCH];
    int64_t position = st[S_POSITION];
    int64_t last_index_entry = st[S_LAST_INDEX_ENTRY];
    int64_t max_so_far = st[S_MAX_TIMESTAMP], off_of_max = st[S_OFFSET_OF_MAX_TIMESTAMP];
    int64_t first_offset = st[S_FIRST_OFFSET], last_offset_seen = st[S_LAST_OFFSET];
    int64_t batches = st[S_BATCHES], records = st[S_RECORDS], codecs = st[S_CODECS];
    int64_t magics = st[S_MAGICS];
    int64_t run_pid = st[S_RUN_PRODUCER_ID], run_epoch = st[S_RUN_PRODUCER_EPOCH];
    int64_t run_base_seq = st[S_RUN_BASE_SEQUENCE], run_base_offset = st[S_RUN_BASE_OFFSET];
    int64_t run_last_offset = st[S_RUN_LAST_OFFSET], run_max_ts = st[S_RUN_MAX_TIMESTAMP];
    int rc = SCAN_STOP;
    int64_t prefetched = (position + PREFETCH_AHEAD) & ~(int64_t)(CACHE_LINE - 1);

    helper_t helper;
    helper_t *hp = NULL;
    pthread_t helper_tid;
    int64_t seen_progress = position;
    if (c->threads > 1 && end - position >= HELPER_MIN_BYTES) {
        helper.buf = buf;
        helper.start = position;
        helper.end = end;
        helper.crc = c->crc;
        atomic_init(&helper.progress, position);
        atomic_init(&helper.bad, -1);
        atomic_init(&helper.done, 0);
        atomic_init(&helper.stop, 0);
        if (pthread_create(&helper_tid, NULL, helper_main, &helper) == 0)
            hp = &helper;
    }

    while (position < end - HEADER_SIZE_UP_TO_MAGIC) {
        if (position + RECORD_BATCH_OVERHEAD > end)
            break;
        const uint8_t *h = buf + position;
        int64_t base_offset = (int64_t)be64(h + BASE_OFFSET_OFFSET);
        int64_t size = (int64_t)(int32_t)be32(h + LENGTH_OFFSET) + LOG_OVERHEAD;
        int32_t leader_epoch = (int32_t)be32(h + PARTITION_LEADER_EPOCH_OFFSET);
        int8_t magic = (int8_t)h[MAGIC_OFFSET];
        uint32_t stored_crc = be32(h + CRC_OFFSET);
        int16_t attributes = (int16_t)(((uint16_t)h[ATTRIBUTES_OFFSET] << 8) | h[ATTRIBUTES_OFFSET + 1]);
        int32_t last_delta = (int32_t)be32(h + LAST_OFFSET_DELTA_OFFSET);
        int64_t batch_max_ts = (int64_t)be64(h + MAX_TIMESTAMP_OFFSET);
        int32_t count = (int32_t)be32(h + RECORDS_COUNT_OFFSET);
        int64_t pid = (int64_t)be64(h + PRODUCER_ID_OFFSET);
        if (magic != 2 || size < RECORD_BATCH_OVERHEAD || position > end - size || leader_epoch != epoch
            || (attributes & (TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK)))
            break;
        /* One producer per run: Python folds the run's last batch into producer state, then a new run starts. */
        if (pid > -1 && run_pid > -1 && pid != run_pid)
            break;
        int64_t last_offset, rel;
        /* An int64 overflow here leaves Python's reference loop to report it. */
        if (__builtin_add_overflow(base_offset, (int64_t)last_delta, &last_offset))
            break;
        if (__builtin_sub_overflow(last_offset, base, &rel) || rel < 0 || rel > INT32_MAX)
            break;
        int verdict = -1;
        if (hp && odd_block(helper.start, position))
            verdict = seen_progress > position ? 1 : helper_verdict(hp, position, &seen_progress);
        if (verdict == 0)
            break;
        if (verdict < 0 && crc_of(c->crc, h + ATTRIBUTES_OFFSET, (size_t)(size - ATTRIBUTES_OFFSET)) != stored_crc)
            break;
        int64_t mst = max_so_far, oom = off_of_max;
        if (batch_max_ts > mst) {
            mst = batch_max_ts;
            oom = last_offset;
        }
        if (position - last_index_entry > interval) {
            int64_t n = c->off_used / OFFSET_ENTRY;
            if (n >= c->offset_max)
                break;
            if (n && rel <= (int32_t)be32(c->off + c->off_used - OFFSET_ENTRY))
                break;
            if (position > INT32_MAX)
                break; /* the position field is an int32: Python raises on this batch */
            int64_t t = c->tim_used / TIME_ENTRY;
            int64_t last_ts = t ? (int64_t)be64(c->tim + c->tim_used - TIME_ENTRY) : NO_TIMESTAMP;
            /* TimeIndex.maybeAppend checks fullness and offset order on every call, appending or not */
            if (t >= c->time_max - 1)
                break;
            if (t && oom - base < (int32_t)be32(c->tim + c->tim_used - TIME_ENTRY + 8))
                break;
            int add_time = mst > last_ts;
            if (c->off_used + OFFSET_ENTRY > c->off_cap || (add_time && c->tim_used + TIME_ENTRY > c->tim_cap)) {
                rc = SCAN_NEED_SPACE;
                break;
            }
            if (add_time) {
                put64(c->tim + c->tim_used, (uint64_t)mst);
                put32(c->tim + c->tim_used + 8, (uint32_t)(int32_t)(oom - base));
                c->tim_used += TIME_ENTRY;
            }
            put32(c->off + c->off_used, (uint32_t)(int32_t)rel);
            put32(c->off + c->off_used + 4, (uint32_t)(int32_t)position);
            c->off_used += OFFSET_ENTRY;
            last_index_entry = position;
        }
        max_so_far = mst;
        off_of_max = oom;
        if (first_offset < 0)
            first_offset = base_offset;
        last_offset_seen = last_offset;
        batches += 1;
        records += count;
        codecs |= (int64_t)1 << (attributes & COMPRESSION_CODEC_MASK);
        magics |= 1 << 2;
        if (pid > -1) {
            run_pid = pid;
            run_epoch = (int16_t)(((uint16_t)h[PRODUCER_EPOCH_OFFSET] << 8) | h[PRODUCER_EPOCH_OFFSET + 1]);
            run_base_seq = (int32_t)be32(h + BASE_SEQUENCE_OFFSET);
            run_base_offset = base_offset;
            run_last_offset = last_offset;
            run_max_ts = batch_max_ts;
        }
        position += size;
        int64_t want = position + PREFETCH_AHEAD < end ? position + PREFETCH_AHEAD : end;
        if (prefetched < position) /* a batch longer than PREFETCH_AHEAD: its lines are read already */
            prefetched = position & ~(int64_t)(CACHE_LINE - 1);
        for (; prefetched < want; prefetched += CACHE_LINE)
            __builtin_prefetch(buf + prefetched);
    }
    if (hp) {
        atomic_store_explicit(&helper.stop, 1, memory_order_relaxed);
        pthread_join(helper_tid, NULL);
    }
    st[S_POSITION] = position;
    st[S_LAST_INDEX_ENTRY] = last_index_entry;
    st[S_MAX_TIMESTAMP] = max_so_far;
    st[S_OFFSET_OF_MAX_TIMESTAMP] = off_of_max;
    st[S_FIRST_OFFSET] = first_offset;
    st[S_LAST_OFFSET] = last_offset_seen;
    st[S_BATCHES] = batches;
    st[S_RECORDS] = records;
    st[S_CODECS] = codecs;
    st[S_MAGICS] = magics;
    st[S_RUN_PRODUCER_ID] = run_pid;
    st[S_RUN_PRODUCER_EPOCH] = run_epoch;
    st[S_RUN_BASE_SEQUENCE] = run_base_seq;
    st[S_RUN_BASE_OFFSET] = run_base_offset;
    st[S_RUN_LAST_OFFSET] = run_last_offset;
    st[S_RUN_MAX_TIMESTAMP] = run_max_ts;
    return rc;
}

/* ------------------------------------------------------------------ kernel object */

typedef struct {
    PyObject_HEAD
    crc_t crc;
    int threads;        /* 1, or 2 for a CRC helper thread on big ranges */
    PyObject *library;  /* the ctypes CDLL object (keeps the library loaded) */
    PyObject *path;     /* where it was found, for diagnostics */
} Kernel;

/* Make room for `extra` more bytes past `used` in a bytearray (no buffer exported by us at this point). */
static int reserve(PyObject *ba, Py_ssize_t used, Py_ssize_t extra) {
    if (PyByteArray_GET_SIZE(ba) >= used + extra)
        return 0;
    return PyByteArray_Resize(ba, used + extra);
}

static PyObject *Kernel_call(Kernel *self, PyObject *args, PyObject *kwargs) {
    PyObject *state_obj, *buf_obj, *off_obj, *tim_obj;
    Py_ssize_t offset_max, time_max;
    static char *kwlist[] = {"state", "buf", "offset_data", "offset_max", "time_data", "time_max", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOnOn:kernel", kwlist, &state_obj, &buf_obj, &off_obj,
                                     &offset_max, &tim_obj, &time_max))
        return NULL;
    if (!PyByteArray_Check(off_obj) || !PyByteArray_Check(tim_obj)) {
        PyErr_SetString(PyExc_TypeError, "offset_data and time_data must be bytearrays");
        return NULL;
    }
    Py_buffer sv, bv, ov, tv;
    if (PyObject_GetBuffer(state_obj, &sv, PyBUF_WRITABLE | PyBUF_FORMAT) < 0)
        return NULL;
    if (sv.itemsize != 8 || !sv.format || (strcmp(sv.format, "q") && strcmp(sv.format, "l"))
        || sv.len < (Py_ssize_t)(N_SLOTS * sizeof(int64_t))) {
        PyBuffer_Release(&sv);
        PyErr_Format(PyExc_TypeError, "state must be an array('q') of at least %d slots", N_SLOTS);
        return NULL;
    }
    if (PyObject_GetBuffer(buf_obj, &bv, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&sv);
        return NULL;
    }
    int64_t *st = (int64_t *)sv.buf;
    if (st[S_END] > bv.len || st[S_END] < 0 || st[S_POSITION] < 0) {
        PyBuffer_Release(&bv);
        PyBuffer_Release(&sv);
        PyErr_Format(PyExc_ValueError, "scan range [%lld, %lld) is outside the buffer of %zd bytes",
                     (long long)st[S_POSITION], (long long)st[S_END], bv.len);
        return NULL;
    }
    scan_ctx c;
    c.st = st;
    c.buf = (const uint8_t *)bv.buf;
    c.offset_max = offset_max;
    c.time_max = time_max;
    c.crc = self->crc;
    c.threads = self->threads;
    c.off_used = PyByteArray_GET_SIZE(off_obj);
    c.tim_used = PyByteArray_GET_SIZE(tim_obj);
    /* Entries this scan can add at most: one per batch past the interval, batches of >= 61 bytes. */
    int64_t remaining = st[S_END] > st[S_POSITION] ? st[S_END] - st[S_POSITION] : 0;
    int64_t step = st[S_INDEX_INTERVAL] + 1 > RECORD_BATCH_OVERHEAD ? st[S_INDEX_INTERVAL] + 1 : RECORD_BATCH_OVERHEAD;
    int64_t bound = remaining / step + 2;
    int64_t chunk = bound < 4096 ? bound : 4096;
    Py_ssize_t off_extra = (Py_ssize_t)chunk * OFFSET_ENTRY, tim_extra = (Py_ssize_t)chunk * TIME_ENTRY;
    int rc, failed = 0;
    for (;;) {
        if (reserve(off_obj, c.off_used, off_extra) < 0 || reserve(tim_obj, c.tim_used, tim_extra) < 0) {
            failed = 1;
            break;
        }
        if (PyObject_GetBuffer(off_obj, &ov, PyBUF_WRITABLE) < 0) {
            failed = 1;
            break;
        }
        if (PyObject_GetBuffer(tim_obj, &tv, PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&ov);
            failed = 1;
            break;
        }
        c.off = (uint8_t *)ov.buf;
        c.off_cap = ov.len;
        c.tim = (uint8_t *)tv.buf;
        c.tim_cap = tv.len;
        Py_BEGIN_ALLOW_THREADS
        rc = scan(&c);
        Py_END_ALLOW_THREADS
        PyBuffer_Release(&tv);
        PyBuffer_Release(&ov);
        if (rc != SCAN_NEED_SPACE)
            break;
        off_extra = c.off_used + off_extra;  /* grow geometrically */
        tim_extra = c.tim_used + tim_extra;
    }
    PyBuffer_Release(&bv);
    PyBuffer_Release(&sv);
    /* Trim to the entries written (also after a failed reservation, so the bytearrays stay whole entries). */
    PyObject *et = NULL, *ev = NULL, *tb = NULL;
    if (failed)
        PyErr_Fetch(&et, &ev, &tb);
    if (PyByteArray_GET_SIZE(off_obj) != c.off_used && PyByteArray_Resize(off_obj, c.off_used) < 0)
        failed = 2;
    if (failed != 2 && PyByteArray_GET_SIZE(tim_obj) != c.tim_used && PyByteArray_Resize(tim_obj, c.tim_used) < 0)
        failed = 2;
    if (et || ev || tb) {
        if (failed == 2) {
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
        } else {
            PyErr_Restore(et, ev, tb);
        }
    }
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

static void Kernel_dealloc(Kernel *self) {
    Py_XDECREF(self->library);
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Kernel_repr(Kernel *self) {
    return PyUnicode_FromFormat("<indexcore.scan._fastscan kernel, %d thread(s), %s from %R>", self->threads,
                                self->crc.raw ? "crc32c_hw (raw)" : "crc32c_extend", self->path);
}

static PyMemberDef Kernel_members[] = {
    {"library_path", T_OBJECT, offsetof(Kernel, path), READONLY, "file the crc32c library was loaded from"},
    {"threads", T_INT, offsetof(Kernel, threads), READONLY, "2 when a helper thread verifies CRCs on big ranges"},
    {NULL}
};

static PyTypeObject KernelType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "indexcore.scan._fastscan.Kernel",
    .tp_basicsize = sizeof(Kernel),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "kernel(state, buf, offset_data, offset_max, time_data, time_max): native scan_simple",
    .tp_call = (ternaryfunc)Kernel_call,
    .tp_dealloc = (destructor)Kernel_dealloc,
    .tp_repr = (reprfunc)Kernel_repr,
    .tp_members = Kernel_members,
};

/* ------------------------------------------------------------------ make_kernel */

/* make_kernel(crc_address, library, path, threads=0, raw=0): the CRC-32C function is found by Python
 * (indexcore/log/scan/native.py, with ctypes); this binds a kernel to its address and keeps the library alive.
 * raw=1: the function takes and returns the uninverted register (see crc_t). */
static PyObject *make_kernel(PyObject *module, PyObject *args, PyObject *kwargs) {
    PyObject *addr_obj, *lib, *path;
    int threads = 0, raw = 0;
    static char *kwlist[] = {"crc_address", "library", "path", "threads", "raw", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOO|ip:make_kernel", kwlist, &addr_obj, &lib, &path, &threads,
                                     &raw))
        return NULL;
    if (threads <= 0) {
        /* SEGDEX_SCAN_THREADS=1 turns the helper off; by default it runs when there is a second CPU. */
        const char *env = getenv("SEGDEX_SCAN_THREADS");
        threads = env && *env ? atoi(env) : 0;
        if (threads <= 0)
            threads = sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1;
    }
    if (threads > 2)
        threads = 2;
    void *addr = PyLong_AsVoidPtr(addr_obj);
    if (!addr) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ImportError, "the CRC-32C function has a NULL address");
        return NULL;
    }
    crc_t crc = {(crc32c_extend_fn)addr, raw};
    /* The CRC-32C check value: guards against a function of another signature or convention. */
    if (crc_of(crc, (const uint8_t *)"123456789", 9) != 0xE3069283u) {
        PyErr_SetString(PyExc_ImportError, "the function does not compute CRC-32C in the convention given");
        return NULL;
    }
    Kernel *k = PyObject_New(Kernel, &KernelType);
    if (!k)
        return NULL;
    k->crc = crc;
    k->threads = threads;
    Py_INCREF(lib);
    k->library = lib;
    Py_INCREF(path);
    k->path = path;
    return (PyObject *)k;
}

static PyMethodDef module_methods[] = {
    {"make_kernel", (PyCFunction)(void (*)(void))make_kernel, METH_VARARGS | METH_KEYWORDS,
     "make_kernel(crc_address, library, path, threads=0, raw=False) -> kernel bound to that CRC-32C function.\n"
     "threads: 1, or 2 for a CRC helper thread; <= 0 reads SEGDEX_SCAN_THREADS, else 2 on a multi-CPU host."},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "indexcore.scan._fastscan", "Native scan kernel for LogSegment.recover.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__fastscan(void) {
    if (PyType_Ready(&KernelType) < 0)
        return NULL;
    return PyModule_Create(&module_def);
}
