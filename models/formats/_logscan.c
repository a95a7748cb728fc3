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
#define _GNU_SOURCE /* memmem, memrchr */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <string.h>

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
    const Field *fields;
    int count;
} Message;

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
static const Message MESSAGES[] = {
    {"MemoryLogStep", STEP, COUNT(STEP)},
    {"MemoryLogTensorAllocation", TENSOR_ALLOCATION, COUNT(TENSOR_ALLOCATION)},
    {"MemoryLogTensorDeallocation", TENSOR_DEALLOCATION, COUNT(TENSOR_DEALLOCATION)},
    {"MemoryLogTensorOutput", TENSOR_OUTPUT, COUNT(TENSOR_OUTPUT)},
    {"MemoryLogRawAllocation", RAW_ALLOCATION, COUNT(RAW_ALLOCATION)},
    {"MemoryLogRawDeallocation", RAW_DEALLOCATION, COUNT(RAW_DEALLOCATION)},
};

typedef struct {
    const char *p, *end, *base;
    int64_t *ints;
    int64_t *strs;
} Parser;

/* Character classes by table: 1 identifier start, 2 identifier character. */
static uint8_t char_class[256];
static void init_classes(void) {
    for (int c = 0; c < 256; c++) {
        int start = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        char_class[c] = (uint8_t)(start ? 3 : (c >= '0' && c <= '9') ? 2 : 0);
    }
}
static int is_ident_start(char c) { return char_class[(uint8_t)c] & 1; }
static int is_ident(char c) { return char_class[(uint8_t)c] & 2; }
static int is_digit(char c) { return c >= '0' && c <= '9'; }

static void skip_space(Parser *ps) {
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\r')) ps->p++;
}

static int read_ident(Parser *ps, const char **s, int *len) {
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
    while (ps->p < ps->end && is_digit(*ps->p)) {
        unsigned d = (unsigned)(*ps->p - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
        ps->p++;
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
    for (;;) {
        skip_space(ps);
        if (ps->end - ps->p >= DEBUG_LINK_LEN && memcmp(ps->p, DEBUG_LINK, DEBUG_LINK_LEN) == 0) {
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
        int len, k;
        if (!read_ident(ps, &s, &len)) return 0;
        for (k = 0; k < count; k++) {
            if (fields[k].len == len && memcmp(fields[k].name, s, (size_t)len) == 0) break;
        }
        if (k == count || (fields[k].type != T_DIM && (seen & (1u << k)))) return 0;
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
        if (strncmp(MESSAGES[k].name, name, (size_t)len) == 0 && MESSAGES[k].name[len] == 0) break;
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

static PyObject *scan_memory_log(PyObject *self, PyObject *args) {
    PyObject *obj;
    int final;
    if (!PyArg_ParseTuple(args, "Op", &obj, &final)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) return NULL;
    const char *base = view.buf, *end = base + view.len;
    if (!final) { /* stop after the last complete line */
        const char *last = view.len ? memrchr(base, '\n', (size_t)view.len) : NULL;
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
    while (p < end && (p = memmem(p, end - p, MARKER, MARKER_LEN))) {
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
        const char *line_start = p > base ? memrchr(base, '\n', (size_t)(p - base)) : NULL;
        line_start = line_start ? line_start + 1 : base;
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        r->line[0] = line_start - base;
        r->line[1] = eol - line_start;
        memset(r->ints, 0, sizeof r->ints);
        for (int j = 0; j < N_STRS; j++) {
            r->strs[2 * j] = -1;
            r->strs[2 * j + 1] = 0;
        }
        read_line(base, line_start, p, eol, &r->kind, &r->time, r->ints, r->strs);
        p = eol; /* another marker on the same line is part of this line */
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

static PyMethodDef methods[] = {
    {"scan_memory_log", scan_memory_log, METH_VARARGS,
     "scan_memory_log(buf, final) -> (consumed, kind, time_us, line, ints, strs)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_logscan", NULL, -1, methods};

PyMODINIT_FUNC PyInit__logscan(void) {
    import_array();
    init_classes();
    return PyModule_Create(&module);
}
