/* models._jsonrows: JSON text for many rows of numpy columns, exactly as
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
#include <math.h>

typedef struct {
    char kind;
    PyArrayObject *array;
    PyObject *table;  /* borrowed list of bytes, for "s" */
} Column;

typedef struct {
    char *data;
    Py_ssize_t size, cap;
} Out;

static int out_reserve(Out *o, Py_ssize_t more) {
    if (o->size + more <= o->cap) return 1;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < o->size + more) cap *= 2;
    char *grown = PyMem_Realloc(o->data, cap);
    if (!grown) {
        PyErr_NoMemory();
        return 0;
    }
    o->data = grown;
    o->cap = cap;
    return 1;
}

static int out_put(Out *o, const char *s, Py_ssize_t n) {
    if (!out_reserve(o, n)) return 0;
    memcpy(o->data + o->size, s, n);
    o->size += n;
    return 1;
}

static int out_uint(Out *o, uint64_t v, int negative) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (!out_reserve(o, n + 1)) return 0;
    if (negative) o->data[o->size++] = '-';
    while (n) o->data[o->size++] = digits[--n];
    return 1;
}

static int out_int(Out *o, int64_t v) {
    return v < 0 ? out_uint(o, (uint64_t)0 - (uint64_t)v, 1) : out_uint(o, (uint64_t)v, 0);
}

/* As float.__repr__, which json.dumps uses for finite numbers. */
static int out_float(Out *o, double v) {
    if (v != v) return out_put(o, "NaN", 3);
    if (v == HUGE_VAL) return out_put(o, "Infinity", 8);
    if (v == -HUGE_VAL) return out_put(o, "-Infinity", 9);
    char *text = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!text) return 0;
    int ok = out_put(o, text, (Py_ssize_t)strlen(text));
    PyMem_Free(text);
    return ok;
}

static PyObject *json_rows(PyObject *self, PyObject *args) {
    PyObject *parts, *columns_obj;
    Py_ssize_t start, stop;
    Py_buffer sep;
    if (!PyArg_ParseTuple(args, "O!O!nny*", &PyList_Type, &parts, &PyList_Type, &columns_obj, &start, &stop, &sep))
        return NULL;
    Py_ssize_t k = PyList_GET_SIZE(columns_obj);
    Column *cols = PyMem_Calloc(k ? k : 1, sizeof(Column));
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
        for (Py_ssize_t t = 0; table && t < PyList_GET_SIZE(table); t++) {
            if (!PyBytes_Check(PyList_GET_ITEM(table, t))) {
                PyErr_SetString(PyExc_TypeError, "a table must hold bytes");
                goto done;
            }
        }
    }
    if (start < 0 || stop < start) {
        PyErr_SetString(PyExc_ValueError, "bad row range");
        goto done;
    }
    for (Py_ssize_t r = start; r < stop; r++) {
        if (r > start && !out_put(&out, sep.buf, sep.len)) goto done;
        for (Py_ssize_t j = 0; j <= k; j++) {
            PyObject *part = PyList_GET_ITEM(parts, j);
            if (!out_put(&out, PyBytes_AS_STRING(part), PyBytes_GET_SIZE(part))) goto done;
            if (j == k) break;
            Column *c = &cols[j];
            void *at = PyArray_GETPTR1(c->array, r);
            int ok;
            if (c->kind == 'u') {
                ok = out_uint(&out, *(uint64_t *)at, 0);
            } else if (c->kind == 'f') {
                ok = out_float(&out, *(double *)at);
            } else if (c->kind == 's') {
                int64_t id = *(int64_t *)at;
                if (id >= 0 && id < PyList_GET_SIZE(c->table)) {
                    PyObject *text = PyList_GET_ITEM(c->table, id);
                    ok = out_put(&out, PyBytes_AS_STRING(text), PyBytes_GET_SIZE(text));
                } else {
                    ok = out_int(&out, id);
                }
            } else {
                ok = out_int(&out, *(int64_t *)at);
            }
            if (!ok) goto done;
        }
    }
    result = PyBytes_FromStringAndSize(out.data ? out.data : "", out.size);
done:
    for (Py_ssize_t j = 0; cols && j < k; j++) Py_XDECREF(cols[j].array);
    PyMem_Free(cols);
    PyMem_Free(out.data);
    PyBuffer_Release(&sep);
    return result;
}

static PyMethodDef methods[] = {
    {"json_rows", json_rows, METH_VARARGS,
     "json_rows(parts, columns, start, stop, sep) -> bytes: rows of columns as JSON text"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_jsonrows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__jsonrows(void) {
    import_array();
    return PyModule_Create(&module);
}
