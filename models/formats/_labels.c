/* models.formats._labels: TensorFlow timeline.py's reading of StepStats
 * node labels (models/formats/step_stats.py).
 *
 *   parse_labels(buf, label_spans, name_spans, kernel) -> int64[n, 4]
 *       (op offset, op length, inputs/name offset, length), -1 when the
 *       label does not match
 */
#include "_cbuffers.h"

/* Last occurrence of byte ch in [p, end), or NULL. */
static const uint8_t *last_byte(const uint8_t *p, const uint8_t *end, uint8_t ch) {
    while (end > p) {
        if (*--end == ch) return end;
    }
    return NULL;
}

/* TensorFlow's timeline.py reads `name = Op(in0, in1)` with the greedy
 * pattern `(.*) = (.*)\((.*)\)` on the first line; this finds the same
 * groups: the op ends at the last '(' before the last ')', the name at the
 * last " = " before that. GPU stream labels carry the node as
 * `...@@name:op#...`; timeline.py then splits that (or the node name) at ':'.
 * Out: per label (op offset, op length, inputs/name offset, length), -1 when
 * the pattern does not match (timeline.py's "unknown"). */
static PyObject *parse_labels(PyObject *self, PyObject *args) {
    PyObject *obj, *labels_obj, *names_obj;
    int kernel;
    if (!PyArg_ParseTuple(args, "OOOp", &obj, &labels_obj, &names_obj, &kernel)) return NULL;
    PyArrayObject *labels = as_spans(labels_obj);
    PyArrayObject *names = as_spans(names_obj);
    PyObject *out = NULL;
    Py_buffer view;
    if (!labels || !names) goto done;
    npy_intp n = PyArray_DIM(labels, 0);
    if (PyArray_DIM(labels, 1) != 2 || PyArray_DIM(names, 1) != 2 || PyArray_DIM(names, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "labels and names must be [n, 2] spans");
        goto done;
    }
    if (get_buffer(obj, &view) < 0) goto done;
    npy_intp dims[2] = {n, 4};
    out = PyArray_SimpleNew(2, dims, NPY_INT64);
    if (out) {
        const uint8_t *base = view.buf;
        const int64_t *ls = PyArray_DATA(labels), *ns = PyArray_DATA(names);
        int64_t *o = PyArray_DATA((PyArrayObject *)out);
        for (npy_intp k = 0; k < n; k++) {
            int64_t *r = o + 4 * k;
            r[0] = r[1] = r[2] = r[3] = -1;
            int64_t off = ls[2 * k], len = ls[2 * k + 1];
            if (off < 0 || len < 0 || off + len > view.len) off = len = 0;
            const uint8_t *p = base + off, *end = p + len;
            if (kernel) {
                /* node = label[@@+2 : #] when both occur in that order, else the node name */
                const uint8_t *at = NULL, *hash = memchr(p, '#', (size_t)len);
                for (const uint8_t *q = p; q + 1 < end; q++)
                    if (q[0] == '@' && q[1] == '@') { at = q; break; }
                const uint8_t *nb, *ne;
                if (at && hash && at + 2 < hash) {
                    nb = at + 2;
                    ne = hash;
                } else {
                    int64_t noff = ns[2 * k], nlen = ns[2 * k + 1];
                    if (noff < 0 || nlen < 0 || noff + nlen > view.len) noff = nlen = 0;
                    nb = base + noff;
                    ne = nb + nlen;
                }
                const uint8_t *colon = memchr(nb, ':', (size_t)(ne - nb));
                r[2] = nb - base;
                r[3] = (colon ? colon : ne) - nb;
                if (colon) {
                    const uint8_t *next = memchr(colon + 1, ':', (size_t)(ne - colon - 1));
                    r[0] = colon + 1 - base;
                    r[1] = (next ? next : ne) - (colon + 1);
                }
                continue;
            }
            const uint8_t *nl = memchr(p, '\n', (size_t)len);
            if (nl) end = nl;
            const uint8_t *close = last_byte(p, end, ')');
            if (!close) continue;
            const uint8_t *open = last_byte(p, close, '(');
            if (!open) continue;
            const uint8_t *eq = NULL;
            for (const uint8_t *q = open - 3; q >= p; q--)
                if (q[0] == ' ' && q[1] == '=' && q[2] == ' ') { eq = q; break; }
            if (!eq) continue;
            r[0] = eq + 3 - base;
            r[1] = open - (eq + 3);
            r[2] = open + 1 - base;
            r[3] = close - (open + 1);
        }
    }
    PyBuffer_Release(&view);
done:
    Py_XDECREF(labels);
    Py_XDECREF(names);
    return out;
}

static PyMethodDef methods[] = {
    {"parse_labels", parse_labels, METH_VARARGS,
     "parse_labels(buf, label_spans, name_spans, kernel) -> int64[n, 4] (op off, len, inputs/name off, len)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_labels", "TensorFlow timeline.py's label pattern over StepStats labels.", -1, methods};

PyMODINIT_FUNC PyInit__labels(void) {
    import_array();
    return PyModule_Create(&module);
}
