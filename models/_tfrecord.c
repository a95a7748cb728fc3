/* models._tfrecord: TFRecord framing with CRC-32C, as event files
 * (models/event_file.py, models/tb_logdir.py) are written.
 *
 *   scan_records(buf) -> (int64[k, 2] data spans, bool[k] data crc ok,
 *       bytes skipped over corrupt headers, offset of a partial last record
 *       or -1)
 *   masked_crc32c(bytes) -> the masked CRC-32C TFRecord stores
 */
#include "_cbuffers.h"

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

/* scan_records(buf) -> (int64[k, 2] data spans, bool[k] data crc ok,
 * bytes skipped over corrupt headers, offset of a partial last record or -1).
 * After a corrupt header it looks for the next offset where a whole valid
 * record starts. */
static PyObject *scan_records(PyObject *self, PyObject *args) {
    PyObject *obj;
    if (!PyArg_ParseTuple(args, "O", &obj)) return NULL;
    Py_buffer view;
    if (get_buffer(obj, &view) < 0) return NULL;
    const uint8_t *base = view.buf, *p = base, *end = base + view.len;
    SpanList list = {0};
    int64_t skipped = 0, partial = -1;
    int oom = 0;
    Py_BEGIN_ALLOW_THREADS
    while (p < end) {
        uint64_t len;
        if (end - p >= 12 && masked_crc(p, 8) == load32(p + 8)) {
            memcpy(&len, p, 8);
            if (len > (uint64_t)(end - p) || (uint64_t)(end - p) - 12 < len + 4) {
                partial = p - base; /* header fine, data not all written yet */
                break;
            }
            int ok = masked_crc(p + 12, (size_t)len) == load32(p + 12 + len);
            if (!span_push(&list, ok, p + 12 - base, (int64_t)len)) { oom = 1; break; }
            p += 16 + len;
            continue;
        }
        if (end - p < 12) {
            partial = p - base;
            break;
        }
        const uint8_t *q = p + 1;
        while (q < end && !record_at(q, end, &len, 1)) q++;
        skipped += q - p;
        p = q;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (oom) {
        PyMem_RawFree(list.items);
        return PyErr_NoMemory();
    }
    npy_intp dims[2] = {list.count, 2};
    PyObject *spans = PyArray_SimpleNew(2, dims, NPY_INT64);
    PyObject *ok = PyArray_SimpleNew(1, dims, NPY_BOOL);
    if (spans && ok) {
        int64_t *d = PyArray_DATA((PyArrayObject *)spans);
        npy_bool *g = PyArray_DATA((PyArrayObject *)ok);
        for (Py_ssize_t k = 0; k < list.count; k++) {
            g[k] = (npy_bool)list.items[3 * k];
            d[2 * k] = list.items[3 * k + 1];
            d[2 * k + 1] = list.items[3 * k + 2];
        }
    }
    PyMem_RawFree(list.items);
    if (!spans || !ok) {
        Py_XDECREF(spans);
        Py_XDECREF(ok);
        return NULL;
    }
    return Py_BuildValue("(NNLL)", spans, ok, (long long)skipped, (long long)partial);
}

static PyObject *py_masked_crc32c(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    uint32_t c = masked_crc(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef methods[] = {
    {"scan_records", scan_records, METH_VARARGS,
     "scan_records(buf) -> (int64[k, 2] record data spans, bool[k] crc ok, bytes skipped, partial offset or -1)"},
    {"masked_crc32c", py_masked_crc32c, METH_VARARGS, "masked_crc32c(bytes) -> TFRecord's masked CRC-32C"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_tfrecord", "TFRecord framing: record scanning and masked CRC-32C.", -1, methods};

PyMODINIT_FUNC PyInit__tfrecord(void) {
    import_array();
    crc_init();
    return PyModule_Create(&module);
}
