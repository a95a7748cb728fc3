/* profscope.models.data._lanes: packing of intervals into lanes (rows of a timeline), as
 * models/formats/step_stats.py and models/formats/xspace/timeline.py draw
 * overlapping or nested events.
 *
 *   pack_lanes(starts, ends) -> int32 lane per interval
 */
#include "_cbuffers.h"

/* Lane per interval, first fit: for intervals sorted by start, the lowest
 * lane whose last interval ended at or before this start (nested intervals
 * get depths). An interval ending before its start ends at its start.
 *
 * In O(n log n): a min segment tree over the lanes holds each lane's end,
 * lanes not opened yet holding INT64_MIN. The leftmost leaf whose end is at
 * or before the start is then the lowest free lane, or the first lane not
 * opened yet when none is free; with n intervals at most n lanes open, so
 * one always exists. This is the same answer as scanning the lanes in
 * order, whatever the order of the starts. */
static PyObject *pack_lanes(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *starts_obj, *ends_obj;
    if (!PyArg_ParseTuple(args, "OO", &starts_obj, &ends_obj)) return NULL;
    PyArrayObject *starts = as_column(starts_obj, NPY_INT64);
    PyArrayObject *ends = as_column(ends_obj, NPY_INT64);
    PyObject *out = NULL;
    int64_t *tree = NULL;
    if (!starts || !ends) goto done;
    npy_intp n = PyArray_DIM(starts, 0);
    if (PyArray_DIM(ends, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "starts and ends differ in length");
        goto done;
    }
    /* The tree covers the lanes opened so far and doubles when all are busy:
     * a trace needs as many lanes as its deepest overlap, not as events. */
    npy_intp leaves = 64;
    npy_intp dims[1] = {n};
    out = PyArray_SimpleNew(1, dims, NPY_INT32);
    tree = PyMem_RawMalloc(sizeof(int64_t) * 2 * leaves);
    if (!out || !tree) {
        Py_CLEAR(out);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    const int64_t *s = PyArray_DATA(starts), *e = PyArray_DATA(ends);
    int32_t *lane = PyArray_DATA((PyArrayObject *)out);
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    /* tree[1] is the root, tree[2i] and tree[2i + 1] the children of i,
     * tree[leaves + l] lane l's end (INT64_MIN: not opened yet); each node
     * the least end below it. */
    for (npy_intp i = 1; i < 2 * leaves; i++) tree[i] = INT64_MIN;
    for (npy_intp k = 0; k < n; k++) {
        int64_t start = s[k];
        if (tree[1] > start) { /* every lane busy: twice the lanes */
            int64_t *wider = PyMem_RawMalloc(sizeof(int64_t) * 4 * leaves);
            if (!wider) {
                failed = 1;
                break;
            }
            for (npy_intp l = 0; l < 2 * leaves; l++) wider[2 * leaves + l] = l < leaves ? tree[leaves + l] : INT64_MIN;
            for (npy_intp i = 2 * leaves - 1; i; i--) wider[i] = wider[2 * i] < wider[2 * i + 1] ? wider[2 * i] : wider[2 * i + 1];
            PyMem_RawFree(tree);
            tree = wider;
            leaves *= 2;
        }
        npy_intp i = 1;
        while (i < leaves) i = tree[2 * i] <= start ? 2 * i : 2 * i + 1;
        lane[k] = (int32_t)(i - leaves);
        tree[i] = e[k] > start ? e[k] : start;
        for (i /= 2; i; i /= 2) {
            int64_t a = tree[2 * i], b = tree[2 * i + 1];
            tree[i] = a < b ? a : b;
        }
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        Py_CLEAR(out);
        PyErr_NoMemory();
    }
done:
    PyMem_RawFree(tree);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    return out;
}

static PyMethodDef methods[] = {
    {"pack_lanes", pack_lanes, METH_VARARGS, "pack_lanes(starts, ends) -> int32 lane per interval (first fit)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_lanes", .m_doc = "First-fit packing of intervals into lanes.", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__lanes(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
