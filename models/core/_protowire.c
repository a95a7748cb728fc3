/* profscope.models.core._protowire: column decoding of protobuf wire data.
 *
 * Python's protobuf builds one object per message; a profile with millions of
 * snapshots or events then spends most of its time in attribute access. These
 * functions walk the wire format directly and fill numpy arrays, one column
 * per field, for messages located by their byte spans in the buffer.
 *
 *   find_fields(buf, start, end, numbers) -> one int64[k, 2] array per
 *       field number: spans of each length-delimited occurrence at the top
 *       level of the message [start, end), found in one pass
 *   find_children(buf, spans, numbers) -> find_fields over many messages:
 *       (int64[k] index of the message, int64[k, 2] spans) per field number
 *   decode_messages(buf, spans, fields)  -> list of arrays, one per
 *       (field_number, kind) in fields; kind 'i' varint -> int64,
 *       'z' zigzag varint -> int64, 'd' double -> float64,
 *       'f' fixed64 -> int64, 'g' float (fixed32) -> float64,
 *       's' length-delimited -> int64[n, 2] span, 'n' -> int64 number of
 *       occurrences (any wire type: presence of oneof members), 'c' ->
 *       int64 number of length-delimited occurrences (the children
 *       decode_children finds)
 *       (-1, 0 when absent). Absent scalars are 0; the last occurrence wins.
 *   intern_strings(buf, spans) -> (int32 ids, list of str): equal strings
 *       share an id; absent spans map to "".
 *   gather_spans(buf, spans) -> (bytes, int64 offsets[n + 1]): the spans
 *       copied into one bytes object.
 *   decode_children(buf, spans, number, fields, count, out[, stat_field,
 *       ids]): those children (count in all) and their varint fields, into
 *       preallocated columns; and their stats of ids, as stat_entries'.
 *   stat_columns(buf, spans, field, ids) -> XStat (xplane.proto) values of
 *       chosen metadata ids, one column per id.
 *   stat_entries(buf, offsets, lengths, rows, field, ids) -> the same values
 *       only where present, as entries (message, id, value).
 *
 * Malformed data (a varint or field running past its message) raises
 * ValueError naming the offset, never reads out of bounds.
 *
 * Other native helpers live in modules named for what they do:
 * profscope.models.core._tfrecord (TFRecord framing, CRC-32C), profscope.models.data._lanes (lane
 * packing), profscope.models.data._nesting (parents by time containment),
 * profscope.models.formats.xspace._steps (XProf's step groups) and
 * profscope.models.formats._labels (TensorFlow timeline labels).
 */
#include "_cbuffers.h"
#include "intern.h"
#include "protowire.h"

static PyObject *malformed(Py_ssize_t offset) {
    PyErr_Format(PyExc_ValueError, "malformed protobuf data at byte %zd", offset);
    return NULL;
}

#define MAX_FIELD 64

/* Reads the requested field numbers into slot_of[number] (-1 elsewhere). */
static int parse_numbers(PyObject *numbers, int *slot_of) {
    Py_ssize_t nnum = PySequence_Fast_GET_SIZE(numbers);
    for (int i = 0; i <= MAX_FIELD; i++) slot_of[i] = -1;
    for (Py_ssize_t i = 0; i < nnum; i++) {
        long number = PyLong_AsLong(PySequence_Fast_GET_ITEM(numbers, i));
        if (number == -1 && PyErr_Occurred()) return 0;
        if (number < 1 || number > MAX_FIELD || slot_of[number] != -1) {
            PyErr_Format(PyExc_ValueError, "bad field number %ld", number);
            return 0;
        }
        slot_of[number] = (int)i;
    }
    return 1;
}

/* One pass over the top-level fields of the message at [start, end),
 * collecting every length-delimited occurrence of the wanted numbers.
 * Returns -1 when well-formed, else the offset of the malformed byte
 * (-2 when out of memory). */
static Py_ssize_t scan_message(const uint8_t *base, int64_t start, int64_t end, const int *slot_of,
                               SpanList *lists, int64_t parent) {
    Cursor c = {base + start, base + end};
    while (c.p < c.end) {
        uint64_t tag, len;
        if (!read_varint(&c, &tag)) return c.p - base;
        uint64_t number = tag >> 3; /* any size in garbage: compare unsigned */
        int wire = (int)(tag & 7);
        if (wire == 2 && number >= 1 && number <= MAX_FIELD && slot_of[number] >= 0) {
            if (!read_varint(&c, &len) || len > (uint64_t)(c.end - c.p)) return c.p - base;
            if (!span_push(&lists[slot_of[number]], parent, c.p - base, (int64_t)len)) return -2;
            c.p += len;
        } else if (!skip_field(&c, wire)) {
            return c.p - base;
        }
    }
    return -1;
}

/* Turns the span lists into arrays: [k, 2] spans, plus k parents if asked. */
static PyObject *span_arrays(SpanList *lists, Py_ssize_t nnum, int with_parents) {
    PyObject *result = PyList_New(nnum);
    if (!result) return NULL;
    for (Py_ssize_t i = 0; i < nnum; i++) {
        npy_intp dims[2] = {lists[i].count, 2};
        PyObject *arr = PyArray_SimpleNew(2, dims, NPY_INT64);
        PyObject *parents = with_parents ? PyArray_SimpleNew(1, dims, NPY_INT64) : NULL;
        if (!arr || (with_parents && !parents)) {
            Py_XDECREF(arr);
            Py_XDECREF(parents);
            Py_DECREF(result);
            return NULL;
        }
        int64_t *d = PyArray_DATA((PyArrayObject *)arr);
        for (Py_ssize_t k = 0; k < lists[i].count; k++) {
            d[2 * k] = lists[i].items[3 * k + 1];
            d[2 * k + 1] = lists[i].items[3 * k + 2];
            if (parents) ((int64_t *)PyArray_DATA((PyArrayObject *)parents))[k] = lists[i].items[3 * k];
        }
        PyList_SET_ITEM(result, i, parents ? Py_BuildValue("(NN)", parents, arr) : arr);
    }
    return result;
}

/* The fields of every message span in sp[0..n); parents tells find_children
 * from find_fields (one message, no parent column). */
static PyObject *find_in_spans(PyObject *obj, const int64_t *sp, npy_intp n, PyObject *numbers_obj, int parents) {
    PyObject *numbers = PySequence_Fast(numbers_obj, "field numbers must be a sequence");
    if (!numbers) return NULL;
    Py_ssize_t nnum = PySequence_Fast_GET_SIZE(numbers);
    int slot_of[MAX_FIELD + 1];
    SpanList lists[MAX_FIELD + 1];
    memset(lists, 0, sizeof(lists));
    PyObject *result = NULL;
    Py_buffer view;
    int have_view = 0;
    if (!parse_numbers(numbers, slot_of)) goto done;
    if (get_buffer(obj, &view) < 0) goto done;
    have_view = 1;
    for (npy_intp k = 0; k < n; k++) {
        if (sp[2 * k] >= 0 && (sp[2 * k + 1] < 0 || sp[2 * k] + sp[2 * k + 1] > view.len)) {
            PyErr_SetString(PyExc_ValueError, "span outside the buffer");
            goto done;
        }
    }
    Py_ssize_t bad = -1;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp k = 0; k < n && bad == -1; k++)
        if (sp[2 * k] >= 0)
            bad = scan_message((const uint8_t *)view.buf, sp[2 * k], sp[2 * k] + sp[2 * k + 1], slot_of, lists, k);
    Py_END_ALLOW_THREADS
    if (bad == -2) PyErr_NoMemory();
    else if (bad >= 0) malformed(bad);
    else result = span_arrays(lists, nnum, parents);
done:
    for (int i = 0; i <= MAX_FIELD; i++) PyMem_RawFree(lists[i].items);
    if (have_view) PyBuffer_Release(&view);
    Py_DECREF(numbers);
    return result;
}

static PyObject *find_fields(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *numbers_obj;
    Py_ssize_t start, end;
    if (!PyArg_ParseTuple(args, "OnnO", &obj, &start, &end, &numbers_obj)) return NULL;
    if (start < 0 || start > end) {
        PyErr_SetString(PyExc_ValueError, "span outside the buffer");
        return NULL;
    }
    int64_t span[2] = {start, end - start};
    return find_in_spans(obj, span, 1, numbers_obj, 0);
}

/* find_fields over many messages at once; each span found carries the index
 * of the message it was found in. */
static PyObject *find_children(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans_obj, *numbers_obj;
    if (!PyArg_ParseTuple(args, "OOO", &obj, &spans_obj, &numbers_obj)) return NULL;
    PyArrayObject *spans = as_spans(spans_obj);
    if (!spans) return NULL;
    PyObject *result = find_in_spans(obj, PyArray_DATA(spans), PyArray_DIM(spans, 0), numbers_obj, 1);
    Py_DECREF(spans);
    return result;
}

static PyObject *decode_messages(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans_obj, *fields_obj;
    if (!PyArg_ParseTuple(args, "OOO", &obj, &spans_obj, &fields_obj)) return NULL;
    PyArrayObject *spans = as_spans(spans_obj);
    if (!spans) return NULL;
    PyObject *fields = PySequence_Fast(fields_obj, "fields must be a sequence");
    if (!fields) {
        Py_DECREF(spans);
        return NULL;
    }
    Py_ssize_t nfields = PySequence_Fast_GET_SIZE(fields);
    npy_intp n = PyArray_DIM(spans, 0);
    /* column index per field number and its kind */
    int column_of[MAX_FIELD + 1];
    char kind_of[MAX_FIELD + 1];
    for (int i = 0; i <= MAX_FIELD; i++) column_of[i] = -1;
    PyObject *result = PyList_New(nfields);
    void *data[MAX_FIELD + 1];
    Py_buffer view;
    int have_view = 0;
    if (!result) goto fail;
    for (Py_ssize_t i = 0; i < nfields; i++) {
        int number;
        const char *kind;
        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fields, i), "is", &number, &kind)) goto fail;
        if (number < 1 || number > MAX_FIELD || column_of[number] != -1 || !strchr("izdfgsnc", kind[0])) {
            PyErr_Format(PyExc_ValueError, "bad field spec (%d, %s)", number, kind);
            goto fail;
        }
        column_of[number] = (int)i;
        kind_of[number] = kind[0];
        PyObject *arr;
        if (kind[0] == 's') {
            npy_intp dims[2] = {n, 2};
            arr = PyArray_SimpleNew(2, dims, NPY_INT64);
            if (arr) {
                int64_t *d = PyArray_DATA((PyArrayObject *)arr);
                for (npy_intp k = 0; k < n; k++) { d[2 * k] = -1; d[2 * k + 1] = 0; }
            }
        } else {
            npy_intp dims[1] = {n};
            arr = PyArray_ZEROS(1, dims, kind[0] == 'd' || kind[0] == 'g' ? NPY_FLOAT64 : NPY_INT64, 0);
        }
        if (!arr) goto fail;
        PyList_SET_ITEM(result, i, arr);
        data[number] = PyArray_DATA((PyArrayObject *)arr);
    }
    if (get_buffer(obj, &view) < 0) goto fail;
    have_view = 1;
    const uint8_t *base = (const uint8_t *)view.buf;
    const int64_t *sp = PyArray_DATA(spans);
    Py_ssize_t bad_at = -1;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp k = 0; k < n && bad_at < 0; k++) {
        int64_t off = sp[2 * k], len = sp[2 * k + 1];
        if (off < 0) continue; /* absent message: all defaults */
        if (len < 0 || off + len > view.len) { bad_at = off; break; }
        Cursor c = {base + off, base + off + len};
        while (c.p < c.end) {
            uint64_t tag, v;
            if (!read_varint(&c, &tag)) { bad_at = c.p - base; break; }
            uint64_t number = tag >> 3; /* any size in garbage: compare unsigned */
            int wire = (int)(tag & 7);
            int wanted = number >= 1 && number <= MAX_FIELD && column_of[number] >= 0;
            char kind = wanted ? kind_of[number] : 0;
            if (kind && wire == 0 && (kind == 'i' || kind == 'z')) {
                if (!read_varint(&c, &v)) { bad_at = c.p - base; break; }
                int64_t x = kind == 'z' ? (int64_t)((v >> 1) ^ (~(v & 1) + 1)) : (int64_t)v;
                ((int64_t *)data[number])[k] = x;
            } else if (kind && wire == 1 && (kind == 'd' || kind == 'f')) {
                if (c.end - c.p < 8) { bad_at = c.p - base; break; }
                memcpy((char *)data[number] + 8 * k, c.p, 8); /* little-endian hosts */
                c.p += 8;
            } else if (kind == 'n' || (kind == 'c' && wire == 2)) {
                if (!skip_field(&c, wire)) { bad_at = c.p - base; break; }
                ((int64_t *)data[number])[k] += 1;
            } else if (kind == 'g' && wire == 5) {
                if (c.end - c.p < 4) { bad_at = c.p - base; break; }
                float f;
                memcpy(&f, c.p, 4); /* little-endian hosts */
                ((double *)data[number])[k] = f;
                c.p += 4;
            } else if (kind == 's' && wire == 2) {
                if (!read_varint(&c, &v) || v > (uint64_t)(c.end - c.p)) { bad_at = c.p - base; break; }
                ((int64_t *)data[number])[2 * k] = c.p - base;
                ((int64_t *)data[number])[2 * k + 1] = (int64_t)v;
                c.p += v;
            } else if (!skip_field(&c, wire)) {
                bad_at = c.p - base;
                break;
            }
        }
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    have_view = 0;
    if (bad_at >= 0) {
        malformed(bad_at);
        goto fail;
    }
    Py_DECREF(fields);
    Py_DECREF(spans);
    return result;
fail:
    if (have_view) PyBuffer_Release(&view);
    Py_XDECREF(result);
    Py_DECREF(fields);
    Py_DECREF(spans);
    return NULL;
}

static PyObject *intern_strings(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans_obj;
    if (!PyArg_ParseTuple(args, "OO", &obj, &spans_obj)) return NULL;
    Py_buffer view;
    PyArrayObject *spans = with_buffer(as_spans(spans_obj), obj, &view);
    if (!spans) return NULL;
    npy_intp dims[1] = {PyArray_DIM(spans, 0)};
    const int64_t *sp = PyArray_DATA(spans);
    PyObject *ids = PyArray_SimpleNew(1, dims, NPY_INT32), *result = NULL;
    Interner t = {.base = view.buf, .base_len = (size_t)view.len};
    int rc = -1;
    if (ids) {
        Py_BEGIN_ALLOW_THREADS /* id 0 is "", also for absent spans; the strings stay in the buffer */
        if (intern(&t, t.base, 0, 0) == 0)
            rc = intern_spans(&t, sp, sp + 1, 2, 0, (size_t)dims[0], 0, PyArray_DATA((PyArrayObject *)ids), NULL);
        Py_END_ALLOW_THREADS
        if (rc == -1) PyErr_NoMemory();
        if (rc == -2) PyErr_SetString(PyExc_ValueError, "string span outside the buffer");
    }
    if (rc == 0) result = Py_BuildValue("(ON)", ids, intern_list(&t, "replace"));
    intern_free(&t);
    Py_XDECREF(ids);
    PyBuffer_Release(&view);
    Py_DECREF(spans);
    return result;
}

/* Copies the spans into one bytes object; returns (blob, int64 offsets[n+1]). */
static PyObject *gather_spans(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans_obj;
    if (!PyArg_ParseTuple(args, "OO", &obj, &spans_obj)) return NULL;
    Py_buffer view;
    PyArrayObject *spans = with_buffer(as_spans(spans_obj), obj, &view);
    if (!spans) return NULL;
    npy_intp n = PyArray_DIM(spans, 0);
    const int64_t *sp = PyArray_DATA(spans);
    npy_intp dims[1] = {n + 1};
    PyObject *offsets = PyArray_SimpleNew(1, dims, NPY_INT64), *blob = NULL;
    if (!offsets) goto done;
    int64_t *o = PyArray_DATA((PyArrayObject *)offsets), total = 0;
    o[0] = 0;
    for (npy_intp k = 0; k < n; k++) {
        int64_t off = sp[2 * k], len = sp[2 * k + 1];
        if (off < 0 || len < 0 || off + len > view.len) len = 0;
        total += len;
        o[k + 1] = total;
    }
    blob = PyBytes_FromStringAndSize(NULL, total);
    if (!blob) goto done;
    char *dst = PyBytes_AS_STRING(blob);
    for (npy_intp k = 0; k < n; k++)
        memcpy(dst + o[k], (const char *)view.buf + (o[k + 1] > o[k] ? sp[2 * k] : 0), (size_t)(o[k + 1] - o[k]));
done:
    PyBuffer_Release(&view);
    Py_DECREF(spans);
    if (!blob) {
        Py_XDECREF(offsets);
        return NULL;
    }
    return Py_BuildValue("(NN)", blob, offsets);
}

/* The length-delimited occurrences of field `number` at the top level of
 * the message c walks: calls visit(child, ctx) on each; returns -1 when
 * well-formed, else the offset of the malformed byte (-2: visit failed). */
static Py_ssize_t each_child(Cursor c, const uint8_t *base, uint64_t number,
                             int (*visit)(Cursor child, void *ctx), void *ctx) {
    while (c.p < c.end) {
        uint64_t tag, len;
        if (!read_varint(&c, &tag)) return c.p - base;
        if ((tag >> 3) == number && (tag & 7) == 2) {
            if (!read_varint(&c, &len) || len > (uint64_t)(c.end - c.p)) return c.p - base;
            if (!visit((Cursor){c.p, c.p + len}, ctx)) return -2;
            c.p += len;
        } else if (!skip_field(&c, (int)(tag & 7))) {
            return c.p - base;
        }
    }
    return -1;
}

/* One XStat (xplane.proto): metadata_id = 1, then one of double_value = 2,
 * uint64_value = 3, int64_value = 4, str_value = 5, bytes_value = 6,
 * ref_value = 7. case is the value's field number (0: none); value the
 * number, the double's bits, the ref id or the string's offset in base;
 * length the string's length. */
typedef struct {
    int64_t metadata_id, value, length;
    int value_case;
} XStat;

/* Reads the XStat at st; returns -1, else the offset of the malformed byte. */
static Py_ssize_t read_xstat(Cursor st, const uint8_t *base, XStat *out) {
    *out = (XStat){0, 0, 0, 0};
    while (st.p < st.end) {
        uint64_t t, v;
        if (!read_varint(&st, &t)) return st.p - base;
        int number = (t >> 3) <= 7 ? (int)(t >> 3) : 0, wire = (int)(t & 7);
        if (wire == 0 && (number == 1 || number == 3 || number == 4 || number == 7)) {
            if (!read_varint(&st, &v)) return st.p - base;
            if (number == 1) out->metadata_id = (int64_t)v;
            else { out->value_case = number; out->value = (int64_t)v; out->length = 0; }
        } else if (wire == 1 && number == 2) {
            if (st.end - st.p < 8) return st.p - base;
            memcpy(&out->value, st.p, 8);
            st.p += 8;
            out->value_case = 2;
            out->length = 0;
        } else if (wire == 2 && (number == 5 || number == 6)) {
            if (!read_varint(&st, &v) || v > (uint64_t)(st.end - st.p)) return st.p - base;
            out->value_case = number;
            out->value = st.p - base;
            out->length = (int64_t)v;
            st.p += v;
        } else if (!skip_field(&st, wire)) {
            return st.p - base;
        }
    }
    return -1;
}

/* The metadata id of an XStat that starts with it (field 1, a one-byte varint: producers write it first), else
 * -1. */
static inline int64_t xstat_first_id(Cursor st) {
    return st.end - st.p >= 2 && st.p[0] == 0x08 && st.p[1] < 0x80 ? st.p[1] : -1;
}

/* Whether that id is the stat's: one field that is not a metadata_id follows, ending the stat, as producers
 * write it. A stat of an id not asked for is passed over on this alone, its value unread, as the stats of
 * events whose stats are not asked for are; any other layout is read whole, since a later metadata_id in the
 * same stat wins (protobuf's rule: XProf's and stat_entries'). */
static inline int xstat_id_alone(Cursor st) {
    const uint8_t *p = st.p + 2, *end = st.end;
    if (end - p < 2) return 0;
    switch (p[0]) { /* the tags of the values, the usual layouts first */
    case 0x18: case 0x20: case 0x38: /* uint64, int64, ref: a varint ending the stat */
        if (end - p > 11) return 0;
        for (p++; p < end - 1; p++)
            if (!(*p & 0x80)) return 0;
        return !(*p & 0x80);
    case 0x11: return end - p == 9; /* double */
    case 0x2a: case 0x32: /* str, bytes: a length ending the stat */
        if (p[1] < 0x80) return end - p == 2 + p[1];
        break;
    }
    uint64_t tag;
    st.p = p;
    return read_varint(&st, &tag) && (tag >> 3) != 1 && skip_field(&st, (int)(tag & 7)) && st.p == st.end;
}

/* A growable column of stat entries (stat_entries). */
typedef struct {
    int64_t *at, *value, *length;
    int32_t *which, *text; /* text: decode_children's string id of a str_value (-1: none) */
    int8_t *value_case;
    npy_intp count, cap;
} Entries;

static int entries_grow(Entries *e) {
    npy_intp cap = e->cap ? 2 * e->cap : 1024;
    int64_t *at = PyMem_RawRealloc(e->at, sizeof(int64_t) * cap);
    if (at) e->at = at;
    int64_t *value = PyMem_RawRealloc(e->value, sizeof(int64_t) * cap);
    if (value) e->value = value;
    int64_t *length = PyMem_RawRealloc(e->length, sizeof(int64_t) * cap);
    if (length) e->length = length;
    int32_t *which = PyMem_RawRealloc(e->which, sizeof(int32_t) * cap);
    if (which) e->which = which;
    int32_t *text = PyMem_RawRealloc(e->text, sizeof(int32_t) * cap);
    if (text) e->text = text;
    int8_t *value_case = PyMem_RawRealloc(e->value_case, (size_t)cap);
    if (value_case) e->value_case = value_case;
    if (!at || !value || !length || !which || !text || !value_case) return 0;
    e->cap = cap;
    return 1;
}

static void entries_free(Entries *e) {
    PyMem_RawFree(e->at);
    PyMem_RawFree(e->value);
    PyMem_RawFree(e->length);
    PyMem_RawFree(e->which);
    PyMem_RawFree(e->text);
    PyMem_RawFree(e->value_case);
}

/* Entry `at` (a message, from `first` on this message's entries) of stat `which`: a new one, or the value of
 * a stat of the same id earlier in the message replaced (the last wins). Its slot, -1 when out of memory. */
static npy_intp entries_put(Entries *e, npy_intp first, npy_intp at, int32_t which, const XStat *x) {
    npy_intp slot = first;
    while (slot < e->count && e->which[slot] != which) slot++;
    if (slot == e->count) {
        if (e->count == e->cap && !entries_grow(e)) return -1;
        e->count++;
    }
    e->at[slot] = at;
    e->which[slot] = which;
    e->text[slot] = -1;
    e->value_case[slot] = (int8_t)x->value_case;
    e->value[slot] = x->value;
    e->length[slot] = x->length;
    return slot;
}

/* A numpy array copied from raw memory. */
static PyObject *array_of(const void *data, npy_intp n, int type) {
    npy_intp dims[1] = {n};
    PyObject *a = PyArray_SimpleNew(1, dims, type);
    if (a && n) memcpy(PyArray_DATA((PyArrayObject *)a), data, (size_t)n * PyArray_ITEMSIZE((PyArrayObject *)a));
    return a;
}

/* decode_children's output: where the next child goes and what to read. */
typedef struct {
    const uint8_t *base;
    npy_intp next, room;
    int64_t *offsets;
    int32_t *lengths;
    int column_of[MAX_FIELD + 1];
    void *columns[MAX_FIELD + 1];
    int kind[MAX_FIELD + 1]; /* the column's: KIND_INT64, KIND_INT32 (checked) or KIND_NONZERO (bool) */
    int wanted[MAX_FIELD + 1], num_wanted; /* the field numbers read */
    Py_ssize_t bad_at;
    int overflow; /* a value did not fit its int32 column */
    int stat_field;             /* > 0: the field of the children's XStats, those of ids `want` kept */
    const int64_t *want;
    npy_intp num_want;
    int32_t *want_at;           /* where ids are small: each id's index in want (-1: not wanted), else NULL */
    int64_t want_ids;           /* the ids want_at covers: 0 .. want_ids - 1 */
    Entries stats;              /* at: the child's index in this call */
    Interner strings;           /* the str_values of those stats, read while their bytes are at hand */
    int out_of_memory;
} ChildSink;

enum { KIND_INT64, KIND_INT32, KIND_NONZERO };

/* Column f's row i = v, as its kind stores it; 0 when an int32 column cannot hold v. */
static inline int put_value(ChildSink *k, int f, npy_intp i, uint64_t v) {
    switch (k->kind[f]) {
    case KIND_INT32:
        if ((int64_t)v < INT32_MIN || (int64_t)v > INT32_MAX) return 0;
        ((int32_t *)k->columns[f])[i] = (int32_t)(int64_t)v;
        return 1;
    case KIND_NONZERO:
        ((npy_bool *)k->columns[f])[i] = v != 0;
        return 1;
    default:
        ((int64_t *)k->columns[f])[i] = (int64_t)v;
        return 1;
    }
}

/* One child: its span, and its wanted varint fields (the last occurrence
 * wins; absent: 0; another wire type for a wanted number: skipped). */
static int decode_one(Cursor c, void *ctx) {
    ChildSink *k = ctx;
    if (k->next >= k->room) return 0;
    npy_intp i = k->next++;
    if (c.end - c.p > INT32_MAX) { k->bad_at = c.p - k->base; return 0; }
    k->offsets[i] = c.p - k->base;
    k->lengths[i] = (int32_t)(c.end - c.p);
    for (int f = 0; f < k->num_wanted; f++) put_value(k, k->wanted[f], i, 0);
    npy_intp first_stat = k->stats.count; /* this child's stat entries */
    while (c.p < c.end) {
        uint64_t tag, v;
        if (!read_varint(&c, &tag)) { k->bad_at = c.p - k->base; return 0; }
        uint64_t number = tag >> 3;
        int wire = (int)(tag & 7);
        if (wire == 0 && number <= MAX_FIELD && k->column_of[number] >= 0) {
            if (!read_varint(&c, &v)) { k->bad_at = c.p - k->base; return 0; }
            if (!put_value(k, (int)number, i, v)) { k->overflow = 1; return 0; }
        } else if (wire == 2 && k->stat_field > 0 && number == (uint64_t)k->stat_field) {
            XStat x;
            if (!read_varint(&c, &v) || v > (uint64_t)(c.end - c.p)) { k->bad_at = c.p - k->base; return 0; }
            int64_t id = k->want_at ? xstat_first_id((Cursor){c.p, c.p + v}) : -1;
            if (id >= 0 && (id >= k->want_ids || k->want_at[id] < 0) && xstat_id_alone((Cursor){c.p, c.p + v})) {
                c.p += v; /* not asked for */
                continue;
            }
            Py_ssize_t bad = read_xstat((Cursor){c.p, c.p + v}, k->base, &x);
            if (bad >= 0) { k->bad_at = bad; return 0; }
            c.p += v;
            npy_intp j = 0;
            if (k->want_at) {
                j = x.metadata_id >= 0 && x.metadata_id < k->want_ids ? k->want_at[x.metadata_id] : -1;
            } else {
                while (j < k->num_want && k->want[j] != x.metadata_id) j++;
                if (j == k->num_want) j = -1;
            }
            if (j < 0) continue;
            npy_intp slot = entries_put(&k->stats, first_stat, i, (int32_t)j, &x);
            if (slot < 0 ||
                (x.value_case == 5 && (k->stats.text[slot] = intern(&k->strings, k->base + x.value,
                                                                     (size_t)x.length, 0)) < 0)) {
                k->out_of_memory = 1;
                return 0;
            }
        } else if (!skip_field(&c, wire)) {
            k->bad_at = c.p - k->base;
            return 0;
        }
    }
    return 1;
}

/* out[j] as a writable 1-d C-contiguous array of the type with room for n. */
static void *out_column(PyObject *out, Py_ssize_t j, int type, npy_intp n) {
    PyObject *a = PySequence_Fast_GET_ITEM(out, j);
    if (!PyArray_Check(a) || PyArray_NDIM((PyArrayObject *)a) != 1 || PyArray_TYPE((PyArrayObject *)a) != type ||
        !PyArray_ISCARRAY((PyArrayObject *)a) || PyArray_DIM((PyArrayObject *)a, 0) < n) {
        PyErr_Format(PyExc_ValueError, "output %zd: not a writable contiguous column of the type and length", j);
        return NULL;
    }
    return PyArray_DATA((PyArrayObject *)a);
}

/* decode_children(buf, spans, number, fields, count, out) -> None: the
 * children at length-delimited field `number` of the messages (count of
 * them in all, as decode_messages' kind 'c' counts), in order, into preallocated
 * columns: out = [int64 offsets, int32 lengths, one column per varint
 * field number in fields: int64, int32 (OverflowError when a value does
 * not fit) or bool (whether the value is not 0)]. find_children and
 * decode_messages in one pass, writing where the caller's columns are (no
 * parts to join, no wider columns than needed). With stat_field and ids:
 * also stat_entries' of the children's XStats at stat_field (at: the
 * child's index among those of this call), returned instead of None, and
 * their str_values interned as intern_strings does: + (int32 text: the
 * string's id, -1 for other values; list of str). */
static PyObject *decode_children(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans_obj, *fields_obj, *out_obj, *ids_obj = Py_None;
    int number, stat_field = 0;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "OOiOnO|iO", &obj, &spans_obj, &number, &fields_obj, &count, &out_obj, &stat_field,
                          &ids_obj))
        return NULL;
    PyObject *fields = PySequence_Fast(fields_obj, "fields must be a sequence");
    PyObject *out = fields ? PySequence_Fast(out_obj, "out must be a sequence") : NULL;
    PyArrayObject *ids = out && stat_field > 0 ? as_column(ids_obj, NPY_INT64) : NULL;
    Py_buffer view;
    PyArrayObject *spans = out && (ids || stat_field <= 0) ? with_buffer(as_spans(spans_obj), obj, &view) : NULL;
    PyObject *result = NULL;
    if (!spans) goto done;
    ChildSink k = {.base = view.buf, .room = count, .bad_at = -1, .stat_field = stat_field};
    k.strings.base = view.buf, k.strings.base_len = (size_t)view.len;
    if (ids && intern(&k.strings, k.strings.base, 0, 0) != 0) { /* id 0: "", as intern_strings' */
        PyErr_NoMemory();
        goto release;
    }
    if (ids) {
        k.want = PyArray_DATA(ids), k.num_want = PyArray_DIM(ids, 0);
        int64_t top = -1; /* where every id is small, a table of them spares a scan of the ids per stat */
        int small = 1;
        for (npy_intp j = 0; j < k.num_want; j++) {
            if (k.want[j] < 0 || k.want[j] >= (1 << 16)) small = 0;
            else if (k.want[j] > top) top = k.want[j];
        }
        if (small && (k.want_at = PyMem_RawMalloc(sizeof(int32_t) * (size_t)(top + 2)))) {
            k.want_ids = top + 1;
            for (int64_t v = 0; v <= top; v++) k.want_at[v] = -1;
            for (npy_intp j = k.num_want - 1; j >= 0; j--) k.want_at[k.want[j]] = (int32_t)j; /* the first wins */
        }
    }
    for (int f = 0; f <= MAX_FIELD; f++) k.column_of[f] = -1;
    Py_ssize_t nf = PySequence_Fast_GET_SIZE(fields);
    if (count < 0 || PySequence_Fast_GET_SIZE(out) != nf + 2) {
        PyErr_SetString(PyExc_ValueError, "out needs offsets, lengths and a column per field");
        goto release;
    }
    k.offsets = out_column(out, 0, NPY_INT64, count);
    k.lengths = k.offsets ? out_column(out, 1, NPY_INT32, count) : NULL;
    if (!k.lengths) goto release;
    for (Py_ssize_t j = 0; j < nf; j++) {
        long f = PyLong_AsLong(PySequence_Fast_GET_ITEM(fields, j));
        if (f == -1 && PyErr_Occurred()) goto release;
        if (f < 1 || f > MAX_FIELD || k.column_of[f] >= 0) {
            PyErr_Format(PyExc_ValueError, "bad field number %ld", f);
            goto release;
        }
        k.column_of[f] = (int)j;
        k.wanted[k.num_wanted++] = (int)f;
        PyObject *col = PySequence_Fast_GET_ITEM(out, j + 2);
        int type = PyArray_Check(col) ? PyArray_TYPE((PyArrayObject *)col) : NPY_INT64;
        k.kind[f] = type == NPY_INT32 ? KIND_INT32 : type == NPY_BOOL ? KIND_NONZERO : KIND_INT64;
        if (!(k.columns[f] = out_column(out, j + 2, type == NPY_INT32 || type == NPY_BOOL ? type : NPY_INT64, count)))
            goto release;
    }
    const int64_t *sp = PyArray_DATA(spans);
    npy_intp n = PyArray_DIM(spans, 0);
    Py_ssize_t bad_at = -1;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp r = 0; r < n && bad_at == -1; r++) {
        if (sp[2 * r] < 0) continue;
        if (sp[2 * r + 1] < 0 || sp[2 * r] + sp[2 * r + 1] > view.len) { bad_at = sp[2 * r]; break; }
        Cursor c = {k.base + sp[2 * r], k.base + sp[2 * r] + sp[2 * r + 1]};
        bad_at = each_child(c, k.base, (uint64_t)number, decode_one, &k);
    }
    Py_END_ALLOW_THREADS
    if (bad_at == -2 && k.bad_at >= 0) bad_at = k.bad_at;
    if (bad_at == -2 && k.out_of_memory) PyErr_NoMemory();
    else if (bad_at == -2 && k.overflow) PyErr_SetString(PyExc_OverflowError, "a value does not fit its int32 column");
    else if (bad_at >= 0) malformed(bad_at);
    else if (bad_at == -2 || k.next != count) PyErr_SetString(PyExc_ValueError, "count differs from the children found");
    else if (stat_field > 0) {
        Entries *e = &k.stats;
        result = Py_BuildValue("(NNNNNNN)", array_of(e->at, e->count, NPY_INT64),
                               array_of(e->which, e->count, NPY_INT32), array_of(e->value_case, e->count, NPY_INT8),
                               array_of(e->value, e->count, NPY_INT64), array_of(e->length, e->count, NPY_INT64),
                               array_of(e->text, e->count, NPY_INT32), intern_list(&k.strings, "replace"));
    } else {
        Py_INCREF(Py_None);
        result = Py_None;
    }
release:
    PyBuffer_Release(&view);
    entries_free(&k.stats);
    intern_free(&k.strings);
    PyMem_RawFree(k.want_at);
done:
    Py_XDECREF(ids);
    Py_XDECREF(spans);
    Py_XDECREF(out);
    Py_XDECREF(fields);
    return result;
}

/* The next XStat at field `field` of the message c walks: 1 when one was
 * read into *out, 0 at the message's end, -1 when malformed (*bad_at set). */
static int next_xstat(Cursor *c, const uint8_t *base, int field, XStat *out, Py_ssize_t *bad_at) {
    while (c->p < c->end) {
        uint64_t tag, n_stat;
        if (!read_varint(c, &tag)) { *bad_at = c->p - base; return -1; }
        if ((tag >> 3) != (uint64_t)field || (tag & 7) != 2) {
            if (!skip_field(c, (int)(tag & 7))) { *bad_at = c->p - base; return -1; }
            continue;
        }
        if (!read_varint(c, &n_stat) || n_stat > (uint64_t)(c->end - c->p)) { *bad_at = c->p - base; return -1; }
        Cursor st = {c->p, c->p + n_stat};
        c->p += n_stat;
        if ((*bad_at = read_xstat(st, base, out)) >= 0) return -1;
        return 1;
    }
    return 0;
}

/* XStat values of chosen stat metadata ids, one column per id, for the
 * messages at `spans` whose repeated XStat sits at field `field`.
 * Returns (case int8[n, k]: the value's field number, 0 when absent;
 * value int64[n, k]: the number, the double's bits, the ref id or the
 * string's offset; length int64[n, k]: the string's length). */
static PyObject *stat_columns(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *spans_obj, *ids_obj;
    int field;
    if (!PyArg_ParseTuple(args, "OOiO", &obj, &spans_obj, &field, &ids_obj)) return NULL;
    PyArrayObject *spans = as_spans(spans_obj);
    PyArrayObject *ids = as_column(ids_obj, NPY_INT64);
    PyObject *cases = NULL, *values = NULL, *lengths = NULL, *out = NULL;
    Py_buffer view;
    int have_view = 0;
    if (!spans || !ids) goto done;
    npy_intp n = PyArray_DIM(spans, 0), k = PyArray_DIM(ids, 0);
    npy_intp dims[2] = {n, k};
    cases = PyArray_ZEROS(2, dims, NPY_INT8, 0);
    values = PyArray_ZEROS(2, dims, NPY_INT64, 0);
    lengths = PyArray_ZEROS(2, dims, NPY_INT64, 0);
    if (!cases || !values || !lengths) goto done;
    if (get_buffer(obj, &view) < 0) goto done;
    have_view = 1;
    const uint8_t *base = view.buf;
    const int64_t *sp = PyArray_DATA(spans), *want = PyArray_DATA(ids);
    int8_t *cs = PyArray_DATA((PyArrayObject *)cases);
    int64_t *vs = PyArray_DATA((PyArrayObject *)values), *ls = PyArray_DATA((PyArrayObject *)lengths);
    Py_ssize_t bad_at = -1;
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp r = 0; r < n && bad_at < 0; r++) {
        int64_t off = sp[2 * r], len = sp[2 * r + 1];
        if (off < 0) continue;
        if (len < 0 || off + len > view.len) { bad_at = off; break; }
        Cursor c = {base + off, base + off + len};
        XStat x;
        while (next_xstat(&c, base, field, &x, &bad_at) > 0) {
            for (npy_intp j = 0; j < k; j++) {
                if (want[j] == x.metadata_id) {
                    cs[r * k + j] = (int8_t)x.value_case;
                    vs[r * k + j] = x.value;
                    ls[r * k + j] = x.length;
                    break;
                }
            }
        }
    }
    Py_END_ALLOW_THREADS
    if (bad_at >= 0) malformed(bad_at);
    else out = Py_BuildValue("(OOO)", cases, values, lengths);
done:
    if (have_view) PyBuffer_Release(&view);
    Py_XDECREF(cases);
    Py_XDECREF(values);
    Py_XDECREF(lengths);
    Py_XDECREF(spans);
    Py_XDECREF(ids);
    return out;
}

/* stat_entries(buf, offsets, lengths, rows, field, ids): stat_columns'
 * values as entries, only where present: the messages are offsets[rows[i]],
 * lengths[rows[i]] (i the entry's `at`). Returns (at int64[m], which
 * int32[m]: index into ids, case int8[m], value int64[m], length int64[m]),
 * by message, each message's in the order its stats first appear; as in
 * stat_columns a later stat of the same id overwrites the earlier. For the
 * few events of millions that carry a stat, without n x k columns. */
static PyObject *stat_entries(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *off_obj, *len_obj, *rows_obj, *ids_obj;
    int field;
    if (!PyArg_ParseTuple(args, "OOOOiO", &obj, &off_obj, &len_obj, &rows_obj, &field, &ids_obj)) return NULL;
    PyArrayObject *offsets = as_column(off_obj, NPY_INT64), *lens = as_column(len_obj, NPY_INT32);
    PyArrayObject *rows = as_column(rows_obj, NPY_INT64), *ids = as_column(ids_obj, NPY_INT64);
    PyObject *out = NULL;
    Entries e = {0};
    Py_buffer view;
    int have_view = 0;
    if (!offsets || !lens || !rows || !ids) goto done;
    npy_intp n = PyArray_DIM(rows, 0), k = PyArray_DIM(ids, 0), total = PyArray_DIM(offsets, 0);
    if (PyArray_DIM(lens, 0) != total) {
        PyErr_SetString(PyExc_ValueError, "offsets and lengths differ in length");
        goto done;
    }
    if (get_buffer(obj, &view) < 0) goto done;
    have_view = 1;
    const uint8_t *base = view.buf;
    const int64_t *off = PyArray_DATA(offsets), *rw = PyArray_DATA(rows), *want = PyArray_DATA(ids);
    const int32_t *ln = PyArray_DATA(lens);
    Py_ssize_t bad_at = -1;
    int failed = 0; /* 1: out of memory, 2: a row outside the messages */
    Py_BEGIN_ALLOW_THREADS
    for (npy_intp i = 0; i < n && bad_at < 0 && !failed; i++) {
        if (rw[i] < 0 || rw[i] >= total) { failed = 2; break; }
        int64_t o = off[rw[i]], len = ln[rw[i]];
        if (o < 0) continue;
        if (len < 0 || o + len > view.len) { bad_at = o; break; }
        Cursor c = {base + o, base + o + len};
        npy_intp first = e.count; /* this message's entries */
        XStat x;
        while (next_xstat(&c, base, field, &x, &bad_at) > 0) {
            npy_intp j = 0;
            while (j < k && want[j] != x.metadata_id) j++;
            if (j == k) continue;
            if (entries_put(&e, first, i, (int32_t)j, &x) < 0) { failed = 1; break; }
        }
    }
    Py_END_ALLOW_THREADS
    if (failed == 1) PyErr_NoMemory();
    else if (failed == 2) PyErr_SetString(PyExc_ValueError, "row outside the messages");
    else if (bad_at >= 0) malformed(bad_at);
    else
        out = Py_BuildValue("(NNNNN)", array_of(e.at, e.count, NPY_INT64), array_of(e.which, e.count, NPY_INT32),
                            array_of(e.value_case, e.count, NPY_INT8), array_of(e.value, e.count, NPY_INT64),
                            array_of(e.length, e.count, NPY_INT64));
done:
    entries_free(&e);
    if (have_view) PyBuffer_Release(&view);
    Py_XDECREF(offsets);
    Py_XDECREF(lens);
    Py_XDECREF(rows);
    Py_XDECREF(ids);
    return out;
}

static PyMethodDef methods[] = {
    {"find_fields", find_fields, METH_VARARGS,
     "find_fields(buf, start, end, numbers) -> [int64[k, 2] spans per field number]"},
    {"decode_messages", decode_messages, METH_VARARGS,
     "decode_messages(buf, spans, [(number, kind), ...]) -> list of column arrays"},
    {"find_children", find_children, METH_VARARGS,
     "find_children(buf, spans, numbers) -> [(int64[k] parent index, int64[k, 2] spans) per field number]"},
    {"gather_spans", gather_spans, METH_VARARGS, "gather_spans(buf, spans) -> (bytes, int64 offsets[n + 1])"},
    {"intern_strings", intern_strings, METH_VARARGS,
     "intern_strings(buf, spans) -> (int32 ids, list of unique str, id 0 = '')"},
    {"stat_columns", stat_columns, METH_VARARGS,
     "stat_columns(buf, spans, field, ids) -> (int8 value case[n, k], int64 value[n, k], int64 length[n, k])"},
    {"decode_children", decode_children, METH_VARARGS,
     "decode_children(buf, spans, number, fields, count, out, stat_field=0, ids=None) -> None (or stat entries): "
     "children's spans and varints into out"},
    {"stat_entries", stat_entries, METH_VARARGS,
     "stat_entries(buf, offsets, lengths, rows, field, ids) -> (at, which, case, value, length) where present"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_protowire", .m_doc = "Column decoding of protobuf wire data into numpy arrays.", .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__protowire(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
