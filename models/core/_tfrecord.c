/* profscope.models.core._tfrecord: TFRecord framing with CRC-32C, as event files
 * (models/core/event_file.py, models/hparams/logdir.py) are written.
 *
 *   scan_records(buf) -> (int64[k, 2] data spans, bool[k] data crc ok,
 *       bytes skipped over corrupt headers, offset of a partial last record
 *       or -1)
 *   read_files(paths, start, ends, budget) -> (bytes, int64[k] sizes, int32[k] errnos):
 *       many small files read into one buffer without the GIL
 *   scan_files(buf, sizes) -> scan_records of each file in a read_files buffer
 *   masked_crc32c(bytes) -> the masked CRC-32C TFRecord stores
 */
#include "_cbuffers.h"

#include <errno.h>

/* Event files frame each record as uint64 length, uint32 masked crc32c of
 * the length, data, uint32 masked crc32c of the data (little endian). */
static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82f63b78u : c >> 1;
        crc_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++)
        for (int i = 0; i < 256; i++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

static uint32_t crc32c(const uint8_t *p, size_t len) {
    uint32_t c = 0xffffffffu;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= c;
        c = crc_table[7][w & 0xff] ^ crc_table[6][(w >> 8) & 0xff] ^ crc_table[5][(w >> 16) & 0xff] ^
            crc_table[4][(w >> 24) & 0xff] ^ crc_table[3][(w >> 32) & 0xff] ^ crc_table[2][(w >> 40) & 0xff] ^
            crc_table[1][(w >> 48) & 0xff] ^ crc_table[0][w >> 56];
        p += 8;
        len -= 8;
    }
    while (len--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
    return c ^ 0xffffffffu;
}

static uint32_t masked_crc(const uint8_t *p, size_t len) {
    uint32_t c = crc32c(p, len);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint32_t load32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* 1 when a whole record with valid header and data CRCs starts at p. */
static int record_at(const uint8_t *p, const uint8_t *end, uint64_t *len_out, int check_data) {
    if (end - p < 12 || masked_crc(p, 8) != load32(p + 8)) return 0;
    uint64_t len;
    memcpy(&len, p, 8);
    if (len > (uint64_t)(end - p) - 16 || (uint64_t)(end - p) < 16) return 0;
    if (check_data && masked_crc(p + 12, (size_t)len) != load32(p + 12 + len)) return 0;
    *len_out = len;
    return 1;
}

/* Scans one file's bytes [p, end), base being where the buffer starts:
 * pushes (ok | file << 1, data offset, data length) per record. After a
 * corrupt header it looks for the next offset where a whole valid record
 * starts. Returns 0 when out of memory. */
static int scan(const uint8_t *base, const uint8_t *p, const uint8_t *end, int64_t file, SpanList *list,
                int64_t *skipped, int64_t *partial) {
    const uint8_t *start = p;
    *skipped = 0;
    *partial = -1;
    while (p < end) {
        uint64_t len;
        if (end - p >= 12 && masked_crc(p, 8) == load32(p + 8)) {
            memcpy(&len, p, 8);
            if (len > (uint64_t)(end - p) || (uint64_t)(end - p) - 12 < len + 4) {
                *partial = p - start; /* header fine, data not all written yet */
                break;
            }
            int ok = masked_crc(p + 12, (size_t)len) == load32(p + 12 + len);
            if (!span_push(list, ok | file << 1, p + 12 - base, (int64_t)len)) return 0;
            p += 16 + len;
            continue;
        }
        if (end - p < 12) {
            *partial = p - start;
            break;
        }
        const uint8_t *q = p + 1;
        while (q < end && !record_at(q, end, &len, 1)) q++;
        *skipped += q - p;
        p = q;
    }
    return 1;
}

/* The list's spans, crc flags and (with file) the file of each record as arrays. */
static int span_columns(const SpanList *list, PyObject **spans, PyObject **ok, PyObject **file) {
    npy_intp dims[2] = {list->count, 2};
    *spans = PyArray_SimpleNew(2, dims, NPY_INT64);
    *ok = PyArray_SimpleNew(1, dims, NPY_BOOL);
    if (file) *file = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (!*spans || !*ok || (file && !*file)) {
        Py_CLEAR(*spans);
        Py_CLEAR(*ok);
        if (file) Py_CLEAR(*file);
        return 0;
    }
    int64_t *d = PyArray_DATA((PyArrayObject *)*spans);
    npy_bool *g = PyArray_DATA((PyArrayObject *)*ok);
    int64_t *f = file ? PyArray_DATA((PyArrayObject *)*file) : NULL;
    for (Py_ssize_t k = 0; k < list->count; k++) {
        g[k] = (npy_bool)(list->items[3 * k] & 1);
        if (f) f[k] = list->items[3 * k] >> 1;
        d[2 * k] = list->items[3 * k + 1];
        d[2 * k + 1] = list->items[3 * k + 2];
    }
    return 1;
}

/* scan_records(buf) -> (int64[k, 2] data spans, bool[k] data crc ok,
 * bytes skipped over corrupt headers, offset of a partial last record or -1). */
static PyObject *scan_records(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans, *ok;
    if (!PyArg_ParseTuple(args, "O", &obj)) return NULL;
    Py_buffer view;
    if (get_buffer(obj, &view) < 0) return NULL;
    const uint8_t *base = view.buf;
    SpanList list = {0};
    int64_t skipped, partial;
    int fine;
    Py_BEGIN_ALLOW_THREADS
    fine = scan(base, base, base + view.len, 0, &list, &skipped, &partial);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (!fine) {
        PyMem_RawFree(list.items);
        return PyErr_NoMemory();
    }
    fine = span_columns(&list, &spans, &ok, NULL);
    PyMem_RawFree(list.items);
    if (!fine) return NULL;
    return Py_BuildValue("(NNLL)", spans, ok, (long long)skipped, (long long)partial);
}

/* scan_files(buf, sizes) -> (int64[k, 2] data spans, bool[k] crc ok,
 * int64[k] file of each record, int64[n] bytes skipped per file, int64[n]
 * partial last record offset per file or -1): scan_records of each of the
 * files laid end to end in buf, with spans into buf. */
static PyObject *scan_files(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *sizes_obj, *spans, *ok, *file;
    if (!PyArg_ParseTuple(args, "OO", &obj, &sizes_obj)) return NULL;
    Py_buffer view;
    PyArrayObject *sizes = with_buffer(as_column(sizes_obj, NPY_INT64), obj, &view);
    if (!sizes) return NULL;
    npy_intp n = PyArray_DIM(sizes, 0);
    const int64_t *size = PyArray_DATA(sizes);
    PyObject *skipped = PyArray_SimpleNew(1, &n, NPY_INT64), *partial = PyArray_SimpleNew(1, &n, NPY_INT64);
    SpanList list = {0};
    int fine = skipped && partial, inside = 1;
    if (fine) {
        int64_t *sk = PyArray_DATA((PyArrayObject *)skipped), *pa = PyArray_DATA((PyArrayObject *)partial);
        const uint8_t *base = view.buf, *p = base, *end = base + view.len;
        Py_BEGIN_ALLOW_THREADS
        for (npy_intp i = 0; fine && i < n; i++) {
            if (size[i] < 0 || size[i] > end - p) {
                inside = 0;
                break;
            }
            fine = scan(base, p, p + size[i], i, &list, &sk[i], &pa[i]);
            p += size[i];
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    Py_DECREF(sizes);
    if (fine && !inside) PyErr_SetString(PyExc_ValueError, "file sizes beyond the buffer");
    else if (!fine && skipped && partial) PyErr_NoMemory();
    if (!fine || !inside || !span_columns(&list, &spans, &ok, &file)) {
        PyMem_RawFree(list.items);
        Py_XDECREF(skipped);
        Py_XDECREF(partial);
        return NULL;
    }
    PyMem_RawFree(list.items);
    return Py_BuildValue("(NNNNN)", spans, ok, file, skipped, partial);
}

/* read_files(paths, start, ends, budget) -> (bytes, int64[k] sizes, int32[k]
 * errnos). Reads paths[start:] (a tuple of bytes) one after the other into
 * one buffer, without the GIL: a log dir's thousands of small event files
 * cost a few system calls each, not Python objects each. It stops after a
 * file that ends a run (ends: increasing file counts) once the buffer holds
 * budget bytes. A file that cannot be opened or read has size 0 and its
 * errno. A short read ends a file, as it does for regular files. */
static PyObject *read_files(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *paths, *ends_obj;
    Py_ssize_t first;
    long long budget;
    if (!PyArg_ParseTuple(args, "O!nOL", &PyTuple_Type, &paths, &first, &ends_obj, &budget)) return NULL;
    PyArrayObject *ends = as_column(ends_obj, NPY_INT64);
    if (!ends) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(paths) - first, n_ends = PyArray_DIM(ends, 0);
    const int64_t *end_at = PyArray_DATA(ends);
    int bad = first < 0 || n < 0;
    for (Py_ssize_t i = 0; !bad && i < n; i++) bad = !PyBytes_Check(PyTuple_GET_ITEM(paths, first + i));
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "paths must be a tuple of bytes and start an index into it");
        Py_DECREF(ends);
        return NULL;
    }
    npy_intp dims[1] = {n};
    PyObject *sizes = PyArray_SimpleNew(1, dims, NPY_INT64), *errnos = PyArray_SimpleNew(1, dims, NPY_INT32);
    size_t cap = 1 << 20, len = 0;
    uint8_t *buf = PyMem_RawMalloc(cap);
    int oom = !buf || !sizes || !errnos;
    Py_ssize_t k = 0;
    if (!oom) {
        int64_t *size = PyArray_DATA((PyArrayObject *)sizes);
        int32_t *err = PyArray_DATA((PyArrayObject *)errnos);
        Py_ssize_t j = 0;
        Py_BEGIN_ALLOW_THREADS
        while (k < n) {
            size_t start = len;
            err[k] = 0;
            int fd = pt_open_read(PyBytes_AS_STRING(PyTuple_GET_ITEM(paths, first + k)));
            if (fd < 0) err[k] = errno;
            while (fd >= 0) {
                if (cap - len < (1 << 16)) { /* keep 64 KiB free to read into */
                    uint8_t *grown = PyMem_RawRealloc(buf, cap * 2);
                    if (!grown) {
                        oom = 1;
                        break;
                    }
                    buf = grown;
                    cap *= 2;
                }
                int64_t got = pt_read(fd, buf + len, cap - len);
                if (got < 0 && errno == EINTR) continue;
                if (got < 0) {
                    err[k] = errno;
                    len = start;
                    break;
                }
                len += (size_t)got;
                if ((size_t)got < cap - (len - got)) break; /* short read: the end */
            }
            if (fd >= 0) pt_close(fd);
            if (oom) break;
            size[k++] = (int64_t)(len - start);
            while (j < n_ends && end_at[j] < first + k) j++;
            if (j < n_ends && end_at[j] == first + k && (long long)len >= budget) break;
        }
        Py_END_ALLOW_THREADS
    }
    PyObject *out = NULL;
    if (oom) {
        PyErr_NoMemory();
    } else {
        PyObject *blob = PyBytes_FromStringAndSize((const char *)buf, (Py_ssize_t)len);
        PyObject *k_sizes = blob ? PySequence_GetSlice(sizes, 0, k) : NULL;
        PyObject *k_errnos = k_sizes ? PySequence_GetSlice(errnos, 0, k) : NULL;
        if (k_errnos) out = Py_BuildValue("(NNN)", blob, k_sizes, k_errnos);
        else {
            Py_XDECREF(blob);
            Py_XDECREF(k_sizes);
        }
    }
    PyMem_RawFree(buf);
    Py_XDECREF(sizes);
    Py_XDECREF(errnos);
    Py_DECREF(ends);
    return out;
}

static PyObject *py_masked_crc32c(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    uint32_t c = masked_crc(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"scan_records", scan_records, METH_VARARGS,
     "scan_records(buf) -> (int64[k, 2] record data spans, bool[k] crc ok, bytes skipped, partial offset or -1)"},
    {"scan_files", scan_files, METH_VARARGS,
     "scan_files(buf, sizes) -> (spans, crc ok, file of each record, bytes skipped per file, partial offset per file)"},
    {"read_files", read_files, METH_VARARGS,
     "read_files(paths, start, ends, budget) -> (bytes, int64[k] sizes, int32[k] errnos): paths[start:] up to a run "
     "end past budget"},
    {"masked_crc32c", py_masked_crc32c, METH_VARARGS, "masked_crc32c(bytes) -> TFRecord's masked CRC-32C"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_tfrecord", .m_doc = "TFRecord framing: record scanning and masked CRC-32C.", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__tfrecord(void) {
    import_array();
    draw_hash_seed();
    crc_init();
    return PyModule_Create(&module);
}
