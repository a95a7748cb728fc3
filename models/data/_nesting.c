/* profscope.models.data._nesting: XSpace's native passes. A trace's nesting by time
 * containment and XProf's step groups over it (models/formats/xspace/
 * groups.py), and the trace_viewer JSON rows of XEvents (trace.py).
 *
 *   nest_parents(order, segment, starts, ends, skip) -> int32 parent per
 *       event (-1 for none)
 *   xprof_order(starts, ends, segment) -> None or the int64 permutation into
 *       (segment, start, longest first) order
 *   claim_groups(src, dst, num_nodes, num_events, roots) -> (int32 group per
 *       event, -1 for none; int64 the roots that got a group)
 *   trace_rows(buf, spans, md, ts, dur, group, step, plane) -> bytes: one
 *       JSON object per event, as json.dumps(sort_keys=True) + ",\n"
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

/* Each root in turn claims, as the next group, every event it reaches over
 * the edges src -> dst through events no earlier root claimed. Nodes from
 * num_events on are contexts: any root may pass one, once. The edges are put
 * in adjacency order by a counting sort; the walk is depth first (the set
 * reached is the same as breadth first). */
static PyObject *claim_groups(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *src_obj, *dst_obj, *roots_obj;
    Py_ssize_t num_nodes, num_events;
    if (!PyArg_ParseTuple(args, "OOnnO", &src_obj, &dst_obj, &num_nodes, &num_events, &roots_obj)) return NULL;
    PyArrayObject *src = as_column(src_obj, NPY_INT32);
    PyArrayObject *dst = as_column(dst_obj, NPY_INT32);
    PyArrayObject *roots = as_column(roots_obj, NPY_INT64);
    PyObject *group = NULL, *kept = NULL, *out = NULL;
    int32_t *first = NULL, *child = NULL, *local = NULL, *stack = NULL;
    if (!src || !dst || !roots) goto done;
    npy_intp e = PyArray_DIM(src, 0), r = PyArray_DIM(roots, 0);
    if (PyArray_DIM(dst, 0) != e) {
        PyErr_SetString(PyExc_ValueError, "src and dst differ in length");
        goto done;
    }
    if (num_events < 0 || num_nodes < num_events || num_nodes >= INT32_MAX || e >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "bad node counts");
        goto done;
    }
    const int32_t *s = PyArray_DATA(src), *d = PyArray_DATA(dst);
    const int64_t *rt = PyArray_DATA(roots);
    for (npy_intp i = 0; i < e; i++) {
        if (s[i] < 0 || s[i] >= num_nodes || d[i] < 0 || d[i] >= num_nodes) {
            PyErr_SetString(PyExc_ValueError, "edge outside the nodes");
            goto done;
        }
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
    child = PyMem_RawMalloc(sizeof(int32_t) * (e ? e : 1));
    local = PyMem_RawMalloc(sizeof(int32_t) * (num_nodes ? num_nodes : 1));
    /* A node enters the stack once per root at most: events once overall,
     * contexts once per root, so num_nodes bounds its depth. */
    stack = PyMem_RawMalloc(sizeof(int32_t) * (num_nodes ? num_nodes : 1));
    if (!group || !kept || !first || !child || !local || !stack) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto done;
    }
    int32_t *g = PyArray_DATA((PyArrayObject *)group);
    int64_t *k = PyArray_DATA((PyArrayObject *)kept);
    npy_intp num_kept = 0;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp i = 0; i < e; i++) first[s[i] + 1]++;
    for (Py_ssize_t v = 0; v < num_nodes; v++) first[v + 1] += first[v];
    for (npy_intp i = 0; i < e; i++) child[first[s[i]]++] = d[i];  /* first[v] now ends v's run */
    for (Py_ssize_t v = num_nodes; v > 0; v--) first[v] = first[v - 1];
    first[0] = 0;
    for (Py_ssize_t v = 0; v < num_nodes; v++) local[v] = -1;
    for (npy_intp j = 0; j < r; j++) {
        int32_t root = (int32_t)rt[j];
        if (local[root] >= 0) continue;
        int32_t gid = (int32_t)num_kept;
        k[num_kept++] = root;
        local[root] = gid;
        npy_intp depth = 0;
        stack[depth++] = root;
        while (depth) {
            int32_t u = stack[--depth];
            for (int32_t a = first[u]; a < first[u + 1]; a++) {
                int32_t v = child[a];
                if (local[v] < 0 || (v >= num_events && local[v] != gid)) {
                    local[v] = gid;
                    stack[depth++] = v;
                }
            }
        }
    }
    for (Py_ssize_t v = 0; v < num_events; v++) g[v] = local[v];
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
    Py_XDECREF(group);
    Py_XDECREF(kept);
    Py_XDECREF(src);
    Py_XDECREF(dst);
    Py_XDECREF(roots);
    return out;
}

/* ------------------------------------------------------------------ trace rows */

typedef struct {
    const uint8_t *p;
    const uint8_t *end;
} Cursor;

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

static int skip_field(Cursor *c, int wire) {
    uint64_t n;
    switch (wire) {
    case 0: return read_varint(c, &n);
    case 1: if (c->end - c->p < 8) return 0; c->p += 8; return 1;
    case 2: if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return 0; c->p += n; return 1;
    case 5: if (c->end - c->p < 4) return 0; c->p += 4; return 1;
    default: return 0;
    }
}

/* Output written straight into a bytes object, grown in place (no copy at
 * the end: a chunk's pages are touched once). */
typedef struct {
    PyObject *bytes;
    Py_ssize_t size, cap;
} Out;

static int out_reserve(Out *o, Py_ssize_t need) {
    if (need <= o->cap) return 1;
    Py_ssize_t cap = o->cap ? o->cap : 1 << 16;
    while (cap < need) cap *= 2;
    if (!o->bytes) o->bytes = PyBytes_FromStringAndSize(NULL, cap);
    else if (_PyBytes_Resize(&o->bytes, cap) < 0) o->bytes = NULL;
    if (!o->bytes) return 0;
    o->cap = cap;
    return 1;
}

static int put(Out *o, const char *s, Py_ssize_t n) {
    if (o->size + n > o->cap && !out_reserve(o, o->size + n)) return 0;
    memcpy(PyBytes_AS_STRING(o->bytes) + o->size, s, n);
    o->size += n;
    return 1;
}

#define PUT_LIT(o, lit) put((o), (lit), (Py_ssize_t)sizeof(lit) - 1)

static int put_decimal(Out *o, uint64_t v, int negative) {
    char digits[24];
    int n = 24;
    do {
        digits[--n] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    if (negative) digits[--n] = '-';
    return put(o, digits + n, 24 - n);
}

/* A double as Python formats it: repr (json.dumps of a float) or "%.6g". */
static int put_double(Out *o, double v, char code, int precision, int flags) {
    char *text = PyOS_double_to_string(v, code, precision, flags, NULL);
    if (!text) return 0;
    int ok = put(o, text, (Py_ssize_t)strlen(text));
    PyMem_Free(text);
    return ok;
}

/* float.__repr__ (what json.dumps writes) without Python's big-number dtoa,
 * which takes ~1.5 µs for a 17-digit time: for 1e-4 <= v < 2^53 (written in
 * fixed notation) the shortest decimal that reads back as v, the closest to
 * v among those, found with exact 128-bit arithmetic; other values go to
 * PyOS_double_to_string. */
static int put_repr(Out *o, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    int biased = (int)((bits >> 52) & 0x7ff);
    if (!(v >= 1e-4 && v < 9007199254740992.0) || biased == 0)
        return put_double(o, v, 'r', 0, Py_DTSF_ADD_DOT_0);
    uint64_t m = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
    int q = 1075 - biased; /* v = m / 2^q, 0 <= q <= 66 here */
    /* The interval of reals that read back as v, scaled by 2^(q + 2):
     * half an ulp each side (a quarter below a power of two), ends included
     * when m is even (ties read back to the even mantissa). */
    unsigned __int128 lo = 4 * (unsigned __int128)m - (m == (1ULL << 52) ? 1 : 2);
    unsigned __int128 hi = 4 * (unsigned __int128)m + 2, mid = 4 * (unsigned __int128)m;
    int shift = q + 2, inclusive = !(m & 1);
    unsigned __int128 scale = 1, digits = 0;
    int k = 0;
    for (;; k++, scale *= 10) {
        unsigned __int128 a = lo * scale, b = hi * scale, mask = ((unsigned __int128)1 << shift) - 1;
        unsigned __int128 dmin = (a >> shift) + ((a & mask) != 0 || !inclusive);
        unsigned __int128 dmax = (b >> shift) - ((b & mask) == 0 && !inclusive);
        if (dmin <= dmax) {
            unsigned __int128 c = mid * scale, d = c >> shift, rest = c & mask, half = (unsigned __int128)1 << (shift - 1);
            if (rest > half || (rest == half && (d & 1))) d++; /* the nearest, ties to even */
            digits = d < dmin ? dmin : d > dmax ? dmax : d;
            break;
        }
        if (k == 22) return put_double(o, v, 'r', 0, Py_DTSF_ADD_DOT_0);
    }
    char text[48];
    int n = 0;
    do {
        text[sizeof(text) - 1 - n++] = (char)('0' + (int)(digits % 10));
        digits /= 10;
    } while (digits);
    const char *dg = text + sizeof(text) - n;
    while (k > 0 && dg[n - 1] == '0') { /* 2.50 -> 2.5 */
        n--;
        k--;
    }
    char buf[64];
    int len = 0;
    if (n <= k) { /* 0.00ddd */
        buf[len++] = '0';
        buf[len++] = '.';
        for (int z = 0; z < k - n; z++) buf[len++] = '0';
        memcpy(buf + len, dg, n);
        len += n;
    } else {
        memcpy(buf, dg, n - k);
        len = n - k;
        buf[len++] = '.';
        if (k) {
            memcpy(buf + len, dg + n - k, k);
            len += k;
        } else {
            buf[len++] = '0';
        }
    }
    return put(o, buf, len);
}

/* UTF-8 bytes as a JSON string the way json.dumps writes it (ensure_ascii:
 * every code point outside ' '..'~' escaped, lowercase hex, surrogate
 * pairs above U+FFFF). Returns -1 for invalid UTF-8 (protobuf refuses such
 * a string field), 0 when out of memory. */
static int put_json_utf8(Out *o, const uint8_t *p, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    if (!PUT_LIT(o, "\"")) return 0;
    const uint8_t *end = p + n;
    while (p < end) {
        const uint8_t *run = p;
        while (p < end && *p >= ' ' && *p <= '~' && *p != '"' && *p != '\\') p++;
        if (p > run && !put(o, (const char *)run, p - run)) return 0;
        if (p == end) break;
        uint32_t c = *p, need = 0;
        if (c < 0x80) need = 0;
        else if (c >= 0xc2 && c <= 0xdf) { need = 1; c &= 0x1f; }
        else if (c >= 0xe0 && c <= 0xef) { need = 2; c &= 0x0f; }
        else if (c >= 0xf0 && c <= 0xf4) { need = 3; c &= 0x07; }
        else return -1;
        if ((Py_ssize_t)need >= end - p) return -1;
        for (uint32_t k = 1; k <= need; k++) {
            if ((p[k] & 0xc0) != 0x80) return -1;
            c = (c << 6) | (p[k] & 0x3f);
        }
        if ((need == 2 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) || (need == 3 && (c < 0x10000 || c > 0x10ffff)))
            return -1;
        p += need + 1;
        char esc[12];
        int len = 2;
        esc[0] = '\\';
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            len = 0;
            if (c >= 0x10000) {
                uint32_t v = c - 0x10000, hi = 0xd800 | (v >> 10), lo = 0xdc00 | (v & 0x3ff);
                char u[12] = {'\\', 'u', hex[hi >> 12], hex[(hi >> 8) & 15], hex[(hi >> 4) & 15], hex[hi & 15],
                              '\\', 'u', hex[lo >> 12], hex[(lo >> 8) & 15], hex[(lo >> 4) & 15], hex[lo & 15]};
                memcpy(esc, u, 12);
                len = 12;
            } else {
                char u[6] = {'\\', 'u', hex[c >> 12], hex[(c >> 8) & 15], hex[(c >> 4) & 15], hex[c & 15]};
                memcpy(esc, u, 6);
                len = 6;
            }
        }
        if (!put(o, esc, len)) return 0;
    }
    return PUT_LIT(o, "\"") ? 1 : 0;
}

enum { V_INT = 4, V_UINT = 3, V_DOUBLE = 2, V_STR = 5, V_BYTES = 6, V_JSON = 100, V_GROUP = 101 };

typedef struct {
    int32_t rank;   /* the key's place in sorted key order */
    int32_t kind;   /* V_*: an XStat value case, or pre-rendered JSON, or a group id */
    int64_t seq;    /* arrival order: the last of a key wins */
    uint64_t value; /* number, double bits, string offset */
    const char *json;
    Py_ssize_t len;
} Arg;

typedef struct {
    Arg *items;
    Py_ssize_t count, cap;
} Args;

static int arg_push(Args *a, Arg item) {
    if (a->count == a->cap) {
        Py_ssize_t cap = a->cap ? a->cap * 2 : 32;
        Arg *grown = PyMem_Realloc(a->items, sizeof(Arg) * cap);
        if (!grown) {
            PyErr_NoMemory();
            return 0;
        }
        a->items = grown;
        a->cap = cap;
    }
    item.seq = a->count;
    a->items[a->count++] = item;
    return 1;
}

static int arg_order(const void *x, const void *y) {
    const Arg *a = x, *b = y;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* What a plane's rows need, taken from the `plane` tuple once per call. */
typedef struct {
    const int64_t *md_spans;      /* [m, 2] XEventMetadata spans (offset -1: none) */
    PyObject *names, *longs;      /* per metadata: JSON of the shown name; JSON of long_name or None */
    const int64_t *stat_ids;      /* sorted stat metadata ids */
    const int32_t *stat_key;      /* their key rank, -1 for stats left out */
    PyObject *stat_ref;           /* per stat: JSON of its name (ref_value) */
    npy_intp m, s;
    PyObject *keys;               /* per rank: the key's JSON and ": " */
    int32_t unknown_key, long_key, group_key, step_key;
    PyObject *steps;              /* JSON of step names */
    PyObject *x_tail, *i_tail;    /* after the name: ph, pid, (s,) tid and the "ts" key */
} Plane;

static Py_ssize_t find_stat(const Plane *pl, int64_t id) {
    Py_ssize_t lo = 0, hi = pl->s;
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (pl->stat_ids[mid] < id) lo = mid + 1;
        else hi = mid;
    }
    return lo < pl->s && pl->stat_ids[lo] == id ? lo : -1;
}

/* Pushes the XStats found at field `field` of the message [p, end): the
 * ones with a value whose key is written. Returns 0 on error (set). */
static int push_stats(const Plane *pl, Args *args, const uint8_t *base, Cursor c, int field) {
    while (c.p < c.end) {
        uint64_t tag, n;
        if (!read_varint(&c, &tag)) goto bad;
        if ((tag >> 3) != (uint64_t)field || (tag & 7) != 2) {
            if (!skip_field(&c, (int)(tag & 7))) goto bad;
            continue;
        }
        if (!read_varint(&c, &n) || n > (uint64_t)(c.end - c.p)) goto bad;
        Cursor st = {c.p, c.p + n};
        c.p += n;
        int64_t id = 0;
        Arg a = {0, 0, 0, 0, NULL, 0};
        while (st.p < st.end) {
            uint64_t t, v;
            if (!read_varint(&st, &t)) goto bad;
            int number = (t >> 3) <= 7 ? (int)(t >> 3) : 0, wire = (int)(t & 7);
            if (wire == 0 && (number == 1 || number == 3 || number == 4 || number == 7)) {
                if (!read_varint(&st, &v)) goto bad;
                if (number == 1) id = (int64_t)v;
                else { a.kind = number; a.value = v; }
            } else if (wire == 1 && number == 2) {
                if (st.end - st.p < 8) goto bad;
                memcpy(&a.value, st.p, 8);
                st.p += 8;
                a.kind = V_DOUBLE;
            } else if (wire == 2 && (number == 5 || number == 6)) {
                if (!read_varint(&st, &v) || v > (uint64_t)(st.end - st.p)) goto bad;
                a.kind = number;
                a.value = (uint64_t)(st.p - base);
                a.len = (Py_ssize_t)v;
                st.p += v;
            } else if (!skip_field(&st, wire)) {
                goto bad;
            }
        }
        if (!a.kind) continue;
        Py_ssize_t k = find_stat(pl, id);
        a.rank = k >= 0 ? pl->stat_key[k] : pl->unknown_key;
        if (a.rank < 0) continue;
        if (a.kind == 7) {  /* ref_value: the name of that stat metadata */
            Py_ssize_t r = find_stat(pl, (int64_t)a.value);
            a.kind = V_JSON;
            if (r >= 0) {
                PyObject *j = PyList_GET_ITEM(pl->stat_ref, r);
                a.json = PyBytes_AS_STRING(j);
                a.len = PyBytes_GET_SIZE(j);
            } else {
                a.json = "\"\"";
                a.len = 2;
            }
        }
        if (!arg_push(args, a)) return 0;
    }
    return 1;
bad:
    PyErr_Format(PyExc_ValueError, "malformed stats at byte %zd", (Py_ssize_t)(c.p - base));
    return 0;
}

static int put_bytes_obj(Out *o, PyObject *b) {
    return put(o, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
}

static int put_value(Out *o, const Arg *a, const uint8_t *base) {
    char quote = '"';
    switch (a->kind) {
    case V_JSON: return put(o, a->json, a->len);
    case V_STR: {
        int r = put_json_utf8(o, base + a->value, a->len);
        if (r < 0) PyErr_Format(PyExc_ValueError, "a string stat that is not UTF-8 at byte %lld", (long long)a->value);
        return r > 0;
    }
    case V_BYTES: return PUT_LIT(o, "\"<opaque bytes>\"");
    case V_DOUBLE: {
        double d;
        memcpy(&d, &a->value, 8);
        return put(o, &quote, 1) && put_double(o, d, 'g', 6, 0) && put(o, &quote, 1);
    }
    case V_UINT: return put(o, &quote, 1) && put_decimal(o, a->value, 0) && put(o, &quote, 1);
    default: {  /* V_INT, V_GROUP */
        int64_t v = (int64_t)a->value;
        return put(o, &quote, 1) && put_decimal(o, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, v < 0) &&
               put(o, &quote, 1);
    }
    }
}

static int plane_from(PyObject *t, Plane *pl, PyArrayObject **md_spans, PyArrayObject **ids, PyArrayObject **keys) {
    PyObject *md_obj, *ids_obj, *keys_obj;
    if (!PyArg_ParseTuple(t, "OO!OOO!O!O!iiiiO!SS", &md_obj, &PyList_Type, &pl->names, &pl->longs, &ids_obj,
                          &PyArray_Type, &keys_obj, &PyList_Type, &pl->stat_ref, &PyList_Type, &pl->keys,
                          &pl->unknown_key, &pl->long_key, &pl->group_key, &pl->step_key, &PyList_Type, &pl->steps,
                          &pl->x_tail, &pl->i_tail))
        return 0;
    *md_spans = as_spans(md_obj);
    *ids = as_column(ids_obj, NPY_INT64);
    *keys = as_column(keys_obj, NPY_INT32);
    if (!*md_spans || !*ids || !*keys) return 0;
    pl->m = PyArray_DIM(*md_spans, 0);
    pl->s = PyArray_DIM(*ids, 0);
    if (!PyList_Check(pl->longs) || PyList_GET_SIZE(pl->names) != pl->m || PyList_GET_SIZE(pl->longs) != pl->m ||
        PyArray_DIM(*keys, 0) != pl->s || PyList_GET_SIZE(pl->stat_ref) != pl->s) {
        PyErr_SetString(PyExc_ValueError, "plane tables differ in length");
        return 0;
    }
    PyObject *lists[] = {pl->names, pl->stat_ref, pl->keys, pl->steps, pl->longs};
    for (int l = 0; l < 5; l++)
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(lists[l]); i++) {
            PyObject *item = PyList_GET_ITEM(lists[l], i);
            if (!PyBytes_Check(item) && !(l == 4 && item == Py_None)) {
                PyErr_SetString(PyExc_TypeError, "plane tables hold bytes");
                return 0;
            }
        }
    pl->md_spans = PyArray_DATA(*md_spans);
    pl->stat_ids = PyArray_DATA(*ids);
    pl->stat_key = PyArray_DATA(*keys);
    Py_ssize_t nkeys = PyList_GET_SIZE(pl->keys);
    int32_t special[] = {pl->unknown_key, pl->long_key, pl->group_key, pl->step_key};
    for (int i = 0; i < 4; i++)
        if (special[i] < 0 || special[i] >= nkeys) {
            PyErr_SetString(PyExc_ValueError, "key rank outside the keys");
            return 0;
        }
    for (npy_intp i = 0; i < pl->s; i++)
        if (pl->stat_key[i] >= nkeys || (i && pl->stat_ids[i] <= pl->stat_ids[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "stat ids must be sorted, their keys inside the keys");
            return 0;
        }
    return 1;
}

/* trace_rows(buf, spans, md, ts, dur, group, step, plane) -> bytes.
 * Per event: its XEvent span (offset -1: no stats), metadata index, ts and
 * dur in µs (dur 0: an instant), group id and step name index (-1: none).
 * Args are long_name, the metadata's stats, the event's stats, group_id and
 * step_name, the last of a key winning, written in key order; a step_name
 * arg also names the event. */
static PyObject *trace_rows(PyObject *Py_UNUSED(self), PyObject *args_in) {
    PyObject *buf_obj, *spans_obj, *md_obj, *ts_obj, *dur_obj, *group_obj, *step_obj, *plane_obj;
    if (!PyArg_ParseTuple(args_in, "OOOOOOOO!", &buf_obj, &spans_obj, &md_obj, &ts_obj, &dur_obj, &group_obj,
                          &step_obj, &PyTuple_Type, &plane_obj))
        return NULL;
    PyArrayObject *spans = as_spans(spans_obj), *md = as_column(md_obj, NPY_INT32);
    PyArrayObject *ts = as_column(ts_obj, NPY_FLOAT64), *dur = as_column(dur_obj, NPY_FLOAT64);
    PyArrayObject *group = as_column(group_obj, NPY_INT64), *step = as_column(step_obj, NPY_INT32);
    PyArrayObject *md_spans = NULL, *ids = NULL, *keys = NULL;
    PyObject *result = NULL;
    Plane pl;
    Out o = {NULL, 0, 0};
    Args args = {NULL, 0, 0};
    Py_buffer view;
    int have_view = 0;
    if (!spans || !md || !ts || !dur || !group || !step) goto done;
    if (!plane_from(plane_obj, &pl, &md_spans, &ids, &keys)) goto done;
    if (get_buffer(buf_obj, &view) < 0) goto done;
    have_view = 1;
    npy_intp n = PyArray_DIM(spans, 0);
    if (PyArray_DIM(md, 0) != n || PyArray_DIM(ts, 0) != n || PyArray_DIM(dur, 0) != n || PyArray_DIM(group, 0) != n ||
        PyArray_DIM(step, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "columns differ in length");
        goto done;
    }
    const uint8_t *base = view.buf;
    const int64_t *sp = PyArray_DATA(spans), *gr = PyArray_DATA(group);
    const int32_t *mi = PyArray_DATA(md), *si = PyArray_DATA(step);
    const double *tv = PyArray_DATA(ts), *dv = PyArray_DATA(dur);
    Py_ssize_t num_steps = PyList_GET_SIZE(pl.steps);
    if (!out_reserve(&o, 256 * n + 1)) goto done; /* most rows are shorter: one bytes object, rarely grown */
    for (npy_intp r = 0; r < n; r++) {
        int32_t m = mi[r];
        if (m < 0 || m >= pl.m || si[r] >= num_steps) {
            PyErr_SetString(PyExc_ValueError, "metadata or step index outside its table");
            goto done;
        }
        args.count = 0;
        PyObject *long_name = PyList_GET_ITEM(pl.longs, m);
        if (long_name != Py_None) {
            Arg a = {pl.long_key, V_JSON, 0, 0, PyBytes_AS_STRING(long_name), PyBytes_GET_SIZE(long_name)};
            if (!arg_push(&args, a)) goto done;
        }
        const int64_t *ms = pl.md_spans + 2 * m;
        int64_t spans2[2][3] = {{ms[0], ms[1], 5}, {sp[2 * r], sp[2 * r + 1], 4}};  /* metadata stats, then the event's */
        for (int k = 0; k < 2; k++) {
            int64_t off = spans2[k][0], len = spans2[k][1];
            if (off < 0) continue;
            if (len < 0 || off + len > view.len) {
                PyErr_Format(PyExc_ValueError, "span outside the buffer at byte %lld", (long long)off);
                goto done;
            }
            Cursor c = {base + off, base + off + len};
            if (!push_stats(&pl, &args, base, c, (int)spans2[k][2])) goto done;
        }
        if (gr[r] >= 0) {
            Arg a = {pl.group_key, V_GROUP, 0, (uint64_t)gr[r], NULL, 0};
            if (!arg_push(&args, a)) goto done;
        }
        if (si[r] >= 0) {
            PyObject *j = PyList_GET_ITEM(pl.steps, si[r]);
            Arg a = {pl.step_key, V_JSON, 0, 0, PyBytes_AS_STRING(j), PyBytes_GET_SIZE(j)};
            if (!arg_push(&args, a)) goto done;
        }
        Py_ssize_t na = args.count;
        Arg *items = args.items;
        if (na > 1) {
            if (na <= 16) {  /* stable insertion sort by rank: most events have few args */
                for (Py_ssize_t i = 1; i < na; i++) {
                    Arg x = items[i];
                    Py_ssize_t j = i;
                    while (j > 0 && items[j - 1].rank > x.rank) {
                        items[j] = items[j - 1];
                        j--;
                    }
                    items[j] = x;
                }
            } else {
                qsort(items, na, sizeof(Arg), arg_order);
            }
        }
        const Arg *step_arg = NULL;
        if (!PUT_LIT(&o, "{")) goto done;
        if (na) {
            if (!PUT_LIT(&o, "\"args\": {")) goto done;
            int first = 1;
            for (Py_ssize_t i = 0; i < na; i++) {
                if (i + 1 < na && items[i + 1].rank == items[i].rank) continue;  /* a later one of this key wins */
                if (!first && !PUT_LIT(&o, ", ")) goto done;
                first = 0;
                if (!put_bytes_obj(&o, PyList_GET_ITEM(pl.keys, items[i].rank)) || !put_value(&o, items + i, base))
                    goto done;
                if (items[i].rank == pl.step_key) step_arg = items + i;
            }
            if (!PUT_LIT(&o, "}, ")) goto done;
        }
        if (dv[r] != 0.0) {
            if (!PUT_LIT(&o, "\"dur\": ") || !put_repr(&o, dv[r]) || !PUT_LIT(&o, ", "))
                goto done;
        }
        if (!PUT_LIT(&o, "\"name\": ")) goto done;
        if (step_arg) {
            if (!put_value(&o, step_arg, base)) goto done;
        } else if (!put_bytes_obj(&o, PyList_GET_ITEM(pl.names, m))) {
            goto done;
        }
        if (!put_bytes_obj(&o, dv[r] != 0.0 ? pl.x_tail : pl.i_tail) ||
            !put_repr(&o, tv[r]) || !PUT_LIT(&o, "},\n"))
            goto done;
    }
    if (!out_reserve(&o, 1)) goto done;
    if (_PyBytes_Resize(&o.bytes, o.size) == 0) {
        result = o.bytes;
    }
    o.bytes = NULL;
done:
    Py_XDECREF(o.bytes);
    PyMem_Free(args.items);
    if (have_view) PyBuffer_Release(&view);
    Py_XDECREF(spans);
    Py_XDECREF(md);
    Py_XDECREF(ts);
    Py_XDECREF(dur);
    Py_XDECREF(group);
    Py_XDECREF(step);
    Py_XDECREF(md_spans);
    Py_XDECREF(ids);
    Py_XDECREF(keys);
    return result;
}

static PyMethodDef methods[] = {
    {"nest_parents", nest_parents, METH_VARARGS,
     "nest_parents(order, segment, starts, ends, skip) -> int32 parent per event by time containment (-1 for none)"},
    {"xprof_order", xprof_order, METH_VARARGS,
     "xprof_order(starts, ends, segment) -> None when in (segment, start, longest first) order, else int64 permutation"},
    {"claim_groups", claim_groups, METH_VARARGS,
     "claim_groups(src, dst, num_nodes, num_events, roots) -> (int32 group per event, int64 roots that got one)"},
    {"trace_rows", trace_rows, METH_VARARGS,
     "trace_rows(buf, spans, md, ts, dur, group, step, plane) -> bytes: trace_viewer JSON rows of XEvents"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_nesting", .m_doc = "Parents of trace events by time containment, and step groups over them.", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__nesting(void) {
    import_array();
    return PyModule_Create(&module);
}
