/* Finds TensorFlow's LogMemory lines in a block of log text and reads them.
 *
 *   scan_memory_log(buf, final) -> (consumed, kind, time_us, line, ints, strs)
 *
 * TensorFlow logs every allocation as `<prefix>] __LOG_MEMORY__ <Message> {
 * <text format> }` when log_memory logging is on. Python's text_format needs
 * tens of microseconds per line; this reads the six log_memory.proto messages
 * as TensorFlow prints them, one row per line holding the marker:
 *
 *   kind     int8: 0 MemoryLogStep, 1 MemoryLogTensorAllocation,
 *            2 MemoryLogTensorDeallocation, 3 MemoryLogTensorOutput,
 *            4 MemoryLogRawAllocation, 5 MemoryLogRawDeallocation;
 *            -1 a known message this fast path does not read (escapes in
 *            strings, hex numbers, duplicate or unknown fields, a truncated
 *            line): the caller parses it with text_format;
 *            -2 an unknown message name
 *   time_us  int64 microseconds from the line's prefix (INT64_MIN if none):
 *            `YYYY-MM-DD HH:MM:SS.ffffff` (TensorFlow's own logger) or glog /
 *            absl `Lmmdd hh:mm:ss.ffffff` (seconds since the start of a
 *            non-leap year; absl's `I0000 00:00:<epoch seconds>` gives epoch time)
 *   line     int64[n, 2] (offset, length) of the line, without its newline
 *   ints     int64[n, 7]: step_id, allocation_id, bytes (allocated_bytes or
 *            num_bytes), requested_bytes, ptr (uint64 bits), index, flags
 *            (1 deferred, 2 has_single_reference, 4 allocated_bytes present)
 *   strs     int64[n, 5, 2] spans: kernel_name or operation, allocator_name,
 *            dtype (the enum token), shape (the `{...}` block), handle
 *
 * One row per line, however many markers it holds. Lines end at '\n'. Unless `final`, the text after the last newline is left
 * for the next block: `consumed` says how many bytes were read.
 */
#include "_cbuffers.h"
#include "intern.h"
#include <stddef.h>

#define MARKER "__LOG_MEMORY__"
#define MARKER_LEN 14
/* Protobuf 30+ debug output starts with a link such as goo.gle/debugstr or
 * goo.gle/debugonly (chosen at random) so that parsers refuse it. */
#define DEBUG_LINK "goo.gle/"
#define DEBUG_LINK_LEN 8

enum { I_STEP, I_ID, I_BYTES, I_REQ, I_PTR, I_INDEX, I_FLAGS, N_INTS };
enum { S_NAME, S_ALLOCATOR, S_DTYPE, S_SHAPE, S_HANDLE, N_STRS };
enum { T_INT, T_UINT, T_STR, T_BOOL, T_ENUM, T_TENSOR, T_DESCRIPTION, T_SHAPE, T_DIM };
#define NONE (-1) /* a value that is checked but not kept */
/* Where a value goes: an int slot, a string slot, or a flag bit. */
typedef struct {
    const char *name;
    int len;
    int type;
    int slot;
    int flag;
} Field;
#define F(name) name, (int)sizeof(name) - 1

static const Field STEP[] = {{F("step_id"), T_INT, I_STEP, 0}, {F("handle"), T_STR, S_HANDLE, 0}};
static const Field TENSOR_ALLOCATION[] = {
    {F("step_id"), T_INT, I_STEP, 0}, {F("kernel_name"), T_STR, S_NAME, 0}, {F("tensor"), T_TENSOR, 0, 0}};
static const Field TENSOR_DEALLOCATION[] = {{F("allocation_id"), T_INT, I_ID, 0}, {F("allocator_name"), T_STR, S_ALLOCATOR, 0}};
static const Field TENSOR_OUTPUT[] = {{F("step_id"), T_INT, I_STEP, 0}, {F("kernel_name"), T_STR, S_NAME, 0},
                                      {F("index"), T_INT, I_INDEX, 0}, {F("tensor"), T_TENSOR, 0, 0}};
static const Field RAW_ALLOCATION[] = {
    {F("step_id"), T_INT, I_STEP, 0}, {F("operation"), T_STR, S_NAME, 0}, {F("num_bytes"), T_INT, I_BYTES, 4},
    {F("ptr"), T_UINT, I_PTR, 0},     {F("allocation_id"), T_INT, I_ID, 0}, {F("allocator_name"), T_STR, S_ALLOCATOR, 0}};
static const Field RAW_DEALLOCATION[] = {{F("step_id"), T_INT, I_STEP, 0}, {F("operation"), T_STR, S_NAME, 0},
                                         {F("allocation_id"), T_INT, I_ID, 0}, {F("allocator_name"), T_STR, S_ALLOCATOR, 0},
                                         {F("deferred"), T_BOOL, I_FLAGS, 1}};
static const Field TENSOR_DESCRIPTION[] = {
    {F("dtype"), T_ENUM, S_DTYPE, 0}, {F("shape"), T_SHAPE, S_SHAPE, 0}, {F("allocation_description"), T_DESCRIPTION, 0, 0}};
/* TensorShapeProto: the block is kept as text (few distinct shapes). */
static const Field SHAPE[] = {{F("dim"), T_DIM, NONE, 0}, {F("unknown_rank"), T_BOOL, NONE, 0}};
static const Field DIM[] = {{F("size"), T_INT, NONE, 0}, {F("name"), T_STR, NONE, 0}};
static const Field ALLOCATION_DESCRIPTION[] = {
    {F("requested_bytes"), T_INT, I_REQ, 0},       {F("allocated_bytes"), T_INT, I_BYTES, 4},
    {F("allocator_name"), T_STR, S_ALLOCATOR, 0},  {F("allocation_id"), T_INT, I_ID, 0},
    {F("has_single_reference"), T_BOOL, I_FLAGS, 2}, {F("ptr"), T_UINT, I_PTR, 0}};

typedef struct {
    const char *name;
    int len;
    const Field *fields;
    int count;
} Message;

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
static const Message MESSAGES[] = {
    {F("MemoryLogStep"), STEP, COUNT(STEP)},
    {F("MemoryLogTensorAllocation"), TENSOR_ALLOCATION, COUNT(TENSOR_ALLOCATION)},
    {F("MemoryLogTensorDeallocation"), TENSOR_DEALLOCATION, COUNT(TENSOR_DEALLOCATION)},
    {F("MemoryLogTensorOutput"), TENSOR_OUTPUT, COUNT(TENSOR_OUTPUT)},
    {F("MemoryLogRawAllocation"), RAW_ALLOCATION, COUNT(RAW_ALLOCATION)},
    {F("MemoryLogRawDeallocation"), RAW_DEALLOCATION, COUNT(RAW_DEALLOCATION)},
};

typedef struct {
    const char *p, *end, *base;
    int64_t *ints;
    int64_t *strs;
} Parser;

/* Character classes by table: 1 identifier start, 2 identifier character, 4 space. */
static uint8_t char_class[256];
static void init_classes(void) {
    for (int c = 0; c < 256; c++) {
        int start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        char_class[c] = (uint8_t)(start ? 3 : (c >= '0' && c <= '9') ? 2 : (c == ' ' || c == '\t' || c == '\r') ? 4 : 0);
    }
}
static int is_ident_start(char c) { return char_class[(uint8_t)c] & 1; }
static int is_ident(char c) { return char_class[(uint8_t)c] & 2; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static inline void skip_space(Parser *ps) {
    while (ps->p < ps->end && (char_class[(uint8_t)*ps->p] & 4)) ps->p++;
}

/* memcmp(a, b, n) == 0 for the short texts compared per field, without a call. */
static inline int same(const char *a, const char *b, size_t n) {
    return intern_same((const uint8_t *)a, (const uint8_t *)b, n);
}

/* The first marker in [p, end): memchr for its rare 'Y', then the rest. */
static const char *find_marker(const char *p, const char *end) {
    for (const char *q = p + 11; q < end; q++) {
        if (!(q = memchr(q, 'Y', (size_t)(end - q)))) return NULL;
        if (end - q >= MARKER_LEN - 11 && same(q - 11, MARKER, MARKER_LEN)) return q - 11;
    }
    return NULL;
}

static inline int read_ident(Parser *ps, const char **s, int *len) {
    if (ps->p >= ps->end || !is_ident_start(*ps->p)) return 0;
    *s = ps->p;
    while (ps->p < ps->end && is_ident(*ps->p)) ps->p++;
    *len = (int)(ps->p - *s);
    return 1;
}

/* Decimal integers only; octal, hex and overflow go to text_format. */
static int read_int(Parser *ps, int is_unsigned, int64_t *out) {
    int negative = 0;
    if (!is_unsigned && ps->p < ps->end && *ps->p == '-') {
        negative = 1;
        ps->p++;
    }
    const char *start = ps->p;
    uint64_t v = 0;
    while (ps->p < ps->end && is_digit(*ps->p) && ps->p - start < 19) v = v * 10 + (unsigned)(*ps->p++ - '0');
    if (ps->p < ps->end && is_digit(*ps->p)) { /* a 20th digit may still fit, a 21st never */
        unsigned d = (unsigned)(*ps->p++ - '0');
        if (v > (UINT64_MAX - d) / 10 || (ps->p < ps->end && is_digit(*ps->p))) return 0;
        v = v * 10 + d;
    }
    size_t n = (size_t)(ps->p - start);
    if (n == 0 || (n > 1 && *start == '0') || (ps->p < ps->end && is_ident(*ps->p))) return 0;
    if (!is_unsigned) {
        if (v > (uint64_t)INT64_MAX + negative) return 0;
        *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    } else {
        *out = (int64_t)v;
    }
    return 1;
}

/* A double-quoted string without escapes: its content span. */
static int read_string(Parser *ps, int64_t *span) {
    if (ps->p >= ps->end || *ps->p != '"') return 0;
    const char *start = ++ps->p;
    while (ps->p < ps->end && *ps->p != '"') {
        if (*ps->p == '\\') return 0;
        ps->p++;
    }
    if (ps->p >= ps->end) return 0;
    span[0] = start - ps->base;
    span[1] = ps->p - start;
    ps->p++;
    return 1;
}

static int read_fields(Parser *ps, const Field *fields, int count);

static int read_value(Parser *ps, const Field *f) {
    const char *s;
    int len;
    int64_t v;
    int64_t ignored[2];
    if (f->type >= T_TENSOR) { /* a message */
        if (ps->p < ps->end && *ps->p == ':') {
            ps->p++;
            skip_space(ps);
        }
        if (ps->p >= ps->end || *ps->p != '{') return 0;
        const char *start = ps->p++;
        switch (f->type) {
        case T_TENSOR: return read_fields(ps, TENSOR_DESCRIPTION, COUNT(TENSOR_DESCRIPTION));
        case T_DESCRIPTION: return read_fields(ps, ALLOCATION_DESCRIPTION, COUNT(ALLOCATION_DESCRIPTION));
        case T_DIM: return read_fields(ps, DIM, COUNT(DIM));
        default: /* T_SHAPE */
            if (!read_fields(ps, SHAPE, COUNT(SHAPE))) return 0;
            ps->strs[2 * f->slot] = start - ps->base;
            ps->strs[2 * f->slot + 1] = ps->p - start;
            return 1;
        }
    }
    if (ps->p >= ps->end || *ps->p != ':') return 0;
    ps->p++;
    skip_space(ps);
    switch (f->type) {
    case T_INT:
    case T_UINT:
        if (!read_int(ps, f->type == T_UINT, &v)) return 0;
        if (f->slot != NONE) {
            ps->ints[f->slot] = v;
            ps->ints[I_FLAGS] |= f->flag;
        }
        return 1;
    case T_STR: return read_string(ps, f->slot == NONE ? ignored : ps->strs + 2 * f->slot);
    case T_ENUM:
        if (!read_ident(ps, &s, &len)) return 0;
        ps->strs[2 * f->slot] = s - ps->base;
        ps->strs[2 * f->slot + 1] = len;
        return 1;
    case T_BOOL:
        if (!read_ident(ps, &s, &len)) return 0;
        if (len == 4 && memcmp(s, "true", 4) == 0) {
            if (f->slot != NONE) ps->ints[f->slot] |= f->flag;
            return 1;
        }
        return len == 5 && memcmp(s, "false", 5) == 0;
    }
    return 0;
}

/* Fields up to the closing brace; each at most once, as text_format wants
 * (dim, the one repeated field, any number of times). */
static int read_fields(Parser *ps, const Field *fields, int count) {
    unsigned seen = 0;
    int next = 0; /* TensorFlow prints fields in this order: try the one after the last first */
    for (;;) {
        skip_space(ps);
        if (ps->p < ps->end && *ps->p == 'g' && ps->end - ps->p >= DEBUG_LINK_LEN &&
            same(ps->p, DEBUG_LINK, DEBUG_LINK_LEN)) {
            ps->p += DEBUG_LINK_LEN;
            while (ps->p < ps->end && is_ident(*ps->p)) ps->p++;
            continue;
        }
        if (ps->p >= ps->end) return 0;
        if (*ps->p == '}') {
            ps->p++;
            return 1;
        }
        const char *s;
        int len, k = next < count ? next : 0;
        const Field *f = &fields[k];
        if (ps->end - ps->p > f->len && same(ps->p, f->name, (size_t)f->len) && !is_ident(ps->p[f->len])) {
            ps->p += f->len; /* the expected field, without reading the name a character at a time */
        } else {
            if (!read_ident(ps, &s, &len)) return 0;
            for (k = 0; k < count; k++) {
                if (fields[k].len == len && same(fields[k].name, s, (size_t)len)) break;
            }
            if (k == count) return 0;
        }
        next = k + 1;
        if (fields[k].type != T_DIM && (seen & (1u << k))) return 0;
        seen |= 1u << k;
        skip_space(ps);
        if (!read_value(ps, &fields[k])) return 0;
        skip_space(ps);
        if (ps->p < ps->end && (*ps->p == ',' || *ps->p == ';')) ps->p++;
    }
}

static int digits(const char *p, int n, int64_t *out) {
    int64_t v = 0;
    for (int i = 0; i < n; i++) {
        if (!is_digit(p[i])) return 0;
        v = v * 10 + (p[i] - '0');
    }
    *out = v;
    return 1;
}

/* Days from 1970-01-01 to a civil date (proleptic Gregorian). */
static int64_t days_from_civil(int64_t y, int64_t m, int64_t d) {
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* `.ffffff` after the seconds, as microseconds (more digits are cut). */
static int64_t fraction_us(const char *p, const char *end) {
    int64_t us = 0, scale = 100000;
    if (p >= end || *p != '.') return 0;
    for (p++; p < end && is_digit(*p); p++, scale /= 10) us += (*p - '0') * scale;
    return us;
}

static int64_t prefix_time(const char *p, const char *end) {
    static const int before_month[13] = {0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334};
    for (; p < end; p++) {
        int64_t y, mo, d, h, mi, s;
        /* 2023-05-01 10:00:00.123456 */
        if (end - p >= 19 && p[4] == '-' && p[7] == '-' && p[10] == ' ' && p[13] == ':' && p[16] == ':' &&
            digits(p, 4, &y) && digits(p + 5, 2, &mo) && digits(p + 8, 2, &d) && digits(p + 11, 2, &h) &&
            digits(p + 14, 2, &mi) && digits(p + 17, 2, &s) && mo >= 1 && mo <= 12) {
            int64_t secs = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + s;
            return secs * 1000000 + fraction_us(p + 19, end);
        }
        /* I0501 10:00:00.123456 (glog), I0000 00:00:1795320411.934522 (absl) */
        if (end - p >= 14 && (*p == 'I' || *p == 'W' || *p == 'E' || *p == 'F') && p[5] == ' ' && p[8] == ':' &&
            p[11] == ':' && digits(p + 1, 2, &mo) && digits(p + 3, 2, &d) && digits(p + 6, 2, &h) &&
            digits(p + 9, 2, &mi) && is_digit(p[12]) && mo <= 12) {
            const char *q = p + 12;
            s = 0;
            while (q < end && is_digit(*q) && s < INT64_MAX / 100000000) s = s * 10 + (*q++ - '0');
            int64_t day = mo ? before_month[mo] + d - 1 : 0;
            int64_t secs = ((day * 24 + h) * 60 + mi) * 60 + s;
            return secs * 1000000 + fraction_us(q, end);
        }
    }
    return INT64_MIN;
}

static void read_line(const char *base, const char *line, const char *marker, const char *eol, int8_t *kind,
                      int64_t *time_us, int64_t *ints, int64_t *strs) {
    Parser ps = {marker + MARKER_LEN, eol, base, ints, strs};
    *time_us = prefix_time(line, marker);
    *kind = -2;
    skip_space(&ps);
    const char *name;
    int len;
    if (!read_ident(&ps, &name, &len)) return;
    int k;
    for (k = 0; k < COUNT(MESSAGES); k++) {
        if (MESSAGES[k].len == len && same(MESSAGES[k].name, name, (size_t)len)) break;
    }
    if (k == COUNT(MESSAGES)) return;
    *kind = -1;
    skip_space(&ps);
    if (ps.p >= ps.end || *ps.p != '{') return;
    ps.p++;
    if (!read_fields(&ps, MESSAGES[k].fields, MESSAGES[k].count)) return;
    skip_space(&ps);
    if (ps.p == ps.end) *kind = (int8_t)k;
}

/* The line around the marker at p (lines end at '\n', never before lo or
 * after end), read into the row; returns the end of the line (another
 * marker on the same line is part of this line). */
static const char *scan_line(const char *base, const char *lo, const char *end, const char *p, int8_t *kind,
                             int64_t *time_us, int64_t *line, int64_t *ints, int64_t *strs) {
    const char *line_start = p > lo ? pt_memrchr(lo, '\n', (size_t)(p - lo)) : NULL;
    line_start = line_start ? line_start + 1 : lo;
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol) eol = end;
    line[0] = line_start - base;
    line[1] = eol - line_start;
    memset(ints, 0, sizeof(int64_t) * N_INTS);
    for (int j = 0; j < N_STRS; j++) {
        strs[2 * j] = -1;
        strs[2 * j + 1] = 0;
    }
    read_line(base, line_start, p, eol, kind, time_us, ints, strs);
    return eol;
}

static PyObject *scan_memory_log(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj;
    int final;
    if (!PyArg_ParseTuple(args, "Op", &obj, &final)) return NULL;
    Py_buffer view;
    if (get_buffer(obj, &view) < 0) return NULL;
    const char *base = view.buf, *end = base + view.len;
    if (!final) { /* stop after the last complete line */
        const char *last = view.len ? pt_memrchr(base, '\n', (size_t)view.len) : NULL;
        end = last ? last + 1 : base;
    }
    /* Rows grow in raw memory while the GIL is released, then become arrays. */
    typedef struct {
        int64_t time, line[2], ints[N_INTS], strs[2 * N_STRS];
        int8_t kind;
    } Row;
    Row *rows = NULL;
    npy_intp n = 0, cap = 0;
    int no_memory = 0;
    Py_BEGIN_ALLOW_THREADS
    const char *p = base;
    while (p < end && (p = find_marker(p, end))) {
        if (n == cap) {
            cap = cap ? 2 * cap : 4096;
            Row *grown = PyMem_RawRealloc(rows, sizeof(Row) * (size_t)cap);
            if (!grown) {
                no_memory = 1;
                break;
            }
            rows = grown;
        }
        Row *r = rows + n++;
        p = scan_line(base, base, end, p, &r->kind, &r->time, r->line, r->ints, r->strs);
    }
    Py_END_ALLOW_THREADS
    PyObject *kind = NULL, *time = NULL, *line = NULL, *ints = NULL, *strs = NULL;
    if (no_memory) {
        PyErr_NoMemory();
        goto fail;
    }
    npy_intp d1[1] = {n}, d2[2] = {n, 2}, di[2] = {n, N_INTS}, ds[3] = {n, N_STRS, 2};
    kind = PyArray_SimpleNew(1, d1, NPY_INT8);
    time = PyArray_SimpleNew(1, d1, NPY_INT64);
    line = PyArray_SimpleNew(2, d2, NPY_INT64);
    ints = PyArray_SimpleNew(2, di, NPY_INT64);
    strs = PyArray_SimpleNew(3, ds, NPY_INT64);
    if (!kind || !time || !line || !ints || !strs) goto fail;
    int8_t *k = PyArray_DATA((PyArrayObject *)kind);
    int64_t *t = PyArray_DATA((PyArrayObject *)time), *ln = PyArray_DATA((PyArrayObject *)line);
    int64_t *iv = PyArray_DATA((PyArrayObject *)ints), *sv = PyArray_DATA((PyArrayObject *)strs);
    for (npy_intp i = 0; i < n; i++) {
        k[i] = rows[i].kind;
        t[i] = rows[i].time;
        memcpy(ln + 2 * i, rows[i].line, sizeof rows[i].line);
        memcpy(iv + N_INTS * i, rows[i].ints, sizeof rows[i].ints);
        memcpy(sv + 2 * N_STRS * i, rows[i].strs, sizeof rows[i].strs);
    }
    PyMem_RawFree(rows);
    PyBuffer_Release(&view);
    return Py_BuildValue("(nNNNNN)", (Py_ssize_t)(end - base), kind, time, line, ints, strs);
fail:
    PyMem_RawFree(rows);
    Py_XDECREF(kind);
    Py_XDECREF(time);
    Py_XDECREF(line);
    Py_XDECREF(ints);
    Py_XDECREF(strs);
    PyBuffer_Release(&view);
    return NULL;
}

/* ---------------------------------------------------------------- scan_block
 *
 *   scan_block(buf, start, stop, dtype_names) -> dict
 *
 * The reader's per-block work, done without the GIL: the memory lines of
 * buf[start:stop] (whole lines; buf may be a whole mapped file), with what
 * the analysis keeps as columns and the rest summed up. A line whose dtype
 * is not one of dtype_names (bytes) is left to text_format, like any other
 * line the fast path does not read. Offsets are into buf. The dict holds:
 *
 *   counts     int64[6] lines read, by kind
 *   untracked  deallocations without an allocation_id
 *   max_time   the largest time of a line's own (INT64_MIN if none)
 *   events: every allocation and every deallocation with an allocation_id,
 *     in log order: kind, flags (int8; scan_memory_log's flags, plus 8: the
 *     line has no time of its own), time (its own, else the largest before
 *     it in the block, else INT64_MIN), allocator, id, line (offset)
 *   allocations: the allocations among them: allocator, step, name,
 *     tracked (bool: it has an allocation_id), bytes (what it holds:
 *     num_bytes, allocated_bytes, else requested_bytes), requested
 *     (num_bytes for raw allocations), ptr, dtype, shape
 *   slow       int64[m, 6] lines left to text_format: how many events and
 *              allocations come before it, line offset and length, time and
 *              flags as the events'
 *   strings    four lists of str: the block's names, allocators, dtypes and
 *              shapes in order of first use (dtypes of every line, the
 *              others of events and slow lines); the string columns hold
 *              ids into them (int32, 0 is "")
 *   runs       int64[r, 3] (step, first, last time) of runs of lines naming
 *              one step (every kind but tensor deallocations); a line
 *              without its own time is a run of its own, marked in
 *              run_untimed (bool[r])
 *   steps      int64[s, 2] (line offset, step_id) of MemoryLogStep lines,
 *              handles their handles (list of str)
 */
#define NO_TIME 8

typedef struct {
    int64_t off, len;
} Span;

/* One block's strings of one column, interned by content (spans of the
 * block's buffer; id 0 is ""). */
typedef struct {
    Interner in;
    int8_t *state; /* dtype table: 0 not checked, 1 a known name, 2 unknown */
    int32_t state_cap, last; /* last: the id found last (a column often repeats its value) */
} Strings;

static void strings_free(Strings *t) {
    intern_free(&t->in);
    PyMem_RawFree(t->state);
}

/* The id of base[off:off+len] (0 for an absent or empty span); -1 when out of memory. */
static int32_t string_id(Strings *t, const char *base, int64_t off, int64_t len) {
    if (off < 0 || len <= 0) return 0;
    const uint8_t *p = (const uint8_t *)base + off;
    if (t->last) {
        size_t n;
        const uint8_t *q = intern_bytes(&t->in, t->last, &n);
        if (n == (size_t)len && same((const char *)q, (const char *)p, n)) return t->last;
    }
    t->in.base = (const uint8_t *)base;
    if (t->in.n == 0 && intern(&t->in, p, 0, 0) != 0) return -1;
    int32_t id = intern(&t->in, p, (size_t)len, 0);
    if (id < 0) return -1;
    if (id >= t->state_cap) {
        int32_t cap = t->state_cap ? 2 * t->state_cap : 64;
        int8_t *state = PyMem_RawRealloc(t->state, (size_t)cap);
        if (!state) return -1;
        memset(state + t->state_cap, 0, (size_t)(cap - t->state_cap));
        t->state = state;
        t->state_cap = cap;
    }
    return t->last = id;
}

static PyObject *strings_list(Strings *t, const char *base) {
    t->in.base = (const uint8_t *)base;
    if (t->in.n == 0 && intern(&t->in, t->in.base, 0, 0) != 0) return PyErr_NoMemory();
    return intern_list(&t->in, "replace");
}

/* Columns that grow together, a row at a time, in raw memory (no GIL needed). */
#define MAX_COLUMNS 10
typedef struct {
    int count;
    const char *names[MAX_COLUMNS];
    int types[MAX_COLUMNS], widths[MAX_COLUMNS]; /* numpy type, item size (a width-6 int64 row: 48) */
    char *data[MAX_COLUMNS];
    int64_t n, cap;
} Columns;

static void columns_init(Columns *c, const char *const *names, const int *types, const int *widths, int count) {
    memset(c, 0, sizeof *c);
    c->count = count;
    for (int j = 0; j < count; j++) {
        c->names[j] = names[j];
        c->types[j] = types[j];
        c->widths[j] = widths[j];
    }
}

/* Makes room for one more row; returns its index, -1 when out of memory. */
static int64_t columns_row(Columns *c) {
    if (c->n == c->cap) {
        int64_t cap = c->cap ? 2 * c->cap : 4096;
        for (int j = 0; j < c->count; j++) {
            char *grown = PyMem_RawRealloc(c->data[j], (size_t)cap * (size_t)c->widths[j]);
            if (!grown) return -1;
            c->data[j] = grown;
        }
        c->cap = cap;
    }
    return c->n++;
}

static void columns_free(Columns *c) {
    for (int j = 0; j < c->count; j++) PyMem_RawFree(c->data[j]);
}

#define AT(c, j, type, i) (((type *)(c)->data[j])[i])

static void free_capsule(PyObject *capsule) { PyMem_RawFree(PyCapsule_GetPointer(capsule, NULL)); }

/* The columns as numpy arrays owning their memory, put in d under their names; 0 on failure. */
static int columns_put(Columns *c, PyObject *d) {
    for (int j = 0; j < c->count; j++) {
        int pair = c->widths[j] > 8; /* rows of int64 */
        npy_intp dims[2] = {(npy_intp)c->n, c->widths[j] / 8};
        char *data = c->data[j];
        if (!data && !(data = PyMem_RawMalloc(1))) return 0;
        c->data[j] = NULL;
        char *shrunk = c->n ? PyMem_RawRealloc(data, (size_t)c->n * (size_t)c->widths[j]) : NULL;
        if (shrunk) data = shrunk;
        PyObject *cap = PyCapsule_New(data, NULL, free_capsule);
        if (!cap) {
            PyMem_RawFree(data);
            return 0;
        }
        PyObject *a = PyArray_SimpleNewFromData(pair ? 2 : 1, dims, c->types[j], data);
        if (!a || PyArray_SetBaseObject((PyArrayObject *)a, cap) < 0) {
            Py_XDECREF(a);
            Py_DECREF(cap);
            return 0;
        }
        int ok = PyDict_SetItemString(d, c->names[j], a) == 0;
        Py_DECREF(a);
        if (!ok) return 0;
    }
    return 1;
}

typedef struct {
    const char *const *names;
    const Py_ssize_t *lens;
    Py_ssize_t count;
} NameSet;

static int known_name(const NameSet *set, const char *p, int64_t len) {
    for (Py_ssize_t i = 0; i < set->count; i++) {
        if (set->lens[i] == len && memcmp(set->names[i], p, (size_t)len) == 0) return 1;
    }
    return 0;
}

enum { E_KIND, E_FLAGS, E_TIME, E_ALLOCATOR, E_ID, E_LINE };
static const char *const EVENT_NAMES[] = {"kind", "flags", "time", "allocator", "id", "line"};
static const int EVENT_TYPES[] = {NPY_INT8, NPY_INT8, NPY_INT64, NPY_INT32, NPY_INT64, NPY_INT64};
static const int EVENT_WIDTHS[] = {1, 1, 8, 4, 8, 8};
enum { A_ALLOCATOR, A_STEP, A_NAME, A_TRACKED, A_BYTES, A_REQUESTED, A_PTR, A_DTYPE, A_SHAPE };
static const char *const ALLOCATION_NAMES[] = {"allocator", "step", "name", "tracked", "bytes", "requested", "ptr",
                                               "dtype", "shape"};
static const int ALLOCATION_TYPES[] = {NPY_INT32, NPY_INT64, NPY_INT32, NPY_BOOL, NPY_INT64,
                                       NPY_INT64, NPY_INT64, NPY_INT32, NPY_INT32};
static const int ALLOCATION_WIDTHS[] = {4, 8, 4, 1, 8, 8, 8, 4, 4};
static const char *const OTHER_NAMES[] = {"slow", "runs", "run_untimed", "steps"};
static const int OTHER_TYPES[] = {NPY_INT64, NPY_INT64, NPY_BOOL, NPY_INT64};

typedef struct {
    Columns events, allocations, slow, runs, steps;
    Strings strings[4]; /* name, allocator, dtype, shape */
    int64_t counts[6], untracked, max_time;
} Block;

enum { K_NAME, K_ALLOCATOR, K_DTYPE, K_SHAPE };

static void block_init(Block *b) {
    memset(b, 0, sizeof *b);
    columns_init(&b->events, EVENT_NAMES, EVENT_TYPES, EVENT_WIDTHS, 6);
    columns_init(&b->allocations, ALLOCATION_NAMES, ALLOCATION_TYPES, ALLOCATION_WIDTHS, 9);
    static const int slow_width[] = {48}, run_widths[] = {24, 1}, step_width[] = {16};
    columns_init(&b->slow, OTHER_NAMES, OTHER_TYPES, slow_width, 1);
    columns_init(&b->runs, OTHER_NAMES + 1, OTHER_TYPES + 1, run_widths, 2);
    columns_init(&b->steps, OTHER_NAMES + 3, OTHER_TYPES + 3, step_width, 1);
    b->max_time = INT64_MIN;
}

static void block_free(Block *b) {
    columns_free(&b->events);
    columns_free(&b->allocations);
    columns_free(&b->slow);
    columns_free(&b->runs);
    columns_free(&b->steps);
    for (int j = 0; j < 4; j++) strings_free(&b->strings[j]);
}

/* Scans the lines of [lo, end) into b; returns 0 when out of memory. The
 * handle spans of step lines go to handles (2 int64 per step line). */
static int scan_into(Block *b, const char *base, const char *lo, const char *end, const NameSet *dtypes,
                     int64_t **handles) {
    int64_t fill = INT64_MIN; /* the largest time so far, for lines without one */
    int64_t run = -1, ints[N_INTS], strs[2 * N_STRS], line[2], time;
    int8_t kind;
    for (const char *p = lo; p < end && (p = find_marker(p, end));) {
        p = scan_line(base, lo, end, p, &kind, &time, line, ints, strs);
        int timed = time != INT64_MIN;
        if (timed) {
            if (time > fill) fill = time;
            if (time > b->max_time) b->max_time = time;
        } else {
            time = fill;
        }
        Strings *dt = &b->strings[K_DTYPE];
        int32_t dtype = string_id(dt, base, strs[2 * S_DTYPE], strs[2 * S_DTYPE + 1]);
        if (dtype < 0) return 0;
        if (dtype > 0 && kind >= 0) {
            if (!dt->state[dtype]) {
                size_t len;
                const char *name = (const char *)intern_bytes(&dt->in, dtype, &len);
                dt->state[dtype] = known_name(dtypes, name, (int64_t)len) ? 1 : 2;
            }
            if (dt->state[dtype] == 2) kind = -1; /* text_format judges enum names */
        }
        int is_alloc = kind == 1 || kind == 4, is_free = kind == 2 || kind == 5;
        if (kind >= 0) {
            b->counts[kind]++;
            b->untracked += is_free && ints[I_ID] == 0;
            if (kind != 2) { /* the line names a step */
                int64_t *r = run >= 0 ? &AT(&b->runs, 0, int64_t, 3 * run) : NULL;
                if (timed && r && !AT(&b->runs, 1, int8_t, run) && r[0] == ints[I_STEP]) {
                    if (time < r[1]) r[1] = time;
                    if (time > r[2]) r[2] = time;
                } else {
                    if ((run = columns_row(&b->runs)) < 0) return 0;
                    r = &AT(&b->runs, 0, int64_t, 3 * run);
                    r[0] = ints[I_STEP];
                    r[1] = r[2] = time;
                    AT(&b->runs, 1, int8_t, run) = (int8_t)!timed;
                }
            }
            if (kind == 0) {
                int64_t s = columns_row(&b->steps);
                if (s < 0) return 0;
                AT(&b->steps, 0, int64_t, 2 * s) = line[0];
                AT(&b->steps, 0, int64_t, 2 * s + 1) = ints[I_STEP];
                int64_t *grown = PyMem_RawRealloc(*handles, sizeof(int64_t) * 2 * (size_t)b->steps.cap);
                if (!grown) return 0;
                *handles = grown;
                grown[2 * s] = strs[2 * S_HANDLE];
                grown[2 * s + 1] = strs[2 * S_HANDLE + 1];
            }
        }
        int is_event = is_alloc || (is_free && ints[I_ID] != 0);
        if (!is_event && kind >= 0) continue;
        int32_t name = string_id(&b->strings[K_NAME], base, strs[2 * S_NAME], strs[2 * S_NAME + 1]);
        int32_t allocator = string_id(&b->strings[K_ALLOCATOR], base, strs[2 * S_ALLOCATOR], strs[2 * S_ALLOCATOR + 1]);
        int32_t shape = string_id(&b->strings[K_SHAPE], base, strs[2 * S_SHAPE], strs[2 * S_SHAPE + 1]);
        if (name < 0 || allocator < 0 || shape < 0) return 0;
        int8_t flags = (int8_t)(ints[I_FLAGS] | (timed ? 0 : NO_TIME));
        if (kind < 0) {
            int64_t s = columns_row(&b->slow);
            if (s < 0) return 0;
            int64_t *r = &AT(&b->slow, 0, int64_t, 6 * s);
            r[0] = b->events.n;
            r[1] = b->allocations.n;
            r[2] = line[0];
            r[3] = line[1];
            r[4] = time;
            r[5] = flags;
            continue;
        }
        Columns *e = &b->events;
        int64_t i = columns_row(e);
        if (i < 0) return 0;
        AT(e, E_KIND, int8_t, i) = kind;
        AT(e, E_FLAGS, int8_t, i) = flags;
        AT(e, E_TIME, int64_t, i) = time;
        AT(e, E_ALLOCATOR, int32_t, i) = allocator;
        AT(e, E_ID, int64_t, i) = ints[I_ID];
        AT(e, E_LINE, int64_t, i) = line[0];
        if (!is_alloc) continue;
        Columns *a = &b->allocations;
        if ((i = columns_row(a)) < 0) return 0;
        AT(a, A_ALLOCATOR, int32_t, i) = allocator;
        AT(a, A_STEP, int64_t, i) = ints[I_STEP];
        AT(a, A_NAME, int32_t, i) = name;
        AT(a, A_TRACKED, npy_bool, i) = ints[I_ID] != 0;
        AT(a, A_BYTES, int64_t, i) = kind == 4 || (ints[I_FLAGS] & 4) ? ints[I_BYTES] : ints[I_REQ];
        AT(a, A_REQUESTED, int64_t, i) = kind == 4 ? ints[I_BYTES] : ints[I_REQ];
        AT(a, A_PTR, int64_t, i) = ints[I_PTR];
        AT(a, A_DTYPE, int32_t, i) = dtype;
        AT(a, A_SHAPE, int32_t, i) = shape;
    }
    return 1;
}

/* Sets d[key] to value (stolen); 0 on failure. */
static int put(PyObject *d, const char *key, PyObject *value) {
    if (!value) return 0;
    int ok = PyDict_SetItemString(d, key, value) == 0;
    Py_DECREF(value);
    return ok;
}

static PyObject *scan_block(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *obj, *names_obj;
    Py_ssize_t start, stop;
    if (!PyArg_ParseTuple(args, "OnnO!", &obj, &start, &stop, &PyTuple_Type, &names_obj)) return NULL;
    Py_ssize_t n_names = PyTuple_GET_SIZE(names_obj);
    const char **names = PyMem_Calloc(n_names + 1, sizeof(char *));
    Py_ssize_t *lens = PyMem_Calloc(n_names + 1, sizeof(Py_ssize_t));
    if (!names || !lens) {
        PyMem_Free(names);
        PyMem_Free(lens);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n_names; i++) {
        PyObject *item = PyTuple_GET_ITEM(names_obj, i);
        if (!PyBytes_Check(item)) {
            PyMem_Free(names);
            PyMem_Free(lens);
            PyErr_SetString(PyExc_TypeError, "dtype_names must be a tuple of bytes");
            return NULL;
        }
        names[i] = PyBytes_AS_STRING(item);
        lens[i] = PyBytes_GET_SIZE(item);
    }
    NameSet dtypes = {names, lens, n_names};
    Py_buffer view;
    if (get_buffer(obj, &view) < 0) {
        PyMem_Free(names);
        PyMem_Free(lens);
        return NULL;
    }
    PyObject *out = NULL, *strings = NULL, *handles = NULL;
    int64_t *handle_spans = NULL;
    Block b;
    block_init(&b);
    if (start < 0 || stop < start || stop > view.len) {
        PyErr_SetString(PyExc_ValueError, "start and stop must lie in the buffer");
        goto done;
    }
    const char *base = view.buf;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = scan_into(&b, base, base + start, base + stop, &dtypes, &handle_spans);
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_NoMemory();
        goto done;
    }
    if (!(strings = PyTuple_New(4)) || !(handles = PyList_New((Py_ssize_t)b.steps.n))) goto done;
    for (int j = 0; j < 4; j++) {
        PyObject *list = strings_list(&b.strings[j], base);
        if (!list) goto done;
        PyTuple_SET_ITEM(strings, j, list);
    }
    for (int64_t i = 0; i < b.steps.n; i++) {
        const int64_t *h = handle_spans + 2 * i;
        PyObject *s = h[0] >= 0 ? PyUnicode_DecodeUTF8(base + h[0], h[1], "replace") : PyUnicode_FromStringAndSize("", 0);
        if (!s) goto done;
        PyList_SET_ITEM(handles, (Py_ssize_t)i, s);
    }
    npy_intp d6[1] = {6};
    PyObject *counts = PyArray_SimpleNew(1, d6, NPY_INT64);
    if (counts) memcpy(PyArray_DATA((PyArrayObject *)counts), b.counts, sizeof b.counts);
    if (!(out = PyDict_New()) || !put(out, "counts", counts) || !put(out, "untracked", PyLong_FromLongLong(b.untracked)) ||
        !put(out, "max_time", PyLong_FromLongLong(b.max_time)) || !columns_put(&b.events, out) ||
        !columns_put(&b.slow, out) || !columns_put(&b.runs, out) || !columns_put(&b.steps, out) ||
        !put(out, "strings", Py_NewRef(strings)) || !put(out, "handles", Py_NewRef(handles))) {
        Py_CLEAR(out);
        goto done;
    }
    PyObject *allocations = PyDict_New();
    if (!put(out, "allocations", allocations) || !columns_put(&b.allocations, allocations)) Py_CLEAR(out);
done:
    Py_XDECREF(strings);
    Py_XDECREF(handles);
    PyMem_RawFree(handle_spans);
    block_free(&b);
    PyBuffer_Release(&view);
    PyMem_Free(names);
    PyMem_Free(lens);
    return out;
}

/* ---------------------------------------------------------------- replay
 *
 *   replay(kind, flags, allocator, id, time, bytes, a, raw_region, tensor_region[, sel, row])
 *       -> None or (n, selected, deferred, time_ps, source, activity, heap, peak, region, allocs, frees)
 *       Replays allocator a's events that have an allocation_id, leaving
 *       out deferred raw deallocations (counted): in log order, or None when
 *       their times decrease somewhere; with sel and row, in that order (sel:
 *       event indices, row: select_events'). A deallocation frees the
 *       allocation just before it under its allocation_id, or is unmatched
 *       and left out. The first n items of each column are the timeline:
 *       time (us) * 1e6, the allocation row it shows (a deallocation shows its
 *       allocation's), ALLOCATION or DEALLOCATION, live bytes after it
 *       (bytes by allocation row) and their running maximum, region id;
 *       allocs are the timeline indices of allocations and frees the index
 *       freeing each (n if never).
 *   select_events(kind, flags, allocator, id, a) -> (sel, row)
 *       Those events' indices (log order) and, for an allocation, its row in
 *       the table of allocations (of every allocator, in log order), -1 for a
 *       deallocation.
 */
static PyArrayObject *column_arg(PyObject *obj, int type, npy_intp n) {
    PyArrayObject *a = as_column(obj, type);
    if (a && n >= 0 && PyArray_DIM(a, 0) != n) {
        PyErr_SetString(PyExc_ValueError, "columns must have the same length");
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

static PyObject *new_column(npy_intp n, int type) {
    npy_intp dims[1] = {n};
    return PyArray_SimpleNew(1, dims, type);
}

/* The event columns replay reads, checked to be of one length. */
typedef struct {
    PyArrayObject *arrays[5];
    const int8_t *kind, *flags;
    const int32_t *allocator;
    const int64_t *id, *time;
    npy_intp n;
} Events;

static int events_get(Events *ev, PyObject *const *objs, int count) {
    static const int types[5] = {NPY_INT8, NPY_INT8, NPY_INT32, NPY_INT64, NPY_INT64};
    ev->n = -1;
    for (int j = 0; j < count; j++) {
        if (!(ev->arrays[j] = column_arg(objs[j], types[j], ev->n))) return 0;
        ev->n = PyArray_DIM(ev->arrays[j], 0);
    }
    ev->kind = PyArray_DATA(ev->arrays[0]);
    ev->flags = PyArray_DATA(ev->arrays[1]);
    ev->allocator = PyArray_DATA(ev->arrays[2]);
    ev->id = PyArray_DATA(ev->arrays[3]);
    ev->time = count > 4 ? PyArray_DATA(ev->arrays[4]) : NULL;
    return 1;
}

static void events_release(Events *ev) {
    for (int j = 0; j < 5; j++) Py_XDECREF(ev->arrays[j]);
}

#define IS_ALLOCATION(ev, i) ((ev)->kind[i] == 1 || (ev)->kind[i] == 4)
#define DEFERRED_FREE(ev, i) ((ev)->kind[i] == 5 && ((ev)->flags[i] & 1))
#define TRACKED(ev, i, a) ((ev)->allocator[i] == (a) && (ev)->id[i] != 0)

static PyObject *select_events(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *objs[4];
    long long a;
    if (!PyArg_ParseTuple(args, "OOOOL", &objs[0], &objs[1], &objs[2], &objs[3], &a)) return NULL;
    Events ev = {0};
    PyObject *sel = NULL, *row = NULL, *out = NULL;
    if (!events_get(&ev, objs, 4)) goto done;
    npy_intp m = 0;
    for (npy_intp i = 0; i < ev.n; i++) m += TRACKED(&ev, i, a) && !DEFERRED_FREE(&ev, i);
    if (!(sel = new_column(m, NPY_INT64)) || !(row = new_column(m, NPY_INT64))) goto done;
    int64_t *s = PyArray_DATA((PyArrayObject *)sel), *r = PyArray_DATA((PyArrayObject *)row);
    for (npy_intp i = 0, k = 0, rows = 0; i < ev.n; rows += IS_ALLOCATION(&ev, i), i++) {
        if (TRACKED(&ev, i, a) && !DEFERRED_FREE(&ev, i)) {
            s[k] = i;
            r[k++] = IS_ALLOCATION(&ev, i) ? rows : -1;
        }
    }
    out = PyTuple_Pack(2, sel, row);
done:
    Py_XDECREF(sel);
    Py_XDECREF(row);
    events_release(&ev);
    return out;
}

/* Live allocations by allocation_id (never 0): linear probing, deletion by
 * shifting the entries after it back. */
typedef struct {
    int64_t key, value;
} Entry;

typedef struct {
    Entry *slots;
    size_t mask, count;
} IdMap;

static size_t id_hash(int64_t key, size_t mask) {
    uint64_t x = (uint64_t)key;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return (size_t)(x ^ (x >> 31)) & mask;
}

static size_t id_find(const IdMap *m, int64_t key) {
    size_t h = id_hash(key, m->mask);
    while (m->slots[h].key && m->slots[h].key != key) h = (h + 1) & m->mask;
    return h;
}

static int id_put(IdMap *m, int64_t key, int64_t value) {
    if (2 * (m->count + 1) > m->mask + 1) {
        size_t cap = 2 * (m->mask + 1);
        Entry *old = m->slots;
        size_t old_cap = m->mask + 1;
        if (!(m->slots = PyMem_RawCalloc(cap, sizeof(Entry)))) {
            m->slots = old;
            return 0;
        }
        m->mask = cap - 1;
        for (size_t i = 0; i < old_cap; i++) {
            if (old[i].key) m->slots[id_find(m, old[i].key)] = old[i];
        }
        PyMem_RawFree(old);
    }
    size_t h = id_find(m, key);
    m->count += !m->slots[h].key;
    m->slots[h] = (Entry){key, value};
    return 1;
}

static void id_remove(IdMap *m, size_t i) {
    for (size_t j = i;;) {
        j = (j + 1) & m->mask;
        if (!m->slots[j].key) break;
        size_t k = id_hash(m->slots[j].key, m->mask);
        /* the entry at j may move to i unless its home k lies cyclically in (i, j] */
        if (i <= j ? (i < k && k <= j) : (i < k || k <= j)) continue;
        m->slots[i] = m->slots[j];
        i = j;
    }
    m->slots[i].key = 0;
    m->count--;
}

/* A replay in progress: the live allocations and the columns it writes. */
typedef struct {
    IdMap map;
    const Events *ev;
    const int64_t *bytes;
    int raw_region, tensor_region;
    int64_t *time_ps, *source, *activity, *heap, *peak, *allocs, *frees;
    int32_t *region;
    npy_intp n, n_allocs;
    uint64_t live, top; /* wrap as numpy's int64 sums do */
} Replay;

/* One event, with its allocation row (-1 for a deallocation); 0 when out of memory. */
static int replay_event(Replay *p, int64_t e, int64_t r) {
    npy_intp n = p->n;
    if (r >= 0) {
        if (!id_put(&p->map, p->ev->id[e], p->n_allocs)) return 0;
        p->allocs[p->n_allocs] = n;
        p->frees[p->n_allocs++] = -1;
        p->source[n] = r;
        p->activity[n] = 1;
        p->region[n] = p->ev->kind[e] == 4 ? p->raw_region : p->tensor_region;
        p->live += (uint64_t)p->bytes[r];
    } else {
        size_t h = id_find(&p->map, p->ev->id[e]);
        if (!p->map.slots[h].key) return 1; /* unmatched */
        int64_t k = p->map.slots[h].value;
        id_remove(&p->map, h);
        p->frees[k] = n;
        p->source[n] = p->source[p->allocs[k]];
        p->activity[n] = 2;
        p->region[n] = p->region[p->allocs[k]];
        p->live -= (uint64_t)p->bytes[p->source[n]];
    }
    p->time_ps[n] = (int64_t)((uint64_t)p->ev->time[e] * 1000000u); /* wraps as numpy's product does */
    p->heap[n] = (int64_t)p->live;
    if (n == 0 || (int64_t)p->live > (int64_t)p->top) p->top = p->live;
    p->peak[n] = (int64_t)p->top;
    p->n = n + 1;
    return 1;
}

static PyObject *replay(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *objs[5], *bytes_obj, *sel_obj = NULL, *row_obj = NULL;
    long long a;
    int raw_region, tensor_region;
    if (!PyArg_ParseTuple(args, "OOOOOOLii|OO", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &bytes_obj, &a,
                          &raw_region, &tensor_region, &sel_obj, &row_obj))
        return NULL;
    Events ev = {0};
    PyArrayObject *bytes = NULL, *sel = NULL, *row = NULL;
    PyObject *outs[8] = {NULL}, *result = NULL;
    static const int out_types[8] = {NPY_INT64, NPY_INT64, NPY_INT64, NPY_INT64, NPY_INT64, NPY_INT32, NPY_INT64, NPY_INT64};
    Replay p = {.map = {PyMem_RawCalloc(1024, sizeof(Entry)), 1023, 0}};
    if (!p.map.slots) return PyErr_NoMemory();
    if (!events_get(&ev, objs, 5) || !(bytes = column_arg(bytes_obj, NPY_INT64, -1))) goto done;
    if (sel_obj && (!(sel = column_arg(sel_obj, NPY_INT64, -1)) || !(row = column_arg(row_obj, NPY_INT64, PyArray_DIM(sel, 0)))))
        goto done;
    npy_intp m = 0, deferred = 0, n_rows = PyArray_DIM(bytes, 0);
    int64_t last = INT64_MIN;
    int in_order = 1;
    for (npy_intp i = 0; i < ev.n; i++) {
        if (!TRACKED(&ev, i, a)) continue;
        if (DEFERRED_FREE(&ev, i)) {
            deferred++;
        } else {
            m++;
            in_order &= ev.time[i] >= last;
            last = ev.time[i];
        }
    }
    if (!sel && !in_order) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const int64_t *s = sel ? PyArray_DATA(sel) : NULL, *r = sel ? PyArray_DATA(row) : NULL;
    if (sel) {
        m = PyArray_DIM(sel, 0);
        for (npy_intp j = 0; j < m; j++) {
            if (s[j] < 0 || s[j] >= ev.n || r[j] >= n_rows) {
                PyErr_SetString(PyExc_ValueError, "an index out of range");
                goto done;
            }
        }
    } else {
        npy_intp rows = 0;
        for (npy_intp i = 0; i < ev.n; i++) rows += IS_ALLOCATION(&ev, i);
        if (rows > n_rows) {
            PyErr_SetString(PyExc_ValueError, "fewer allocation rows than allocations");
            goto done;
        }
    }
    for (int j = 0; j < 8; j++) {
        if (!(outs[j] = new_column(m, out_types[j]))) goto done;
    }
    int64_t **columns[8] = {&p.time_ps, &p.source, &p.activity, &p.heap, &p.peak, NULL, &p.allocs, &p.frees};
    for (int j = 0; j < 8; j++) {
        if (columns[j]) *columns[j] = PyArray_DATA((PyArrayObject *)outs[j]);
    }
    p.region = PyArray_DATA((PyArrayObject *)outs[5]);
    p.ev = &ev;
    p.bytes = PyArray_DATA(bytes);
    p.raw_region = raw_region;
    p.tensor_region = tensor_region;
    int ok = 1;
    Py_BEGIN_ALLOW_THREADS
    if (sel) {
        for (npy_intp j = 0; j < m && ok; j++) ok = replay_event(&p, s[j], r[j]);
    } else {
        for (npy_intp i = 0, rows = 0; i < ev.n && ok; rows += IS_ALLOCATION(&ev, i), i++) {
            if (TRACKED(&ev, i, a) && !DEFERRED_FREE(&ev, i)) ok = replay_event(&p, i, IS_ALLOCATION(&ev, i) ? rows : -1);
        }
    }
    for (npy_intp k = 0; k < p.n_allocs; k++) {
        if (p.frees[k] < 0) p.frees[k] = p.n;
    }
    Py_END_ALLOW_THREADS
    if (!ok) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *cut[8];
    for (int j = 0; j < 8; j++) cut[j] = PySequence_GetSlice(outs[j], 0, j < 6 ? p.n : p.n_allocs);
    if (cut[0] && cut[1] && cut[2] && cut[3] && cut[4] && cut[5] && cut[6] && cut[7]) {
        result = Py_BuildValue("(nnnOOOOOOOO)", p.n, m, deferred, cut[0], cut[1], cut[2], cut[3], cut[4], cut[5], cut[6],
                               cut[7]);
    }
    for (int j = 0; j < 8; j++) Py_XDECREF(cut[j]);
done:
    PyMem_RawFree(p.map.slots);
    events_release(&ev);
    Py_XDECREF(bytes);
    Py_XDECREF(sel);
    Py_XDECREF(row);
    for (int j = 0; j < 8; j++) Py_XDECREF(outs[j]);
    return result;
}

static PyMethodDef methods[] = {
    {"scan_memory_log", scan_memory_log, METH_VARARGS,
     "scan_memory_log(buf, final) -> (consumed, kind, time_us, line, ints, strs)"},
    {"scan_block", scan_block, METH_VARARGS, "scan_block(buf, start, stop, dtype_names) -> dict of a block's columns"},
    {"select_events", select_events, METH_VARARGS, "select_events(kind, flags, allocator, id, a) -> (sel, row)"},
    {"replay", replay, METH_VARARGS,
     "replay(kind, flags, allocator, id, time, bytes, a, raw_region, tensor_region[, sel, row]) -> None or (n, selected, "
     "deferred, time_ps, source, activity, heap, peak, region, allocs, frees)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_logscan", .m_doc = NULL, .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__logscan(void) {
    import_array();
    draw_hash_seed();
    init_classes();
    return PyModule_Create(&module);
}
