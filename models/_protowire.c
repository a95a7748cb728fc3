/* Column decoding of protobuf wire data.
 *
 * Python's protobuf builds one object per message; a profile with millions of
 * snapshots or events then spends most of its time in attribute access. These
 * functions walk the wire format directly and fill numpy arrays, one column
 * per field, for messages located by their byte spans in the buffer.
 *
 *   find_fields(buf, start, end, numbers) -> one int64[k, 2] array per
 *       field number: spans of each length-delimited occurrence at the top
 *       level of the message [start, end), found in one pass
 *   decode_messages(buf, spans, fields)  -> list of arrays, one per
 *       (field_number, kind) in fields; kind 'i' varint -> int64,
 *       'z' zigzag varint -> int64, 'd' double -> float64,
 *       'f' fixed64 -> int64, 's' length-delimited -> int64[n, 2] span
 *       (-1, 0 when absent). Absent scalars are 0; the last occurrence wins.
 *   intern_strings(buf, spans) -> (int32 ids, list of str): equal strings
 *       share an id; absent spans map to "".
 *
 * Malformed data (a varint or field running past its message) raises
 * ValueError naming the offset, never reads out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Cursor;

/* Reads one varint; returns 0 on truncation or overlong encoding. */
static int read_varint(Cursor *c, uint64_t *out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) return 0;
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Skips a field's payload of the given wire type; returns 0 if malformed. */
static int skip_field(Cursor *c, int wire) {
    uint64_t n;
    switch (wire) {
    case 0: return read_varint(c, &n);
    case 1:
        if (c->end - c->p < 8) return 0;
        c->p += 8;
        return 1;
    case 2:
        if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return 0;
        c->p += n;
        return 1;
    case 5:
        if (c->end - c->p < 4) return 0;
        c->p += 4;
        return 1;
    default: return 0; /* groups (3, 4) are not used by these schemas */
    }
}

static int get_buffer(PyObject *obj, Py_buffer *view) {
    return PyObject_GetBuffer(obj, view, PyBUF_SIMPLE);
}

static PyObject *malformed(Py_ssize_t offset) {
    PyErr_Format(PyExc_ValueError, "malformed protobuf data at byte %zd", offset);
    return NULL;
}

#define MAX_FIELD 64

typedef struct {
    int64_t *spans;
    Py_ssize_t count, cap;
} SpanList;

static int span_push(SpanList *l, int64_t off, int64_t len) {
    if (l->count == l->cap) {
        Py_ssize_t cap = l->cap ? l->cap * 2 : 256;
        int64_t *grown = PyMem_Realloc(l->spans, sizeof(int64_t) * 2 * cap);
        if (!grown) return 0;
        l->spans = grown;
        l->cap = cap;
    }
    l->spans[2 * l->count] = off;
    l->spans[2 * l->count + 1] = len;
    l->count++;
    return 1;
}

/* One pass over a message's top-level fields, collecting the spans of every
 * length-delimited occurrence of each requested field number. */
static PyObject *find_fields(PyObject *self, PyObject *args) {
    PyObject *obj, *numbers_obj;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "OnnO", &obj, &start, &end, &numbers_obj)) return NULL;
    PyObject *numbers = PySequence_Fast(numbers_obj, "field numbers must be a sequence");
    if (!numbers) return NULL;
    Py_ssize_t nnum = PySequence_Fast_GET_SIZE(numbers);
    int slot_of[MAX_FIELD + 1];
    for (int i = 0; i <= MAX_FIELD; i++) slot_of[i] = -1;
    SpanList lists[MAX_FIELD + 1];
    memset(lists, 0, sizeof(lists));
    PyObject *result = NULL;
    Py_buffer view;
    int have_view = 0;
    for (Py_ssize_t i = 0; i < nnum; i++) {
        long number = PyLong_AsLong(PySequence_Fast_GET_ITEM(numbers, i));
        if (number == -1 && PyErr_Occurred()) goto done;
        if (number < 1 || number > MAX_FIELD || slot_of[number] != -1) {
            PyErr_Format(PyExc_ValueError, "bad field number %ld", number);
            goto done;
        }
        slot_of[number] = (int)i;
    }
    if (get_buffer(obj, &view) < 0) goto done;
    have_view = 1;
    if (start < 0 || end > view.len || start > end) {
        PyErr_SetString(PyExc_ValueError, "span outside the buffer");
        goto done;
    }
    const uint8_t *base = (const uint8_t *)view.buf;
    Cursor c = {base + start, base + end};
    while (c.p < c.end) {
        uint64_t tag, len;
        if (!read_varint(&c, &tag)) { malformed(c.p - base); goto done; }
        uint64_t number = tag >> 3; /* any size in garbage: compare unsigned */
        int wire = (int)(tag & 7);
        if (wire == 2 && number >= 1 && number <= MAX_FIELD && slot_of[number] >= 0) {
            if (!read_varint(&c, &len) || len > (uint64_t)(c.end - c.p)) { malformed(c.p - base); goto done; }
            if (!span_push(&lists[slot_of[number]], c.p - base, (int64_t)len)) { PyErr_NoMemory(); goto done; }
            c.p += len;
        } else if (!skip_field(&c, wire)) {
            malformed(c.p - base);
            goto done;
        }
    }
    result = PyList_New(nnum);
    if (!result) goto done;
    for (Py_ssize_t i = 0; i < nnum; i++) {
        npy_intp dims[2] = {lists[i].count, 2};
        PyObject *arr = PyArray_SimpleNew(2, dims, NPY_INT64);
        if (!arr) { Py_CLEAR(result); goto done; }
        if (lists[i].count) memcpy(PyArray_DATA((PyArrayObject *)arr), lists[i].spans, sizeof(int64_t) * 2 * lists[i].count);
        PyList_SET_ITEM(result, i, arr);
    }
done:
    for (int i = 0; i <= MAX_FIELD; i++) PyMem_Free(lists[i].spans);
    if (have_view) PyBuffer_Release(&view);
    Py_DECREF(numbers);
    return result;
}


static PyObject *decode_messages(PyObject *self, PyObject *args) {
    PyObject *obj, *spans_obj, *fields_obj;
    if (!PyArg_ParseTuple(args, "OOO", &obj, &spans_obj, &fields_obj)) return NULL;
    PyArrayObject *spans = (PyArrayObject *)PyArray_FROMANY(
        spans_obj, NPY_INT64, 2, 2, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!spans) return NULL;
    if (PyArray_DIM(spans, 1) != 2) {
        Py_DECREF(spans);
        PyErr_SetString(PyExc_ValueError, "spans must have shape (n, 2)");
        return NULL;
    }
    PyObject *fields = PySequence_Fast(fields_obj, "fields must be a sequence");
    if (!fields) {
        Py_DECREF(spans);
        return NULL;
    }
    Py_ssize_t nfields = PySequence_Fast_GET_SIZE(fields);
    npy_intp n = PyArray_DIM(spans, 0);
    /* column index per field number and its kind */
    int column_of[MAX_FIELD + 1];
    char kind_of[MAX_FIELD + 1];
    for (int i = 0; i <= MAX_FIELD; i++) column_of[i] = -1;
    PyObject *result = PyList_New(nfields);
    void *data[MAX_FIELD + 1];
    Py_buffer view;
    int have_view = 0;
    if (!result) goto fail;
    for (Py_ssize_t i = 0; i < nfields; i++) {
        int number;
        const char *kind;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fields, i), "is", &number, &kind)) goto fail;
        if (number < 1 || number > MAX_FIELD || column_of[number] != -1 || !strchr("izdfs", kind[0])) {
            PyErr_Format(PyExc_ValueError, "bad field spec (%d, %s)", number, kind);
            goto fail;
        }
        column_of[number] = (int)i;
        kind_of[number] = kind[0];
        PyObject *arr;
        if (kind[0] == 's') {
            npy_intp dims[2] = {n, 2};
            arr = PyArray_SimpleNew(2, dims, NPY_INT64);
            if (arr) {
                int64_t *d = PyArray_DATA((PyArrayObject *)arr);
                for (npy_intp k = 0; k < n; k++) { d[2 * k] = -1; d[2 * k + 1] = 0; }
            }
        } else {
            npy_intp dims[1] = {n};
            arr = PyArray_ZEROS(1, dims, kind[0] == 'd' ? NPY_FLOAT64 : NPY_INT64, 0);
        }
        if (!arr) goto fail;
        PyList_SET_ITEM(result, i, arr);
        data[number] = PyArray_DATA((PyArrayObject *)arr);
    }
    if (get_buffer(obj, &view) < 0) goto fail;
    have_view = 1;
    const uint8_t *base = (const uint8_t *)view.buf;
    const int64_t *sp = PyArray_DATA(spans);
    Py_ssize_t bad_at = -1;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp k = 0; k < n && bad_at < 0; k++) {
        int64_t off = sp[2 * k], len = sp[2 * k + 1];
        if (off < 0) continue; /* absent message: all defaults */
        if (len < 0 || off + len > view.len) { bad_at = off; break; }
        Cursor c = {base + off, base + off + len};
        while (c.p < c.end) {
            uint64_t tag, v;
            if (!read_varint(&c, &tag)) { bad_at = c.p - base; break; }
            uint64_t number = tag >> 3; /* any size in garbage: compare unsigned */
            int wire = (int)(tag & 7);
            int wanted = number >= 1 && number <= MAX_FIELD && column_of[number] >= 0;
            char kind = wanted ? kind_of[number] : 0;
            if (kind && wire == 0 && (kind == 'i' || kind == 'z')) {
                if (!read_varint(&c, &v)) { bad_at = c.p - base; break; }
                int64_t x = kind == 'z' ? (int64_t)((v >> 1) ^ (~(v & 1) + 1)) : (int64_t)v;
                ((int64_t *)data[number])[k] = x;
            } else if (kind && wire == 1 && (kind == 'd' || kind == 'f')) {
                if (c.end - c.p < 8) { bad_at = c.p - base; break; }
                memcpy((char *)data[number] + 8 * k, c.p, 8); /* little-endian hosts */
                c.p += 8;
            } else if (kind == 's' && wire == 2) {
                if (!read_varint(&c, &v) || v > (uint64_t)(c.end - c.p)) { bad_at = c.p - base; break; }
                ((int64_t *)data[number])[2 * k] = c.p - base;
                ((int64_t *)data[number])[2 * k + 1] = (int64_t)v;
                c.p += v;
            } else if (!skip_field(&c, wire)) {
                bad_at = c.p - base;
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    have_view = 0;
    if (bad_at >= 0) {
        malformed(bad_at);
        goto fail;
    }
    Py_DECREF(fields);
    Py_DECREF(spans);
    return result;
fail:
    if (have_view) PyBuffer_Release(&view);
    Py_XDECREF(result);
    Py_DECREF(fields);
    Py_DECREF(spans);
    return NULL;
}

static uint64_t hash_bytes(const uint8_t *p, int64_t len) {
    /* 8 bytes per step; equal strings are confirmed with memcmp anyway */
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdULL;
        h ^= h >> 32;
        p += 8;
        len -= 8;
    }
    uint64_t w = 0;
    memcpy(&w, p, (size_t)len);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
    return h ^ (h >> 29);
}

static PyObject *intern_strings(PyObject *self, PyObject *args) {
    PyObject *obj, *spans_obj;
    if (!PyArg_ParseTuple(args, "OO", &obj, &spans_obj)) return NULL;
    PyArrayObject *spans = (PyArrayObject *)PyArray_FROMANY(
        spans_obj, NPY_INT64, 2, 2, NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED);
    if (!spans) return NULL;
    Py_buffer view;
    if (get_buffer(obj, &view) < 0) {
        Py_DECREF(spans);
        return NULL;
    }
    npy_intp n = PyArray_DIM(spans, 0);
    const int64_t *sp = PyArray_DATA(spans);
    const uint8_t *base = (const uint8_t *)view.buf;
    npy_intp dims[1] = {n};
    PyObject *ids_arr = PyArray_SimpleNew(1, dims, NPY_INT32);
    PyObject *strings = PyList_New(0);
    /* open addressing table of (span index of first occurrence, id) */
    size_t cap = 1024; /* grows as unique strings arrive */
    int64_t *slot_span = NULL;
    int32_t *slot_id = NULL;
    size_t used = 0;
    PyObject *empty = NULL;
    if (!ids_arr || !strings) goto fail;
    slot_span = PyMem_Malloc(sizeof(int64_t) * cap);
    slot_id = PyMem_Malloc(sizeof(int32_t) * cap);
    if (!slot_span || !slot_id) { PyErr_NoMemory(); goto fail; }
    for (size_t i = 0; i < cap; i++) slot_span[i] = -1;
    empty = PyUnicode_FromString("");
    if (!empty || PyList_Append(strings, empty) < 0) goto fail; /* id 0 is "" */
    int32_t *ids = PyArray_DATA((PyArrayObject *)ids_arr);
    for (npy_intp k = 0; k < n; k++) {
        int64_t off = sp[2 * k], len = sp[2 * k + 1];
        if (off < 0 || len <= 0) { ids[k] = 0; continue; }
        if (off + len > view.len) {
            PyErr_SetString(PyExc_ValueError, "string span outside the buffer");
            goto fail;
        }
        const uint8_t *p = base + off;
        size_t mask = cap - 1, h = (size_t)hash_bytes(p, len) & mask;
        for (;;) {
            int64_t other = slot_span[h];
            if (other < 0) {
                PyObject *s = PyUnicode_DecodeUTF8((const char *)p, len, "replace");
                if (!s) goto fail;
                int32_t id = (int32_t)PyList_GET_SIZE(strings);
                int rc = PyList_Append(strings, s);
                Py_DECREF(s);
                if (rc < 0) goto fail;
                slot_span[h] = k;
                slot_id[h] = id;
                ids[k] = id;
                if (++used * 2 > cap) { /* grow and rehash */
                    size_t ncap = cap * 2;
                    int64_t *ns = PyMem_Malloc(sizeof(int64_t) * ncap);
                    int32_t *ni = PyMem_Malloc(sizeof(int32_t) * ncap);
                    if (!ns || !ni) { PyMem_Free(ns); PyMem_Free(ni); PyErr_NoMemory(); goto fail; }
                    for (size_t i = 0; i < ncap; i++) ns[i] = -1;
                    for (size_t i = 0; i < cap; i++) {
                        if (slot_span[i] < 0) continue;
                        int64_t j = slot_span[i];
                        size_t g = (size_t)hash_bytes(base + sp[2 * j], sp[2 * j + 1]) & (ncap - 1);
                        while (ns[g] >= 0) g = (g + 1) & (ncap - 1);
                        ns[g] = j;
                        ni[g] = slot_id[i];
                    }
                    PyMem_Free(slot_span);
                    PyMem_Free(slot_id);
                    slot_span = ns;
                    slot_id = ni;
                    cap = ncap;
                }
                break;
            }
            if (sp[2 * other + 1] == len && memcmp(base + sp[2 * other], p, len) == 0) {
                ids[k] = slot_id[h];
                break;
            }
            h = (h + 1) & mask;
        }
    }
    PyMem_Free(slot_span);
    PyMem_Free(slot_id);
    Py_DECREF(empty);
    PyBuffer_Release(&view);
    Py_DECREF(spans);
    return Py_BuildValue("(NN)", ids_arr, strings);
fail:
    PyMem_Free(slot_span);
    PyMem_Free(slot_id);
    Py_XDECREF(empty);
    Py_XDECREF(ids_arr);
    Py_XDECREF(strings);
    PyBuffer_Release(&view);
    Py_DECREF(spans);
    return NULL;
}

static PyMethodDef methods[] = {
    {"find_fields", find_fields, METH_VARARGS,
     "find_fields(buf, start, end, numbers) -> [int64[k, 2] spans per field number]"},
    {"decode_messages", decode_messages, METH_VARARGS,
     "decode_messages(buf, spans, [(number, kind), ...]) -> list of column arrays"},
    {"intern_strings", intern_strings, METH_VARARGS,
     "intern_strings(buf, spans) -> (int32 ids, list of unique str, id 0 = '')"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_protowire", NULL, -1, methods};

PyMODINIT_FUNC PyInit__protowire(void) {
    import_array();
    return PyModule_Create(&module);
}
