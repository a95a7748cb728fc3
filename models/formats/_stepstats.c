/* profscope.models.formats._stepstats: TensorFlow timeline.py's memory analysis and
 * Chrome trace rows over StepStats columns (models/formats/step_stats.py).
 *
 *   tensor_lifetimes(buf, node_spans, consumer, full)
 *       -> (allocator, allocators, requested, allocated, dtype, shape, shapes,
 *           create_us, last_unref_us, (names, name_offsets)); not full: only
 *           allocator, allocators, requested and the times (None elsewhere)
 *       one row per distinct output tensor name, in first-seen order (a later
 *       tensor of the same name replaces the row's values, as timeline.py's
 *       dict does); allocator and shape are ids into the lists allocators
 *       and shapes ("(32,64)", "(?)"); the inputs in the labels of consumer
 *       nodes (not on GPU stream devices, not RecvTensor) extend their
 *       tensor's life to the consumer's end - 1
 *   node_times(buf, node_spans) -> (start_ns, dur_ns, thread)
 *       nanoseconds when the node has them (all_start_nanos != 0), else
 *       micros * 1000; thread_id
 *   sort_ties(order, time, delta, tensor, names, name_offsets)
 *       sorts runs of equal (time, delta) in `order` by tensor name, then by
 *       event number (the stable order), in place
 *   trace_events(buf, node_spans, kernel, pid, tid)
 *       -> bytes: ',{"ph":"X",...}' per node, as json.dumps writes them
 *   decode_spans(buf, spans) -> list of str (UTF-8, errors replaced)
 *   trim_heap() -> None: gives the C heap's free pages back to the system
 *       (glibc keeps big freed temporaries otherwise)
 *
 * Strings are escaped exactly as json.dumps(ensure_ascii=True) escapes the
 * str Python would decode them to (invalid UTF-8 replaced). Malformed
 * protobuf data raises ValueError naming the offset.
 */
#include "_cbuffers.h"
#include "_labels.h"
#include "intern.h"
#include "protowire.h"
#include "json_write.h"

/* ---------------------------------------------------------------- growable bytes */

typedef struct {
    char *p;
    size_t len, cap;
} Bytes;

static int bytes_reserve(Bytes *b, size_t more) {
    if (b->len + more <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + more) cap *= 2;
    char *grown = PyMem_RawRealloc(b->p, cap);
    if (!grown) return 0;
    b->p = grown;
    b->cap = cap;
    return 1;
}

static int bytes_put(Bytes *b, const void *s, size_t n) {
    if (!bytes_reserve(b, n)) return 0;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    return 1;
}

#define PUT_LITERAL(b, s) bytes_put((b), (s), sizeof(s) - 1)

static int bytes_put_int(Bytes *b, int64_t v) {
    if (!bytes_reserve(b, 24)) return 0;
    b->len = (size_t)(write_int(b->p + b->len, v) - b->p);
    return 1;
}

/* ---------------------------------------------------------------- columns */

/* A growable column of fixed-size items (raw allocator: usable without the GIL). */
typedef struct {
    char *p;
    size_t len, cap, item;
} Column;

static int column_push(Column *c, const void *value) {
    if (c->len == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 1024;
        char *grown = PyMem_RawRealloc(c->p, cap * c->item);
        if (!grown) return 0;
        c->p = grown;
        c->cap = cap;
    }
    memcpy(c->p + c->len++ * c->item, value, c->item);
    return 1;
}

static int push_i64(Column *c, int64_t v) { return column_push(c, &v); }
static int push_i32(Column *c, int32_t v) { return column_push(c, &v); }

#define AT(column, type, i) (((type *)(column).p)[i])

static void free_column_data(PyObject *capsule) {
    PyMem_RawFree(PyCapsule_GetPointer(capsule, "profscope.column"));
}

/* The column as a numpy array that owns its memory (no copy); the column is left empty. */
static PyObject *adopt(Column *c, int type) {
    npy_intp n = (npy_intp)c->len;
    char *data = PyMem_RawRealloc(c->p, c->len ? c->len * c->item : 1); /* shrink to fit */
    if (!data) return PyErr_NoMemory();
    c->p = NULL;
    c->len = c->cap = 0;
    PyObject *capsule = PyCapsule_New(data, "profscope.column", free_column_data);
    if (!capsule) {
        PyMem_RawFree(data);
        return NULL;
    }
    PyObject *arr = PyArray_SimpleNewFromData(1, &n, type, data);
    if (!arr) {
        Py_DECREF(capsule);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, capsule) < 0) { /* steals the capsule */
        Py_DECREF(arr);
        return NULL;
    }
    return arr;
}

/* ---------------------------------------------------------------- distinct keys */

/* The distinct keys in one bytes object: (blob, int64 offsets[n + 1]); needs the GIL. */
static PyObject *keys_blob(const Interner *k) {
    size_t total = 0, len;
    for (int32_t id = 0; id < k->n; id++) total += (size_t)k->entries[id].len;
    npy_intp dims[1] = {(npy_intp)k->n + 1};
    PyObject *blob = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    PyObject *offsets = PyArray_SimpleNew(1, dims, NPY_INT64);
    if (!blob || !offsets) {
        Py_XDECREF(blob);
        Py_XDECREF(offsets);
        return NULL;
    }
    char *dst = PyBytes_AS_STRING(blob);
    int64_t *o = PyArray_DATA((PyArrayObject *)offsets), at = 0;
    for (int32_t id = 0; id < k->n; id++) {
        const uint8_t *p = intern_bytes(k, id, &len);
        o[id] = at;
        memcpy(dst + at, p, len);
        at += (int64_t)len;
    }
    o[k->n] = at;
    return Py_BuildValue("(NN)", blob, offsets);
}

/* ---------------------------------------------------------------- nodes */

/* The NodeExecStats fields timeline.py reads (the last occurrence wins). */
typedef struct {
    const uint8_t *name, *name_end, *label, *label_end;
    int64_t start_us, rel_us;
} Node;

/* The payloads of a node's outputs (NodeOutput messages), in order. */
typedef struct {
    Cursor *items;
    size_t len, cap;
} Outputs;

/* Reads a node in one pass, its outputs too when asked. Returns 1, 0 when
 * malformed (*bad_at set), -1 when out of memory. */
static int read_node(const uint8_t *base, const int64_t *span, Py_ssize_t size, Node *n, Outputs *outputs,
                     Py_ssize_t *bad_at) {
    if (span[0] < 0 || span[1] < 0 || span[0] + span[1] > size) {
        *bad_at = span[0] > 0 ? span[0] : 0;
        return 0;
    }
    Cursor c = {base + span[0], base + span[0] + span[1]};
    WireField f;
    n->name = n->name_end = n->label = n->label_end = base;
    n->start_us = n->rel_us = 0;
    if (outputs) outputs->len = 0;
    while (c.p < c.end) {
        if (!next_field(&c, &f)) {
            *bad_at = c.p - base;
            return 0;
        }
        if (f.wire == 2 && f.number == 1) {
            n->name = f.sub.p;
            n->name_end = f.sub.end;
        } else if (f.wire == 2 && f.number == 8) {
            n->label = f.sub.p;
            n->label_end = f.sub.end;
        } else if (f.wire == 0 && f.number == 2) {
            n->start_us = (int64_t)f.value;
        } else if (f.wire == 0 && f.number == 5) {
            n->rel_us = (int64_t)f.value;
        } else if (f.wire == 2 && f.number == 7 && outputs) {
            if (outputs->len == outputs->cap) {
                size_t cap = outputs->cap ? outputs->cap * 2 : 16;
                Cursor *grown = PyMem_RawRealloc(outputs->items, cap * sizeof(Cursor));
                if (!grown) return -1;
                outputs->items = grown;
                outputs->cap = cap;
            }
            outputs->items[outputs->len++] = f.sub;
        }
    }
    return 1;
}

static int is_recv(const Node *n) {
    return n->name_end - n->name == 10 && memcmp(n->name, "RecvTensor", 10) == 0;
}

/* Wrapping: garbage times must not be undefined behaviour. */
static int64_t add_wrapping(int64_t a, int64_t b) {
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* ---------------------------------------------------------------- outputs */

/* What timeline.py reads of one NodeOutput (fields merge across repeated
 * occurrences of a message, last scalar wins, as protobuf parses them). */
typedef struct {
    int64_t dtype, requested, allocated;
    const uint8_t *allocator, *allocator_end;
    int unknown_rank;
    Column dims; /* int64 */
} Output;

/* Returns 1, 0 when malformed, -1 when out of memory. */
static int read_shape(Cursor c, Output *o) {
    WireField f;
    while (c.p < c.end) {
        if (!next_field(&c, &f)) return 0;
        if (f.number == 2 && f.wire == 2) { /* Dim: size = 1 */
            int64_t size = 0;
            WireField d;
            while (f.sub.p < f.sub.end) {
                if (!next_field(&f.sub, &d)) return 0;
                if (d.number == 1 && d.wire == 0) size = (int64_t)d.value;
            }
            if (!push_i64(&o->dims, size)) return -1;
        } else if (f.number == 3 && f.wire == 0) {
            o->unknown_rank = f.value != 0;
        }
    }
    return 1;
}

static int read_output(Cursor c, const uint8_t *base, Output *o) {
    WireField f, g, h;
    o->dtype = o->requested = o->allocated = 0;
    o->allocator = o->allocator_end = base;
    o->unknown_rank = 0;
    o->dims.len = 0;
    while (c.p < c.end) {
        if (!next_field(&c, &f)) return 0;
        if (f.number != 3 || f.wire != 2) continue; /* tensor_description */
        while (f.sub.p < f.sub.end) {
            if (!next_field(&f.sub, &g)) return 0;
            if (g.number == 1 && g.wire == 0) {
                o->dtype = (int32_t)g.value; /* an enum: int32 */
            } else if (g.number == 2 && g.wire == 2) {
                int r = read_shape(g.sub, o);
                if (r <= 0) return r;
            } else if (g.number == 4 && g.wire == 2) { /* allocation_description */
                while (g.sub.p < g.sub.end) {
                    if (!next_field(&g.sub, &h)) return 0;
                    if (h.number == 1 && h.wire == 0) o->requested = (int64_t)h.value;
                    else if (h.number == 2 && h.wire == 0) o->allocated = (int64_t)h.value;
                    else if (h.number == 3 && h.wire == 2) {
                        o->allocator = h.sub.p;
                        o->allocator_end = h.sub.end;
                    }
                }
            }
        }
    }
    return 1;
}

/* timeline.py's shape text: "(?)" or "(d0,d1,...)". */
static int put_shape(Bytes *b, const Output *o) {
    b->len = 0;
    if (o->unknown_rank) return PUT_LITERAL(b, "(?)");
    if (!PUT_LITERAL(b, "(")) return 0;
    for (size_t i = 0; i < o->dims.len; i++) {
        if (i && !PUT_LITERAL(b, ",")) return 0;
        if (!bytes_put_int(b, AT(o->dims, int64_t, i))) return 0;
    }
    return PUT_LITERAL(b, ")");
}

/* One row per distinct tensor name, with the last tensor of that name
 * (lean: only what the memory counters need, no sizes, types or shapes). */
typedef struct {
    int lean;
    Interner names, allocators, shapes; /* strings of the buffer, or copies (shapes, "name:index") */
    Column allocator, dtype, shape;                     /* int32 */
    Column requested, allocated, create, unref;         /* int64 */
    Bytes scratch;
    int64_t last_allocator; /* outputs in a row name the same allocator: its id, -1 at first */
} Tensors;

static void tensors_init(Tensors *t, const uint8_t *base) {
    memset(t, 0, sizeof(*t));
    t->names.base = t->allocators.base = t->shapes.base = base;
    t->allocator.item = t->dtype.item = t->shape.item = sizeof(int32_t);
    t->requested.item = t->allocated.item = t->create.item = t->unref.item = sizeof(int64_t);
}

static void tensors_free(Tensors *t) {
    intern_free(&t->names);
    intern_free(&t->allocators);
    intern_free(&t->shapes);
    Column *columns[] = {&t->allocator, &t->dtype, &t->shape, &t->requested, &t->allocated, &t->create, &t->unref};
    for (size_t i = 0; i < sizeof(columns) / sizeof(*columns); i++) PyMem_RawFree(columns[i]->p);
    PyMem_RawFree(t->scratch.p);
}

/* Output `index` of a node named name (in the buffer; name_hash its hash
 * when known, else 0): a new row, or the values of the row of the same name
 * replaced. Returns 0 when out of memory. */
static int store_output(Tensors *t, const uint8_t *name, size_t name_len, uint64_t name_hash, int64_t index,
                        const Output *o, int64_t start, int64_t end) {
    int64_t shape = 0;
    if (!t->lean && (!put_shape(&t->scratch, o) ||
                     (shape = intern(&t->shapes, (const uint8_t *)t->scratch.p, t->scratch.len, 1)) < 0))
        return 0;
    size_t alloc_len = (size_t)(o->allocator_end - o->allocator);
    int64_t allocator = t->last_allocator;
    size_t last_len = 0;
    const uint8_t *last = allocator >= 0 ? intern_bytes(&t->allocators, (int32_t)allocator, &last_len) : NULL;
    if (!last || last_len != alloc_len || memcmp(last, o->allocator, alloc_len) != 0) {
        if ((allocator = intern(&t->allocators, o->allocator, alloc_len, 0)) < 0) return 0;
        t->last_allocator = allocator;
    }
    const uint8_t *key = name;
    size_t len = name_len, slot = 0;
    if (index || !name_hash) {
        if (index) { /* "name:index" */
            t->scratch.len = 0;
            if (!bytes_put(&t->scratch, name, name_len) || !PUT_LITERAL(&t->scratch, ":") ||
                !bytes_put_int(&t->scratch, index))
                return 0;
            key = (const uint8_t *)t->scratch.p;
            len = t->scratch.len;
        }
        name_hash = hash_bytes(key, len);
    }
    int64_t row = intern_find(&t->names, key, len, name_hash, &slot);
    int64_t allocated = o->allocated ? o->allocated : o->requested;
    if (row >= 0) { /* replaces the earlier tensor, keeping its place */
        AT(t->allocator, int32_t, row) = (int32_t)allocator;
        AT(t->requested, int64_t, row) = o->requested;
        AT(t->create, int64_t, row) = start;
        AT(t->unref, int64_t, row) = end;
        if (!t->lean) {
            AT(t->allocated, int64_t, row) = allocated;
            AT(t->dtype, int32_t, row) = (int32_t)o->dtype;
            AT(t->shape, int32_t, row) = (int32_t)shape;
        }
        return 1;
    }
    return intern_add(&t->names, key, len, name_hash, slot, index != 0) >= 0 && push_i32(&t->allocator, (int32_t)allocator) &&
           push_i64(&t->requested, o->requested) && push_i64(&t->create, start) && push_i64(&t->unref, end) &&
           (t->lean || (push_i64(&t->allocated, allocated) && push_i32(&t->dtype, (int32_t)o->dtype) &&
                        push_i32(&t->shape, (int32_t)shape)));
}

static int64_t span_ok(int64_t off, int64_t len, Py_ssize_t size) {
    return off >= 0 && len >= 0 && off + len <= size;
}

/* An input of a consumer node: its name (in the buffer) and the consumer's end - 1. */
typedef struct {
    const uint8_t *p;
    size_t len;
    uint64_t hash;
    int64_t last;
} Input;

#define INPUT_BATCH 32
#define AHEAD 8 /* nodes looked ahead in pass 1 */

static void resolve_inputs(Tensors *t, const Input *batch, int count) {
    for (int i = 0; i < count; i++) {
        const Input *in = batch + i;
        size_t slot;
        int64_t row = intern_find(&t->names, in->p, in->len, in->hash, &slot);
        if (row < 0) { /* Partitioning inserts Send/Recv: the data came from the original node. */
            const uint8_t *cut = NULL; /* the last "/_" after the first byte */
            for (size_t i = in->len >= 3 ? in->len - 2 : 0; i > 0; i--)
                if (in->p[i] == '/' && in->p[i + 1] == '_') { cut = in->p + i; break; }
            if (cut) {
                size_t cut_len = (size_t)(cut - in->p);
                row = intern_find(&t->names, in->p, cut_len, hash_bytes(in->p, cut_len), &slot);
            }
        }
        if (row >= 0 && AT(t->unref, int64_t, row) < in->last) AT(t->unref, int64_t, row) = in->last;
    }
}

static PyObject *tensor_lifetimes(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *nodes_obj, *consumer_obj;
    int full;
    if (!PyArg_ParseTuple(args, "OOOp", &obj, &nodes_obj, &consumer_obj, &full)) return NULL;
    PyArrayObject *nodes = as_spans(nodes_obj), *consumer = as_column(consumer_obj, NPY_BOOL);
    PyObject *result = NULL;
    Py_buffer view;
    int have_view = 0;
    Tensors t;
    tensors_init(&t, NULL);
    t.lean = !full;
    t.last_allocator = -1;
    Outputs outputs = {0};
    Output o;
    memset(&o, 0, sizeof(o));
    o.dims.item = sizeof(int64_t);
    if (!nodes || !consumer) goto done;
    npy_intp n = PyArray_DIM(nodes, 0);
    if (PyArray_DIM(consumer, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        goto done;
    }
    if (get_buffer(obj, &view) < 0) goto done;
    have_view = 1;
    const uint8_t *base = view.buf;
    t.names.base = t.allocators.base = t.shapes.base = base;
    const int64_t *ns = PyArray_DATA(nodes);
    const npy_bool *cons = PyArray_DATA(consumer);
    Py_ssize_t bad_at = -1;
    int nomem = 0;
    Py_BEGIN_ALLOW_THREADS
    nomem = !intern_grow(&t.names); /* before intern_prefetch */
    /* Pass 1: every output of every node, in file order. The slot of a
     * node's name a few nodes ahead is fetched early when the name comes
     * first in the node, as TensorFlow writes it (its hash kept for then). */
    struct {
        const uint8_t *name;
        size_t len;
        uint64_t hash;
    } ahead[AHEAD] = {{0}};
    for (npy_intp k = 0; k < n && !nomem && bad_at < 0; k++) {
        Node node;
        int r = read_node(base, ns + 2 * k, view.len, &node, &outputs, &bad_at);
        if (r <= 0) {
            nomem = r < 0;
            break;
        }
        size_t name_len = (size_t)(node.name_end - node.name);
        uint64_t name_hash = 0; /* from the look-ahead, when it read this very name */
        if (ahead[k % AHEAD].name == node.name && ahead[k % AHEAD].len == name_len) name_hash = ahead[k % AHEAD].hash;
        /* the slot now looks ahead at node k + AHEAD */
        const int64_t *next = ns + 2 * (k + AHEAD);
        ahead[k % AHEAD].name = NULL;
        if (k + AHEAD < n && span_ok(next[0], next[1], view.len) && next[1] > 1 && base[next[0]] == 0x0a) {
            Cursor c = {base + next[0] + 1, base + next[0] + next[1]};
            uint64_t len;
            if (read_varint(&c, &len) && len <= (uint64_t)(c.end - c.p)) {
                ahead[k % AHEAD].name = c.p;
                ahead[k % AHEAD].len = (size_t)len;
                ahead[k % AHEAD].hash = hash_bytes(c.p, (size_t)len);
                intern_prefetch(&t.names, ahead[k % AHEAD].hash);
            }
        }
        int64_t end = add_wrapping(node.start_us, node.rel_us);
        for (size_t j = 0; j < outputs.len; j++) {
            r = read_output(outputs.items[j], base, &o);
            if (r == 0) { bad_at = outputs.items[j].p - base; break; }
            if (r < 0 || !store_output(&t, node.name, name_len, name_hash, (int64_t)j, &o, node.start_us, end)) {
                nomem = 1;
                break;
            }
        }
    }
    /* Pass 2 (the nodes read again rather than kept): each input keeps its
     * tensor alive to the consumer's end - 1. Inputs are looked up in
     * batches, their slots fetched ahead. */
    Input batch[INPUT_BATCH];
    int queued = 0;
    for (npy_intp k = 0; k <= n && !nomem && bad_at < 0; k++) {
        Node node;
        const uint8_t *op, *op_end, *p = NULL, *end = NULL;
        int has_inputs = k < n && cons[k] && read_node(base, ns + 2 * k, view.len, &node, NULL, &bad_at) &&
                         !is_recv(&node) && match_op_label(node.label, node.label_end, &op, &op_end, &p, &end) &&
                         end > p;
        if (bad_at >= 0) break;
        int64_t last = has_inputs ? add_wrapping(add_wrapping(node.start_us, node.rel_us), -1) : 0;
        while (has_inputs) {
            const uint8_t *q = p; /* the next ", " (str.split) */
            while (q + 1 < end && !(q[0] == ',' && q[1] == ' ')) q++;
            if (q + 1 >= end) q = end;
            if (queued == INPUT_BATCH) {
                resolve_inputs(&t, batch, queued);
                queued = 0;
            }
            batch[queued] = (Input){p, (size_t)(q - p), hash_bytes(p, (size_t)(q - p)), last};
            intern_prefetch(&t.names, batch[queued++].hash);
            if (q == end) break;
            p = q + 2;
        }
        if (k == n) resolve_inputs(&t, batch, queued);
    }
    Py_END_ALLOW_THREADS
    if (nomem) {
        PyErr_NoMemory();
        goto done;
    }
    if (bad_at >= 0) {
        PyErr_Format(PyExc_ValueError, "malformed protobuf data at byte %zd", bad_at);
        goto done;
    }
    if (t.lean) {
        result = Py_BuildValue("(NNNOOOONN(OO))", adopt(&t.allocator, NPY_INT32), intern_list(&t.allocators, "replace"),
                               adopt(&t.requested, NPY_INT64), Py_None, Py_None, Py_None, Py_None,
                               adopt(&t.create, NPY_INT64), adopt(&t.unref, NPY_INT64), Py_None, Py_None);
    } else {
        PyObject *names = keys_blob(&t.names);
        if (names)
            result = Py_BuildValue("(NNNNNNNNNN)", adopt(&t.allocator, NPY_INT32), intern_list(&t.allocators, "replace"),
                                   adopt(&t.requested, NPY_INT64), adopt(&t.allocated, NPY_INT64),
                                   adopt(&t.dtype, NPY_INT32), adopt(&t.shape, NPY_INT32), intern_list(&t.shapes, "replace"),
                                   adopt(&t.create, NPY_INT64), adopt(&t.unref, NPY_INT64), names);
    }
done:
    tensors_free(&t);
    PyMem_RawFree(o.dims.p);
    PyMem_RawFree(outputs.items);
    if (have_view) PyBuffer_Release(&view);
    Py_XDECREF(nodes);
    Py_XDECREF(consumer);
    return result;
}

/* ---------------------------------------------------------------- times */

static PyObject *node_times(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *nodes_obj;
    if (!PyArg_ParseTuple(args, "OO", &obj, &nodes_obj)) return NULL;
    PyArrayObject *nodes = as_spans(nodes_obj);
    if (!nodes) return NULL;
    npy_intp n = PyArray_DIM(nodes, 0);
    PyObject *start = PyArray_SimpleNew(1, &n, NPY_INT64), *dur = PyArray_SimpleNew(1, &n, NPY_INT64);
    PyObject *thread = PyArray_SimpleNew(1, &n, NPY_INT64), *result = NULL;
    Py_buffer view;
    if (!start || !dur || !thread || get_buffer(obj, &view) < 0) goto done;
    const uint8_t *base = view.buf;
    const int64_t *ns = PyArray_DATA(nodes);
    int64_t *st = PyArray_DATA((PyArrayObject *)start), *du = PyArray_DATA((PyArrayObject *)dur);
    int64_t *th = PyArray_DATA((PyArrayObject *)thread);
    Py_ssize_t bad_at = -1;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp k = 0; k < n; k++) {
        if (!span_ok(ns[2 * k], ns[2 * k + 1], view.len)) { bad_at = ns[2 * k] > 0 ? ns[2 * k] : 0; break; }
        Cursor c = {base + ns[2 * k], base + ns[2 * k] + ns[2 * k + 1]};
        WireField f;
        int64_t v[17] = {0}; /* by field number: 2, 5 micros; 10 thread; 13, 16 nanos */
        while (c.p < c.end) {
            if (!next_field(&c, &f)) { bad_at = c.p - base; break; }
            if (f.wire == 0 && f.number < 17) v[f.number] = (int64_t)f.value;
        }
        if (bad_at >= 0) break;
        int has_ns = v[13] != 0;
        st[k] = has_ns ? v[13] : (int64_t)((uint64_t)v[2] * 1000);
        du[k] = has_ns ? v[16] : (int64_t)((uint64_t)v[5] * 1000);
        th[k] = v[10];
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (bad_at >= 0) PyErr_Format(PyExc_ValueError, "malformed protobuf data at byte %zd", bad_at);
    else result = Py_BuildValue("(OOO)", start, dur, thread);
done:
    Py_XDECREF(start);
    Py_XDECREF(dur);
    Py_XDECREF(thread);
    Py_DECREF(nodes);
    return result;
}

/* ---------------------------------------------------------------- tie order */

typedef struct {
    const char *name;
    int64_t len, event;
} TieKey;

static int compare_ties(const void *a, const void *b) {
    const TieKey *x = a, *y = b;
    int64_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->name, y->name, (size_t)n); /* UTF-8 byte order is code point order */
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->event < y->event ? -1 : x->event > y->event;
}

static PyObject *sort_ties(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *order_obj, *time_obj, *delta_obj, *tensor_obj, *names_obj, *offsets_obj;
    if (!PyArg_ParseTuple(args, "OOOOOO", &order_obj, &time_obj, &delta_obj, &tensor_obj, &names_obj, &offsets_obj))
        return NULL;
    PyArrayObject *order = (PyArrayObject *)PyArray_FROMANY(order_obj, NPY_INT64, 1, 1,
                                                            NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_WRITEABLE);
    PyArrayObject *time = as_column(time_obj, NPY_INT64), *delta = as_column(delta_obj, NPY_INT64);
    PyArrayObject *tensor = as_column(tensor_obj, NPY_INT64), *offsets = as_column(offsets_obj, NPY_INT64);
    PyObject *result = NULL;
    Py_buffer view;
    int have_view = 0;
    TieKey *keys = NULL;
    if (!order || !time || !delta || !tensor || !offsets) goto done;
    if ((PyObject *)order != order_obj) { /* a converted copy would be sorted in vain */
        PyErr_SetString(PyExc_ValueError, "order must be a contiguous int64 array (sorted in place)");
        goto done;
    }
    if (get_buffer(names_obj, &view) < 0) goto done;
    have_view = 1;
    npy_intp m = PyArray_DIM(order, 0), events = PyArray_DIM(time, 0), rows = PyArray_DIM(offsets, 0) - 1;
    int64_t *ord = PyArray_DATA(order);
    const int64_t *tm = PyArray_DATA(time), *dl = PyArray_DATA(delta), *tn = PyArray_DATA(tensor);
    const int64_t *off = PyArray_DATA(offsets);
    if (PyArray_DIM(delta, 0) != events || PyArray_DIM(tensor, 0) != events) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        goto done;
    }
    for (npy_intp i = 0; i < m; i++) {
        if (ord[i] < 0 || ord[i] >= events || tn[ord[i]] < 0 || tn[ord[i]] >= rows ||
            off[tn[ord[i]] + 1] > view.len) {
            PyErr_SetString(PyExc_ValueError, "index out of range");
            goto done;
        }
    }
    const char *blob = view.buf;
    for (npy_intp a = 0; a < m;) {
        npy_intp b = a + 1;
        while (b < m && tm[ord[b]] == tm[ord[a]] && dl[ord[b]] == dl[ord[a]]) b++;
        if (b - a > 1) {
            TieKey *grown = PyMem_RawRealloc(keys, sizeof(TieKey) * (size_t)(b - a));
            if (!grown) {
                PyErr_NoMemory();
                goto done;
            }
            keys = grown;
            for (npy_intp i = a; i < b; i++) {
                int64_t t = tn[ord[i]];
                keys[i - a] = (TieKey){blob + off[t], off[t + 1] - off[t], ord[i]};
            }
            qsort(keys, (size_t)(b - a), sizeof(TieKey), compare_ties);
            for (npy_intp i = a; i < b; i++) ord[i] = keys[i - a].event;
        }
        a = b;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    PyMem_RawFree(keys);
    if (have_view) PyBuffer_Release(&view);
    Py_XDECREF(order);
    Py_XDECREF(time);
    Py_XDECREF(delta);
    Py_XDECREF(tensor);
    Py_XDECREF(offsets);
    return result;
}

/* ---------------------------------------------------------------- JSON */

/* Writers append at a cursor into room reserved for a row's worst case (at
 * most 6 bytes of JSON per byte of text: "\u0001"), so they check no bounds. */

#define W_LITERAL(w, s) (memcpy((w), (s), sizeof(s) - 1), (w) + sizeof(s) - 1)

/* The JSON string (quoted) of bytes decoded as UTF-8; invalid sequences
 * become U+FFFD as Python's "replace" makes them (needs the GIL). NULL on
 * a Python error. Writes at most 6 * len + 2 bytes. */
static char *w_string(char *w, const uint8_t *s, int64_t len) {
    char *end = json_utf8(w, s, (size_t)len);
    if (end) return end;
    PyObject *text = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)len, "replace");
    if (!text) return NULL;
    *w++ = '"';
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    for (Py_ssize_t i = 0; i < n; i++) w = json_escaped(w, PyUnicode_READ_CHAR(text, i));
    Py_DECREF(text);
    *w++ = '"';
    return w;
}

/* One node's X event, as timeline.py writes it: GPU kernels are named by
 * the node in their label, RecvTensor nodes' op is RecvTensor, other nodes
 * list their label's inputs. Room: event_room(). NULL on a Python error. */
static char *w_event(char *w, const Node *n, int kernel, int64_t pid, int64_t tid) {
    const uint8_t *name = n->name, *name_end = n->name_end, *op = NULL, *op_end = NULL, *in = NULL, *in_end = NULL;
    if (kernel) {
        match_kernel_label(n->label, n->label_end, n->name, n->name_end, &name, &name_end, &op, &op_end);
    } else if (is_recv(n)) {
        op = name;
        op_end = name_end;
    } else if (!match_op_label(n->label, n->label_end, &op, &op_end, &in, &in_end)) {
        op = NULL;
    }
    w = W_LITERAL(w, ",{\"ph\":\"X\",\"cat\":\"Op\",\"name\":");
    char *op_json = w;
    w = op ? w_string(w, op, op_end - op) : W_LITERAL(w, "\"unknown\"");
    if (!w) return NULL;
    size_t op_len = (size_t)(w - op_json);
    w = W_LITERAL(w, ",\"pid\":");
    w = write_int(w, pid);
    w = W_LITERAL(w, ",\"tid\":");
    w = write_int(w, tid);
    w = W_LITERAL(w, ",\"ts\":");
    w = write_int(w, n->start_us);
    w = W_LITERAL(w, ",\"dur\":");
    w = write_int(w, n->rel_us);
    w = W_LITERAL(w, ",\"args\":{\"name\":");
    if (!(w = w_string(w, name, name_end - name))) return NULL;
    w = W_LITERAL(w, ",\"op\":");
    memcpy(w, op_json, op_len); /* the op's JSON again */
    w += op_len;
    if (in && in_end > in) { /* "a, b" split at ", " as str.split does; an empty text has none */
        const uint8_t *p = in;
        for (int64_t i = 0;; i++) {
            const uint8_t *q = p;
            while (q + 1 < in_end && !(q[0] == ',' && q[1] == ' ')) q++;
            if (q + 1 >= in_end) q = in_end;
            w = W_LITERAL(w, ",\"input");
            w = write_int(w, i);
            w = W_LITERAL(w, "\":");
            if (!(w = w_string(w, p, q - p))) return NULL;
            if (q == in_end) break;
            p = q + 2;
        }
    }
    return W_LITERAL(w, "}}");
}

/* The most w_event writes: fixed text and four numbers, then the name, the
 * op twice and the inputs (each from the label or the node name, 6 bytes
 * of JSON per byte at most), a key per ", " of the inputs. */
static size_t event_room(const Node *n) {
    return 400 + 50 * (size_t)((n->name_end - n->name) + (n->label_end - n->label));
}

/* The bytes written, or NULL with an error set. */
static PyObject *finish(Bytes *b, int ok) {
    PyObject *out = NULL;
    if (ok > 0) out = PyBytes_FromStringAndSize(b->p, (Py_ssize_t)b->len);
    else if (ok == 0) PyErr_NoMemory();
    PyMem_RawFree(b->p);
    return out;
}

static PyObject *trace_events(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *nodes_obj, *kernel_obj, *pid_obj, *tid_obj;
    if (!PyArg_ParseTuple(args, "OOOOO", &obj, &nodes_obj, &kernel_obj, &pid_obj, &tid_obj)) return NULL;
    PyArrayObject *nodes = as_spans(nodes_obj), *kernel = as_column(kernel_obj, NPY_BOOL);
    PyArrayObject *pid = as_column(pid_obj, NPY_INT64), *tid = as_column(tid_obj, NPY_INT64);
    PyObject *result = NULL;
    Py_buffer view;
    if (!nodes || !kernel || !pid || !tid) goto done;
    npy_intp n = PyArray_DIM(nodes, 0);
    if (PyArray_DIM(kernel, 0) != n || PyArray_DIM(pid, 0) != n || PyArray_DIM(tid, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "columns of different lengths");
        goto done;
    }
    if (get_buffer(obj, &view) < 0) goto done;
    const uint8_t *base = view.buf;
    const int64_t *ns = PyArray_DATA(nodes), *pd = PyArray_DATA(pid), *td = PyArray_DATA(tid);
    const npy_bool *kn = PyArray_DATA(kernel);
    Bytes b = {0};
    Py_ssize_t bad_at = -1;
    int ok = bytes_reserve(&b, (size_t)n * 200);
    for (npy_intp k = 0; k < n && ok > 0; k++) {
        Node node;
        if (!read_node(base, ns + 2 * k, view.len, &node, NULL, &bad_at)) break;
        if (!(ok = bytes_reserve(&b, event_room(&node)))) break;
        char *w = w_event(b.p + b.len, &node, kn[k], pd[k], td[k]);
        if (!w) ok = -1;
        else b.len = (size_t)(w - b.p);
    }
    PyBuffer_Release(&view);
    if (bad_at >= 0) {
        PyMem_RawFree(b.p);
        PyErr_Format(PyExc_ValueError, "malformed protobuf data at byte %zd", bad_at);
        goto done;
    }
    result = finish(&b, ok);
done:
    Py_XDECREF(nodes);
    Py_XDECREF(kernel);
    Py_XDECREF(pid);
    Py_XDECREF(tid);
    return result;
}

static PyObject *decode_spans(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans_obj;
    if (!PyArg_ParseTuple(args, "OO", &obj, &spans_obj)) return NULL;
    Py_buffer view;
    PyArrayObject *spans = with_buffer(as_spans(spans_obj), obj, &view);
    if (!spans) return NULL;
    npy_intp n = PyArray_DIM(spans, 0);
    const int64_t *sp = PyArray_DATA(spans);
    PyObject *out = PyList_New(n);
    for (npy_intp k = 0; out && k < n; k++) {
        PyObject *s = span_ok(sp[2 * k], sp[2 * k + 1], view.len)
                          ? PyUnicode_DecodeUTF8((const char *)view.buf + sp[2 * k], sp[2 * k + 1], "replace")
                          : PyUnicode_FromStringAndSize("", 0);
        if (!s) Py_CLEAR(out);
        else PyList_SET_ITEM(out, k, s);
    }
    PyBuffer_Release(&view);
    Py_DECREF(spans);
    return out;
}

static PyObject *trim_heap(PyObject *Py_UNUSED(self), PyObject *Py_UNUSED(args)) {
    Py_BEGIN_ALLOW_THREADS
    pt_malloc_trim();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"tensor_lifetimes", tensor_lifetimes, METH_VARARGS,
     "tensor_lifetimes(buf, node_spans, consumer, full) -> (allocator, allocators, requested, allocated, "
     "dtype, shape, shapes, create_us, last_unref_us, (names, name_offsets)); not full: None for the rest"},
    {"node_times", node_times, METH_VARARGS,
     "node_times(buf, node_spans) -> (start_ns, dur_ns, thread) int64 columns"},
    {"sort_ties", sort_ties, METH_VARARGS,
     "sort_ties(order, time, delta, tensor, names, name_offsets): runs of equal (time, delta) by name, in place"},
    {"trace_events", trace_events, METH_VARARGS,
     "trace_events(buf, node_spans, kernel, pid, tid) -> bytes of ',{\"ph\":\"X\",...}' rows"},
    {"decode_spans", decode_spans, METH_VARARGS, "decode_spans(buf, spans) -> list of str (errors replaced)"},
    {"trim_heap", trim_heap, METH_NOARGS, "trim_heap(): the C heap's free pages back to the system (glibc)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_stepstats", .m_doc = "timeline.py's memory analysis and Chrome trace rows over StepStats columns.", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__stepstats(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
