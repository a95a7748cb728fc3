/* profscope.models.data._jsonrows: JSON text for many rows of numpy columns, exactly as
 * Python's json.dumps writes each value, so exports stream from columns
 * without a dict per row.
 *
 *   json_rows(parts, columns, start, stop, sep) -> bytes
 *       rows start..stop-1, each parts[0] col0 parts[1] col1 ... parts[k],
 *       rows joined by sep. A column is (kind, array[, table]):
 *         "i" int64 and "u" uint64 as decimal;
 *         "f" float64 as json.dumps does (repr, NaN, Infinity, -Infinity);
 *         "s" an id into table (a list of bytes, already JSON); an id
 *             outside the table is written as its decimal number.
 */
#include "_cbuffers.h"
#include "json_write.h"

typedef struct {
    char kind;
    PyArrayObject *array;
    PyObject *table;  /* borrowed list of bytes, for "s" */
    Py_ssize_t width; /* the most bytes one value takes */
    double last;      /* "f": the last value formatted and its text (columns repeat values) */
    char last_text[JSON_FLOAT_ROOM];
    int last_len;
} Column;

/* The text is written straight into the bytes object returned (resized
 * at the end): no copy, and no fresh pages for a buffer per call. */
typedef struct {
    PyObject *bytes;
    char *data;
    Py_ssize_t size, cap;
} Out;

static int out_reserve(Out *o, Py_ssize_t more) {
    if (o->size + more <= o->cap) return 1;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->size + more) cap *= 2;
    if (!o->bytes ? !(o->bytes = PyBytes_FromStringAndSize(NULL, cap)) : _PyBytes_Resize(&o->bytes, cap) < 0) return 0;
    o->data = PyBytes_AS_STRING(o->bytes);
    o->cap = cap;
    return 1;
}

/* The constant text around the values, copied 16 bytes at a time (rows
 * have 16 bytes of room to spare per part for what spills over). */
typedef struct {
    char *text; /* padded to a multiple of 16 */
    size_t len;
} Part;

/* Writers into room already reserved: each returns the end of what it wrote. */
static char *put_part(char *w, const Part *p) {
    for (size_t i = 0; i < p->len; i += 16) memcpy(w + i, p->text + i, 16);
    return w + p->len;
}

/* As json.dumps writes a float; NULL on failure. Columns repeat values:
 * the last one's text is kept. */
static char *put_float(char *w, Column *c, double v) {
    if (c->last_len == 0 || memcmp(&v, &c->last, sizeof v) != 0) {
        char *end = json_float(c->last_text, v);
        if (!end) return NULL;
        c->last = v;
        c->last_len = (int)(end - c->last_text);
    }
    memcpy(w, c->last_text, (size_t)c->last_len);
    return w + c->last_len;
}

static PyObject *json_rows(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *parts, *columns_obj;
    Py_ssize_t start, stop;
    Py_buffer sep;
    if (!PyArg_ParseTuple(args, "O!O!nny*", &PyList_Type, &parts, &PyList_Type, &columns_obj, &start, &stop, &sep))
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(columns_obj);
    Column *cols = PyMem_Calloc(k ? k : 1, sizeof(Column));
    Part *texts = NULL;
    Out out = {0};
    PyObject *result = NULL;
    if (!cols) {
        PyErr_NoMemory();
        goto done;
    }
    if (PyList_GET_SIZE(parts) != k + 1) {
        PyErr_SetString(PyExc_ValueError, "parts must have one more item than columns");
        goto done;
    }
    for (Py_ssize_t j = 0; j <= k; j++) {
        if (!PyBytes_Check(PyList_GET_ITEM(parts, j))) {
            PyErr_SetString(PyExc_TypeError, "parts must be bytes");
            goto done;
        }
    }
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *spec = PyList_GET_ITEM(columns_obj, j), *array;
        const char *kind;
        PyObject *table = NULL;
        if (!PyArg_ParseTuple(spec, "sO|O!", &kind, &array, &PyList_Type, &table)) goto done;
        int type = kind[0] == 'u' ? NPY_UINT64 : kind[0] == 'f' ? NPY_FLOAT64 : NPY_INT64;
        if (!strchr("iufs", kind[0]) || kind[1] || (kind[0] == 's') != (table != NULL)) {
            PyErr_SetString(PyExc_ValueError, "a column is (\"i\"|\"u\"|\"f\", array) or (\"s\", array, table)");
            goto done;
        }
        cols[j].kind = kind[0];
        cols[j].table = table;
        if (!(cols[j].array = as_column(array, type))) goto done;
        if (PyArray_DIM(cols[j].array, 0) < stop) {
            PyErr_SetString(PyExc_ValueError, "a column is shorter than stop");
            goto done;
        }
        cols[j].width = kind[0] == 'f' ? JSON_FLOAT_ROOM : 24; /* an id outside the table is written as a number */
        for (Py_ssize_t t = 0; table && t < PyList_GET_SIZE(table); t++) {
            PyObject *text = PyList_GET_ITEM(table, t);
            if (!PyBytes_Check(text)) {
                PyErr_SetString(PyExc_TypeError, "a table must hold bytes");
                goto done;
            }
            if (PyBytes_GET_SIZE(text) > cols[j].width) cols[j].width = PyBytes_GET_SIZE(text);
        }
    }
    Py_ssize_t row_width = sep.len + 16; /* the most bytes a row takes, reserved once per row */
    for (Py_ssize_t j = 0; j <= k; j++) {
        row_width += PyBytes_GET_SIZE(PyList_GET_ITEM(parts, j)) + 16 + (j < k ? cols[j].width : 0);
    }
    if (!(texts = PyMem_Calloc(k + 2, sizeof(Part)))) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t j = 0; j <= k + 1; j++) { /* the parts, then sep */
        const char *from = j <= k ? PyBytes_AS_STRING(PyList_GET_ITEM(parts, j)) : sep.buf;
        texts[j].len = j <= k ? (size_t)PyBytes_GET_SIZE(PyList_GET_ITEM(parts, j)) : (size_t)sep.len;
        if (!(texts[j].text = PyMem_Calloc((texts[j].len + 15) / 16 + 1, 16))) {
            PyErr_NoMemory();
            goto done;
        }
        memcpy(texts[j].text, from, texts[j].len);
    }
    if (start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "bad row range");
        goto done;
    }
    /* Room for every row at its widest, up to 16 MiB (more as needed): below
     * glibc's largest mmap threshold, so the memory of one call is reused by the next. */
    Py_ssize_t room = (Py_ssize_t)16 << 20;
    if (stop - start < room / row_width) room = (stop - start) * row_width;
    if (stop > start && !out_reserve(&out, room)) goto done;
    for (Py_ssize_t r = start; r < stop; r++) {
        if (!out_reserve(&out, row_width)) goto done;
        char *w = out.data + out.size;
        if (r > start) w = put_part(w, &texts[k + 1]);
        for (Py_ssize_t j = 0; j <= k; j++) {
            w = put_part(w, &texts[j]);
            if (j == k) break;
            Column *c = &cols[j];
            const void *at = PyArray_GETPTR1(c->array, r);
            if (c->kind == 'u') {
                w = write_uint(w, *(const uint64_t *)at, 0);
            } else if (c->kind == 'f') {
                if (!(w = put_float(w, c, *(const double *)at))) goto done;
            } else if (c->kind == 's') {
                int64_t id = *(const int64_t *)at;
                if (id >= 0 && id < PyList_GET_SIZE(c->table)) {
                    PyObject *text = PyList_GET_ITEM(c->table, id);
                    memcpy(w, PyBytes_AS_STRING(text), (size_t)PyBytes_GET_SIZE(text));
                    w += PyBytes_GET_SIZE(text);
                } else {
                    w = write_int(w, id);
                }
            } else {
                w = write_int(w, *(const int64_t *)at);
            }
        }
        out.size = w - out.data;
    }
    if (!out.bytes) {
        result = PyBytes_FromStringAndSize("", 0);
    } else if (_PyBytes_Resize(&out.bytes, out.size) == 0) {
        result = out.bytes;
        out.bytes = NULL;
    }
done:
    for (Py_ssize_t j = 0; cols && j < k; j++) Py_XDECREF(cols[j].array);
    for (Py_ssize_t j = 0; texts && j <= k + 1; j++) PyMem_Free(texts[j].text);
    PyMem_Free(texts);
    PyMem_Free(cols);
    Py_XDECREF(out.bytes);
    PyBuffer_Release(&sep);
    return result;
}

static PyMethodDef methods[] = {
    {"json_rows", json_rows, METH_VARARGS,
     "json_rows(parts, columns, start, stop, sep) -> bytes: rows of columns as JSON text"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_jsonrows", .m_doc = NULL, .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__jsonrows(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
