/* profscope.models.formats.xspace._trace: the trace_viewer JSON rows of
 * XEvents (trace.py).
 *
 *   trace_rows(buf, spans, md, ts, dur, group, step, plane) -> bytes: one
 *       JSON object per event, as json.dumps(sort_keys=True) + ",\n"
 */
#include "_cbuffers.h"
#include "json_write.h"
#include "protowire.h"

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

/* Room for `room` more bytes at the end of the output; NULL when out of
 * memory. The json_write.h writer that fills it is then closed by put_end. */
static char *put_at(Out *o, Py_ssize_t room) {
    if (o->size + room > o->cap && !out_reserve(o, o->size + room)) return NULL;
    return PyBytes_AS_STRING(o->bytes) + o->size;
}

static int put_end(Out *o, const char *end) {
    if (!end) return 0;
    o->size = end - PyBytes_AS_STRING(o->bytes);
    return 1;
}

static int put_decimal(Out *o, uint64_t v, int negative) {
    char *w = put_at(o, 24);
    return w && put_end(o, write_uint(w, v, negative));
}

/* A double as "%.6g" formats it. */
static int put_g6(Out *o, double v) {
    char *text = PyOS_double_to_string(v, 'g', 6, 0, NULL);
    if (!text) return 0;
    int ok = put(o, text, (Py_ssize_t)strlen(text));
    PyMem_Free(text);
    return ok;
}

/* float.__repr__, as json.dumps writes a finite float. */
static int put_repr(Out *o, double v) {
    char *w = put_at(o, JSON_FLOAT_ROOM);
    return w && put_end(o, json_repr(w, v));
}

/* UTF-8 bytes as a JSON string the way json.dumps writes it. Returns -1 for
 * invalid UTF-8 (protobuf refuses such a string field), 0 when out of memory. */
static int put_json_utf8(Out *o, const uint8_t *p, Py_ssize_t n) {
    char *w = put_at(o, (Py_ssize_t)JSON_STRING_ROOM(n));
    if (!w) return 0;
    char *end = json_utf8(w, p, (size_t)n);
    return end ? put_end(o, end) : -1;
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
        return put(o, &quote, 1) && put_g6(o, d) && put(o, &quote, 1);
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
    {"trace_rows", trace_rows, METH_VARARGS,
     "trace_rows(buf, spans, md, ts, dur, group, step, plane) -> bytes: trace_viewer JSON rows of XEvents"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_trace", .m_doc = "trace_viewer JSON rows of XSpace events.", .m_size = -1,
    .m_methods = methods};

PyMODINIT_FUNC PyInit__trace(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
