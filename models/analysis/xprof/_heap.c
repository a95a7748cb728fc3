/* profscope.models.analysis.xprof._heap: the replay of an XLA heap
 * simulator trace for XProf's memory_viewer (memory_viewer.py), one pass
 * over the events with reference counts per buffer.
 *
 *   replay(kinds, buffers, shares, sizes, unpadded) -> (delta, udelta,
 *       start, end, canonical, seen, add_event, add_code, share_event,
 *       share_root, share_buffer, error, error_value)
 *
 * kinds: int64 per event (0 ALLOC, 1 FREE, 2 SHARE_WITH); buffers, shares:
 * the event's buffer and share-with buffer as indices into sizes (-1:
 * unknown, the event is skipped); sizes, unpadded: int64 bytes per buffer.
 * Rules (XProf's HeapSimulatorStats): ALLOC counts a reference on the
 * buffer's root (the end of its chain of canonical buffers) and adds the
 * buffer; FREE drops one and removes the root when none is left (closing
 * the root's span the first time only), and closes a sharing buffer's
 * span; SHARE_WITH makes the share-with buffer the buffer's canonical one,
 * counts a reference on its root and, when that is the first, adds the
 * root again (memory reused) and opens the buffer's own span.
 *
 * delta/udelta: bytes (padded, unpadded) each event adds or removes;
 * start/end: each buffer's span (-1: none); canonical: -1 or the index;
 * seen: buffers named by an event; add_event/add_code: each addition (code
 * = buffer) and removal (code = ~root) in event order; share_*: each reuse
 * (event, root, sharing buffer). error: 0, 1 freed more often than
 * allocated (error_value = buffer), 2 unknown kind (error_value = kind).
 */
#include "_cbuffers.h"

typedef struct {
    int64_t *a, *b, *c;
    npy_intp n, cap;
} Triples;

static int push(Triples *t, int64_t a, int64_t b, int64_t c) {
    if (t->n == t->cap) {
        npy_intp cap = t->cap ? 2 * t->cap : 1024;
        int64_t *na = PyMem_RawRealloc(t->a, sizeof(int64_t) * cap);
        if (na) t->a = na;
        int64_t *nb = na ? PyMem_RawRealloc(t->b, sizeof(int64_t) * cap) : NULL;
        if (nb) t->b = nb;
        int64_t *nc = nb ? PyMem_RawRealloc(t->c, sizeof(int64_t) * cap) : NULL;
        if (nc) t->c = nc;
        if (!nc) return 0;
        t->cap = cap;
    }
    t->a[t->n] = a;
    t->b[t->n] = b;
    t->c[t->n] = c;
    t->n++;
    return 1;
}

static PyObject *column(const int64_t *data, npy_intp n) {
    npy_intp dims[1] = {n};
    PyObject *out = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (out && n) memcpy(PyArray_DATA((PyArrayObject *)out), data, sizeof(int64_t) * (size_t)n);
    return out;
}

static PyObject *replay(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *kinds_obj, *buffers_obj, *shares_obj, *sizes_obj, *unpadded_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &kinds_obj, &buffers_obj, &shares_obj, &sizes_obj, &unpadded_obj)) return NULL;
    PyArrayObject *kinds = as_column(kinds_obj, NPY_INT64), *buffers = as_column(buffers_obj, NPY_INT64);
    PyArrayObject *shares = as_column(shares_obj, NPY_INT64), *sizes = as_column(sizes_obj, NPY_INT64);
    PyArrayObject *unpadded = as_column(unpadded_obj, NPY_INT64);
    PyObject *result = NULL, *delta = NULL, *udelta = NULL, *start = NULL, *end = NULL, *canon = NULL, *seen = NULL;
    int64_t *ref = NULL;
    Triples adds = {0}, reuses = {0};
    if (!kinds || !buffers || !shares || !sizes || !unpadded) goto done;
    npy_intp n = PyArray_DIM(kinds, 0), m = PyArray_DIM(sizes, 0);
    if (PyArray_DIM(buffers, 0) != n || PyArray_DIM(shares, 0) != n || PyArray_DIM(unpadded, 0) != m) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *kind = PyArray_DATA(kinds), *buf = PyArray_DATA(buffers), *share = PyArray_DATA(shares);
    const int64_t *size = PyArray_DATA(sizes), *usize = PyArray_DATA(unpadded);
    for (npy_intp i = 0; i < n; i++) {
        if (buf[i] >= m || share[i] >= m) {
            PyErr_SetString(PyExc_ValueError, "buffer index out of range");
            goto done;
        }
    }
    npy_intp en[1] = {n}, bm[1] = {m};
    delta = PyArray_ZEROS(1, en, NPY_INT64, 0);
    udelta = PyArray_ZEROS(1, en, NPY_INT64, 0);
    start = PyArray_SimpleNew(1, bm, NPY_INT64);
    end = PyArray_SimpleNew(1, bm, NPY_INT64);
    canon = PyArray_SimpleNew(1, bm, NPY_INT64);
    seen = PyArray_ZEROS(1, bm, NPY_BOOL, 0);
    ref = PyMem_RawCalloc(m ? (size_t)m : 1, sizeof(int64_t));
    if (!delta || !udelta || !start || !end || !canon || !seen || !ref) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int64_t *d = PyArray_DATA((PyArrayObject *)delta), *ud = PyArray_DATA((PyArrayObject *)udelta);
    int64_t *st = PyArray_DATA((PyArrayObject *)start), *en_ = PyArray_DATA((PyArrayObject *)end);
    int64_t *cn = PyArray_DATA((PyArrayObject *)canon);
    npy_bool *sn = PyArray_DATA((PyArrayObject *)seen);
    for (npy_intp k = 0; k < m; k++) st[k] = en_[k] = cn[k] = -1;
    int64_t error = 0, error_value = 0, last = (int64_t)n - 1;
    int ok = 1;
    for (npy_intp i = 0; i < n && ok && !error; i++) {
        int64_t k = buf[i], r;
        if (k < 0) continue;
        sn[k] = 1;
        switch (kind[i]) {
        case 0: /* ALLOC */
            for (r = k; cn[r] >= 0; r = cn[r]) {}
            ref[r]++;
            d[i] += size[k];
            ud[i] += usize[k];
            ok = push(&adds, i, k, 0);
            st[k] = i;
            en_[k] = last;
            break;
        case 1: /* FREE */
            for (r = k; cn[r] >= 0; r = cn[r]) {}
            if (--ref[r] < 0) {
                error = 1;
                error_value = k;
                break;
            }
            if (ref[r] == 0) {
                d[i] -= size[r];
                ud[i] -= usize[r];
                ok = push(&adds, i, ~r, 0);
                if (st[r] >= 0 && en_[r] == last) en_[r] = i;
            }
            if (st[k] >= 0 && cn[k] >= 0) en_[k] = i;
            break;
        case 2: { /* SHARE_WITH */
            int64_t c = share[i];
            if (c < 0) break;
            cn[k] = c;
            for (r = c; cn[r] >= 0 && r != k; r = cn[r]) {}
            if (r == k) { /* a cycle of canonical buffers: XProf would loop; leave it unshared */
                cn[k] = -1;
                break;
            }
            if (++ref[r] == 1) {
                ok = push(&reuses, i, r, k);
                st[k] = i;
                en_[k] = last;
                d[i] += size[r];
                ud[i] += usize[r];
                ok = ok && push(&adds, i, r, 0);
            }
            break;
        }
        default:
            error = 2;
            error_value = kind[i];
        }
    }
    if (!ok) {
        PyErr_NoMemory();
        goto done;
    }
    result = Py_BuildValue("(OOOOOONNNNNLL)", delta, udelta, start, end, canon, seen, column(adds.a, adds.n),
                           column(adds.b, adds.n), column(reuses.a, reuses.n), column(reuses.b, reuses.n),
                           column(reuses.c, reuses.n), (long long)error, (long long)error_value);
done:
    PyMem_RawFree(ref);
    PyMem_RawFree(adds.a);
    PyMem_RawFree(adds.b);
    PyMem_RawFree(adds.c);
    PyMem_RawFree(reuses.a);
    PyMem_RawFree(reuses.b);
    PyMem_RawFree(reuses.c);
    Py_XDECREF(delta);
    Py_XDECREF(udelta);
    Py_XDECREF(start);
    Py_XDECREF(end);
    Py_XDECREF(canon);
    Py_XDECREF(seen);
    Py_XDECREF(kinds);
    Py_XDECREF(buffers);
    Py_XDECREF(shares);
    Py_XDECREF(sizes);
    Py_XDECREF(unpadded);
    return result;
}

static PyMethodDef methods[] = {
    {"replay", replay, METH_VARARGS,
     "replay(kinds, buffers, shares, sizes, unpadded) -> an XLA heap simulator trace replayed (see the module doc)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_heap", .m_doc = "XLA heap simulator traces replayed for memory_viewer.",
    .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__heap(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
