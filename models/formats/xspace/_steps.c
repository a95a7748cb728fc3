/* profscope.models.formats.xspace._steps: XProf's step groups over an
 * XSpace's events (xplane.py, groups.py).
 *
 *   xprof_order(starts, ends, segment) -> None or the int64 permutation into
 *       (segment, start, longest first) order
 *   nest_rows(rows, line, offset, duration, line_ps, skip) -> int32 parent
 *       per row position (-1: none): nesting in XProf's order of XSpace events
 *   claim_groups(src, dst, num_nodes, num_events, roots, parent=None) ->
 *       (int32 group per event, -1 for none; int64 the roots that got a group)
 *   op_metrics(rows, keys, code_of_key, extra_at, extra_code, eager_at,
 *       line, offset, duration, line_ps, slot_of_code, typed, num_slots)
 *       -> per slot occurrences, times, ...: XProf's host op
 *       stack and its op metrics (analysis.xprof)
 *   step_sweep(starts, ends, types, segment, step_begin, step_end) ->
 *       (int64 time per step and type, uint8 type seen per step): XProf's
 *       non-overlapped step events (analysis.xprof)
 *   step_sweep_rows(rows, line, offset, duration, line_ps, types, step,
 *       step_begin, step_end) -> step_sweep's of XSpace events by row
 */
#include "_cbuffers.h"

typedef struct {
    int64_t start, end, index;
} Timed;

static int timed_order(const void *x, const void *y) {
    const Timed *a = x, *b = y;
    if (a->start != b->start) return a->start < b->start ? -1 : 1;
    if (a->end != b->end) return a->end > b->end ? -1 : 1; /* the longest first */
    return a->index < b->index ? -1 : a->index > b->index;
}

/* Sorts buf[0..m) by timed_order: by insertion first, linear for events that
 * come nearly in order (the usual line), qsort once too many moves show they
 * do not. Both give the one order timed_order defines. */
static void sort_timed(Timed *buf, npy_intp m) {
    int64_t moves = 0, budget = 16 * (int64_t)m + 1024;
    for (npy_intp i = 1; i < m; i++) {
        Timed x = buf[i];
        npy_intp j = i;
        while (j > 0 && timed_order(&buf[j - 1], &x) > 0) {
            buf[j] = buf[j - 1];
            j--;
            if (++moves > budget) {
                buf[j] = x;
                qsort(buf, m, sizeof(Timed), timed_order);
                return;
            }
        }
        buf[j] = x;
    }
}

/* xprof_order(starts, ends, segment) -> None when the events are in XProf's
 * order already (by segment, start, then the longest first), else the int64
 * permutation that puts them in it (ties in index order). Events of one
 * segment must be contiguous (segment None: all one); only segments out of
 * order are sorted. */
static PyObject *xprof_order(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *starts_obj, *ends_obj, *seg_obj;
    if (!PyArg_ParseTuple(args, "OOO", &starts_obj, &ends_obj, &seg_obj)) return NULL;
    PyArrayObject *starts = as_column(starts_obj, NPY_INT64), *ends = as_column(ends_obj, NPY_INT64);
    PyArrayObject *seg = seg_obj == Py_None ? NULL : as_column(seg_obj, NPY_INT32);
    PyObject *out = NULL;
    Timed *buf = NULL;
    if (!starts || !ends || (!seg && seg_obj != Py_None)) goto done;
    npy_intp n = PyArray_DIM(starts, 0);
    if (PyArray_DIM(ends, 0) != n || (seg && PyArray_DIM(seg, 0) != n)) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *s = PyArray_DATA(starts), *e = PyArray_DATA(ends);
    const int32_t *g = seg ? PyArray_DATA(seg) : NULL;
    npy_intp unsorted = -1;
    for (npy_intp i = 1; i < n && unsorted < 0; i++) {
        if (g && g[i] != g[i - 1]) {
            if (g[i] < g[i - 1]) {
                PyErr_SetString(PyExc_ValueError, "segments must be contiguous and ascending");
                goto done;
            }
            continue;
        }
        if (s[i] < s[i - 1] || (s[i] == s[i - 1] && e[i] > e[i - 1])) unsorted = i;
    }
    if (unsorted < 0) {
        out = Py_None;
        Py_INCREF(out);
        goto done;
    }
    npy_intp dims[1] = {n};
    out = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (!out) goto done;
    int64_t *o = PyArray_DATA((PyArrayObject *)out);
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    npy_intp cap = 0;
    for (npy_intp a = 0; a < n && !failed;) {
        npy_intp b = a + 1, bad = 0;
        for (; b < n && !(g && g[b] != g[a]); b++)
            if (s[b] < s[b - 1] || (s[b] == s[b - 1] && e[b] > e[b - 1])) bad = 1;
        if (g && b < n && g[b] < g[a]) failed = 2;
        if (!bad) {
            for (npy_intp i = a; i < b; i++) o[i] = i;
        } else {
            if (b - a > cap) {
                Timed *grown = PyMem_RawRealloc(buf, sizeof(Timed) * (b - a));
                if (!grown) {
                    failed = 1;
                    break;
                }
                buf = grown;
                cap = b - a;
            }
            for (npy_intp i = a; i < b; i++) buf[i - a] = (Timed){s[i], e[i], i};
            sort_timed(buf, b - a);
            for (npy_intp i = a; i < b; i++) o[i] = buf[i - a].index;
        }
        a = b;
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        Py_CLEAR(out);
        if (failed == 1) PyErr_NoMemory();
        else PyErr_SetString(PyExc_ValueError, "segments must be contiguous and ascending");
    }
done:
    PyMem_RawFree(buf);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    Py_XDECREF(seg);
    return out;
}

/* nest_rows(rows, line, offset, duration, line_ps, skip) -> int32 parent per position (-1: none): the nesting
 * of events rows[i] (ascending, so each line's contiguous) of an XSpace's columns, as positions in rows. Per
 * line, in XProf's order (xprof_order: start = line_ps[line] + offset, end = start + max(duration, 0); by start,
 * then the longest first, then position), each event's parent is the nearest event on the stack of open ones
 * that contains it ([start, end] within the parent's), popping those that do not; skipped events (async)
 * neither get a parent nor become one. What xprof_order and _nesting.nest_parents give, without the columns of
 * every event's times: a line out of order is put in order as positions (4 bytes an event; here fresh memory
 * costs more than the sort), by insertion while that stays cheap, else by qsort. */
/* The event columns nest_rows, op_metrics and step_sweep_rows take: rows (int64) into an XSpace's events, each
 * event's line (int32), offset and duration (int64), and each line's start (int64 ps). */
typedef struct {
    PyArrayObject *rows, *lines, *offsets, *durations, *line_ps;
    const int64_t *rw, *off, *dur, *lps;
    const int32_t *ln;
    npy_intp n, num_events, num_lines;
} Events;

/* Fills `e` (zeroed first); 0 with an exception set when a column is missing or the events' columns differ in
 * length. events_close releases it either way. */
static int events_open(Events *e, PyObject *r_obj, PyObject *l_obj, PyObject *o_obj, PyObject *d_obj,
                       PyObject *p_obj) {
    e->rows = as_column(r_obj, NPY_INT64), e->lines = as_column(l_obj, NPY_INT32);
    e->offsets = as_column(o_obj, NPY_INT64), e->durations = as_column(d_obj, NPY_INT64);
    e->line_ps = as_column(p_obj, NPY_INT64);
    if (!e->rows || !e->lines || !e->offsets || !e->durations || !e->line_ps) return 0;
    e->n = PyArray_DIM(e->rows, 0), e->num_events = PyArray_DIM(e->lines, 0);
    e->num_lines = PyArray_DIM(e->line_ps, 0);
    if (PyArray_DIM(e->offsets, 0) != e->num_events || PyArray_DIM(e->durations, 0) != e->num_events) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        return 0;
    }
    if (e->n >= INT32_MAX) { /* nest_rows and the sweep keep positions in rows as int32 */
        PyErr_SetString(PyExc_ValueError, "too many events");
        return 0;
    }
    e->rw = PyArray_DATA(e->rows), e->off = PyArray_DATA(e->offsets), e->dur = PyArray_DATA(e->durations);
    e->lps = PyArray_DATA(e->line_ps), e->ln = PyArray_DATA(e->lines);
    return 1;
}

/* Does rows[i] name an event, on one of the lines? */
static inline int event_ok(const Events *e, npy_intp i) {
    int64_t r = e->rw[i];
    return r >= 0 && r < e->num_events && e->ln[r] >= 0 && e->ln[r] < e->num_lines;
}

static void events_close(Events *e) {
    Py_XDECREF(e->rows);
    Py_XDECREF(e->lines);
    Py_XDECREF(e->offsets);
    Py_XDECREF(e->durations);
    Py_XDECREF(e->line_ps);
}

#define ROW_START(i) (base + off[rw[i]])
#define ROW_END(i) (ROW_START(i) + (dur[rw[i]] > 0 ? dur[rw[i]] : 0))

/* Is position x after position y in XProf's order (both of the line starting at base)? */
static inline int row_after(const int64_t *rw, const int64_t *off, const int64_t *dur, int64_t base, int32_t x,
                            int32_t y) {
    int64_t sx = ROW_START(x), sy = ROW_START(y);
    if (sx != sy) return sx > sy;
    int64_t ex = ROW_END(x), ey = ROW_END(y);
    if (ex != ey) return ex < ey;
    return x > y;
}

/* Positions a .. b - 1 (one line's) into order[0 .. b - a) in XProf's order; 0 when out of memory. */
static int order_line(const int64_t *rw, const int64_t *off, const int64_t *dur, int64_t base, npy_intp a, npy_intp b,
                      int32_t *order) {
    npy_intp m = b - a;
    int64_t moves = 0, budget = 16 * (int64_t)m + 1024;
    for (npy_intp i = 0; i < m; i++) {
        int32_t x = (int32_t)(a + i);
        npy_intp j = i;
        while (j > 0 && row_after(rw, off, dur, base, order[j - 1], x)) {
            order[j] = order[j - 1];
            j--;
            if (++moves > budget) { /* far from in order: qsort, over a copy of the times */
                Timed *buf = PyMem_RawMalloc(sizeof(Timed) * (size_t)m);
                if (!buf) return 0;
                for (npy_intp k = 0; k < m; k++) buf[k] = (Timed){ROW_START(a + k), ROW_END(a + k), a + k};
                qsort(buf, (size_t)m, sizeof(Timed), timed_order);
                for (npy_intp k = 0; k < m; k++) order[k] = (int32_t)buf[k].index;
                PyMem_RawFree(buf);
                return 1;
            }
        }
        order[j] = x;
    }
    return 1;
}

static PyObject *nest_rows(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *r_obj, *l_obj, *o_obj, *d_obj, *p_obj, *k_obj;
    if (!PyArg_ParseTuple(args, "OOOOOO", &r_obj, &l_obj, &o_obj, &d_obj, &p_obj, &k_obj)) return NULL;
    Events ev = {0};
    PyArrayObject *skips = as_column(k_obj, NPY_BOOL);
    PyObject *out = NULL;
    int32_t *stack = NULL, *order = NULL;
    if (!events_open(&ev, r_obj, l_obj, o_obj, d_obj, p_obj) || !skips) goto done;
    npy_intp n = ev.n;
    if (PyArray_DIM(skips, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *rw = ev.rw, *off = ev.off, *dur = ev.dur, *lps = ev.lps;
    const int32_t *ln = ev.ln;
    const npy_bool *skip = PyArray_DATA(skips);
    for (npy_intp i = 0; i < n; i++) {
        if (!event_ok(&ev, i) || (i && rw[i] <= rw[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "rows must be ascending events of the lines");
            goto done;
        }
    }
    npy_intp dims[1] = {n};
    out = PyArray_SimpleNew(1, dims, NPY_INT32);
    if (!out) goto done;
    int32_t *parent = PyArray_DATA((PyArrayObject *)out);
    npy_intp cap = 0;
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp a = 0; a < n && !failed;) {
        npy_intp b = a + 1;
        int32_t line = ln[rw[a]];
        while (b < n && ln[rw[b]] == line) b++;
        int64_t base = lps[line];
        int sorted = 1;
        for (npy_intp i = a + 1; i < b && sorted; i++)
            if (row_after(rw, off, dur, base, (int32_t)(i - 1), (int32_t)i)) sorted = 0;
        if (b - a > cap) { /* the stack (and the order where a line is out of order) of the longest line yet */
            PyMem_RawFree(stack);
            PyMem_RawFree(order);
            order = NULL;
            stack = PyMem_RawMalloc(sizeof(int32_t) * (size_t)(b - a));
            if (!stack) {
                failed = 1;
                break;
            }
            cap = b - a;
        }
        if (!sorted) {
            if (!order) order = PyMem_RawMalloc(sizeof(int32_t) * (size_t)cap);
            if (!order || !order_line(rw, off, dur, base, a, b, order)) {
                failed = 1;
                break;
            }
        }
        npy_intp depth = 0;
        for (npy_intp j = a; j < b; j++) {
            npy_intp i = sorted ? j : (npy_intp)order[j - a];
            int64_t s = ROW_START(i), e = ROW_END(i);
            parent[i] = -1;
            if (skip[i]) continue;
            while (depth) {
                int32_t p = stack[depth - 1];
                if (ROW_START(p) <= s && e <= ROW_END(p)) {
                    parent[i] = p;
                    break;
                }
                depth--;
            }
            stack[depth++] = (int32_t)i;
        }
        a = b;
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        Py_CLEAR(out);
        PyErr_NoMemory();
    }
done:
    PyMem_RawFree(stack);
    PyMem_RawFree(order);
    events_close(&ev);
    Py_XDECREF(skips);
    return out;
}
#undef ROW_START
#undef ROW_END

/* When every event comes after its parent and each event's descendants are
 * the events right after it (nest_rows' parents of lines in XProf's order, as
 * tracers write them), sets end[v] to the end of v's run of descendants and
 * returns 1; else 0. open: room for n. */
static int nesting_runs(const int32_t *pa, npy_intp n, int32_t *end, int32_t *open) {
    npy_intp depth = 0;
    for (npy_intp v = 0; v < n; v++) {
        while (depth && open[depth - 1] != pa[v]) end[open[--depth]] = (int32_t)v;
        if (pa[v] >= 0 && !depth) return 0; /* its parent is not an open ancestor */
        open[depth++] = (int32_t)v;
    }
    while (depth) end[open[--depth]] = (int32_t)n;
    return 1;
}

/* Each root in turn claims, as the next group, every event it reaches over
 * the edges src -> dst (and parent[v] -> v where parent, one per event, is not
 * -1: nest_rows' nesting) through events no earlier root claimed. Nodes from
 * num_events on are contexts: any root may pass one, once. The edges are put
 * in adjacency order by a counting sort (the nesting's only where its runs
 * are not contiguous: else a claimed event's run is scanned, skipping the runs
 * of events claimed before, which their claimer scans); the walk is depth first (the set
 * reached is the same as breadth first, and in any edge order). */
static PyObject *claim_groups(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *src_obj, *dst_obj, *roots_obj, *parent_obj = Py_None;
    Py_ssize_t num_nodes, num_events;
    if (!PyArg_ParseTuple(args, "OOnnO|O", &src_obj, &dst_obj, &num_nodes, &num_events, &roots_obj, &parent_obj))
        return NULL;
    PyArrayObject *src = as_column(src_obj, NPY_INT32);
    PyArrayObject *dst = as_column(dst_obj, NPY_INT32);
    PyArrayObject *roots = as_column(roots_obj, NPY_INT64);
    PyArrayObject *parents = parent_obj == Py_None ? NULL : as_column(parent_obj, NPY_INT32);
    PyObject *group = NULL, *kept = NULL, *out = NULL;
    int32_t *first = NULL, *child = NULL, *local = NULL, *stack = NULL, *end = NULL;
    if (!src || !dst || !roots || (!parents && parent_obj != Py_None)) goto done;
    npy_intp e = PyArray_DIM(src, 0), r = PyArray_DIM(roots, 0);
    if (PyArray_DIM(dst, 0) != e) {
        PyErr_SetString(PyExc_ValueError, "src and dst differ in length");
        goto done;
    }
    if (parents && PyArray_DIM(parents, 0) != num_events) {
        PyErr_SetString(PyExc_ValueError, "parent must have one entry per event");
        goto done;
    }
    if (num_events < 0 || num_nodes < num_events || num_nodes >= INT32_MAX || e >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "bad node counts");
        goto done;
    }
    const int32_t *s = PyArray_DATA(src), *d = PyArray_DATA(dst);
    const int64_t *rt = PyArray_DATA(roots);
    const int32_t *pa = parents ? PyArray_DATA(parents) : NULL;
    for (npy_intp i = 0; i < e; i++) {
        if (s[i] < 0 || s[i] >= num_nodes || d[i] < 0 || d[i] >= num_nodes) {
            PyErr_SetString(PyExc_ValueError, "edge outside the nodes");
            goto done;
        }
    }
    npy_intp all_edges = e; /* src -> dst's and the parents' */
    for (npy_intp v = 0; pa && v < num_events; v++) {
        if (pa[v] < -1 || pa[v] >= num_nodes) {
            PyErr_SetString(PyExc_ValueError, "edge outside the nodes");
            goto done;
        }
        all_edges += pa[v] >= 0;
    }
    /* A node enters the stack once per root at most: events once overall,
     * contexts once per root, so num_nodes bounds its depth. */
    stack = PyMem_RawMalloc(sizeof(int32_t) * (num_nodes ? num_nodes : 1));
    end = pa ? PyMem_RawMalloc(sizeof(int32_t) * (num_events ? num_events : 1)) : NULL;
    if (!stack || (pa && !end)) {
        PyErr_NoMemory();
        goto done;
    }
    int runs = pa && nesting_runs(pa, num_events, end, stack);
    if (runs) all_edges = e; /* the nesting is walked as runs */
    if (all_edges >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "bad node counts");
        goto done;
    }
    for (npy_intp i = 0; i < r; i++) {
        if (rt[i] < 0 || rt[i] >= num_events) {
            PyErr_SetString(PyExc_ValueError, "root outside the events");
            goto done;
        }
    }
    npy_intp dims[1] = {num_events};
    group = PyArray_SimpleNew(1, dims, NPY_INT32);
    dims[0] = r;
    kept = PyArray_SimpleNew(1, dims, NPY_INT64);
    first = PyMem_RawCalloc((size_t)num_nodes + 1, sizeof(int32_t));
    child = PyMem_RawMalloc(sizeof(int32_t) * (all_edges ? (size_t)all_edges : 1));
    local = PyMem_RawMalloc(sizeof(int32_t) * (num_nodes > num_events ? num_nodes - num_events : 1)); /* contexts' */
    if (!group || !kept || !first || !child || !local) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int32_t *g = PyArray_DATA((PyArrayObject *)group);
    int64_t *k = PyArray_DATA((PyArrayObject *)kept);
    npy_intp num_kept = 0;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp i = 0; i < e; i++) first[s[i] + 1]++;
    for (Py_ssize_t v = 0; pa && !runs && v < num_events; v++)
        if (pa[v] >= 0) first[pa[v] + 1]++;
    for (Py_ssize_t v = 0; v < num_nodes; v++) first[v + 1] += first[v];
    for (npy_intp i = 0; i < e; i++) child[first[s[i]]++] = d[i];  /* first[v] now ends v's run */
    for (Py_ssize_t v = 0; pa && !runs && v < num_events; v++)
        if (pa[v] >= 0) child[first[pa[v]]++] = (int32_t)v;
    for (Py_ssize_t v = num_nodes; v > 0; v--) first[v] = first[v - 1];
    first[0] = 0;
    /* Each node's group: an event's in the output, a context's in local. */
    for (Py_ssize_t v = 0; v < num_events; v++) g[v] = -1;
    for (Py_ssize_t v = num_events; v < num_nodes; v++) local[v - num_events] = -1;
    for (npy_intp j = 0; j < r; j++) {
        int32_t root = (int32_t)rt[j];
        if (g[root] >= 0) continue;
        int32_t gid = (int32_t)num_kept;
        k[num_kept++] = root;
        g[root] = gid;
        npy_intp depth = 0;
        stack[depth++] = root;
        while (depth) {
            int32_t u = stack[--depth];
            /* u's edges; where the nesting is runs, those of u's run's events too */
            int32_t stop = runs && u < num_events ? end[u] : u + 1;
            for (int32_t w = u; w < stop;) {
                if (w != u) {
                    if (g[w] >= 0) { /* claimed before, with its run */
                        w = end[w];
                        continue;
                    }
                    g[w] = gid;
                }
                for (int32_t a = first[w]; a < first[w + 1]; a++) {
                    int32_t v = child[a];
                    int32_t *of = v < num_events ? &g[v] : &local[v - num_events];
                    if (*of < 0 || (v >= num_events && *of != gid)) {
                        *of = gid;
                        stack[depth++] = v;
                    }
                }
                w++;
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyArray_Dims shape = {dims, 1};
    dims[0] = num_kept;
    PyObject *resized = PyArray_Resize((PyArrayObject *)kept, &shape, 0, NPY_CORDER);
    if (!resized) goto done;
    Py_DECREF(resized);
    out = Py_BuildValue("(OO)", group, kept);
done:
    PyMem_RawFree(first);
    PyMem_RawFree(child);
    PyMem_RawFree(local);
    PyMem_RawFree(stack);
    PyMem_RawFree(end);
    Py_XDECREF(group);
    Py_XDECREF(kept);
    Py_XDECREF(src);
    Py_XDECREF(dst);
    Py_XDECREF(roots);
    Py_XDECREF(parents);
    return out;
}

#define RADIX_BITS 11
#define RADIX_SIZE (1 << RADIX_BITS)
#define RADIX_DIGITS 6 /* of RADIX_BITS: 64 bits */

/* Sorts keys[0..m) (tmp: room for m; count: room for RADIX_DIGITS * RADIX_SIZE) by an LSD radix sort over
 * their low `bits`: every digit counted in one pass over the keys, then a pass per digit, but for digits all
 * keys share. */
static void radix_sort(uint64_t *keys, uint64_t *tmp, uint32_t *count, npy_intp m, int bits) {
    int digits = (bits + RADIX_BITS - 1) / RADIX_BITS;
    memset(count, 0, sizeof(uint32_t) * RADIX_SIZE * (size_t)digits);
    for (npy_intp i = 0; i < m; i++)
        for (int d = 0; d < digits; d++) count[d * RADIX_SIZE + ((keys[i] >> (d * RADIX_BITS)) & (RADIX_SIZE - 1))]++;
    uint64_t *from = keys, *to = tmp;
    for (int d = 0; d < digits; d++) {
        uint32_t *c = count + d * RADIX_SIZE, sum = 0;
        if (c[(keys[0] >> (d * RADIX_BITS)) & (RADIX_SIZE - 1)] == (uint32_t)m) continue; /* one value: in order */
        for (int v = 0; v < RADIX_SIZE; v++) {
            uint32_t here = c[v];
            c[v] = sum;
            sum += here;
        }
        for (npy_intp i = 0; i < m; i++) to[c[(from[i] >> (d * RADIX_BITS)) & (RADIX_SIZE - 1)]++] = from[i];
        uint64_t *swap = from;
        from = to;
        to = swap;
    }
    if (from != keys) memcpy(keys, from, sizeof(uint64_t) * (size_t)m);
}

/* A min-heap of begun ops by (end, index): the order their ends come in among the begins and ends of a
 * line sorted by time (ties: begins and ends in the order they were recorded, an op's begin before its end). */
typedef struct {
    int64_t end;
    npy_intp index;
} Pending;

static inline int pending_before(Pending a, Pending b) {
    return a.end != b.end ? a.end < b.end : a.index < b.index;
}

static void heap_push(Pending *h, npy_intp *size, Pending x) {
    npy_intp i = (*size)++;
    while (i > 0 && pending_before(x, h[(i - 1) / 2])) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = x;
}

static Pending heap_pop(Pending *h, npy_intp *size) {
    Pending top = h[0], x = h[--*size];
    npy_intp i = 0, m = *size;
    for (;;) {
        npy_intp c = 2 * i + 1;
        if (c >= m) break;
        if (c + 1 < m && pending_before(h[c + 1], h[c])) c++;
        if (!pending_before(h[c], x)) break;
        h[i] = h[c];
        i = c;
    }
    if (m) h[i] = x;
    return top;
}

/* The sums op_metrics makes per slot, and where they go; one line's ops in XProf's order (scratch). */
typedef struct {
    const int64_t *slot_of;
    const uint8_t *typed;
    int64_t *occ, *time, *self_time, *first_seg, *first_end, *type_code, *type_seg, *type_end, *type_at;
    uint8_t *eager_of;
    Timed *op;                            /* the line's j-th op in XProf's order: times, instance */
    int64_t *children, seg_self;          /* its children time */
    int32_t *code;                        /* each instance's op code */
    uint8_t *eager;                       /* and eager flag */
    npy_intp *stack, top;                 /* the stack of begun ops (j) */
    int64_t g;                            /* the line */
} OpSums;

/* The end of the line's op j (in XProf's order): pops the stack down to it (ops above it are dropped
 * uncounted; an op no longer on the stack empties it) and counts it. */
static void op_end(OpSums *o, npy_intp j) {
    while (o->top > 0 && o->stack[o->top - 1] != j) o->top--;
    if (o->top == 0) return; /* its begin was dropped: nothing to count */
    o->top--;
    int64_t end = o->op[j].end, dur = end - o->op[j].start, own = dur - o->children[j], g = o->g;
    if (o->top > 0) o->children[o->stack[o->top - 1]] += dur;
    o->seg_self += own;
    int32_t code = o->code[o->op[j].index];
    int64_t slot = o->slot_of[code];
    o->occ[slot]++;
    o->time[slot] += dur;
    o->self_time[slot] += own;
    if (o->eager[o->op[j].index]) o->eager_of[slot] = 1;
    if (o->first_seg[slot] < 0) o->first_seg[slot] = g, o->first_end[slot] = end;
    else if (o->first_seg[slot] == g && end < o->first_end[slot]) o->first_end[slot] = end;
    /* ops are counted in the order of their ends, which at equal ends is not their XProf order */
    if (o->typed[code] && (o->type_code[slot] < 0 || g < o->type_seg[slot] ||
                           (g == o->type_seg[slot] && (end < o->type_end[slot] ||
                                                       (end == o->type_end[slot] && j < o->type_at[slot]))))) {
        o->type_code[slot] = code, o->type_seg[slot] = g, o->type_end[slot] = end, o->type_at[slot] = j;
    }
}

/* Row p's key (keys: int32 or int64). */
static inline int64_t key_at(const void *keys, int wide, npy_intp p) {
    return wide ? ((const int64_t *)keys)[p] : ((const int32_t *)keys)[p];
}

/* op_metrics(rows, keys, code_of_key, extra_at, extra_code, eager_at, line, offset, duration, line_ps,
 * slot_of_code, typed, num_slots) -> (occurrences, time, self time, eager (uint8), first line, first end, type
 * code: one per slot; total time, total op time). XProf's host op metrics (xplane_to_op_metrics_db). The op
 * instances: each of the events rows[p] (ascending) whose key keys[p] (int32 or int64) has an op,
 * code_of_key[key] (-1 none; code_of_key None: the keys are the codes), eager when p is in eager_at; then,
 * right after it, a second op of the same event where p is in extra_at (ascending), of code extra_code.
 * Times from an XSpace's columns: start = line_ps[line] + offset, end = start + duration. Per line, in XProf's
 * order (by start, then the longest first, then instance order; sorted only where the line is not), the
 * begins and ends of its ops, stably sorted by time (here: the begins in order, each after the ends of begun
 * ops that come before it, taken from a heap), drive a stack; an end pops down to its op (ops above it are
 * dropped uncounted, and an end whose op is gone empties the stack), the op is counted and its duration added
 * to the children time of the op below it. A counted op adds to its slot (slot_of_code[code]): one
 * occurrence, its duration, its self time (duration less children), eager. Per slot also the line of its
 * first counted op, the least end of those on that line, and the code of the first counted op in (line, end,
 * XProf order) whose code is `typed` (-1: none). Per line its ops' self time against their span (first begin
 * to last end): total time adds the larger, total op time the self time. */
static PyObject *op_metrics(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *rows_obj, *keys_obj, *table_obj, *xat_obj, *xcode_obj, *eat_obj, *l_obj, *o_obj, *d_obj, *p_obj;
    PyObject *slot_obj, *typed_obj;
    Py_ssize_t num_slots;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOn", &rows_obj, &keys_obj, &table_obj, &xat_obj, &xcode_obj, &eat_obj,
                          &l_obj, &o_obj, &d_obj, &p_obj, &slot_obj, &typed_obj, &num_slots))
        return NULL;
    int wide = !(PyArray_Check(keys_obj) && PyArray_TYPE((PyArrayObject *)keys_obj) == NPY_INT32);
    PyArrayObject *keys = as_column(keys_obj, wide ? NPY_INT64 : NPY_INT32);
    PyArrayObject *table = table_obj == Py_None ? NULL : as_column(table_obj, NPY_INT32);
    PyArrayObject *xat = as_column(xat_obj, NPY_INT64), *xcode = as_column(xcode_obj, NPY_INT32);
    PyArrayObject *eat = as_column(eat_obj, NPY_INT64);
    PyArrayObject *slots = as_column(slot_obj, NPY_INT64), *typeds = as_column(typed_obj, NPY_UINT8);
    PyObject *cols[7] = {NULL}, *out = NULL;
    Pending *heap = NULL;
    OpSums o = {0};
    Events ev = {0};
    if (!events_open(&ev, rows_obj, l_obj, o_obj, d_obj, p_obj) || !keys || (!table && table_obj != Py_None) ||
        !xat || !xcode || !eat || !slots || !typeds)
        goto done;
    npy_intp n = ev.n, num_codes = PyArray_DIM(slots, 0), m_extra = PyArray_DIM(xat, 0);
    npy_intp m_eager = PyArray_DIM(eat, 0);
    npy_intp table_len = table ? PyArray_DIM(table, 0) : 0;
    if (PyArray_DIM(keys, 0) != n || PyArray_DIM(xcode, 0) != m_extra || PyArray_DIM(typeds, 0) != num_codes ||
        num_slots < 0) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *rw = ev.rw, *off = ev.off, *dur = ev.dur, *lps = ev.lps;
    const int64_t *xa = PyArray_DATA(xat), *ea = PyArray_DATA(eat);
    const int32_t *ln = ev.ln, *tab = table ? PyArray_DATA(table) : NULL, *xc = PyArray_DATA(xcode);
    const void *ky = PyArray_DATA(keys);
    o.slot_of = PyArray_DATA(slots), o.typed = PyArray_DATA(typeds);
    for (npy_intp i = 0; i < num_codes; i++)
        if (o.slot_of[i] < 0 || o.slot_of[i] >= num_slots) {
            PyErr_SetString(PyExc_ValueError, "slot out of range");
            goto done;
        }
    for (npy_intp i = 0; i < table_len; i++)
        if (tab[i] < -1 || tab[i] >= num_codes) {
            PyErr_SetString(PyExc_ValueError, "code out of range");
            goto done;
        }
    for (npy_intp i = 0; i < m_extra; i++)
        if (xc[i] < 0 || xc[i] >= num_codes || xa[i] < 0 || xa[i] >= n || (i && xa[i] < xa[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "extra ops out of range or order");
            goto done;
        }
    for (npy_intp i = 0; i < m_eager; i++)
        if (ea[i] < 0 || ea[i] >= n || (i && ea[i] <= ea[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "eager rows out of range or order");
            goto done;
        }
    npy_intp largest = 0; /* the most ops of a line (rows and extras): the scratch holds one line's */
    for (npy_intp p = 0, a = 0, x = 0; p < n; p++) {
        if (!event_ok(&ev, p) || (p && rw[p] <= rw[p - 1])) {
            PyErr_SetString(PyExc_ValueError, "rows must be ascending events of the lines");
            goto done;
        }
        if (!table) {
            int64_t k = key_at(ky, wide, p);
            if (k < -1 || k >= num_codes) {
                PyErr_SetString(PyExc_ValueError, "code out of range");
                goto done;
            }
        }
        if (p && ln[rw[p]] != ln[rw[p - 1]]) a = p + x;
        while (x < m_extra && xa[x] == p) x++;
        if (p + x - a + 1 > largest) largest = p + x - a + 1;
    }
    npy_intp dims[1] = {num_slots};
    for (int j = 0; j < 7; j++)
        if (!(cols[j] = PyArray_ZEROS(1, dims, j == 3 ? NPY_UINT8 : NPY_INT64, 0))) goto done;
    size_t room = (size_t)largest + 1;
    heap = PyMem_RawMalloc(sizeof(Pending) * room);
    o.op = PyMem_RawMalloc(sizeof(Timed) * room);
    o.children = PyMem_RawMalloc(sizeof(int64_t) * room);
    o.stack = PyMem_RawMalloc(sizeof(npy_intp) * room);
    o.code = PyMem_RawMalloc(sizeof(int32_t) * room);
    o.eager = PyMem_RawMalloc(room);
    o.type_seg = PyMem_RawMalloc(sizeof(int64_t) * 3 * ((size_t)num_slots + 1)); /* then type_end, type_at */
    if (!heap || !o.op || !o.children || !o.stack || !o.code || !o.eager || !o.type_seg) {
        PyErr_NoMemory();
        goto done;
    }
    o.type_end = o.type_seg + num_slots + 1, o.type_at = o.type_end + num_slots + 1;
    o.occ = PyArray_DATA((PyArrayObject *)cols[0]), o.time = PyArray_DATA((PyArrayObject *)cols[1]);
    o.self_time = PyArray_DATA((PyArrayObject *)cols[2]), o.eager_of = PyArray_DATA((PyArrayObject *)cols[3]);
    o.first_seg = PyArray_DATA((PyArrayObject *)cols[4]), o.first_end = PyArray_DATA((PyArrayObject *)cols[5]);
    o.type_code = PyArray_DATA((PyArrayObject *)cols[6]);
    int64_t total = 0, total_op = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < num_slots; k++) o.first_seg[k] = -1, o.type_code[k] = -1;
    npy_intp x = 0, y = 0; /* the next extra op, the next eager row */
    for (npy_intp a = 0; a < n;) {
        o.g = ln[rw[a]];
        npy_intp b = a + 1, m = 0, pending = 0;
        while (b < n && ln[rw[b]] == o.g) b++;
        int sorted = 1;
        for (npy_intp p = a; p < b; p++) { /* the line's op instances, in instance order */
            int64_t start = lps[o.g] + off[rw[p]], end = start + dur[rw[p]], k = key_at(ky, wide, p);
            int32_t code = tab ? (k >= 0 && k < table_len ? tab[k] : -1) : (int32_t)k;
            while (y < m_eager && ea[y] < p) y++;
            for (int second = 0; second < 2; second++) {
                if (second) {
                    if (x >= m_extra || xa[x] != p) break;
                    code = xc[x++];
                } else if (code < 0) {
                    continue;
                }
                o.op[m] = (Timed){start, end, m}, o.code[m] = code, o.children[m] = 0;
                o.eager[m] = !second && y < m_eager && ea[y] == p;
                if (m && (start < o.op[m - 1].start || (start == o.op[m - 1].start && end > o.op[m - 1].end)))
                    sorted = 0;
                m++;
                if (second) second--; /* another extra op of the same event, if any */
            }
        }
        a = b;
        if (!m) continue;
        if (!sorted) sort_timed(o.op, m); /* XProf's order: by start, the longest first, then instance order */
        int64_t lo = o.op[0].start, hi = o.op[0].end;
        o.top = 0, o.seg_self = 0;
        for (npy_intp j = 0; j < m; j++) {
            /* an end at a begin's time comes first: it was recorded earlier (its op begun before) */
            while (pending && heap[0].end <= o.op[j].start) op_end(&o, heap_pop(heap, &pending).index);
            o.stack[o.top++] = j;
            heap_push(heap, &pending, (Pending){o.op[j].end, j});
            if (o.op[j].end > hi) hi = o.op[j].end;
        }
        while (pending) op_end(&o, heap_pop(heap, &pending).index);
        total_op += o.seg_self;
        total += o.seg_self > hi - lo ? o.seg_self : hi - lo;
    }
    Py_END_ALLOW_THREADS
    out = Py_BuildValue("(OOOOOOOLL)", cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6],
                        (long long)total, (long long)total_op);
done:
    PyMem_RawFree(heap);
    PyMem_RawFree(o.op);
    PyMem_RawFree(o.children);
    PyMem_RawFree(o.stack);
    PyMem_RawFree(o.code);
    PyMem_RawFree(o.eager);
    PyMem_RawFree(o.type_seg);
    for (int j = 0; j < 7; j++) Py_XDECREF(cols[j]);
    events_close(&ev);
    Py_XDECREF(keys);
    Py_XDECREF(table);
    Py_XDECREF(xat);
    Py_XDECREF(xcode);
    Py_XDECREF(eat);
    Py_XDECREF(slots);
    Py_XDECREF(typeds);
    return out;
}

/* A start or end of a typed event (XProf's EventBoundary). */
typedef struct {
    int64_t time;
    int32_t type;
    int32_t is_start;
} Boundary;

/* XProf's order of boundaries: by time; at one time ends first; then the
 * higher type first. Is a before b? */
static inline int boundary_before(const Boundary *a, const Boundary *b) {
    if (a->time != b->time) return a->time < b->time;
    if (a->is_start != b->is_start) return !a->is_start;
    return a->type > b->type;
}

#define SWEEP_TYPES 18 /* XProf's EventType values are multiples of 10 below 180 */

/* A step's sweep so far: the open events per type and the current type. */
typedef struct {
    int64_t count[SWEEP_TYPES];
    int32_t current;
} Sweep;

/* The boundary (type, start or end) at `from`, then the stretch to the next boundary at `to`: its overlap
 * with [lo, hi) adds to the current type's time (tp), and marks that type seen. */
static inline void sweep_boundary(Sweep *w, int32_t ty, int is_start, int64_t from, int64_t to, int64_t lo,
                                  int64_t hi, int64_t *tp, uint8_t *seen) {
    if (is_start) {
        w->count[ty]++;
        if (ty > w->current) w->current = ty;
    } else {
        w->count[ty]--;
        if (ty == w->current && w->count[ty] == 0) {
            w->current = 0;
            for (int32_t j = ty - 1; j >= 0; j--)
                if (w->count[j] > 0) {
                    w->current = j;
                    break;
                }
        }
    }
    int64_t x = from > lo ? from : lo, y = to < hi ? to : hi;
    tp[w->current] += y > x ? y - x : 0;
    seen[w->current] = 1;
}

/* Sweeps buf[0..m) in boundary_before's order by a radix sort of one key
 * per boundary (time from the earliest, then ends first, then the higher
 * type first: 6 bits), where the step's times span less than 2^57 ps; 0
 * when they do not (tmp: room for m boundaries, i.e. 2m keys). */
static int radix_sweep(const Boundary *buf, Boundary *tmp, uint32_t *count, npy_intp m, int64_t lo, int64_t hi,
                       int64_t *tp, uint8_t *seen) {
    int64_t first = buf[0].time, last = buf[0].time;
    for (npy_intp i = 1; i < m; i++) {
        if (buf[i].time < first) first = buf[i].time;
        if (buf[i].time > last) last = buf[i].time;
    }
    uint64_t span = (uint64_t)last - (uint64_t)first;
    if (span >= (uint64_t)1 << 57) return 0;
    uint64_t *keys = (uint64_t *)tmp, *spare = keys + m;
    for (npy_intp i = 0; i < m; i++)
        keys[i] = (((uint64_t)buf[i].time - (uint64_t)first) << 6) | ((uint64_t)buf[i].is_start << 5) |
                  (uint64_t)(31 - buf[i].type);
    int bits = 6;
    while (bits < 64 && (span << 6) >> bits) bits++;
    radix_sort(keys, spare, count, m, bits);
    Sweep w = {{0}, 0};
    for (npy_intp k = 0; k + 1 < m; k++) /* the keys' times, from the first */
        sweep_boundary(&w, 31 - (int32_t)(keys[k] & 31), (int)((keys[k] >> 5) & 1),
                       (int64_t)((uint64_t)first + (keys[k] >> 6)), (int64_t)((uint64_t)first + (keys[k + 1] >> 6)),
                       lo, hi, tp, seen);
    return 1;
}

/* Sorts buf[0..m) by boundary_before (tmp: room for m boundaries, cuts for
 * m + 1 run starts) by a bottom-up merge of the runs already in order.
 * qsort's compare calls took most of step_sweep's time. Equal boundaries
 * are alike to the sweep, so their order does not matter. */
static void merge_boundaries(Boundary *buf, Boundary *tmp, npy_intp *cuts, npy_intp m) {
    npy_intp runs = 0;
    for (npy_intp i = 0; i < m; i++)
        if (i == 0 || boundary_before(&buf[i], &buf[i - 1])) cuts[runs++] = i;
    cuts[runs] = m;
    Boundary *from = buf, *to = tmp;
    while (runs > 1) {
        npy_intp merged = 0;
        for (npy_intp r = 0; r < runs; r += 2) {
            npy_intp a = cuts[r], mid = cuts[r + 1 < runs ? r + 1 : runs], b = cuts[r + 2 < runs ? r + 2 : runs];
            npy_intp i = a, j = mid, o = a;
            while (i < mid && j < b) to[o++] = boundary_before(&from[j], &from[i]) ? from[j++] : from[i++];
            while (i < mid) to[o++] = from[i++];
            while (j < b) to[o++] = from[j++];
            cuts[merged++] = a;
        }
        cuts[merged] = m;
        runs = merged;
        Boundary *swap = from;
        from = to;
        to = swap;
    }
    if (from != buf) memcpy(buf, from, sizeof(Boundary) * (size_t)m);
}

/* One step's sweep: its m boundaries in buf (room: where buf's scratch starts, see step_sweep; count: radix_sort's)
 * in boundary_before's order (radix_sweep's, else merge_boundaries'), each stretch between consecutive ones
 * adding its overlap with [lo, hi) to the current type's time (tp) and marking that type seen. */
static void sweep_step(Boundary *buf, npy_intp m, size_t room, uint32_t *count, int64_t lo, int64_t hi, int64_t *tp,
                       uint8_t *seen) {
    if (m < 2 || radix_sweep(buf, buf + room, count, m, lo, hi, tp, seen)) return;
    merge_boundaries(buf, buf + room, (npy_intp *)(buf + 2 * room), m);
    Sweep w = {{0}, 0};
    for (npy_intp k = 0; k + 1 < m; k++)
        sweep_boundary(&w, buf[k].type, buf[k].is_start, buf[k].time, buf[k + 1].time, lo, hi, tp, seen);
}

/* step_sweep(starts, ends, types, segment, step_begin, step_end) -> (int64
 * [steps, 18] time per step and type index (EventType / 10), uint8 [steps,
 * 18] whether a piece of that type was made). Events of a step (segment =
 * its index) are contiguous. XProf's ToNonOverlappedEvents and
 * ConvertStepDetailsToStepInfo: the boundaries of a step's events in
 * boundary_before's order drive per-type counts and a current type (raised by a
 * start of a higher type; on an end that brings the current type's count to
 * zero, the highest type with a positive count, else 0); each stretch
 * between consecutive boundaries has the current type and adds its overlap
 * with the step to that type. */
static PyObject *step_sweep(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *s_obj, *e_obj, *t_obj, *g_obj, *b_obj, *f_obj;
    if (!PyArg_ParseTuple(args, "OOOOOO", &s_obj, &e_obj, &t_obj, &g_obj, &b_obj, &f_obj)) return NULL;
    PyArrayObject *starts = as_column(s_obj, NPY_INT64), *ends = as_column(e_obj, NPY_INT64);
    PyArrayObject *types = as_column(t_obj, NPY_INT32), *seg = as_column(g_obj, NPY_INT64);
    PyArrayObject *begin = as_column(b_obj, NPY_INT64), *finish = as_column(f_obj, NPY_INT64);
    PyObject *time_out = NULL, *seen_out = NULL, *out = NULL;
    Boundary *buf = NULL;
    uint32_t *count = NULL;
    if (!starts || !ends || !types || !seg || !begin || !finish) goto done;
    npy_intp n = PyArray_DIM(starts, 0), steps = PyArray_DIM(begin, 0);
    if (PyArray_DIM(ends, 0) != n || PyArray_DIM(types, 0) != n || PyArray_DIM(seg, 0) != n ||
        PyArray_DIM(finish, 0) != steps) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    npy_intp dims[2] = {steps, SWEEP_TYPES};
    time_out = PyArray_ZEROS(2, dims, NPY_INT64, 0);
    seen_out = PyArray_ZEROS(2, dims, NPY_UINT8, 0);
    const int64_t *g = PyArray_DATA(seg);
    npy_intp largest = 0; /* the most events of one step: the buffer holds one step's boundaries */
    for (npy_intp a = 0; a < n;) {
        npy_intp b = a + 1;
        while (b < n && g[b] == g[a]) b++;
        if (b - a > largest) largest = b - a;
        a = b;
    }
    /* One step's boundaries, the merge's room for as many, and its run starts. */
    size_t room = 2 * (size_t)largest + 1;
    buf = PyMem_RawMalloc(sizeof(Boundary) * 2 * room + sizeof(npy_intp) * (room + 1));
    count = PyMem_RawMalloc(sizeof(uint32_t) * RADIX_DIGITS * RADIX_SIZE);
    if (!time_out || !seen_out || !buf || !count) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    const int64_t *s = PyArray_DATA(starts), *e = PyArray_DATA(ends);
    const int64_t *sb = PyArray_DATA(begin), *se = PyArray_DATA(finish);
    const int32_t *t = PyArray_DATA(types);
    int64_t *tp = PyArray_DATA((PyArrayObject *)time_out);
    uint8_t *seen = PyArray_DATA((PyArrayObject *)seen_out);
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp a = 0; a < n && !failed;) {
        npy_intp b = a + 1;
        while (b < n && g[b] == g[a]) b++;
        int64_t step = g[a];
        if (step < 0 || step >= steps) {
            failed = 1;
            break;
        }
        npy_intp m = 2 * (b - a);
        for (npy_intp i = a; i < b; i++) { /* the starts (in order on each line), then the ends */
            int32_t k = t[i] / 10;
            if (k < 0 || k >= SWEEP_TYPES) k = 0;
            buf[i - a] = (Boundary){s[i], k, 1};
            buf[b - a + i - a] = (Boundary){e[i], k, 0};
        }
        sweep_step(buf, m, room, count, sb[step], se[step], tp + step * SWEEP_TYPES, seen + step * SWEEP_TYPES);
        a = b;
    }
    Py_END_ALLOW_THREADS
    if (failed) {
        PyErr_SetString(PyExc_ValueError, "step index out of range");
        goto done;
    }
    out = Py_BuildValue("OO", time_out, seen_out);
done:
    PyMem_RawFree(buf);
    PyMem_RawFree(count);
    Py_XDECREF(time_out);
    Py_XDECREF(seen_out);
    Py_XDECREF(starts);
    Py_XDECREF(ends);
    Py_XDECREF(types);
    Py_XDECREF(seg);
    Py_XDECREF(begin);
    Py_XDECREF(finish);
    return out;
}

/* step_sweep_rows(rows, line, offset, duration, line_ps, types, step, step_begin, step_end, first_step=0) ->
 * step_sweep's (time, seen) per step and type, of events rows[i] of an XSpace's columns (start: line_ps[line] +
 * offset, end: start + duration), each of type index types[i] (int8: EventType / 10; -1 leaves the event out)
 * in step[i] (int32): steps first_step, first_step + 1, ... (step_begin and step_end's); events of other steps
 * (-1: none) are left out. The events of a step are gathered here (a counting sort), in any order. */
static PyObject *step_sweep_rows(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *r_obj, *l_obj, *o_obj, *d_obj, *p_obj, *t_obj, *g_obj, *b_obj, *f_obj;
    Py_ssize_t first_step = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO|n", &r_obj, &l_obj, &o_obj, &d_obj, &p_obj, &t_obj, &g_obj, &b_obj, &f_obj,
                          &first_step))
        return NULL;
    Events ev = {0};
    PyArrayObject *types = as_column(t_obj, NPY_INT8), *seg = as_column(g_obj, NPY_INT32);
    PyArrayObject *begin = as_column(b_obj, NPY_INT64), *finish = as_column(f_obj, NPY_INT64);
    PyObject *time_out = NULL, *seen_out = NULL, *out = NULL;
    Boundary *buf = NULL;
    uint32_t *count = NULL;
    npy_intp *first = NULL;
    int32_t *order = NULL;
    if (!events_open(&ev, r_obj, l_obj, o_obj, d_obj, p_obj) || !types || !seg || !begin || !finish) goto done;
    npy_intp n = ev.n, steps = PyArray_DIM(begin, 0);
    if (PyArray_DIM(types, 0) != n || PyArray_DIM(seg, 0) != n || PyArray_DIM(finish, 0) != steps) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const int64_t *rw = ev.rw, *off = ev.off, *dur = ev.dur, *lps = ev.lps;
    const int64_t *sb = PyArray_DATA(begin), *se = PyArray_DATA(finish);
    const int32_t *ln = ev.ln, *g = PyArray_DATA(seg);
    const int8_t *t = PyArray_DATA(types);
    first = PyMem_RawCalloc((size_t)steps + 2, sizeof(npy_intp));
    if (!first) {
        PyErr_NoMemory();
        goto done;
    }
#define STEP_OF(i) ((npy_intp)g[i] - first_step) /* within [0, steps): one of these steps */
    for (npy_intp i = 0; i < n; i++) {
        if (t[i] < 0 || STEP_OF(i) < 0 || STEP_OF(i) >= steps) continue;
        if (t[i] >= SWEEP_TYPES || !event_ok(&ev, i)) {
            PyErr_SetString(PyExc_ValueError, "type, row or line out of range");
            goto done;
        }
        first[STEP_OF(i) + 2]++;
    }
    npy_intp largest = 0; /* the most events of one step: the buffer holds one step's boundaries */
    for (npy_intp k = 0; k < steps; k++) {
        if (first[k + 2] > largest) largest = first[k + 2];
        first[k + 2] += first[k + 1];
    }
    npy_intp dims[2] = {steps, SWEEP_TYPES};
    time_out = PyArray_ZEROS(2, dims, NPY_INT64, 0);
    seen_out = PyArray_ZEROS(2, dims, NPY_UINT8, 0);
    size_t room = 2 * (size_t)largest + 1;
    buf = PyMem_RawMalloc(sizeof(Boundary) * 2 * room + sizeof(npy_intp) * (room + 1));
    count = PyMem_RawMalloc(sizeof(uint32_t) * RADIX_DIGITS * RADIX_SIZE);
    order = PyMem_RawMalloc(sizeof(int32_t) * ((size_t)first[steps + 1] + 1));
    if (!time_out || !seen_out || !buf || !count || !order) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int64_t *tp = PyArray_DATA((PyArrayObject *)time_out);
    uint8_t *seen = PyArray_DATA((PyArrayObject *)seen_out);
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp i = 0; i < n; i++) /* first[k + 1]: where step k's next event goes */
        if (t[i] >= 0 && STEP_OF(i) >= 0 && STEP_OF(i) < steps) order[first[STEP_OF(i) + 1]++] = (int32_t)i;
    for (npy_intp k = 0; k < steps; k++) { /* step k's events: order[first[k], first[k + 1]) */
        npy_intp a = first[k], b = first[k + 1], m = 2 * (b - a);
        if (!m) continue;
        for (npy_intp j = a; j < b; j++) {
            npy_intp i = order[j];
            int64_t r = rw[i], start = lps[ln[r]] + off[r];
            buf[j - a] = (Boundary){start, t[i], 1};
            buf[b - a + j - a] = (Boundary){start + dur[r], t[i], 0};
        }
        sweep_step(buf, m, room, count, sb[k], se[k], tp + k * SWEEP_TYPES, seen + k * SWEEP_TYPES);
    }
    Py_END_ALLOW_THREADS
#undef STEP_OF
    out = Py_BuildValue("OO", time_out, seen_out);
done:
    PyMem_RawFree(buf);
    PyMem_RawFree(count);
    PyMem_RawFree(first);
    PyMem_RawFree(order);
    Py_XDECREF(time_out);
    Py_XDECREF(seen_out);
    events_close(&ev);
    Py_XDECREF(types);
    Py_XDECREF(seg);
    Py_XDECREF(begin);
    Py_XDECREF(finish);
    return out;
}

static PyMethodDef methods[] = {
    {"xprof_order", xprof_order, METH_VARARGS,
     "xprof_order(starts, ends, segment) -> None when in (segment, start, longest first) order, else int64 permutation"},
    {"nest_rows", nest_rows, METH_VARARGS,
     "nest_rows(rows, line, offset, duration, line_ps, skip) -> int32 nesting parent per row position (-1: none)"},
    {"claim_groups", claim_groups, METH_VARARGS,
     "claim_groups(src, dst, num_nodes, num_events, roots, parent=None) -> (int32 group per event, int64 roots that "
     "got one)"},
    {"op_metrics", op_metrics, METH_VARARGS,
     "op_metrics(rows, keys, code_of_key, extra_at, extra_code, eager_at, line, offset, duration, line_ps, "
     "slot_of_code, typed, num_slots) -> (occurrences, time, "
     "self time, eager, first segment, first end, type code per slot; total time, total op time)"},
    {"step_sweep", step_sweep, METH_VARARGS,
     "step_sweep(starts, ends, types, segment, step_begin, step_end) -> (int64 time, uint8 seen) per step and type"},
    {"step_sweep_rows", step_sweep_rows, METH_VARARGS,
     "step_sweep_rows(rows, line, offset, duration, line_ps, types, step, step_begin, step_end, first_step=0) -> "
     "step_sweep's "
     "(time, seen) of XSpace events by row"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_steps", .m_doc = "XProf's event order and step groups over XSpace events.",
    .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__steps(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
