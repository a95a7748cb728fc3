/* The value encodings of Parquet data pages, for models/sql/parquet.py, which
 * lays out the file (pages, Thrift metadata). Each function encodes one data
 * page of an OPTIONAL column without the GIL, so a table's columns encode on
 * several threads:
 *   the definition levels (bit width 1, 4-byte length first: data page v1),
 *   then the non-null values: DELTA_BINARY_PACKED integers, PLAIN doubles,
 *   PLAIN booleans (bit-packed), or dictionary indices (bit width byte, RLE / bit-packing hybrid).
 * Nulls come as an Arrow validity bitmap (LSB first) and its bit offset, or
 * None for none. Encodings: parquet-format's Encodings.md. */

#include "_cbuffers.h"
#include "intern.h"
#include "protowire.h"

#define MINIBLOCK 32
#define MINIBLOCKS 4
#define BLOCK (MINIBLOCK * MINIBLOCKS)

static inline uint64_t zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline int bits_for(uint64_t v) { return v ? 64 - pt_clz64(v) : 0; }

/* count values (a multiple of 8) of w bits each, LSB first: count * w / 8 bytes. */
static inline uint8_t *pack(uint8_t *w, const uint64_t *v, int count, int width) {
    if (width == 0) return w;
    uint64_t acc = 0;
    int bits = 0;
    for (int i = 0; i < count; i++) {
        uint64_t x = v[i];
        acc |= x << bits;
        int filled = bits + width;
        if (filled >= 64) {
            memcpy(w, &acc, 8);
            w += 8;
            filled -= 64;
            acc = filled ? x >> (width - filled) : 0;
        }
        bits = filled;
    }
    memcpy(w, &acc, (size_t)(bits / 8));
    return w + bits / 8;
}

static inline int is_valid(const uint8_t *bitmap, int64_t bit) { return (bitmap[bit >> 3] >> (bit & 7)) & 1; }

/* The definition levels of n rows: one run when all rows agree, else one
 * bit-packed run of the bitmap. Returns the end; *non_null gets the count. */
static uint8_t *put_levels(uint8_t *w, Py_ssize_t n, const uint8_t *bitmap, int64_t offset, Py_ssize_t *non_null) {
    uint8_t *start = w;
    w += 4;
    Py_ssize_t valid = n, bytes = (n + 7) / 8;
    int aligned = bitmap && offset % 8 == 0;
    if (aligned) {
        bitmap += offset / 8;
        valid = 0;
        for (Py_ssize_t i = 0; i < n / 8; i++) valid += pt_popcount64(bitmap[i]);
        for (Py_ssize_t i = n / 8 * 8; i < n; i++) valid += is_valid(bitmap, i);
    } else if (bitmap) {
        valid = 0;
        for (Py_ssize_t i = 0; i < n; i++) valid += is_valid(bitmap, offset + i);
    }
    if (valid == n || valid == 0) {
        if (n) {
            w = put_varint(w, (uint64_t)n << 1);
            *w++ = valid == n;
        }
    } else {
        w = put_varint(w, ((uint64_t)bytes << 1) | 1);
        if (aligned) {
            memcpy(w, bitmap, (size_t)bytes);
            if (n % 8) w[bytes - 1] &= (uint8_t)((1 << (n % 8)) - 1); /* padding bits zero */
        } else {
            memset(w, 0, (size_t)bytes);
            for (Py_ssize_t i = 0; i < n; i++)
                if (is_valid(bitmap, offset + i)) w[i >> 3] |= (uint8_t)(1 << (i & 7));
        }
        w += bytes;
    }
    uint32_t length = (uint32_t)(w - start - 4);
    memcpy(start, &length, 4);
    *non_null = valid;
    return w;
}

/* The non-null values of a column of itemsize bytes, packed to the front of out. */
static void compact(uint8_t *out, const uint8_t *values, Py_ssize_t n, int itemsize, const uint8_t *bitmap,
                    int64_t offset) {
    for (Py_ssize_t i = 0; i < n; i++)
        if (is_valid(bitmap, offset + i)) {
            memcpy(out, values + i * itemsize, (size_t)itemsize);
            out += itemsize;
        }
}

static inline uint64_t item(const void *values, Py_ssize_t i, int source32) {
    return source32 ? (uint64_t)(int64_t)((const int32_t *)values)[i] : ((const uint64_t *)values)[i];
}

/* DELTA_BINARY_PACKED of n int32 or int64 values (source32) as INT32 or
 * INT64 (width32; wrapping arithmetic at that width), blocks of 128, 4
 * miniblocks of 32; the least and greatest value (signed, or unsigned 64-bit)
 * into range[0], range[1]. */
static uint8_t *put_deltas(uint8_t *w, const void *v, Py_ssize_t n, int source32, int width32, int is_unsigned,
                           int64_t range[2]) {
    uint64_t mask = width32 ? 0xffffffffULL : ~0ULL;
    uint64_t first = item(v, 0, source32) & mask;
    int64_t first_signed = width32 ? (int64_t)(int32_t)first : (int64_t)first;
    w = put_varint(w, BLOCK);
    w = put_varint(w, MINIBLOCKS);
    w = put_varint(w, (uint64_t)n);
    w = put_varint(w, zigzag(first_signed));
    int64_t lo = first_signed, hi = first_signed;
    uint64_t ulo = first, uhi = first;
    uint64_t deltas[BLOCK];
    uint64_t previous = first;
    for (Py_ssize_t at = 1; at < n; at += BLOCK) {
        Py_ssize_t count = n - at < BLOCK ? n - at : BLOCK;
        int64_t least = INT64_MAX;
        for (Py_ssize_t k = 0; k < count; k++) {
            uint64_t x = item(v, at + k, source32) & mask;
            int64_t xs = width32 ? (int64_t)(int32_t)x : (int64_t)x;
            lo = xs < lo ? xs : lo;
            hi = xs > hi ? xs : hi;
            ulo = x < ulo ? x : ulo;
            uhi = x > uhi ? x : uhi;
            uint64_t d = (x - previous) & mask;
            previous = x;
            int64_t signed_d = width32 ? (int64_t)(int32_t)d : (int64_t)d;
            deltas[k] = (uint64_t)signed_d;
            least = signed_d < least ? signed_d : least;
        }
        for (Py_ssize_t k = count; k < BLOCK; k++) deltas[k] = (uint64_t)least; /* padding: packs as zeros */
        w = put_varint(w, zigzag(least));
        uint8_t *widths = w;
        w += MINIBLOCKS;
        for (int m = 0; m < MINIBLOCKS; m++) {
            if (m * MINIBLOCK >= count) { /* unneeded miniblocks of the last block: no body */
                widths[m] = 0;
                continue;
            }
            uint64_t *mb = deltas + m * MINIBLOCK, top = 0;
            for (int k = 0; k < MINIBLOCK; k++) {
                mb[k] = (mb[k] - (uint64_t)least) & mask;
                top |= mb[k];
            }
            widths[m] = (uint8_t)bits_for(top);
            w = pack(w, mb, MINIBLOCK, widths[m]);
        }
    }
    range[0] = is_unsigned ? (int64_t)ulo : lo;
    range[1] = is_unsigned ? (int64_t)uhi : hi;
    return w;
}

/* RLE / bit-packing hybrid of n values below 2^width: runs of 8 or more
 * equal values as RLE runs, everything between as bit-packed groups of 8
 * (the last group padded with zeros). scratch holds the pending groups. */
static uint8_t *put_hybrid(uint8_t *w, const uint32_t *v, Py_ssize_t n, int width, uint64_t *scratch) {
    int value_bytes = (width + 7) / 8;
    Py_ssize_t pending = 0; /* values in scratch, a multiple of 8 */
    Py_ssize_t i = 0;
    while (i < n) {
        Py_ssize_t run = 1;
        while (i + run < n && v[i + run] == v[i]) run++;
        if (run >= 8) {
            if (pending) {
                w = put_varint(w, ((uint64_t)(pending / 8) << 1) | 1);
                w = pack(w, scratch, (int)pending, width);
                pending = 0;
            }
            w = put_varint(w, (uint64_t)run << 1);
            uint32_t value = v[i];
            memcpy(w, &value, (size_t)value_bytes);
            w += value_bytes;
            i += run;
            continue;
        }
        for (int k = 0; k < 8; k++) scratch[pending + k] = i + k < n ? v[i + k] : 0;
        pending += 8;
        i += 8;
        if (pending == 1 << 16) { /* bounded scratch; a run header per 64K values costs nothing */
            w = put_varint(w, ((uint64_t)(pending / 8) << 1) | 1);
            w = pack(w, scratch, (int)pending, width);
            pending = 0;
        }
    }
    if (pending) {
        w = put_varint(w, ((uint64_t)(pending / 8) << 1) | 1);
        w = pack(w, scratch, (int)pending, width);
    }
    return w;
}

/* The arguments every encoder takes: a column, and its nulls. */
typedef struct {
    PyArrayObject *values;
    Py_buffer bitmap;
    int has_bitmap;
    int64_t offset;
    Py_ssize_t n;
} Column;

static int open_column(Column *c, PyObject *values, int type, PyObject *bitmap, long long offset) {
    memset(c, 0, sizeof(*c));
    c->values = as_column(values, type);
    if (!c->values) return 0;
    c->n = PyArray_DIM(c->values, 0);
    if (bitmap != Py_None) {
        if (get_buffer(bitmap, &c->bitmap) < 0) {
            Py_CLEAR(c->values);
            return 0;
        }
        c->has_bitmap = 1;
        c->offset = offset;
        if (offset < 0 || (c->offset + c->n + 7) / 8 > c->bitmap.len) {
            PyErr_SetString(PyExc_ValueError, "the validity bitmap is shorter than the column");
            PyBuffer_Release(&c->bitmap);
            Py_CLEAR(c->values);
            return 0;
        }
    }
    return 1;
}

static void close_column(Column *c) {
    if (c->has_bitmap) PyBuffer_Release(&c->bitmap);
    Py_XDECREF(c->values);
}

static PyObject *new_page(Py_ssize_t capacity, uint8_t **w) {
    PyObject *page = PyBytes_FromStringAndSize(NULL, capacity);
    if (page) *w = (uint8_t *)PyBytes_AS_STRING(page);
    return page;
}

static PyObject *end_page(PyObject *page, uint8_t *end) {
    if (_PyBytes_Resize(&page, end - (uint8_t *)PyBytes_AS_STRING(page)) < 0) return NULL;
    return page;
}

/* Room for the levels of n rows. */
#define LEVELS_ROOM(n) (16 + (n) / 8)

/* The column of a PLAIN encoder's (values, bitmap, offset) args, read as `type`, and a
   page with room for its levels and `bits` bits a row; NULL (column closed) on error. */
static PyObject *open_plain(PyObject *args, int type, Py_ssize_t bits, Column *c, uint8_t **w) {
    PyObject *values, *bitmap;
    long long offset;
    if (!PyArg_ParseTuple(args, "OOL", &values, &bitmap, &offset)) return NULL;
    if (!open_column(c, values, type, bitmap, offset)) return NULL;
    PyObject *page = new_page(LEVELS_ROOM(c->n) + (c->n * bits + 7) / 8, w);
    if (!page) close_column(c);
    return page;
}

static PyObject *encode_ints(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *values, *bitmap;
    long long offset;
    int width32, is_unsigned;
    if (!PyArg_ParseTuple(args, "OOLpp", &values, &bitmap, &offset, &width32, &is_unsigned)) return NULL;
    /* int32 columns are read as they are, also for INT64 (ids of fewer than 2^31 events). */
    int source32 = width32 || (PyArray_Check(values) && PyArray_TYPE((PyArrayObject *)values) == NPY_INT32);
    Column c;
    if (!open_column(&c, values, source32 ? NPY_INT32 : NPY_INT64, bitmap, offset)) return NULL;
    Py_ssize_t n = c.n, non_null = 0;
    int itemsize = source32 ? 4 : 8;
    void *kept = c.has_bitmap ? PyMem_RawMalloc((size_t)itemsize * (size_t)(n ? n : 1)) : NULL;
    uint8_t *w;
    /* Each block, the last one too, at most: its min delta, widths and 128 values of 64 bits. */
    PyObject *page = new_page(LEVELS_ROOM(n) + 64 + (n / BLOCK + 1) * (10 + MINIBLOCKS + BLOCK * 8), &w);
    if ((c.has_bitmap && !kept) || !page) {
        PyMem_RawFree(kept);
        Py_XDECREF(page);
        close_column(&c);
        return PyErr_NoMemory();
    }
    int64_t range[2] = {0, 0};
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *bits = c.has_bitmap ? c.bitmap.buf : NULL;
    w = put_levels(w, n, bits, c.offset, &non_null);
    const void *values = PyArray_DATA(c.values);
    if (non_null && non_null < n) {
        compact(kept, values, n, itemsize, bits, c.offset);
        values = kept;
    }
    if (non_null) w = put_deltas(w, values, non_null, source32, width32, is_unsigned, range);
    Py_END_ALLOW_THREADS
    PyMem_RawFree(kept);
    close_column(&c);
    page = end_page(page, w);
    if (!page) return NULL;
    if (!non_null) return Py_BuildValue("(NnOO)", page, non_null, Py_None, Py_None);
    if (is_unsigned)
        return Py_BuildValue("(NnKK)", page, non_null, (unsigned long long)range[0], (unsigned long long)range[1]);
    return Py_BuildValue("(NnLL)", page, non_null, (long long)range[0], (long long)range[1]);
}

static PyObject *encode_doubles(PyObject *Py_UNUSED(self), PyObject *args) {
    Column c;
    uint8_t *w;
    PyObject *page = open_plain(args, NPY_FLOAT64, 64, &c, &w);
    if (!page) return NULL;
    Py_ssize_t n = c.n, non_null = 0, nans = 0;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *bits = c.has_bitmap ? c.bitmap.buf : NULL;
    w = put_levels(w, n, bits, c.offset, &non_null);
    const double *data = (const double *)PyArray_DATA(c.values);
    if (non_null < n) {
        if (non_null) compact(w, (const uint8_t *)data, n, 8, bits, c.offset);
    } else memcpy(w, data, (size_t)n * 8);
    for (Py_ssize_t i = 0; i < non_null; i++) { /* the page's doubles are not 8-byte aligned */
        double x;
        memcpy(&x, w + 8 * i, 8);
        nans += x != x;
    }
    w += non_null * 8;
    Py_END_ALLOW_THREADS
    close_column(&c);
    page = end_page(page, w);
    return page ? Py_BuildValue("(Nnn)", page, non_null, nans) : NULL;
}

/* Levels, then the non-null booleans PLAIN: bit-packed, one bit each, LSB first. */
static PyObject *encode_booleans(PyObject *Py_UNUSED(self), PyObject *args) {
    Column c;
    uint8_t *w;
    PyObject *page = open_plain(args, NPY_BOOL, 1, &c, &w);
    if (!page) return NULL;
    Py_ssize_t n = c.n, non_null = 0, trues = 0;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *bits = c.has_bitmap ? c.bitmap.buf : NULL;
    w = put_levels(w, n, bits, c.offset, &non_null);
    const uint8_t *data = (const uint8_t *)PyArray_DATA(c.values);
    memset(w, 0, (size_t)((non_null + 7) / 8));
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (bits && !is_valid(bits, c.offset + i)) continue;
        if (data[i]) {
            w[k >> 3] |= (uint8_t)(1 << (k & 7));
            trues++;
        }
        k++;
    }
    w += (non_null + 7) / 8;
    Py_END_ALLOW_THREADS
    close_column(&c);
    page = end_page(page, w);
    return page ? Py_BuildValue("(Nnn)", page, non_null, trues) : NULL;
}

static PyObject *encode_indices(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *values, *bitmap;
    long long offset;
    int width;
    if (!PyArg_ParseTuple(args, "OOLi", &values, &bitmap, &offset, &width)) return NULL;
    if (width < 1 || width > 32) {
        PyErr_SetString(PyExc_ValueError, "bit width must be 1 to 32");
        return NULL;
    }
    Column c;
    if (!open_column(&c, values, NPY_INT32, bitmap, offset)) return NULL;
    Py_ssize_t n = c.n, non_null = 0;
    uint32_t *kept = c.has_bitmap ? PyMem_RawMalloc(sizeof(uint32_t) * (size_t)(n ? n : 1)) : NULL;
    uint64_t *scratch = PyMem_RawMalloc(sizeof(uint64_t) * ((1 << 16) + 8));
    uint8_t *w;
    /* At most 6 bytes a value: groups of 8 packed values alternating with runs of 8 cost 43 bytes per 16. */
    PyObject *page = new_page(LEVELS_ROOM(n) + 64 + n * 6, &w);
    if ((c.has_bitmap && !kept) || !scratch || !page) {
        PyMem_RawFree(kept);
        PyMem_RawFree(scratch);
        Py_XDECREF(page);
        close_column(&c);
        return PyErr_NoMemory();
    }
    Py_ssize_t too_big = 0;
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *bits = c.has_bitmap ? c.bitmap.buf : NULL;
    w = put_levels(w, n, bits, c.offset, &non_null);
    const uint32_t *v = (const uint32_t *)PyArray_DATA(c.values);
    if (non_null && non_null < n) {
        compact((uint8_t *)kept, (const uint8_t *)v, n, 4, bits, c.offset);
        v = kept;
    }
    uint64_t limit = width == 32 ? 0xffffffffULL : (1ULL << width) - 1;
    for (Py_ssize_t i = 0; i < non_null; i++) too_big |= v[i] > limit;
    if (!too_big && non_null) {
        *w++ = (uint8_t)width;
        w = put_hybrid(w, v, non_null, width, scratch);
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(kept);
    PyMem_RawFree(scratch);
    close_column(&c);
    if (too_big) {
        Py_DECREF(page);
        PyErr_SetString(PyExc_ValueError, "a dictionary index does not fit the bit width");
        return NULL;
    }
    page = end_page(page, w);
    return page ? Py_BuildValue("(Nn)", page, non_null) : NULL;
}

/* Runs of equal values, written as runs: the levels one run per stretch of
 * valid or null runs, the indices one RLE run per valid run. */
static PyObject *encode_runs(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *lengths_obj, *indices_obj, *valid_obj;
    int width;
    if (!PyArg_ParseTuple(args, "OOOi", &lengths_obj, &indices_obj, &valid_obj, &width)) return NULL;
    if (width < 1 || width > 32) {
        PyErr_SetString(PyExc_ValueError, "bit width must be 1 to 32");
        return NULL;
    }
    PyArrayObject *lengths = as_column(lengths_obj, NPY_INT64), *indices = as_column(indices_obj, NPY_UINT32);
    PyArrayObject *valid = valid_obj == Py_None ? NULL : as_column(valid_obj, NPY_BOOL);
    PyObject *page = NULL;
    if (!lengths || !indices || (valid_obj != Py_None && !valid)) goto done;
    Py_ssize_t runs = PyArray_DIM(lengths, 0);
    if (PyArray_DIM(indices, 0) != runs || (valid && PyArray_DIM(valid, 0) != runs)) {
        PyErr_SetString(PyExc_ValueError, "one index and validity per run");
        goto done;
    }
    const int64_t *length = PyArray_DATA(lengths);
    const uint32_t *index = PyArray_DATA(indices);
    const npy_bool *ok = valid ? PyArray_DATA(valid) : NULL;
    uint64_t limit = width == 32 ? 0xffffffffULL : (1ULL << width) - 1;
    for (Py_ssize_t r = 0; r < runs; r++)
        if (length[r] < 0 || length[r] > INT32_MAX || ((!ok || ok[r]) && index[r] > limit)) {
            PyErr_SetString(PyExc_ValueError, "a run is too long or its index does not fit the bit width");
            goto done;
        }
    uint8_t *w;
    /* A run costs at most 10 + 1 bytes of levels and 10 + 4 of indices. */
    page = new_page(16 + runs * 25, &w);
    if (!page) goto done;
    Py_ssize_t non_null = 0;
    Py_BEGIN_ALLOW_THREADS
    uint8_t *start = w;
    w += 4;
    for (Py_ssize_t r = 0; r < runs;) { /* levels: stretches of runs of one validity */
        int level = !ok || ok[r];
        int64_t stretch = 0;
        for (; r < runs && (!ok || ok[r]) == level && stretch + length[r] <= INT32_MAX; r++) stretch += length[r];
        if (!stretch) continue;
        w = put_varint(w, (uint64_t)stretch << 1);
        *w++ = (uint8_t)level;
        if (level) non_null += stretch;
    }
    uint32_t levels = (uint32_t)(w - start - 4);
    memcpy(start, &levels, 4);
    if (non_null) {
        *w++ = (uint8_t)width;
        int value_bytes = (width + 7) / 8;
        for (Py_ssize_t r = 0; r < runs; r++) {
            if ((ok && !ok[r]) || !length[r]) continue;
            w = put_varint(w, (uint64_t)length[r] << 1);
            memcpy(w, &index[r], (size_t)value_bytes);
            w += value_bytes;
        }
    }
    Py_END_ALLOW_THREADS
    page = end_page(page, w);
    if (page) page = Py_BuildValue("(Nn)", page, non_null);
done:
    Py_XDECREF(lengths);
    Py_XDECREF(indices);
    Py_XDECREF(valid);
    return page;
}

/* An Arrow string array's strings: offsets (n + 1, read as int64) into data. */
typedef struct {
    PyArrayObject *offsets;
    const int64_t *o;
    Py_buffer data;
    Py_ssize_t n;
} Strings;

/* Parses (offsets, data) and checks the offsets stay in data, in order. */
static int open_strings(PyObject *args, Strings *s) {
    PyObject *offsets_obj, *data_obj;
    if (!PyArg_ParseTuple(args, "OO", &offsets_obj, &data_obj)) return 0;
    s->offsets = with_buffer(as_column(offsets_obj, NPY_INT64), data_obj, &s->data);
    if (!s->offsets) return 0;
    s->n = PyArray_DIM(s->offsets, 0) - 1;
    s->o = PyArray_DATA(s->offsets);
    int ok = s->n >= 0 && s->o[0] >= 0 && s->o[s->n] <= s->data.len;
    for (Py_ssize_t i = 0; ok && i < s->n; i++) ok = s->o[i + 1] >= s->o[i] && s->o[i + 1] - s->o[i] <= INT32_MAX;
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "string offsets outside the data or out of order");
        PyBuffer_Release(&s->data);
        Py_DECREF(s->offsets);
    }
    return ok;
}

static void close_strings(Strings *s) {
    PyBuffer_Release(&s->data);
    Py_DECREF(s->offsets);
}

/* PLAIN BYTE_ARRAY values (4-byte length, bytes) of an Arrow string array's
 * offsets (int32 or int64, n + 1 of them) and data. */
static PyObject *plain_strings(PyObject *Py_UNUSED(self), PyObject *args) {
    Strings s;
    if (!open_strings(args, &s)) return NULL;
    uint8_t *w;
    PyObject *out = new_page(s.n * 4 + (s.o[s.n] - s.o[0]), &w);
    if (out) {
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < s.n; i++) {
            uint32_t length = (uint32_t)(s.o[i + 1] - s.o[i]);
            memcpy(w, &length, 4);
            memcpy(w + 4, (const uint8_t *)s.data.buf + s.o[i], length);
            w += 4 + length;
        }
        Py_END_ALLOW_THREADS
    }
    close_strings(&s);
    return out;
}

/* Interns n strings given as offsets (n + 1, int64) into data: returns each
 * string's index among the distinct ones (numbered as they first appear)
 * and the row where each distinct string first appears (the first
 * `distinct` entries). Distinct strings are compared in a copy of their
 * own, so the table and what it compares with stay in the cache however
 * large the data is. */
static PyObject *intern_strings(PyObject *Py_UNUSED(self), PyObject *args) {
    Strings s;
    if (!open_strings(args, &s)) return NULL;
    PyObject *result = NULL;
    PyArrayObject *indices = NULL, *first = NULL;
    Py_ssize_t n = s.n;
    const int64_t *o = s.o;
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "too many strings");
        goto done;
    }
    npy_intp dims[1] = {n};
    indices = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT32);
    first = (PyArrayObject *)PyArray_SimpleNew(1, dims, NPY_INT64);
    if (!indices || !first) goto done;
    Interner t = {.base = s.data.buf, .base_len = (size_t)s.data.len};
    int failed = 0;
    Py_BEGIN_ALLOW_THREADS
    failed = intern_spans(&t, o, o + 1, 1, 1, (size_t)n, 1, PyArray_DATA(indices), PyArray_DATA(first)) < 0;
    Py_END_ALLOW_THREADS
    Py_ssize_t distinct = t.n;
    intern_free(&t);
    if (failed) PyErr_NoMemory();
    else result = Py_BuildValue("(OOn)", indices, first, distinct);
done:
    Py_XDECREF(indices);
    Py_XDECREF(first);
    close_strings(&s);
    return result;
}

static PyMethodDef methods[] = {
    {"encode_ints", encode_ints, METH_VARARGS,
     "encode_ints(values, bitmap, bit_offset, width32, unsigned) -> (page, non_null, min, max): definition "
     "levels and DELTA_BINARY_PACKED values, as INT32 when width32 (int32 values) else INT64 (int32 or int64 "
     "values)."},
    {"encode_doubles", encode_doubles, METH_VARARGS,
     "encode_doubles(values, bitmap, bit_offset) -> (page, non_null, nan_count): levels and PLAIN doubles."},
    {"encode_booleans", encode_booleans, METH_VARARGS,
     "encode_booleans(values, bitmap, bit_offset) -> (page, non_null, trues): levels and PLAIN (bit-packed) "
     "booleans."},
    {"encode_indices", encode_indices, METH_VARARGS,
     "encode_indices(indices, bitmap, bit_offset, bit_width) -> (page, non_null): levels and RLE_DICTIONARY "
     "indices."},
    {"encode_runs", encode_runs, METH_VARARGS,
     "encode_runs(lengths, indices, valid, bit_width) -> (page, non_null): levels and RLE_DICTIONARY indices "
     "of runs (valid: a bool per run, or None)."},
    {"intern_strings", intern_strings, METH_VARARGS,
     "intern_strings(offsets, data) -> (indices, first_rows, distinct): the distinct strings, numbered as "
     "they first appear; first_rows[:distinct] are their rows."},
    {"plain_strings", plain_strings, METH_VARARGS,
     "plain_strings(offsets, data) -> bytes: a dictionary page's PLAIN BYTE_ARRAY values."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_parquet", .m_doc = NULL, .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__parquet(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
