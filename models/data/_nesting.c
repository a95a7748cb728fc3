/* profscope.models.data._nesting: a trace's nesting by time containment,
 * for XSpace's groups (models/formats/xspace/groups.py) and Chrome traces
 * (chrome_trace.py).
 *
 *   nest_parents(order, segment, starts, ends, skip) -> int32 parent per
 *       event (-1 for none)
 */
#include "_cbuffers.h"

/* Parents by time containment, as a trace's nesting. `order` lists the
 * events sorted by (segment, start, end descending); each event's parent is
 * the nearest event on the stack of open events that contains it ([start,
 * end] within the parent's), popping those that do not. Skipped events
 * (async) neither get a parent nor become one; order None means the events
 * are in that order already. Returns int32 parent per event (by event
 * index, -1 for none). */
static PyObject *nest_parents(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *order_obj, *seg_obj, *starts_obj, *ends_obj, *skip_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &order_obj, &seg_obj, &starts_obj, &ends_obj, &skip_obj)) return NULL;
    PyArrayObject *order = order_obj == Py_None ? NULL
        : as_column(order_obj, NPY_INT64);
    PyArrayObject *seg = as_column(seg_obj, NPY_INT32);
    PyArrayObject *starts = as_column(starts_obj, NPY_INT64);
    PyArrayObject *ends = as_column(ends_obj, NPY_INT64);
    PyArrayObject *skip = as_column(skip_obj, NPY_BOOL);
    PyObject *out = NULL;
    int64_t *stack = NULL;
    if ((!order && order_obj != Py_None) || !seg || !starts || !ends || !skip) goto done;
    npy_intp n = PyArray_DIM(starts, 0);
    if ((order && PyArray_DIM(order, 0) != n) || PyArray_DIM(seg, 0) != n || PyArray_DIM(ends, 0) != n || PyArray_DIM(skip, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *o = order ? PyArray_DATA(order) : NULL;
    for (npy_intp i = 0; o && i < n; i++) {
        if (o[i] < 0 || o[i] >= n) {
            PyErr_SetString(PyExc_ValueError, "order is not a permutation of the events");
            goto done;
        }
    }
    npy_intp dims[1] = {n};
    out = PyArray_SimpleNew(1, dims, NPY_INT32);
    stack = PyMem_RawMalloc(sizeof(int64_t) * (n ? n : 1));
    if (!out || !stack) {
        Py_CLEAR(out);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    const int32_t *g = PyArray_DATA(seg);
    const int64_t *s = PyArray_DATA(starts), *e = PyArray_DATA(ends);
    const npy_bool *k = PyArray_DATA(skip);
    int32_t *parent = PyArray_DATA((PyArrayObject *)out);
    Py_BEGIN_ALLOW_THREADS
    npy_intp depth = 0;
    for (npy_intp j = 0; j < n; j++) {
        int64_t i = o ? o[j] : j, prev = o && j ? o[j - 1] : j - 1;
        if (j && g[i] != g[prev]) depth = 0;
        parent[i] = -1;
        if (k[i]) continue;
        while (depth) {
            int64_t p = stack[depth - 1];
            if (s[p] <= s[i] && e[i] <= e[p]) {
                parent[i] = (int32_t)p;
                break;
            }
            depth--;
        }
        stack[depth++] = i;
    }
    Py_END_ALLOW_THREADS
done:
    PyMem_RawFree(stack);
    Py_XDECREF(order);
    Py_XDECREF(seg);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    Py_XDECREF(skip);
    return out;
}

static PyMethodDef methods[] = {
    {"nest_parents", nest_parents, METH_VARARGS,
     "nest_parents(order, segment, starts, ends, skip) -> int32 parent per event by time containment (-1 for none)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_nesting", .m_doc = "Parents of trace events by time containment.", .m_size = -1,
    .m_methods = methods};

PyMODINIT_FUNC PyInit__nesting(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
