/* Streaming scanner of Chrome trace-event JSON into columns.
 *
 * A Kineto, TensorFlow or JAX trace is `{"traceEvents": [...], ...}` or a bare
 * array of events, and reaches many GB. Scanner reads it in chunks split
 * anywhere and turns each event into one row of columns (numpy arrays owning
 * their memory) without building the document as Python objects:
 *
 *   s = Scanner(arg_keys=(), *, max_event_bytes=256 MiB, max_meta_bytes=16 MiB)
 *       arg_keys: up to 16 bytes keys of `args` whose numbers are kept
 *   s.feed(chunk)    any bytes-like, in order; releases the GIL while scanning
 *   s.finish() -> dict, once:
 *       events, bad_events (elements that are not objects)
 *       ph, scope: uint8 (first byte of "ph" / "s", 0 if absent)
 *       name, cat, pid, tid, id, bind_id: int32 ids into strings, -1 if absent
 *           (pid/tid/id/bind_id numbers as their text; id2 as "local:x")
 *       ts_us: int64 floored µs, ts_ps: int32 0..999,999, dur_ps: int64 (-1)
 *       flags: uint16 (module constants BP_E ... LENGTH_OVERFLOW)
 *       offset: int64 of each event's '{' in the document, length: int32
 *       arg_rows (int32, ascending), arg_keys (uint8 index into arg_keys),
 *           arg_values (int64): only where an event's args[key] is a number
 *           (floats truncated, "0x.." and numeric strings parsed)
 *       strings: list of str; meta: {top-level key: raw JSON bytes};
 *       meta_skipped: [systemTraceEvents, stackFrames, samples present]
 *       warnings: list of str; complete, has_trace_events: bool;
 *       form: "object" | "array"; end_offset: bytes after the last whole
 *       element or value; error: str or None, error_offset: int (-1)
 *   s.events, s.position, s.error: progress so far
 *
 * Each event's top-level keys are parsed strictly; nested values that are not
 * needed (args values, unknown keys) are skipped by a depth counter that
 * matches bracket types for the first 64 levels and never recurses. An event
 * split between chunks is kept in a tail buffer and found by the same resumable
 * skipper, so every byte is looked at a bounded number of times whatever the
 * chunk sizes. Data errors never raise from feed(): the scanner stops and
 * finish() reports the error with its byte offset, keeping the events before
 * it. Only a document that does not start like JSON raises ValueError at once.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "_cbuffers.h"
#include "intern.h"
#include "json_lex.h"

#define MAX_ARGS 16
#define MAX_ARG_KEY 255
#define MAX_TEXT 4096 /* interned strings are cut to this many bytes */
#define MAX_KEY 4096  /* top-level keys kept up to this many bytes */
#define MAX_WARNINGS 64
#define DEFAULT_MAX_EVENT ((int64_t)256 << 20)
#define DEFAULT_MAX_META ((int64_t)16 << 20)
#define MAX_META_TOTAL ((int64_t)64 << 20)

/* flags column */
#define F_BP_E 0x0001
#define F_FLOW_IN 0x0002
#define F_FLOW_OUT 0x0004
#define F_TS_BAD 0x0008
#define F_DUR_BAD 0x0010
#define F_DUR_NEG 0x0020
#define F_TS_MISSING 0x0040
#define F_PID_STR 0x0080
#define F_TID_STR 0x0100
#define F_ARGS_PRESENT 0x0200
#define F_LENGTH_OVERFLOW 0x0400

/* ---------------------------------------------------------------- bytes */

enum { C_WS = 1, C_TOKEN = 2, C_DIGIT = 4, C_HEX = 8 };
static uint8_t CLS[256];

static void init_classes(void) {
    CLS[' '] = CLS['\t'] = CLS['\n'] = CLS['\r'] = C_WS;
    for (int c = '0'; c <= '9'; c++) CLS[c] = C_TOKEN | C_DIGIT | C_HEX;
    for (int c = 'a'; c <= 'z'; c++) CLS[c] = C_TOKEN;
    for (int c = 'A'; c <= 'Z'; c++) CLS[c] = C_TOKEN;
    for (int c = 'a'; c <= 'f'; c++) CLS[c] |= C_HEX;
    for (int c = 'A'; c <= 'F'; c++) CLS[c] |= C_HEX;
    CLS['+'] = CLS['-'] = CLS['.'] = C_TOKEN;
}

#define ALWAYS_INLINE PT_INLINE_ALWAYS

/* Whitespace runs are mostly 0 or 1 byte, or a newline and an indent. */
ALWAYS_INLINE const uint8_t *skip_ws(const uint8_t *p, const uint8_t *end) {
    if (p >= end || *p > ' ' || !(CLS[*p] & C_WS)) return p;
    p++;
    if (p >= end || *p > ' ') return p;
#ifdef PT_SSE2
    const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'),
                  tab = _mm_set1_epi8('\t');
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
                                  _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tab)));
        unsigned m = (unsigned)_mm_movemask_epi8(ws);
        if (m != 0xFFFF) return p + pt_ctz32(~m);
        p += 16;
    }
#endif
    while (p < end && (CLS[*p] & C_WS)) p++;
    return p;
}

static inline uint64_t load64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* First '"' or '\\' in [p, end), else a pointer >= end. */
ALWAYS_INLINE const uint8_t *find_quote_bs(const uint8_t *p, const uint8_t *end) {
#ifdef PT_SSE2
    const __m128i q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\');
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, b)));
        if (m) return p + pt_ctz32((unsigned)m);
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\') p++;
    return p;
}

/* First of " { } [ ] in [p, end), else a pointer >= end. */
static inline const uint8_t *find_struct(const uint8_t *p, const uint8_t *end) {
#ifdef PT_SSE2
    const __m128i q = _mm_set1_epi8('"'), m1 = _mm_set1_epi8((char)0xDF), br = _mm_set1_epi8('['),
                  bc = _mm_set1_epi8(']');
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i u = _mm_and_si128(v, m1); /* '{' -> '[', '}' -> ']' */
        __m128i hit = _mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_or_si128(_mm_cmpeq_epi8(u, br), _mm_cmpeq_epi8(u, bc)));
        int m = _mm_movemask_epi8(hit);
        if (m) return p + pt_ctz32((unsigned)m);
        p += 16;
    }
#endif
    while (p < end) {
        uint8_t c = *p;
        if (c == '"' || c == '{' || c == '}' || c == '[' || c == ']') return p;
        p++;
    }
    return p;
}

/* The closing quote of the string whose body starts at p, or NULL if it is
 * not in [p, end). *esc is set when the body holds a backslash. */
ALWAYS_INLINE const uint8_t *string_end(const uint8_t *p, const uint8_t *end, int *esc) {
    for (;;) {
        p = find_quote_bs(p, end);
        if (p >= end) return NULL;
        if (*p == '"') return p;
        *esc = 1;
        p += 2;
    }
}

/* Largest length <= limit that does not split a UTF-8 character of p[0..len). */
static inline size_t utf8_cut(const uint8_t *p, size_t len, size_t limit) {
    if (len <= limit) return len;
    size_t n = limit;
    for (int i = 0; i < 3 && n > 0 && (p[n] & 0xC0) == 0x80; i++) n--;
    return n;
}

/* ---------------------------------------------------------------- numbers */

/* A number below 1e30 in magnitude, exactly: hi * 1e18 + lo (lo < 1e18) and
 * a sign, so that no compiler needs 128-bit integers. */
typedef struct {
    int neg;
    uint64_t hi, lo;
} Wide;
#define E18 1000000000000000000ULL
#define WIDE_HI_LIMIT 1000000000000ULL /* hi * 1e18 = 1e30 */

/* w = w * 10 + digit; 0 when it reaches 1e30. */
static inline int wide_push_digit(Wide *w, int digit) {
    uint64_t lo = w->lo * 10 + (uint64_t)digit;
    w->hi = w->hi * 10 + lo / E18;
    w->lo = lo % E18;
    return w->hi < WIDE_HI_LIMIT;
}

/* The magnitude one more (a negative number floored). */
static inline void wide_inc(Wide *w) {
    if (++w->lo == E18) {
        w->lo = 0;
        w->hi++;
    }
}

/* w as an int64; 0 when out of range. */
static int wide_int64(const Wide *w, int64_t *out) {
    if (w->hi > 9) return 0;
    uint64_t m = w->hi * E18 + w->lo;
    if (m > (uint64_t)INT64_MAX + (uint64_t)w->neg) return 0;
    *out = w->neg && m ? -(int64_t)(m - 1) - 1 : (int64_t)m;
    return 1;
}

/* w / 1e6 floored, and the remainder (0 <= *ps < 1e6); 0 when the quotient
 * is out of int64's range. */
static int wide_div_1e6(const Wide *w, int64_t *us, int32_t *ps) {
    if (w->hi > 9223373) return 0; /* the quotient is above 2^63 */
    uint64_t q = w->hi * 1000000000000ULL + w->lo / 1000000, r = w->lo % 1000000;
    if (w->neg && r) {
        q++;
        r = 1000000 - r;
    }
    if (q > (uint64_t)INT64_MAX + (uint64_t)w->neg) return 0;
    *us = w->neg && q ? -(int64_t)(q - 1) - 1 : (int64_t)q;
    *ps = (int32_t)r;
    return 1;
}

enum { NUM_OK = 0, NUM_BAD = 1, NUM_OVERFLOW = 2 };

/* The decimal number text [p, q) times 10^scale, floored (trunc: toward zero)
 * into *out exactly, |value| < 1e30. Accepts JSON numbers plus a leading '+'
 * and forms like "1." or ".5" (numbers in strings are written freely). */
static int parse_scaled(const uint8_t *p, const uint8_t *q, int scale, int trunc, Wide *out) {
    int neg = 0;
    if (p < q && (*p == '-' || *p == '+')) neg = *p++ == '-';
    const uint8_t *i0 = p;
    while (p < q && (CLS[*p] & C_DIGIT)) p++;
    const uint8_t *i1 = p, *f0 = p, *f1 = p;
    if (p < q && *p == '.') {
        f0 = ++p;
        while (p < q && (CLS[*p] & C_DIGIT)) p++;
        f1 = p;
    }
    if (i0 == i1 && f0 == f1) return NUM_BAD;
    int64_t exp = 0;
    if (p < q && (*p == 'e' || *p == 'E')) {
        p++;
        int eneg = 0;
        if (p < q && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p >= q || !(CLS[*p] & C_DIGIT)) return NUM_BAD;
        while (p < q && (CLS[*p] & C_DIGIT)) {
            if (exp < 1000000000) exp = exp * 10 + (*p - '0');
            p++;
        }
        if (eneg) exp = -exp;
    }
    if (p != q) return NUM_BAD;
    /* power of ten (after scaling) of the first digit */
    int64_t pw = (int64_t)(i1 - i0) - 1 + exp + scale;
    Wide acc = {neg, 0, 0};
    int rem = 0;
    for (int part = 0; part < 2; part++) {
        const uint8_t *d = part ? f0 : i0, *de = part ? f1 : i1;
        for (; d < de; d++, pw--) {
            int v = *d - '0';
            if (pw >= 0) {
                if (!wide_push_digit(&acc, v)) return NUM_OVERFLOW;
            } else if (v) {
                rem = 1;
                break;
            }
        }
        if (rem) break;
    }
    if (!rem && pw >= 0 && (acc.hi || acc.lo)) {
        for (int64_t k = 0; k <= pw; k++)
            if (!wide_push_digit(&acc, 0)) return NUM_OVERFLOW;
    }
    if (neg && rem && !trunc) wide_inc(&acc);
    *out = acc;
    return NUM_OK;
}

/* The common number forms, [-]d{1,18}[.d*] without exponent: integer part,
 * the first 6 fraction digits as millionths, and whether later fraction
 * digits are non-zero. 0 when the text needs parse_scaled. */
static inline int quick_decimal(const uint8_t *p, const uint8_t *q, int *neg, uint64_t *ip, uint32_t *frac, int *rem) {
    static const uint32_t SCALE[7] = {1000000, 100000, 10000, 1000, 100, 10, 1};
    *neg = 0;
    if (p < q && *p == '-') {
        *neg = 1;
        p++;
    }
    const uint8_t *d0 = p;
    uint64_t v = 0;
    while (p < q && (unsigned)(*p - '0') < 10) v = v * 10 + (uint64_t)(*p++ - '0');
    if (p == d0 || p - d0 > 18) return 0;
    uint32_t f = 0;
    int nf = 0, r = 0;
    if (p < q && *p == '.') {
        const uint8_t *f0 = ++p;
        for (; p < q && (unsigned)(*p - '0') < 10; p++) {
            if (nf < 6) {
                f = f * 10 + (uint32_t)(*p - '0');
                nf++;
            } else if (*p != '0') {
                r = 1;
            }
        }
        if (p == f0) return 0;
    }
    if (p != q) return 0;
    *ip = v;
    *frac = f * SCALE[nf];
    *rem = r;
    return 1;
}

/* An args value as int64: a JSON number truncated toward zero, or a string
 * holding a number or 0x hex; INT64_MIN when it is neither or does not fit. */
static int64_t arg_int(const uint8_t *p, const uint8_t *q, int is_str) {
    if (is_str && q - p > 2 && p[0] == '0' && (p[1] | 0x20) == 'x') {
        p += 2;
        if (q - p > 16) return INT64_MIN;
        uint64_t v = 0;
        for (; p < q; p++) {
            uint8_t c = *p;
            if (!(CLS[c] & C_HEX)) return INT64_MIN;
            v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        return (int64_t)v;
    }
    int neg, rem;
    uint64_t ip;
    uint32_t frac;
    if (quick_decimal(p, q, &neg, &ip, &frac, &rem)) return neg ? -(int64_t)ip : (int64_t)ip;
    Wide w;
    int64_t v;
    if (parse_scaled(p, q, 0, 1, &w) != NUM_OK || !wide_int64(&w, &v)) return INT64_MIN;
    return v;
}

/* ---------------------------------------------------------------- growable buffer */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} Buf;

static int buf_append(Buf *b, const uint8_t *p, size_t n) {
    if (n == 0) return 1;
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) cap *= 2;
        uint8_t *grown = PyMem_RawRealloc(b->data, cap);
        if (!grown) return 0;
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 1;
}

static void buf_free(Buf *b) {
    PyMem_RawFree(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

/* ---------------------------------------------------------------- interning */

/* memcmp(a, b, n) == 0 without a call for the short strings of traces. */
static inline int eq_bytes(const uint8_t *a, const uint8_t *b, size_t n) {
    if (n > 32) return memcmp(a, b, n) == 0;
    for (; n >= 8; n -= 8, a += 8, b += 8)
        if (load64(a) != load64(b)) return 0;
    for (; n; n--)
        if (*a++ != *b++) return 0;
    return 1;
}

/* ---------------------------------------------------------------- skipping values */

/* A resumable skipper of one JSON value: strings by memchr-like scans,
 * containers by a depth counter (bracket types checked for 64 levels). */
enum { SK_START, SK_CONT, SK_STR, SK_ESC, SK_TOKEN };

typedef struct {
    int64_t depth;
    uint64_t bits; /* bit d: the container at depth d + 1 is an array */
    int mode;
} SkipState;

/* Skips from p; returns the end of the value, or NULL when [p, end) ends
 * first (the state remembers where) or on an error (*err set). */
static const uint8_t *skip_value(SkipState *st, const uint8_t *p, const uint8_t *end, const uint8_t **err,
                                 const char **why) {
    int64_t depth = st->depth;
    uint64_t bits = st->bits;
    int mode = st->mode;
    for (;;) {
        uint8_t c;
        switch (mode) {
        case SK_START:
            if (p >= end) goto more;
            c = *p;
            if (c == '"') {
                mode = SK_STR;
                p++;
            } else if (c == '{' || c == '[') {
                depth = 1;
                bits = c == '[';
                mode = SK_CONT;
                p++;
            } else if (CLS[c] & C_TOKEN) {
                mode = SK_TOKEN;
                p++;
            } else {
                *err = p;
                *why = "a value cannot start here";
                return NULL;
            }
            break;
        case SK_TOKEN:
            while (p < end && (CLS[*p] & C_TOKEN)) p++;
            if (p >= end) goto more;
            st->mode = SK_START;
            st->depth = 0;
            return p;
        case SK_STR:
            p = find_quote_bs(p, end);
            if (p >= end) goto more;
            if (*p++ == '\\') {
                mode = SK_ESC;
                break;
            }
            if (depth == 0) {
                st->mode = SK_START;
                return p;
            }
            mode = SK_CONT;
            break;
        case SK_ESC:
            if (p >= end) goto more;
            p++;
            mode = SK_STR;
            break;
        case SK_CONT:
            p = find_struct(p, end);
            if (p >= end) goto more;
            c = *p++;
            if (c == '"') {
                mode = SK_STR;
            } else if (c == '{' || c == '[') {
                if (depth < 64) bits = (bits & ~((uint64_t)1 << depth)) | ((uint64_t)(c == '[') << depth);
                depth++;
            } else {
                depth--;
                if (depth < 64 && (int)((bits >> depth) & 1) != (c == ']')) {
                    *err = p - 1;
                    *why = "mismatched bracket";
                    return NULL;
                }
                if (depth == 0) {
                    st->mode = SK_START;
                    st->depth = 0;
                    return p;
                }
            }
            break;
        }
    }
more:
    st->depth = depth;
    st->bits = bits;
    st->mode = mode;
    return NULL;
}

/* ---------------------------------------------------------------- the scanner */

typedef struct {
    uint8_t *ph, *scope;
    int32_t *name, *cat, *pid, *tid, *id, *bind_id, *ts_ps, *length;
    int64_t *ts_us, *dur_ps, *offset;
    uint16_t *flags;
    int64_t n, cap;
    /* args values, only where an event has one (most events have none):
     * row, index of the key in arg_keys, value; rows ascending */
    int32_t *arg_row;
    uint8_t *arg_key;
    int64_t *arg_val;
    int64_t an, acap;
    uint32_t mapped; /* bit k: column k (in column_slots order) is a mapping */
} Columns;

typedef struct {
    int64_t ts_us, dur_ps;
    int32_t name, cat, pid, tid, id, bind_id, ts_ps;
    uint16_t flags;
    uint8_t ph, scope;
    int64_t args[MAX_ARGS];
} Event;

typedef struct {
    uint8_t *key;
    size_t klen;
    uint8_t *value;
    size_t vlen;
} Meta;

enum {
    S_START,     /* BOM and whitespace before the document */
    S_OBJ_KEY0,  /* after the top-level '{' */
    S_OBJ_KEY,   /* after a ',' between top-level members */
    S_KEY_STR,   /* inside a top-level key */
    S_COLON,     /* after a top-level key */
    S_VALUE,     /* after its ':' */
    S_SKIPPING,  /* inside a top-level value other than traceEvents */
    S_OBJ_NEXT,  /* after a top-level value */
    S_ARR_FIRST, /* after the events array's '[' */
    S_ARR_ELEM,  /* after a ',' in the events array */
    S_ARR_NEXT,  /* after an element of the events array */
    S_EVENT_TAIL, /* inside an event that spans chunks */
    S_BAD_ELEM,  /* inside an element that is not an object */
    S_END,       /* after the document */
    S_STOPPED,   /* error, trailing data or not JSON: input is ignored */
};

enum { V_TRACE_EVENTS, V_DISCARD, V_META };
static const char *SKIPPED_KEYS[] = {"systemTraceEvents", "stackFrames", "samples"};
#define N_SKIPPED 3

typedef struct {
    PyObject_HEAD
    int busy, finished;
    /* configuration */
    int nargs;
    uint8_t argkey[MAX_ARGS][MAX_ARG_KEY + 1];
    size_t argklen[MAX_ARGS];
    uint16_t args_by_len[MAX_ARG_KEY + 1];
    uint16_t text_args; /* bit a: arg key a keeps its value's text (interned), not a number */
    PyObject *argkeys; /* tuple of bytes: the numeric keys, then the text keys */
    int64_t max_event, max_meta;
    /* position */
    int64_t pos;      /* document offset of the next byte fed */
    int64_t good_end; /* offset after the last complete element or value */
    int state;
    int form;         /* 0 unknown, 1 object, 2 bare array */
    int bom;          /* BOM bytes seen */
    int seen_start;
    /* top-level key being read */
    Buf key;
    int key_esc, key_pending, key_long;
    int value_kind;
    /* value being skipped (top level, bad element or event tail) */
    SkipState sk;
    Buf tail;
    int64_t tail_start;
    Buf meta_value;
    int meta_over;
    Meta *meta;
    Py_ssize_t nmeta, meta_cap;
    int64_t meta_total;
    int meta_skipped;
    /* results */
    Columns col;
    Interner strings;
    /* Text args repeat a few values (Kineto's Input Dims): the last id per
     * hash bucket, so most skip the big table (one cache miss each). */
    struct {
        uint64_t hash;
        int32_t id1; /* id + 1; 0: empty */
    } text_cache[256];
    int64_t bad_events, truncated, long_events;
    int cut_in_event; /* strings cut in the event being parsed */
    int has_trace_events;
    char *warnings[MAX_WARNINGS];
    int nwarnings, warnings_dropped;
    /* stop reasons */
    int oom;
    int not_json;
    int has_error;
    int64_t error_offset;
    char error[256];
    const char *reason; /* set by the parsers before returning an error */
    uint8_t dec[MAX_TEXT + 64]; /* decoded text scratch */
} Scanner;

static void warn(Scanner *s, const char *fmt, ...) {
    if (s->nwarnings >= MAX_WARNINGS) {
        s->warnings_dropped++;
        return;
    }
    char *w = PyMem_RawMalloc(512);
    if (!w) {
        s->oom = 1;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w, 512, fmt, ap);
    va_end(ap);
    s->warnings[s->nwarnings++] = w;
}

static void fail_at(Scanner *s, int64_t offset, const char *reason) {
    if (s->has_error) return;
    s->has_error = 1;
    s->error_offset = offset;
    snprintf(s->error, sizeof s->error, "%s at byte %lld", reason, (long long)offset);
    s->state = S_STOPPED;
}

#define NCOL_FIXED 14

/* Column memory. Small blocks come from the heap; from BIG_COLUMN bytes on, a
 * column gets an anonymous mapping of its own (a header holds its size),
 * advised to use huge pages before it is touched and grown by mremap: the
 * page faults of filling ~100 bytes per event are then 512x fewer. */
#ifdef PT_HAVE_MREMAP
#define HAVE_MAPPED_COLUMNS 1
#define BIG_COLUMN ((size_t)4 << 20)
#define HUGE_PAGE ((size_t)2 << 20)
#define MAP_HEADER 64

/* A mapping of n bytes (a multiple of HUGE_PAGE) at a HUGE_PAGE boundary,
 * one VMA advised to use huge pages. */
static uint8_t *map_aligned(size_t n) {
    size_t span = n + HUGE_PAGE;
    uint8_t *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *base = (uint8_t *)(((uintptr_t)raw + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1));
    if (base > raw) munmap(raw, (size_t)(base - raw));
    if (raw + span > base + n) munmap(base + n, (size_t)(raw + span - (base + n)));
    madvise(base, n, MADV_HUGEPAGE);
    return base;
}
#endif

/* Grows (or shrinks) a column to new_bytes; *mapped says which kind it is. */
static void *col_realloc(void *p, size_t old_bytes, size_t new_bytes, int *mapped) {
#ifdef HAVE_MAPPED_COLUMNS
    if (*mapped || new_bytes >= BIG_COLUMN) {
        uint8_t *base;
        if (*mapped && new_bytes < old_bytes) { /* shrink in place */
            uint8_t *old = (uint8_t *)p - MAP_HEADER;
            size_t want = (new_bytes + MAP_HEADER + 4095) & ~(size_t)4095;
            if (want >= *(size_t *)old) return p;
            base = mremap(old, *(size_t *)old, want, 0);
            if (base == MAP_FAILED) return NULL;
            *(size_t *)base = want;
            return base + MAP_HEADER;
        }
        size_t want = (new_bytes + MAP_HEADER + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
        base = map_aligned(want);
        if (!base) return NULL;
        if (*mapped) { /* move the pages over, no copy */
            uint8_t *old = (uint8_t *)p - MAP_HEADER;
            uint8_t *moved = mremap(old, *(size_t *)old, want, MREMAP_MAYMOVE | MREMAP_FIXED, base);
            if (moved == MAP_FAILED) {
                munmap(base, want);
                return NULL;
            }
        } else {
            if (p) memcpy(base + MAP_HEADER, p, old_bytes < new_bytes ? old_bytes : new_bytes);
            PyMem_RawFree(p);
            *mapped = 1;
        }
        *(size_t *)base = want;
        return base + MAP_HEADER;
    }
#endif
    (void)old_bytes;
    (void)mapped;
    return PyMem_RawRealloc(p, new_bytes ? new_bytes : 1);
}

static void col_free(void *p, int mapped) {
    if (!p) return;
#ifdef HAVE_MAPPED_COLUMNS
    if (mapped) {
        uint8_t *base = (uint8_t *)p - MAP_HEADER;
        munmap(base, *(size_t *)base);
        return;
    }
#endif
    (void)mapped;
    PyMem_RawFree(p);
}

/* The columns in one order: pointer slots and item sizes. */
static int column_slots(Columns *c, int nargs, void ***ptrs, size_t *sizes) {
    void **fixed[NCOL_FIXED] = {
        (void **)&c->ph, (void **)&c->scope, (void **)&c->name, (void **)&c->cat, (void **)&c->pid,
        (void **)&c->tid, (void **)&c->id, (void **)&c->bind_id, (void **)&c->ts_ps, (void **)&c->length,
        (void **)&c->ts_us, (void **)&c->dur_ps, (void **)&c->offset, (void **)&c->flags,
    };
    static const size_t fixed_sizes[NCOL_FIXED] = {1, 1, 4, 4, 4, 4, 4, 4, 4, 4, 8, 8, 8, 2};
    for (int k = 0; k < NCOL_FIXED; k++) {
        ptrs[k] = fixed[k];
        sizes[k] = fixed_sizes[k];
    }
    (void)nargs;
    return NCOL_FIXED;
}

static int columns_grow(Columns *c, int nargs) {
    int64_t cap = c->cap ? c->cap * 2 : 4096;
    void **ptrs[NCOL_FIXED + MAX_ARGS];
    size_t sizes[NCOL_FIXED + MAX_ARGS];
    int ncol = column_slots(c, nargs, ptrs, sizes);
    for (int k = 0; k < ncol; k++) {
        int mapped = (c->mapped >> k) & 1;
        void *grown = col_realloc(*ptrs[k], sizes[k] * (size_t)c->cap, sizes[k] * (size_t)cap, &mapped);
        if (!grown) return 0;
        *ptrs[k] = grown;
        c->mapped |= (uint32_t)mapped << k;
    }
    c->cap = cap;
    return 1;
}

static int sparse_grow(Columns *c) {
    int64_t cap = c->acap ? c->acap * 2 : 4096;
    int32_t *row = PyMem_RawRealloc(c->arg_row, sizeof(int32_t) * (size_t)cap);
    if (row) c->arg_row = row;
    uint8_t *key = PyMem_RawRealloc(c->arg_key, (size_t)cap);
    if (key) c->arg_key = key;
    int64_t *val = PyMem_RawRealloc(c->arg_val, sizeof(int64_t) * (size_t)cap);
    if (val) c->arg_val = val;
    if (!row || !key || !val) return 0;
    c->acap = cap;
    return 1;
}

static void free_columns(Columns *c, int nargs) {
    void **ptrs[NCOL_FIXED + MAX_ARGS];
    size_t sizes[NCOL_FIXED + MAX_ARGS];
    int ncol = column_slots(c, nargs, ptrs, sizes);
    for (int k = 0; k < ncol; k++) col_free(*ptrs[k], (c->mapped >> k) & 1);
    PyMem_RawFree(c->arg_row);
    PyMem_RawFree(c->arg_key);
    PyMem_RawFree(c->arg_val);
    memset(c, 0, sizeof *c);
}

/* ------------------------------------------------ one event, from a contiguous buffer */

enum { PE_OK, PE_MORE, PE_ERR, PE_OOM };
static const char LIMIT_REASON[] = "an event is larger than the limit";
enum { V_STR, V_TOKEN, V_OTHER };

typedef struct {
    const uint8_t *b, *e;
    int kind, esc;
    /* numbers read by read_number in the form [-]d{1,18}[.d+]: */
    int fast, neg, rem; /* rem: non-zero digits after the sixth decimal */
    uint64_t ip;        /* integer part */
    uint32_t frac;      /* first six decimals, as millionths */
} Val;

#ifdef PT_LITTLE_ENDIAN
#define SWAR_DIGITS 1
static inline int is_8_digits(uint64_t x) {
    return ((x & 0xF0F0F0F0F0F0F0F0ULL) | (((x + 0x0606060606060606ULL) & 0xF0F0F0F0F0F0F0F0ULL) >> 4)) ==
           0x3333333333333333ULL;
}

/* The value of 8 ASCII digits, the first in the lowest byte. */
static inline uint32_t parse_8_digits(uint64_t x) {
    const uint64_t mask = 0x000000FF000000FFULL;
    x -= 0x3030303030303030ULL;
    x = x * 10 + (x >> 8);
    x = ((x & mask) * (100 + (1000000ULL << 32)) + ((x >> 16) & mask) * (1 + (10000ULL << 32))) >> 32;
    return (uint32_t)x;
}
#endif

/* A number token at p (a digit or '-'): its span, and the fast fields when
 * it has the common form and is followed by a byte outside tokens. */
ALWAYS_INLINE int read_number(const uint8_t **pp, const uint8_t *end, Val *v) {
    static const uint32_t SCALE[7] = {1000000, 100000, 10000, 1000, 100, 10, 1};
    const uint8_t *p = *pp, *q = p;
    int neg = *q == '-';
    q += neg;
    const uint8_t *d0 = q;
    uint64_t ip = 0;
#ifdef SWAR_DIGITS
    while (end - q >= 8 && q - d0 <= 10) {
        uint64_t x = load64(q);
        if (!is_8_digits(x)) break;
        ip = ip * 100000000 + parse_8_digits(x);
        q += 8;
    }
#endif
    while (q < end && (unsigned)(*q - '0') < 10 && q - d0 < 19) ip = ip * 10 + (uint64_t)(*q++ - '0');
    int ok = q > d0 && q - d0 <= 18, rem = 0;
    uint32_t frac = 0;
    if (ok && q < end && *q == '.') {
        const uint8_t *f0 = ++q;
        int nf = 0;
        for (; q < end && (unsigned)(*q - '0') < 10; q++) {
            if (nf < 6) {
                frac = frac * 10 + (uint32_t)(*q - '0');
                nf++;
            } else if (*q != '0') {
                rem = 1;
            }
        }
        ok = q > f0;
        frac *= SCALE[nf];
    }
    if (q >= end) return PE_MORE;
    if (CLS[*q] & C_TOKEN) { /* an exponent, a 19th digit, a word: parse_scaled's */
        ok = 0;
        while (q < end && (CLS[*q] & C_TOKEN)) q++;
        if (q >= end) return PE_MORE;
    }
    v->b = p;
    v->e = q;
    v->kind = V_TOKEN;
    v->esc = 0;
    v->fast = ok;
    v->neg = neg;
    v->rem = rem;
    v->ip = ip;
    v->frac = frac;
    *pp = q;
    return PE_OK;
}

#define NEED(q)                         \
    do {                                \
        if ((q) >= end) return PE_MORE; \
    } while (0)
#define FAIL(at, why)     \
    do {                  \
        *errp = (at);     \
        s->reason = (why); \
        return PE_ERR;    \
    } while (0)

/* Reads the value at *pp (which is < end): a string's body, a scalar token,
 * or a skipped container. */
ALWAYS_INLINE int read_value(Scanner *s, const uint8_t **pp, const uint8_t *end, Val *v, const uint8_t **errp,
                             int want_num) {
    const uint8_t *p = *pp;
    uint8_t c = *p;
    v->fast = 0;
    if (want_num && (c == '-' || (unsigned)(c - '0') < 10)) return read_number(pp, end, v);
    if (c == '"') {
        int esc = 0;
        const uint8_t *q = string_end(p + 1, end, &esc);
        if (!q) return PE_MORE;
        v->b = p + 1;
        v->e = q;
        v->kind = V_STR;
        v->esc = esc;
        *pp = q + 1;
        return PE_OK;
    }
    if (CLS[c] & C_TOKEN) {
        const uint8_t *q = p + 1;
        while (q < end && (CLS[*q] & C_TOKEN)) q++;
        if (q >= end) return PE_MORE;
        v->b = p;
        v->e = q;
        v->kind = V_TOKEN;
        v->esc = 0;
        *pp = q;
        return PE_OK;
    }
    if (c == '{' || c == '[') {
        SkipState st = {0, 0, SK_START};
        const uint8_t *err = NULL;
        const uint8_t *q = skip_value(&st, p, end, &err, &s->reason);
        if (err) {
            *errp = err;
            return PE_ERR;
        }
        if (!q) return PE_MORE;
        v->b = p; /* the raw text, for text arg keys */
        v->e = q;
        v->esc = 0;
        v->kind = V_OTHER;
        *pp = q;
        return PE_OK;
    }
    FAIL(p, "a value cannot start here");
}

/* The text of a string (decoded) or token, cut to MAX_TEXT bytes. */
static const uint8_t *value_text(Scanner *s, const Val *v, size_t *n) {
    const uint8_t *t = v->b;
    size_t len = (size_t)(v->e - v->b);
    if (v->esc) {
        int all;
        len = json_unescape(v->b, v->e, s->dec, MAX_TEXT + 4, &all, 0);
        t = s->dec;
        if (!all && len <= MAX_TEXT) s->cut_in_event++;
    }
    if (len > MAX_TEXT) {
        len = utf8_cut(t, len, MAX_TEXT);
        s->cut_in_event++;
    }
    *n = len;
    return t;
}

/* Interns a string or token value (null and containers: -1). */
static int intern_value(Scanner *s, const Val *v, int tokens, int32_t *id) {
    if (v->kind == V_OTHER || (v->kind == V_TOKEN && (!tokens || (v->e - v->b == 4 && !memcmp(v->b, "null", 4))))) {
        *id = -1;
        return PE_OK;
    }
    size_t n;
    const uint8_t *t = value_text(s, v, &n);
    *id = intern(&s->strings, t, n, 1);
    return *id < 0 ? PE_OOM : PE_OK;
}

/* First byte of a string value (decoded), 0 for others or "". */
static uint8_t first_byte(const Val *v) {
    if (v->kind != V_STR || v->b == v->e) return 0;
    if (!v->esc) return v->b[0];
    uint8_t out[8];
    int all;
    size_t n = json_unescape(v->b, v->e, out, sizeof out, &all, 0);
    return n ? out[0] : 0;
}

static int value_is(const Val *v, const char *text) {
    size_t n = strlen(text);
    return (size_t)(v->e - v->b) == n && !v->esc && !memcmp(v->b, text, n);
}

/* A number value (token, or string holding a number) times 10^6, floored. */
static int value_number(const Val *v, Wide *out) {
    if (v->kind == V_OTHER || v->esc) return NUM_BAD;
    int neg, rem;
    uint64_t ip;
    uint32_t frac;
    if (quick_decimal(v->b, v->e, &neg, &ip, &frac, &rem)) {
        out->neg = neg;
        out->hi = ip / 1000000000000ULL;
        out->lo = ip % 1000000000000ULL * 1000000 + frac;
        if (neg && rem) wide_inc(out);
        return NUM_OK;
    }
    return parse_scaled(v->b, v->e, 6, 0, out);
}

/* Reads a key string at p (< end, must be '"'); k/klen get its text
 * (decoded into kbuf when escaped, klen = SIZE_MAX when too long for kbuf). */
ALWAYS_INLINE int read_key(Scanner *s, const uint8_t **pp, const uint8_t *end, uint8_t *kbuf, size_t kcap,
                    const uint8_t **k, size_t *klen, const uint8_t **errp) {
    const uint8_t *p = *pp;
    if (*p != '"') FAIL(p, "expected a key string");
    int esc = 0;
    const uint8_t *q = string_end(p + 1, end, &esc);
    if (!q) return PE_MORE;
    if (esc) {
        int all;
        *klen = json_unescape(p + 1, q, kbuf, kcap, &all, 0);
        if (!all) *klen = SIZE_MAX;
        *k = kbuf;
    } else {
        *k = p + 1;
        *klen = (size_t)(q - p - 1);
    }
    *pp = q + 1;
    return PE_OK;
}

/* After a key: whitespace, ':' and whitespace up to the value. */
#define COLON()                                                \
    do {                                                       \
        p = skip_ws(p, end);                                   \
        NEED(p);                                               \
        if (*p != ':') FAIL(p, "expected ':' after a key");    \
        p = skip_ws(p + 1, end);                               \
        NEED(p);                                               \
    } while (0)

/* After a member: whitespace, then ',' (continue) or '}' (break out). */
#define NEXT_MEMBER(what)                                                        \
    p = skip_ws(p, end);                                                         \
    NEED(p);                                                                     \
    if (*p == ',') {                                                             \
        p = skip_ws(p + 1, end);                                                 \
        NEED(p);                                                                 \
        continue;                                                                \
    }                                                                            \
    if (*p == '}') {                                                             \
        p++;                                                                     \
        break;                                                                   \
    }                                                                            \
    FAIL(p, "expected ',' or '}' after a value in " what);

/* The args object at p: numbers of the wanted keys. */
static int parse_args(Scanner *s, const uint8_t **pp, const uint8_t *end, Event *ev, const uint8_t **errp) {
    const uint8_t *p = *pp;
    Val v = {NULL, NULL, V_OTHER, 0, 0, 0, 0, 0, 0};
    int rc;
    if (*p != '{') {
        rc = read_value(s, &p, end, &v, errp, 0);
        *pp = p;
        return rc;
    }
    ev->flags |= F_ARGS_PRESENT;
    p = skip_ws(p + 1, end);
    NEED(p);
    if (*p == '}') {
        *pp = p + 1;
        return PE_OK;
    }
    for (;;) {
        const uint8_t *k;
        size_t klen;
        uint8_t kbuf[MAX_ARG_KEY + 1];
        if ((rc = read_key(s, &p, end, kbuf, sizeof kbuf, &k, &klen, errp)) != PE_OK) return rc;
        COLON();
        int match = -1;
        if (klen <= MAX_ARG_KEY) {
            for (unsigned m = s->args_by_len[klen]; m; m &= m - 1) {
                int a = pt_ctz32(m);
                if (eq_bytes(s->argkey[a], k, klen)) {
                    match = a;
                    break;
                }
            }
        }
        int text = match >= 0 && ((s->text_args >> match) & 1);
        if ((rc = read_value(s, &p, end, &v, errp, match >= 0 && !text)) != PE_OK) return rc;
        if (text) { /* the value's text: a string's body, else its JSON as written */
            size_t n;
            const uint8_t *t = value_text(s, &v, &n);
            uint64_t h = hash_bytes(t, n);
            int32_t id = s->text_cache[h & 255].id1 - 1;
            size_t len = 0;
            const uint8_t *known = id >= 0 ? intern_bytes(&s->strings, id, &len) : NULL;
            if (!known || s->text_cache[h & 255].hash != h || len != n || memcmp(known, t, n)) {
                id = intern(&s->strings, t, n, 1);
                if (id < 0) return PE_OOM;
                s->text_cache[h & 255].hash = h;
                s->text_cache[h & 255].id1 = id + 1;
            }
            ev->args[match] = id;
        } else if (match >= 0) {
            int64_t x = INT64_MIN;
            if (v.fast) {
                x = v.neg ? -(int64_t)v.ip : (int64_t)v.ip;
            } else if (v.kind == V_TOKEN) {
                x = arg_int(v.b, v.e, 0);
            } else if (v.kind == V_STR && !v.esc) {
                x = arg_int(v.b, v.e, 1);
            }
            ev->args[match] = x;
        }
        NEXT_MEMBER("args");
    }
    *pp = p;
    return PE_OK;
}

/* The id2 object at p: {"local": x} or {"global": x} interned as "local:x". */
static int parse_id2(Scanner *s, const uint8_t **pp, const uint8_t *end, Event *ev, const uint8_t **errp) {
    const uint8_t *p = *pp;
    Val v, found = {NULL, NULL, V_OTHER, 0, 0, 0, 0, 0, 0};
    const char *scope = NULL;
    int rc;
    if (*p != '{') {
        rc = read_value(s, &p, end, &v, errp, 0);
        *pp = p;
        return rc;
    }
    p = skip_ws(p + 1, end);
    NEED(p);
    if (*p == '}') {
        *pp = p + 1;
        return PE_OK;
    }
    for (;;) {
        const uint8_t *k;
        size_t klen;
        uint8_t kbuf[16];
        if ((rc = read_key(s, &p, end, kbuf, sizeof kbuf, &k, &klen, errp)) != PE_OK) return rc;
        COLON();
        if ((rc = read_value(s, &p, end, &v, errp, 0)) != PE_OK) return rc;
        if (v.kind != V_OTHER) {
            if (klen == 5 && !memcmp(k, "local", 5)) {
                scope = "local:";
                found = v;
            } else if (klen == 6 && !memcmp(k, "global", 6)) {
                scope = "global:";
                found = v;
            }
        }
        NEXT_MEMBER("id2");
    }
    *pp = p;
    if (scope) {
        size_t n, m = strlen(scope);
        const uint8_t *t = value_text(s, &found, &n);
        uint8_t buf[MAX_TEXT + 16];
        memcpy(buf, scope, m);
        memcpy(buf + m, t, n);
        n = utf8_cut(buf, n + m, MAX_TEXT);
        ev->id = intern(&s->strings, buf, n, 1);
        if (ev->id < 0) return PE_OOM;
    }
    return PE_OK;
}

enum {
    K_OTHER, K_PH, K_NAME, K_CAT, K_PID, K_TID, K_TS, K_DUR, K_ID, K_ID2, K_BIND_ID, K_BP, K_FLOW_IN,
    K_FLOW_OUT, K_S, K_ARGS
};

static inline int key_id(const uint8_t *k, size_t n) {
#define IS(lit) (memcmp(k, lit, sizeof(lit) - 1) == 0)
    switch (n) {
    case 1: return k[0] == 's' ? K_S : K_OTHER;
    case 2:
        if (IS("ph")) return K_PH;
        if (IS("ts")) return K_TS;
        if (IS("id")) return K_ID;
        if (IS("bp")) return K_BP;
        return K_OTHER;
    case 3:
        if (IS("cat")) return K_CAT;
        if (IS("pid")) return K_PID;
        if (IS("tid")) return K_TID;
        if (IS("dur")) return K_DUR;
        if (IS("id2")) return K_ID2;
        return K_OTHER;
    case 4:
        if (IS("name")) return K_NAME;
        if (IS("args")) return K_ARGS;
        return K_OTHER;
    case 7:
        if (IS("flow_in")) return K_FLOW_IN;
        if (IS("bind_id")) return K_BIND_ID;
        return K_OTHER;
    case 8: return IS("flow_out") ? K_FLOW_OUT : K_OTHER;
    default: return K_OTHER;
    }
#undef IS
}

/* Parses the event object starting at p ('{') into the columns.
 * PE_MORE when [p, end) ends first: nothing is added then. */
static int parse_event(Scanner *s, const uint8_t *p, const uint8_t *end, int64_t offset, const uint8_t **out,
                       const uint8_t **errp) {
    const uint8_t *start = p;
    Event ev;
    ev.ts_us = 0;
    ev.dur_ps = -1;
    ev.name = ev.cat = ev.pid = ev.tid = ev.id = ev.bind_id = -1;
    ev.ts_ps = 0;
    ev.flags = F_TS_MISSING;
    ev.ph = ev.scope = 0;
    for (int a = 0; a < s->nargs; a++) ev.args[a] = INT64_MIN;
    int rc;
    Val v = {NULL, NULL, V_OTHER, 0, 0, 0, 0, 0, 0};
    Wide num;
    s->cut_in_event = 0;
    p = skip_ws(p + 1, end);
    NEED(p);
    if (*p == '}') {
        p++;
    } else {
        for (;;) {
            const uint8_t *k;
            size_t klen;
            uint8_t kbuf[16];
            if ((rc = read_key(s, &p, end, kbuf, sizeof kbuf, &k, &klen, errp)) != PE_OK) return rc;
            int key = klen < sizeof kbuf ? key_id(k, klen) : K_OTHER;
            COLON();
            if (key == K_ARGS) {
                rc = parse_args(s, &p, end, &ev, errp);
            } else if (key == K_ID2) {
                rc = parse_id2(s, &p, end, &ev, errp);
            } else {
                rc = read_value(s, &p, end, &v, errp, key == K_TS || key == K_DUR);
            }
            if (rc != PE_OK) return rc;
            switch (key) {
            case K_PH: ev.ph = first_byte(&v); break;
            case K_S: ev.scope = first_byte(&v); break;
            case K_NAME: rc = intern_value(s, &v, 0, &ev.name); break;
            case K_CAT: rc = intern_value(s, &v, 0, &ev.cat); break;
            case K_PID:
                rc = intern_value(s, &v, 1, &ev.pid);
                ev.flags = (uint16_t)((ev.flags & ~F_PID_STR) | (v.kind == V_STR ? F_PID_STR : 0));
                break;
            case K_TID:
                rc = intern_value(s, &v, 1, &ev.tid);
                ev.flags = (uint16_t)((ev.flags & ~F_TID_STR) | (v.kind == V_STR ? F_TID_STR : 0));
                break;
            case K_ID: rc = intern_value(s, &v, 1, &ev.id); break;
            case K_BIND_ID: rc = intern_value(s, &v, 1, &ev.bind_id); break;
            case K_BP:
                ev.flags = (uint16_t)((ev.flags & ~F_BP_E) | (v.kind == V_STR && value_is(&v, "e") ? F_BP_E : 0));
                break;
            case K_FLOW_IN:
                ev.flags = (uint16_t)((ev.flags & ~F_FLOW_IN) | (v.kind == V_TOKEN && value_is(&v, "true") ? F_FLOW_IN : 0));
                break;
            case K_FLOW_OUT:
                ev.flags =
                    (uint16_t)((ev.flags & ~F_FLOW_OUT) | (v.kind == V_TOKEN && value_is(&v, "true") ? F_FLOW_OUT : 0));
                break;
            case K_TS:
                ev.flags &= (uint16_t)~(F_TS_MISSING | F_TS_BAD);
                ev.ts_us = 0;
                ev.ts_ps = 0;
                if (v.fast) {
                    if (!v.neg) {
                        ev.ts_us = (int64_t)v.ip;
                        ev.ts_ps = (int32_t)v.frac;
                    } else if (v.frac || v.rem) {
                        ev.ts_us = -(int64_t)v.ip - 1;
                        ev.ts_ps = (int32_t)(1000000 - v.frac - (uint32_t)v.rem);
                    } else {
                        ev.ts_us = -(int64_t)v.ip;
                    }
                    break;
                }
                if (value_number(&v, &num) == NUM_OK && wide_div_1e6(&num, &ev.ts_us, &ev.ts_ps)) break;
                ev.flags |= F_TS_BAD;
                break;
            case K_DUR:
                ev.flags &= (uint16_t)~(F_DUR_BAD | F_DUR_NEG);
                ev.dur_ps = -1;
                if (v.fast && v.ip <= 9000000000000ULL) {
                    int64_t d = (int64_t)v.ip * 1000000 + v.frac;
                    ev.dur_ps = v.neg ? -d - v.rem : d;
                    if (v.neg && ev.dur_ps) ev.flags |= F_DUR_NEG;
                } else if (value_number(&v, &num) == NUM_OK && wide_int64(&num, &ev.dur_ps)) {
                    if (ev.dur_ps < 0) ev.flags |= F_DUR_NEG;
                } else {
                    ev.flags |= F_DUR_BAD;
                }
                break;
            default: break;
            }
            if (rc != PE_OK) return rc;
            NEXT_MEMBER("the event");
        }
    }
    int64_t len = p - start;
    if (len > s->max_event) {
        s->reason = LIMIT_REASON;
        *errp = start;
        return PE_ERR;
    }
    Columns *c = &s->col;
    if (c->n == c->cap && !columns_grow(c, s->nargs)) return PE_OOM;
    int64_t i = c->n++;
    c->ph[i] = ev.ph;
    c->scope[i] = ev.scope;
    c->name[i] = ev.name;
    c->cat[i] = ev.cat;
    c->pid[i] = ev.pid;
    c->tid[i] = ev.tid;
    c->id[i] = ev.id;
    c->bind_id[i] = ev.bind_id;
    c->ts_us[i] = ev.ts_us;
    c->ts_ps[i] = ev.ts_ps;
    c->dur_ps[i] = ev.dur_ps;
    c->offset[i] = offset;
    if (len > INT32_MAX) {
        ev.flags |= F_LENGTH_OVERFLOW;
        c->length[i] = -1;
        s->long_events++;
    } else {
        c->length[i] = (int32_t)len;
    }
    c->flags[i] = ev.flags;
    s->truncated += s->cut_in_event;
    for (int a = 0; a < s->nargs; a++) {
        if (ev.args[a] == INT64_MIN) continue;
        if (c->an == c->acap && !sparse_grow(c)) return PE_OOM;
        c->arg_row[c->an] = (int32_t)i;
        c->arg_key[c->an] = (uint8_t)a;
        c->arg_val[c->an++] = ev.args[a];
    }
    *out = p;
    return PE_OK;
}

/* ------------------------------------------------ the document, resumably */

static int key_equals(const Buf *b, const char *text) {
    size_t n = strlen(text);
    return b->len == n && memcmp(b->data, text, n) == 0;
}

/* Adds raw bytes to the top-level key being read (kept up to MAX_KEY). */
static void key_add(Scanner *s, const uint8_t *p, size_t n) {
    if (s->key_long) return;
    if (s->key.len + n > MAX_KEY) {
        s->key_long = 1;
        return;
    }
    if (!buf_append(&s->key, p, n)) s->oom = 1;
}

/* The top-level key just read (raw bytes in s->key) decoded in place. */
static void decode_key(Scanner *s) {
    if (!s->key_esc) return;
    int all;
    uint8_t *out = PyMem_RawMalloc(s->key.len + 8);
    if (!out) {
        s->oom = 1;
        return;
    }
    size_t n = json_unescape(s->key.data, s->key.data + s->key.len, out, s->key.len + 8, &all, 0);
    memcpy(s->key.data, out, n);
    s->key.len = n;
    PyMem_RawFree(out);
}

/* What to do with the value of the top-level key just read. */
static void start_value(Scanner *s) {
    if (key_equals(&s->key, "traceEvents")) {
        s->value_kind = V_TRACE_EVENTS;
        return;
    }
    for (int k = 0; k < N_SKIPPED; k++) {
        if (key_equals(&s->key, SKIPPED_KEYS[k])) {
            s->meta_skipped |= 1 << k;
            s->value_kind = V_DISCARD;
            return;
        }
    }
    s->value_kind = V_META;
    s->meta_value.len = 0;
    s->meta_over = 0;
}

static void store_meta(Scanner *s) {
    const char *name = s->key.len ? (const char *)s->key.data : "";
    int nlen = s->key.len > 100 ? 100 : (int)s->key.len;
    if (s->meta_over == 1) {
        warn(s, "the top-level key '%.*s' holds a value larger than %lld bytes; skipped", nlen, name,
             (long long)s->max_meta);
        buf_free(&s->meta_value);
        return;
    }
    if (s->meta_over) {
        warn(s, "the top-level key '%.*s' was skipped: the values of top-level keys together exceed %lld bytes",
             nlen, name, (long long)MAX_META_TOTAL);
        buf_free(&s->meta_value);
        return;
    }
    if (s->nmeta == s->meta_cap) {
        Py_ssize_t cap = s->meta_cap ? s->meta_cap * 2 : 16;
        Meta *grown = PyMem_RawRealloc(s->meta, sizeof(Meta) * cap);
        if (!grown) {
            s->oom = 1;
            return;
        }
        s->meta = grown;
        s->meta_cap = cap;
    }
    Meta *m = &s->meta[s->nmeta];
    m->key = PyMem_RawMalloc(s->key.len + 1);
    if (!m->key) {
        s->oom = 1;
        return;
    }
    if (s->key.len) memcpy(m->key, s->key.data, s->key.len);
    m->klen = s->key.len;
    m->value = s->meta_value.data; /* handed over */
    m->vlen = s->meta_value.len;
    s->meta_value.data = NULL;
    s->meta_value.len = s->meta_value.cap = 0;
    s->nmeta++;
    s->meta_total += (int64_t)m->vlen;
}

static const char *describe_byte(uint8_t c, char *buf, size_t n) {
    if (c >= 0x20 && c < 0x7f) snprintf(buf, n, "'%c'", c);
    else snprintf(buf, n, "byte 0x%02x", c);
    return buf;
}

/* Scans one chunk; the document offset of buf[0] is s->pos. */
static void scan(Scanner *s, const uint8_t *buf, size_t n) {
    const uint8_t *p = buf, *end = buf + n;
    const int64_t base = s->pos;
#define OFF(q) (base + (int64_t)((q) - buf))
    while (p < end && s->state != S_STOPPED && !s->oom) {
        switch (s->state) {
        case S_START: {
            static const uint8_t BOM[3] = {0xEF, 0xBB, 0xBF};
            if (s->bom < 3 && OFF(p) == s->bom && *p == BOM[s->bom]) {
                s->bom++;
                p++;
                break;
            }
            if (s->bom > 0 && s->bom < 3) {
                s->not_json = 1;
                snprintf(s->error, sizeof s->error, "not a JSON trace: a broken byte order mark at byte %lld",
                         (long long)OFF(p));
                s->state = S_STOPPED;
                break;
            }
            p = skip_ws(p, end);
            if (p >= end) break;
            s->seen_start = 1;
            if (*p == '{') {
                s->form = 1;
                s->state = S_OBJ_KEY0;
            } else if (*p == '[') {
                s->form = 2;
                s->has_trace_events = 1;
                s->state = S_ARR_FIRST;
            } else {
                char d[32];
                s->not_json = 1;
                snprintf(s->error, sizeof s->error,
                         "not a JSON trace: the document starts with %s at byte %lld, not '{' or '['%s",
                         describe_byte(*p, d, sizeof d), (long long)OFF(p),
                         *p == 0x1f ? " (gzip data?)" : "");
                s->state = S_STOPPED;
                break;
            }
            p++;
            s->good_end = OFF(p);
            break;
        }
        case S_OBJ_KEY0:
        case S_OBJ_KEY:
            p = skip_ws(p, end);
            if (p >= end) break;
            if (*p == '"') {
                s->key.len = 0;
                s->key_esc = s->key_pending = s->key_long = 0;
                s->state = S_KEY_STR;
                p++;
            } else if (*p == '}' && s->state == S_OBJ_KEY0) {
                p++;
                s->good_end = OFF(p);
                s->state = S_END;
            } else {
                fail_at(s, OFF(p), "expected a key string in the top-level object");
            }
            break;
        case S_KEY_STR: {
            if (s->key_pending) { /* the previous chunk ended right after a backslash */
                key_add(s, p, 1);
                p++;
                s->key_pending = 0;
                break;
            }
            const uint8_t *q = find_quote_bs(p, end);
            if (q >= end) {
                key_add(s, p, (size_t)(end - p));
                p = end;
                break;
            }
            if (*q == '\\') {
                s->key_esc = 1;
                if (q + 1 < end) {
                    key_add(s, p, (size_t)(q + 2 - p));
                    p = q + 2;
                } else {
                    key_add(s, p, (size_t)(q + 1 - p));
                    p = end;
                    s->key_pending = 1;
                }
                break;
            }
            key_add(s, p, (size_t)(q - p));
            p = q + 1;
            decode_key(s);
            s->state = S_COLON;
            break;
        }
        case S_COLON:
            p = skip_ws(p, end);
            if (p >= end) break;
            if (*p != ':') {
                fail_at(s, OFF(p), "expected ':' after a top-level key");
                break;
            }
            p++;
            s->state = S_VALUE;
            break;
        case S_VALUE:
            p = skip_ws(p, end);
            if (p >= end) break;
            start_value(s);
            if (s->value_kind == V_TRACE_EVENTS && *p == '[') {
                s->has_trace_events = 1;
                s->state = S_ARR_FIRST;
                p++;
                break;
            }
            if (s->value_kind == V_TRACE_EVENTS) {
                warn(s, "traceEvents is not an array (at byte %lld); ignored", (long long)OFF(p));
                s->value_kind = V_DISCARD;
            }
            s->sk.mode = SK_START;
            s->sk.depth = 0;
            s->state = S_SKIPPING;
            break;
        case S_SKIPPING:
        case S_BAD_ELEM: {
            const uint8_t *err = NULL;
            const char *why = NULL;
            const uint8_t *r = skip_value(&s->sk, p, end, &err, &why);
            if (err) {
                fail_at(s, OFF(err), why);
                break;
            }
            const uint8_t *stop = r ? r : end;
            if (s->state == S_SKIPPING && s->value_kind == V_META && !s->meta_over) {
                size_t take = (size_t)(stop - p);
                if ((int64_t)(s->meta_value.len + take) > s->max_meta) {
                    s->meta_over = 1;
                    buf_free(&s->meta_value);
                } else if (s->meta_total + (int64_t)(s->meta_value.len + take) > MAX_META_TOTAL) {
                    s->meta_over = 2;
                    buf_free(&s->meta_value);
                } else if (!buf_append(&s->meta_value, p, take)) {
                    s->oom = 1;
                    break;
                }
            }
            p = stop;
            if (!r) break;
            s->good_end = OFF(p);
            if (s->state == S_BAD_ELEM) {
                s->state = S_ARR_NEXT;
            } else {
                if (s->value_kind == V_META) store_meta(s);
                s->state = S_OBJ_NEXT;
            }
            break;
        }
        case S_OBJ_NEXT:
            p = skip_ws(p, end);
            if (p >= end) break;
            if (*p == ',') {
                s->state = S_OBJ_KEY;
            } else if (*p == '}') {
                s->state = S_END;
                s->good_end = OFF(p + 1);
            } else {
                fail_at(s, OFF(p), "expected ',' or '}' after a top-level value");
                break;
            }
            p++;
            break;
        case S_ARR_FIRST:
        case S_ARR_ELEM:
            /* the hot loop: one event after another while they are whole */
            for (;;) {
                p = skip_ws(p, end);
                if (p >= end) break;
                if (*p == '{') {
                    const uint8_t *q, *err = NULL;
                    int rc = parse_event(s, p, end, OFF(p), &q, &err);
                    if (rc == PE_OK) {
                        p = q;
                        s->good_end = OFF(p);
                        /* ',' and the next '{' without going round the switch */
                        p = skip_ws(p, end);
                        if (p < end && *p == ',') {
                            p++;
                            continue;
                        }
                        s->state = S_ARR_NEXT;
                    } else if (rc == PE_MORE) {
                        s->tail.len = 0;
                        s->tail_start = OFF(p);
                        s->sk.mode = SK_START;
                        s->sk.depth = 0;
                        s->state = S_EVENT_TAIL;
                    } else if (rc == PE_OOM) {
                        s->oom = 1;
                    } else if (s->reason == LIMIT_REASON) {
                        char msg[160];
                        snprintf(msg, sizeof msg, "an event is larger than the limit of %lld bytes",
                                 (long long)s->max_event);
                        fail_at(s, OFF(p), msg);
                    } else {
                        fail_at(s, OFF(err), s->reason);
                    }
                } else if (*p == ']') {
                    /* "[]", or a trailing comma as Chrome's own writers leave */
                    p++;
                    s->good_end = OFF(p);
                    s->state = s->form == 2 ? S_END : S_OBJ_NEXT;
                } else {
                    s->bad_events++;
                    s->sk.mode = SK_START;
                    s->sk.depth = 0;
                    s->state = S_BAD_ELEM;
                }
                break;
            }
            break;
        case S_ARR_NEXT:
            p = skip_ws(p, end);
            if (p >= end) break;
            if (*p == ',') {
                s->state = S_ARR_ELEM;
            } else if (*p == ']') {
                s->state = s->form == 2 ? S_END : S_OBJ_NEXT;
                s->good_end = OFF(p + 1);
            } else {
                fail_at(s, OFF(p), "expected ',' or ']' after an event");
                break;
            }
            p++;
            break;
        case S_EVENT_TAIL: {
            const uint8_t *err = NULL;
            const char *why = NULL;
            const uint8_t *r = skip_value(&s->sk, p, end, &err, &why);
            if (err) {
                fail_at(s, OFF(err), why);
                break;
            }
            const uint8_t *stop = r ? r : end;
            size_t take = (size_t)(stop - p);
            if ((int64_t)(s->tail.len + take) > s->max_event) {
                char msg[160];
                snprintf(msg, sizeof msg, "an event is larger than the limit of %lld bytes", (long long)s->max_event);
                fail_at(s, s->tail_start, msg);
                buf_free(&s->tail);
                break;
            }
            if (!buf_append(&s->tail, p, take)) {
                s->oom = 1;
                break;
            }
            p = stop;
            if (!r) break;
            const uint8_t *q, *perr = NULL;
            const uint8_t *t0 = s->tail.data, *t1 = t0 + s->tail.len;
            int rc = parse_event(s, t0, t1, s->tail_start, &q, &perr);
            if (rc == PE_OK && q == t1) {
                s->good_end = OFF(p);
                s->state = S_ARR_NEXT;
            } else if (rc == PE_OOM) {
                s->oom = 1;
            } else if (rc == PE_ERR) {
                fail_at(s, s->tail_start + (perr - t0), s->reason);
            } else {
                fail_at(s, s->tail_start, "a malformed event");
            }
            if (s->tail.cap > ((size_t)1 << 20)) buf_free(&s->tail);
            s->tail.len = 0;
            break;
        }
        case S_END:
            p = skip_ws(p, end);
            if (p >= end) break;
            warn(s, "data after the end of the JSON document (at byte %lld) was ignored", (long long)OFF(p));
            s->state = S_STOPPED;
            break;
        default: p = end; break;
        }
    }
    s->pos += (int64_t)n;
#undef OFF
}

/* ---------------------------------------------------------------- Python type */

static int Scanner_init(Scanner *s, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"arg_keys", "text_keys", "max_event_bytes", "max_meta_bytes", NULL};
    PyObject *keys = NULL, *text_keys = NULL;
    long long max_event = DEFAULT_MAX_EVENT, max_meta = DEFAULT_MAX_META;
    if (s->argkeys) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|OO$LL", kwlist, &keys, &text_keys, &max_event, &max_meta)) return -1;
    if (max_event < 16 || max_meta < 0) {
        PyErr_SetString(PyExc_ValueError, "max_event_bytes must be >= 16 and max_meta_bytes >= 0");
        return -1;
    }
    PyObject *numeric = keys ? PySequence_Tuple(keys) : PyTuple_New(0);
    PyObject *texts = text_keys ? PySequence_Tuple(text_keys) : PyTuple_New(0);
    PyObject *tuple = numeric && texts ? PySequence_Concat(numeric, texts) : NULL;
    Py_ssize_t n_numeric = numeric ? PyTuple_GET_SIZE(numeric) : 0;
    Py_XDECREF(numeric);
    Py_XDECREF(texts);
    if (!tuple) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    if (n > MAX_ARGS) {
        PyErr_Format(PyExc_ValueError, "at most %d arg_keys and text_keys together", MAX_ARGS);
        Py_DECREF(tuple);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = PyTuple_GET_ITEM(tuple, i);
        if (!PyBytes_Check(k)) {
            PyErr_SetString(PyExc_TypeError, "arg_keys must be bytes");
            Py_DECREF(tuple);
            return -1;
        }
        Py_ssize_t len = PyBytes_GET_SIZE(k);
        if (len > MAX_ARG_KEY) {
            PyErr_Format(PyExc_ValueError, "an arg key is longer than %d bytes", MAX_ARG_KEY);
            Py_DECREF(tuple);
            return -1;
        }
        for (Py_ssize_t j = 0; j < i; j++) {
            if (s->argklen[j] == (size_t)len && !memcmp(s->argkey[j], PyBytes_AS_STRING(k), len)) {
                PyErr_SetString(PyExc_ValueError, "arg_keys repeat a key");
                Py_DECREF(tuple);
                return -1;
            }
        }
        memcpy(s->argkey[i], PyBytes_AS_STRING(k), len);
        s->argklen[i] = (size_t)len;
        s->args_by_len[len] |= (uint16_t)(1u << i);
        if (i >= n_numeric) s->text_args |= (uint16_t)(1u << i);
    }
    s->nargs = (int)n;
    s->argkeys = tuple;
    s->max_event = max_event;
    s->max_meta = max_meta;
    s->error_offset = -1;
    intern_free(&s->strings); /* empty (tp_alloc zeroed it), also when __init__ runs again */
    return 0;
}

static void Scanner_dealloc(Scanner *s) {
    free_columns(&s->col, s->nargs);
    intern_free(&s->strings);
    buf_free(&s->key);
    buf_free(&s->tail);
    buf_free(&s->meta_value);
    for (Py_ssize_t i = 0; i < s->nmeta; i++) {
        PyMem_RawFree(s->meta[i].key);
        PyMem_RawFree(s->meta[i].value);
    }
    PyMem_RawFree(s->meta);
    for (int i = 0; i < s->nwarnings; i++) PyMem_RawFree(s->warnings[i]);
    Py_XDECREF(s->argkeys);
    Py_TYPE(s)->tp_free((PyObject *)s);
}

static int check_usable(Scanner *s) {
    if (!s->argkeys) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner.__init__ was not called");
        return 0;
    }
    if (s->busy) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner is in use by another thread");
        return 0;
    }
    if (s->finished) {
        PyErr_SetString(PyExc_RuntimeError, "Scanner.finish() was already called");
        return 0;
    }
    return 1;
}

static PyObject *Scanner_feed(Scanner *s, PyObject *data) {
    if (!check_usable(s)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    s->busy = 1;
    if (s->state != S_STOPPED && !s->oom) {
        Py_BEGIN_ALLOW_THREADS
        scan(s, view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        s->pos += view.len;
    }
    s->busy = 0;
    PyBuffer_Release(&view);
    if (s->oom) return PyErr_NoMemory();
    if (s->not_json) {
        PyErr_SetString(PyExc_ValueError, s->error);
        return NULL;
    }
    Py_RETURN_NONE;
}

static const char MAPPED_CAPSULE[] = "chrome_json.mapped_column";

static void free_capsule(PyObject *capsule) {
    const char *name = PyCapsule_GetName(capsule);
    col_free(PyCapsule_GetPointer(capsule, name), name == MAPPED_CAPSULE);
}

/* An array over column k (n items), owning it through a capsule; the
 * column is taken (set to NULL) in every case. */
static PyObject *own_array(Columns *c, void **slot, int k, int64_t n, int type, size_t itemsize) {
    void *d = *slot;
    int mapped = (c->mapped >> k) & 1;
    *slot = NULL;
    c->mapped &= ~((uint32_t)1 << k);
    npy_intp dims[1] = {(npy_intp)n};
    if (!d || n == 0) {
        col_free(d, mapped);
        return PyArray_SimpleNew(1, dims, type);
    }
    void *shrunk = col_realloc(d, itemsize * (size_t)c->cap, itemsize * (size_t)n, &mapped);
    if (shrunk) d = shrunk;
    PyObject *arr = PyArray_SimpleNewFromData(1, dims, type, d);
    if (!arr) {
        col_free(d, mapped);
        return NULL;
    }
    PyObject *cap = PyCapsule_New(d, mapped ? MAPPED_CAPSULE : NULL, free_capsule);
    if (!cap) {
        Py_DECREF(arr);
        col_free(d, mapped);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)arr, cap) < 0) {
        Py_DECREF(arr);
        Py_DECREF(cap);
        return NULL;
    }
    return arr;
}

static int set_item(PyObject *d, const char *key, PyObject *value) {
    if (!value) return 0;
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc == 0;
}

static PyObject *Scanner_finish(Scanner *s, PyObject *unused) {
    (void)unused;
    if (!check_usable(s)) return NULL;
    if (s->not_json) {
        PyErr_SetString(PyExc_ValueError, s->error);
        return NULL;
    }
    if (!s->seen_start) {
        PyErr_SetString(PyExc_ValueError, s->pos ? "not a JSON trace: the document holds only whitespace"
                                                 : "not a JSON trace: the document is empty");
        return NULL;
    }
    if (s->oom) return PyErr_NoMemory();
    s->finished = 1;
    Columns *c = &s->col;
    int64_t n = c->n;
    PyObject *r = PyDict_New();
    if (!r) return NULL;
    if (!set_item(r, "events", PyLong_FromLongLong(n))) goto fail;
    if (!set_item(r, "bad_events", PyLong_FromLongLong(s->bad_events))) goto fail;
    /* in column_slots order */
    static const char *names[NCOL_FIXED] = {"ph",    "scope", "name",   "cat",    "pid",    "tid",    "id",
                                            "bind_id", "ts_ps", "length", "ts_us", "dur_ps", "offset", "flags"};
    static const int types[NCOL_FIXED] = {NPY_UINT8, NPY_UINT8, NPY_INT32, NPY_INT32, NPY_INT32,
                                          NPY_INT32, NPY_INT32, NPY_INT32, NPY_INT32, NPY_INT32,
                                          NPY_INT64, NPY_INT64, NPY_INT64, NPY_UINT16};
    void **ptrs[NCOL_FIXED + MAX_ARGS];
    size_t sizes[NCOL_FIXED + MAX_ARGS];
    int ncol = column_slots(c, s->nargs, ptrs, sizes);
    for (int k = 0; k < ncol; k++) {
        PyObject *arr = own_array(c, ptrs[k], k, n, types[k], sizes[k]);
        if (!arr) goto fail;
        int rc = PyDict_SetItemString(r, names[k], arr);
        Py_DECREF(arr);
        if (rc < 0) goto fail;
    }
    {
        const void *src[3] = {c->arg_row, c->arg_key, c->arg_val};
        static const char *sparse_names[3] = {"arg_rows", "arg_keys", "arg_values"};
        static const int sparse_types[3] = {NPY_INT32, NPY_UINT8, NPY_INT64};
        static const size_t sparse_sizes[3] = {4, 1, 8};
        for (int k = 0; k < 3; k++) {
            npy_intp dims[1] = {(npy_intp)c->an};
            PyObject *arr = PyArray_SimpleNew(1, dims, sparse_types[k]);
            if (!arr) goto fail;
            if (c->an) memcpy(PyArray_DATA((PyArrayObject *)arr), src[k], sparse_sizes[k] * (size_t)c->an);
            int rc = PyDict_SetItemString(r, sparse_names[k], arr);
            Py_DECREF(arr);
            if (rc < 0) goto fail;
        }
    }
    free_columns(c, s->nargs);
    if (!set_item(r, "strings", intern_list(&s->strings, "replace"))) goto fail;
    intern_free(&s->strings);
    PyObject *meta = PyDict_New();
    if (!set_item(r, "meta", meta)) goto fail;
    for (Py_ssize_t i = 0; i < s->nmeta; i++) {
        PyObject *k = PyUnicode_DecodeUTF8((const char *)s->meta[i].key, s->meta[i].klen, "replace");
        PyObject *v = PyBytes_FromStringAndSize((const char *)s->meta[i].value, s->meta[i].vlen);
        int rc = k && v ? PyDict_SetItem(meta, k, v) : -1;
        Py_XDECREF(k);
        Py_XDECREF(v);
        if (rc < 0) goto fail;
    }
    PyObject *skipped = PyList_New(0);
    if (!set_item(r, "meta_skipped", skipped)) goto fail;
    for (int k = 0; k < N_SKIPPED; k++) {
        if (s->meta_skipped & (1 << k)) {
            PyObject *u = PyUnicode_FromString(SKIPPED_KEYS[k]);
            if (!u || PyList_Append(skipped, u) < 0) {
                Py_XDECREF(u);
                goto fail;
            }
            Py_DECREF(u);
        }
    }
    if (s->bad_events) warn(s, "%lld elements of the events array are not objects; skipped", (long long)s->bad_events);
    if (s->truncated) warn(s, "%lld strings were longer than %d bytes and were cut", (long long)s->truncated, MAX_TEXT);
    if (s->long_events) warn(s, "%lld events are longer than 2 GiB (length -1)", (long long)s->long_events);
    if (s->warnings_dropped) warn(s, "%d more warnings were dropped", s->warnings_dropped);
    PyObject *warnings = PyList_New(0);
    if (!set_item(r, "warnings", warnings)) goto fail;
    for (int i = 0; i < s->nwarnings; i++) {
        PyObject *u = PyUnicode_DecodeUTF8(s->warnings[i], strlen(s->warnings[i]), "replace");
        if (!u || PyList_Append(warnings, u) < 0) {
            Py_XDECREF(u);
            goto fail;
        }
        Py_DECREF(u);
    }
    int complete = !s->has_error && (s->state == S_END || (s->state == S_STOPPED && !s->has_error));
    if (!set_item(r, "complete", PyBool_FromLong(complete))) goto fail;
    if (!set_item(r, "end_offset", PyLong_FromLongLong(s->good_end))) goto fail;
    if (!set_item(r, "has_trace_events", PyBool_FromLong(s->has_trace_events))) goto fail;
    if (!set_item(r, "form", PyUnicode_FromString(s->form == 2 ? "array" : "object"))) goto fail;
    if (s->has_error) {
        if (!set_item(r, "error", PyUnicode_DecodeUTF8(s->error, strlen(s->error), "replace"))) goto fail;
    } else if (PyDict_SetItemString(r, "error", Py_None) < 0) {
        goto fail;
    }
    if (!set_item(r, "error_offset", PyLong_FromLongLong(s->has_error ? s->error_offset : -1))) goto fail;
    return r;
fail:
    Py_DECREF(r);
    return NULL;
}

static PyObject *Scanner_get_events(Scanner *s, void *closure) {
    (void)closure;
    return PyLong_FromLongLong(s->col.n);
}

static PyObject *Scanner_get_position(Scanner *s, void *closure) {
    (void)closure;
    return PyLong_FromLongLong(s->pos);
}

static PyObject *Scanner_get_error(Scanner *s, void *closure) {
    (void)closure;
    if (!s->has_error) Py_RETURN_NONE;
    return PyUnicode_DecodeUTF8(s->error, strlen(s->error), "replace");
}

static PyMethodDef Scanner_methods[] = {
    {"feed", (PyCFunction)Scanner_feed, METH_O,
     "feed(data) -> None: the next chunk of the document (any bytes-like). Data errors stop the scan "
     "(see finish()['error']); only a document that does not start like JSON raises ValueError."},
    {"finish", (PyCFunction)Scanner_finish, METH_NOARGS,
     "finish() -> dict of columns, strings, meta, warnings, complete, end_offset ... (once)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Scanner_getset[] = {
    {"events", (getter)Scanner_get_events, NULL, "events read so far", NULL},
    {"position", (getter)Scanner_get_position, NULL, "bytes fed so far", NULL},
    {"error", (getter)Scanner_get_error, NULL, "the error that stopped the scan, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "profscope.models.formats._chrome_json.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Scanner(arg_keys=(), text_keys=(), *, max_event_bytes=256 MiB, max_meta_bytes=16 MiB): Chrome trace-event "
              "JSON, fed in chunks, into columns",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_chrome_json", .m_doc = NULL, .m_size = -1, .m_methods = NULL};

PyMODINIT_FUNC PyInit__chrome_json(void) {
    import_array();
    draw_hash_seed();
    init_classes();
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) {
        Py_DECREF(&ScannerType);
        Py_DECREF(m);
        return NULL;
    }
    struct {
        const char *name;
        long long value;
    } consts[] = {
        {"BP_E", F_BP_E},
        {"FLOW_IN", F_FLOW_IN},
        {"FLOW_OUT", F_FLOW_OUT},
        {"TS_BAD", F_TS_BAD},
        {"DUR_BAD", F_DUR_BAD},
        {"DUR_NEG", F_DUR_NEG},
        {"TS_MISSING", F_TS_MISSING},
        {"PID_STR", F_PID_STR},
        {"TID_STR", F_TID_STR},
        {"ARGS_PRESENT", F_ARGS_PRESENT},
        {"LENGTH_OVERFLOW", F_LENGTH_OVERFLOW},
        {"MAX_ARG_KEYS", MAX_ARGS},
        {"MAX_STRING_BYTES", MAX_TEXT},
        {"DEFAULT_MAX_EVENT_BYTES", DEFAULT_MAX_EVENT},
        {"DEFAULT_MAX_META_BYTES", DEFAULT_MAX_META},
    };
    for (size_t k = 0; k < sizeof consts / sizeof consts[0]; k++) {
        if (PyModule_AddIntConstant(m, consts[k].name, (long)consts[k].value) < 0) {
            Py_DECREF(m);
            return NULL;
        }
    }
    return m;
}
