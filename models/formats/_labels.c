/* profscope.models.formats._labels: TensorFlow timeline.py's reading of StepStats
 * node labels (models/formats/step_stats.py).
 *
 *   parse_labels(buf, label_spans, name_spans, kernel) -> int64[n, 4]
 *       (op offset, op length, inputs/name offset, length), -1 when the
 *       label does not match
 */
#include "_cbuffers.h"
#include "_labels.h"

/* Out: per label (op offset, op length, inputs/name offset, length), -1 when
 * the pattern does not match (timeline.py's "unknown"); for GPU stream
 * labels the node name and op (match_kernel_label). */
static PyObject *parse_labels(PyObject *Py_UNUSED(self), PyObject *args) {
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
            const uint8_t *op, *op_end, *text, *text_end;
            if (kernel) {
                int64_t noff = ns[2 * k], nlen = ns[2 * k + 1];
                if (noff < 0 || nlen < 0 || noff + nlen > view.len) noff = nlen = 0;
                match_kernel_label(p, end, base + noff, base + noff + nlen, &text, &text_end, &op, &op_end);
                r[2] = text - base;
                r[3] = text_end - text;
                if (op) {
                    r[0] = op - base;
                    r[1] = op_end - op;
                }
            } else if (match_op_label(p, end, &op, &op_end, &text, &text_end)) {
                r[0] = op - base;
                r[1] = op_end - op;
                r[2] = text - base;
                r[3] = text_end - text;
            }
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

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_labels", .m_doc = "TensorFlow timeline.py's label pattern over StepStats labels.", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__labels(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
