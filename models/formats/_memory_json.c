/* MemoryProfile proto3 JSON (memory_profile.proto, as XProf writes it) read
 * into numpy columns in one pass, without a Python object per snapshot.
 *
 *   read(data, max_depth) -> dict
 *       data: any bytes-like holding the whole document; the GIL is released
 *       while it is walked.
 *   On success: {"columns": {name: array over every snapshot row},
 *                "allocators": [(memory id, snapshots, sampled, summary,
 *                                special, active)], "num_hosts", "version"}
 *       snapshots, sampled: (first row, end row, strings); the string columns
 *           of those rows hold ids into that list's own strings, numbered as
 *           Python would number them (op, region, dtype, shape columns in
 *           turn, first appearance, "" first)
 *       summary: (capacity, lifetime peak, peak time, stack, heap, free,
 *           fragmentation), or None when absent, null or {}
 *       special: [(activity, requested, allocation, address, op, step,
 *           region, dtype, shape)]; active: [(snapshot, special, occurrences)]
 *   On bad input: {"error": kind, "message", "value", "quote", "path",
 *       "offset", "line", "column"} with kind "syntax" (not JSON, truncated),
 *       "depth" (nested deeper than max_depth), "not_profile" (no
 *       MemoryProfile key at the top), "invalid" (a value of the wrong type
 *       or range), "memory". A syntax or depth error anywhere in the document
 *       wins over a not_profile, and that over an invalid value, as when the
 *       document was parsed whole first.
 *
 * The document is walked by one function per message of the schema (a fixed
 * call depth of six); anything else is skipped by an iterative skipper with
 * an explicit stack of max_depth entries, so no input makes the C stack
 * grow. Syntax is JSON as Python's json.loads takes it (NaN, Infinity,
 * -Infinity allowed; UTF-8 with surrogates as 'surrogatepass' decodes it).
 * A field given twice (the same key, or its camelCase and snake_case names)
 * is refused: protobuf's JSON parser refuses repeated keys too.
 */
#include "_cbuffers.h"
#include "intern.h"
#include "json_lex.h"
#include <math.h>
#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PATH_ENTRIES 8
#define VALUE_CAP 200 /* bytes of a bad value quoted in a message */
#define KEY_CAP 64    /* longer keys are no field name */
#define MIN_ROWS 256

enum { E_NONE, E_SYNTAX, E_DEPTH, E_NOT_PROFILE, E_INVALID, E_MEMORY };
static const char *ERROR_KINDS[] = {"", "syntax", "depth", "not_profile", "invalid", "memory"};

/* MemoryActivity names, by number. */
static const char *ACTIVITIES[] = {"UNKNOWN_ACTIVITY", "ALLOCATION", "DEALLOCATION", "RESERVATION", "EXPANSION"};

/* ---------------------------------------------------------------- buffers */

typedef struct {
    uint8_t *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t extra) {
    if (b->len + extra <= b->cap) return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra) cap *= 2;
    uint8_t *grown = PyMem_RawRealloc(b->data, cap);
    if (!grown) return 0;
    b->data = grown;
    b->cap = cap;
    return 1;
}

static void buf_free(Buf *b) {
    PyMem_RawFree(b->data);
    memset(b, 0, sizeof *b);
}

/* ---------------------------------------------------------------- rows */

/* One MemoryProfileSnapshot, or one MemoryActivityMetadata (special
 * allocations use the metadata fields only). */
typedef struct {
    int64_t time, stack, heap, free, peak, activity, requested, allocation, step;
    uint64_t address;
    double frag;
    int32_t op, region, dtype, shape;
} Row;

#define N_INT64 9
typedef struct {
    int64_t *i64[N_INT64]; /* time stack heap free peak activity requested allocation step */
    uint64_t *address;
    double *frag;
    int32_t *str[4]; /* op region dtype shape */
    int64_t n, cap;
} Columns;

static int columns_push(Columns *c, const Row *r) {
    if (c->n == c->cap) {
        int64_t cap = c->cap ? c->cap * 2 : MIN_ROWS;
        for (int k = 0; k < N_INT64; k++) {
            void *g = PyMem_RawRealloc(c->i64[k], sizeof(int64_t) * (size_t)cap);
            if (!g) return 0;
            c->i64[k] = g;
        }
        void *g = PyMem_RawRealloc(c->address, sizeof(uint64_t) * (size_t)cap);
        if (!g) return 0;
        c->address = g;
        g = PyMem_RawRealloc(c->frag, sizeof(double) * (size_t)cap);
        if (!g) return 0;
        c->frag = g;
        for (int k = 0; k < 4; k++) {
            g = PyMem_RawRealloc(c->str[k], sizeof(int32_t) * (size_t)cap);
            if (!g) return 0;
            c->str[k] = g;
        }
        c->cap = cap;
    }
    int64_t i = c->n++;
    const int64_t v[N_INT64] = {r->time, r->stack, r->heap, r->free, r->peak, r->activity, r->requested, r->allocation, r->step};
    for (int k = 0; k < N_INT64; k++) c->i64[k][i] = v[k];
    c->address[i] = r->address;
    c->frag[i] = r->frag;
    c->str[0][i] = r->op;
    c->str[1][i] = r->region;
    c->str[2][i] = r->dtype;
    c->str[3][i] = r->shape;
    return 1;
}

static void columns_free(Columns *c) {
    for (int k = 0; k < N_INT64; k++) PyMem_RawFree(c->i64[k]);
    PyMem_RawFree(c->address);
    PyMem_RawFree(c->frag);
    for (int k = 0; k < 4; k++) PyMem_RawFree(c->str[k]);
    memset(c, 0, sizeof *c);
}

typedef struct {
    int64_t first, end;
} Range;

/* One PerAllocatorMemoryProfile: row ranges into the shared buffers. */
typedef struct {
    int32_t key;
    Range snapshots, sampled, special, active;
    int has_summary;
    int64_t summary[6]; /* capacity, lifetime peak, peak time, stack, heap, free */
    double frag;
} Allocator;

/* ---------------------------------------------------------------- the parser */

typedef struct {
    const char *name; /* a field, or NULL for an index or a map key */
    int64_t index;    /* element index, or -1 */
    int32_t key;      /* interned map key, or -1 */
} PathEntry;

typedef struct {
    const uint8_t *start, *p, *end;
    int max_depth;
    uint8_t *stack; /* the skipper's open brackets, by depth */
    jmp_buf jump;
    Interner strings;
    Columns snap, special;
    int64_t *active; /* triples */
    int64_t nactive, cap_active;
    Allocator *allocs;
    int64_t nallocs, cap_allocs;
    uint8_t *key_seen; /* by string id: an allocator of that memory id exists */
    int64_t cap_key_seen;
    Buf scratch; /* unescaped text */
    Buf number;  /* number text for strtod */
    int64_t num_hosts, version;
    int recognized;
    PathEntry path[PATH_ENTRIES];
    int npath;
    /* the error */
    int err;
    int64_t err_offset;
    const char *err_message;
    char err_path[512];
    uint8_t err_value[VALUE_CAP + 4];
    size_t err_value_len;
    int err_has_value, err_quote;
} Parser;

PT_NORETURN static void fail(Parser *P, int kind, const uint8_t *at, const char *message) {
    P->err = kind;
    P->err_offset = (int64_t)((at < P->end ? at : P->end) - P->start);
    P->err_message = message;
    longjmp(P->jump, 1);
}

PT_NORETURN static void syntax(Parser *P, const uint8_t *at, const char *message) {
    fail(P, E_SYNTAX, at, at >= P->end ? "the document ends early" : message);
}

PT_NORETURN static void out_of_memory(Parser *P) {
    fail(P, E_MEMORY, P->p, "out of memory");
}

static void format_path(Parser *P) {
    char *o = P->err_path, *end = P->err_path + sizeof P->err_path - 8;
    *o = 0;
    for (int i = 0; i < P->npath && o < end; i++) {
        const PathEntry *e = &P->path[i];
        if (e->name) {
            o += snprintf(o, (size_t)(end - o), "%s%s", i ? "." : "", e->name);
        } else if (e->index >= 0) {
            o += snprintf(o, (size_t)(end - o), "[%lld]", (long long)e->index);
        } else {
            size_t n;
            const uint8_t *k = intern_bytes(&P->strings, e->key, &n);
            if (n > 100) n = 100; /* may cut a character: decoded with "replace" */
            o += snprintf(o, (size_t)(end - o), "[\"%.*s\"]", (int)n, (const char *)k);
        }
    }
    if (o > end) *end = 0;
}

/* A value of the wrong type or range. value (n bytes), when given, is quoted
 * in the message (repr() when quote, else as is). */
PT_NORETURN static void invalid(Parser *P, const uint8_t *at, const char *message, const uint8_t *value,
                                              size_t n, int quote) {
    format_path(P);
    P->err_has_value = value != NULL;
    P->err_quote = quote;
    if (value) {
        if (n > VALUE_CAP) { /* cut between characters: decoded with 'surrogatepass' */
            n = VALUE_CAP;
            while (n > 0 && (value[n] & 0xC0) == 0x80) n--;
        }
        memcpy(P->err_value, value, n);
        P->err_value_len = n;
    }
    fail(P, E_INVALID, at, message);
}

static inline void push_name(Parser *P, const char *name) {
    if (P->npath < PATH_ENTRIES) P->path[P->npath] = (PathEntry){name, -1, -1};
    P->npath++;
}

static inline void push_index(Parser *P, int64_t index) {
    if (P->npath < PATH_ENTRIES) P->path[P->npath] = (PathEntry){NULL, index, -1};
    P->npath++;
}

static inline void push_key(Parser *P, int32_t key) {
    if (P->npath < PATH_ENTRIES) P->path[P->npath] = (PathEntry){NULL, -1, key};
    P->npath++;
}

#define POP(P) ((P)->npath--)

/* ---------------------------------------------------------------- tokens */

static inline int is_ws(uint8_t c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

static inline void ws(Parser *P) {
    const uint8_t *p = P->p, *end = P->end;
    if (p < end && !is_ws(*p)) return; /* compact JSON: the common case */
#ifdef PT_SSE2
    const __m128i sp = _mm_set1_epi8(' '), nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'), tab = _mm_set1_epi8('\t');
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        __m128i w = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, nl)),
                                 _mm_or_si128(_mm_cmpeq_epi8(v, cr), _mm_cmpeq_epi8(v, tab)));
        unsigned m = (unsigned)_mm_movemask_epi8(w);
        if (m != 0xFFFF) {
            P->p = p + pt_ctz32(~m);
            return;
        }
        p += 16;
    }
#endif
    while (p < end && is_ws(*p)) p++;
    P->p = p;
}

static inline int peek(const Parser *P) { return P->p < P->end ? *P->p : -1; }

/* First '"', '\\', control character or non-ASCII byte in [p, end), else end. */
static inline const uint8_t *find_special(const uint8_t *p, const uint8_t *end) {
#ifdef PT_SSE2
    const __m128i q = _mm_set1_epi8('"'), bs = _mm_set1_epi8('\\'), sp = _mm_set1_epi8(0x20);
    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)p);
        /* signed compare: bytes >= 0x80 are negative, so below 0x20 too */
        __m128i hit = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, q), _mm_cmpeq_epi8(v, bs)), _mm_cmplt_epi8(v, sp));
        int m = _mm_movemask_epi8(hit);
        if (m) return p + pt_ctz32((unsigned)m);
        p += 16;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20 && *p < 0x80) p++;
    return p;
}

/* Length of the UTF-8 character at p (non-ASCII), 0 if invalid. Surrogates
 * pass, as json.loads decodes bytes with 'surrogatepass'. */
static inline int utf8_length(const uint8_t *p, const uint8_t *end) {
    uint8_t c = p[0];
    ptrdiff_t left = end - p;
#define CONT(i) (left > (i) && (p[i] & 0xC0) == 0x80)
    if (c >= 0xC2 && c < 0xE0) return CONT(1) ? 2 : 0;
    if (c >= 0xE0 && c < 0xF0) {
        if (!CONT(1) || !CONT(2)) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
        return 3;
    }
    if (c >= 0xF0 && c < 0xF5) {
        if (!CONT(1) || !CONT(2) || !CONT(3)) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && p[1] >= 0x90) return 0; /* beyond U+10FFFF */
        return 4;
    }
#undef CONT
    return 0;
}

/* Checks the string whose opening quote is at P->p and moves past it.
 * Sets [*s, *s + *n) to its body and *esc when it holds escapes. */
static void scan_string(Parser *P, const uint8_t **s, size_t *n, int *esc) {
    const uint8_t *p = P->p + 1, *end = P->end;
    *s = p;
    *esc = 0;
    for (;;) {
        p = find_special(p, end);
        if (p >= end) syntax(P, p, "");
        uint8_t c = *p;
        if (c == '"') break;
        if (c == '\\') {
            *esc = 1;
            if (p + 1 >= end) syntax(P, end, "");
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                break;
            case 'u':
                if (json_hex4(p + 2, end) < 0) syntax(P, end - p < 6 ? end : p, "invalid \\uXXXX escape");
                p += 6;
                break;
            default:
                syntax(P, p, "invalid escape");
            }
        } else if (c < 0x20) {
            syntax(P, p, "control character in a string");
        } else {
            int k = utf8_length(p, end);
            if (!k) syntax(P, p, "invalid UTF-8");
            p += k;
        }
    }
    *n = (size_t)(p - *s);
    P->p = p + 1;
}

/* The text of the string at P->p (moved past it), unescaped into the
 * scratch buffer when needed. */
static const uint8_t *read_text(Parser *P, size_t *n) {
    const uint8_t *s;
    int esc;
    scan_string(P, &s, n, &esc);
    if (!esc) return s;
    P->scratch.len = 0;
    if (!buf_reserve(&P->scratch, *n + 1)) out_of_memory(P);
    int all;
    *n = json_unescape(s, s + *n, P->scratch.data, *n, &all, 1);
    return P->scratch.data;
}

static inline int is_digit(int c) { return c >= '0' && c <= '9'; }

/* Moves past the JSON number at P->p; *integral when it has no fraction or
 * exponent. */
static const uint8_t *scan_number(Parser *P, int *integral) {
    const uint8_t *p = P->p, *end = P->end, *s = p;
    if (p < end && *p == '-') p++;
    if (p >= end) syntax(P, p, "");
    if (*p == '0') {
        p++;
    } else if (is_digit(*p)) {
        while (p < end && is_digit(*p)) p++;
    } else {
        syntax(P, s, "invalid number");
    }
    *integral = 1;
    if (p < end && *p == '.') {
        p++;
        if (p >= end || !is_digit(*p)) syntax(P, p, "invalid number");
        while (p < end && is_digit(*p)) p++;
        *integral = 0;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || !is_digit(*p)) syntax(P, p, "invalid number");
        while (p < end && is_digit(*p)) p++;
        *integral = 0;
    }
    P->p = p;
    return s;
}

enum { L_TRUE, L_FALSE, L_NULL, L_NAN, L_INF, L_NINF };
static const char *LITERALS[] = {"true", "false", "null", "NaN", "Infinity", "-Infinity"};

/* Moves past the literal at P->p (true, false, null, NaN, Infinity, -Infinity). */
static int read_literal(Parser *P) {
    int c = peek(P), k;
    switch (c) {
    case 't': k = L_TRUE; break;
    case 'f': k = L_FALSE; break;
    case 'n': k = L_NULL; break;
    case 'N': k = L_NAN; break;
    case 'I': k = L_INF; break;
    case '-': k = L_NINF; break;
    default: syntax(P, P->p, "expected a value");
    }
    size_t n = strlen(LITERALS[k]);
    if ((size_t)(P->end - P->p) < n) {
        if (memcmp(P->p, LITERALS[k], (size_t)(P->end - P->p)) == 0) syntax(P, P->end, "");
        syntax(P, P->p, "expected a value");
    }
    if (memcmp(P->p, LITERALS[k], n) != 0) syntax(P, P->p, "expected a value");
    P->p += n;
    return k;
}

/* What the value at P->p is, for messages. */
static const char *kind_of(const Parser *P) {
    switch (peek(P)) {
    case '{': return "an object";
    case '[': return "a list";
    case '"': return "text";
    case 't': case 'f': return "a boolean";
    case 'N': return "NaN";
    case 'I': return "Infinity";
    case '-': return P->end - P->p > 1 && P->p[1] == 'I' ? "-Infinity" : "a number";
    default: return "a number";
    }
}

static inline int is_number_start(const Parser *P) {
    int c = peek(P);
    return is_digit(c) || (c == '-' && !(P->end - P->p > 1 && P->p[1] == 'I'));
}

/* ---------------------------------------------------------------- skipping */

PT_NORETURN static void too_deep(Parser *P) {
    fail(P, E_DEPTH, P->p, "nested too deeply");
}

/* Any scalar at P->p (checked, moved past). */
static void skip_scalar(Parser *P) {
    int c = peek(P);
    if (c == '"') {
        const uint8_t *s;
        size_t n;
        int esc;
        scan_string(P, &s, &n, &esc);
    } else if (is_number_start(P)) {
        int integral;
        scan_number(P, &integral);
    } else {
        read_literal(P);
    }
}

/* A key and its colon, for the skipper. */
static void skip_key(Parser *P) {
    ws(P);
    if (peek(P) != '"') syntax(P, P->p, "expected a key in double quotes");
    skip_scalar(P);
    ws(P);
    if (peek(P) != ':') syntax(P, P->p, "expected ':' after a key");
    P->p++;
}

/* Checks and moves past one value of any kind. depth: that of the container
 * holding it. Containers are tracked in P->stack, never by recursion. */
static void skip_value(Parser *P, int depth) {
    const int base = depth;
    uint8_t *stack = P->stack;
    for (;;) {
        ws(P);
        int c = peek(P);
        if (c == '{' || c == '[') {
            if (++depth > P->max_depth) too_deep(P);
            stack[depth] = (uint8_t)c;
            P->p++;
            ws(P);
            if (peek(P) != (c == '{' ? '}' : ']')) {
                if (c == '{') skip_key(P);
                continue; /* to the first value */
            }
            P->p++;
            depth--;
        } else {
            skip_scalar(P);
        }
        /* after a value: close containers until one goes on */
        for (;;) {
            if (depth == base) return;
            ws(P);
            c = peek(P);
            int open = stack[depth];
            if (c == ',') {
                P->p++;
                if (open == '{') skip_key(P);
                break;
            }
            if (c != (open == '{' ? '}' : ']')) syntax(P, P->p, open == '{' ? "expected ',' or '}'" : "expected ',' or ']'");
            P->p++;
            depth--;
        }
    }
}

/* ---------------------------------------------------------------- objects and lists */

typedef struct {
    const char *camel, *snake;
    size_t camel_len, snake_len;
} Field;

#define FIELD(c, s) {c, s, sizeof(c) - 1, sizeof(s) - 1}

/* Starts an object or list at P->p (its depth checked). */
static void open_container(Parser *P, int depth) {
    if (depth > P->max_depth) too_deep(P);
    P->p++;
}

/* The next member of an object: 1 with its field index in *field (-1 when
 * unknown; start with -1) and P->p at its value, 0 after the closing brace. */
static int next_member(Parser *P, int *count, const Field *fields, int nfields, int *field, const uint8_t **key_at) {
    ws(P);
    int c = peek(P);
    if (c == '}') {
        P->p++;
        return 0;
    }
    if (*count) {
        if (c != ',') syntax(P, P->p, "expected ',' or '}'");
        P->p++;
        ws(P);
    }
    if (peek(P) != '"') syntax(P, P->p, "expected a key in double quotes");
    *key_at = P->p;
    size_t n;
    const uint8_t *k = read_text(P, &n);
    /* writers keep the schema's order: try the field after the last one first */
    int guess = *field + 1 < nfields ? *field + 1 : 0;
    *field = -1;
    for (int j = 0; j < nfields; j++) {
        int i = guess + j < nfields ? guess + j : guess + j - nfields;
        const Field *f = &fields[i];
        if ((n == f->camel_len && memcmp(k, f->camel, n) == 0) || (n == f->snake_len && memcmp(k, f->snake, n) == 0)) {
            *field = i;
            break;
        }
    }
    ws(P);
    if (peek(P) != ':') syntax(P, P->p, "expected ':' after a key");
    P->p++;
    ws(P);
    if (P->p >= P->end) syntax(P, P->end, "");
    (*count)++;
    return 1;
}

/* Marks a field as seen; a second time is an error. */
static void once(Parser *P, uint32_t *seen, int field, const Field *fields, const uint8_t *key_at) {
    if (*seen & (1u << field)) {
        push_name(P, fields[field].camel);
        invalid(P, key_at, "the field is given twice (the same key, or its camelCase and snake_case names)", NULL, 0, 0);
    }
    *seen |= 1u << field;
}

/* The next element of a list: 1 with P->p at it, 0 after the closing bracket. */
static int next_element(Parser *P, int64_t *count) {
    ws(P);
    int c = peek(P);
    if (c == ']') {
        P->p++;
        return 0;
    }
    if (*count) {
        if (c != ',') syntax(P, P->p, "expected ',' or ']'");
        P->p++;
        ws(P);
    }
    if (P->p >= P->end) syntax(P, P->end, "");
    (*count)++;
    return 1;
}

/* 1 at an object (the value must then be read as one), 0 after a null;
 * anything else is an error naming what was expected. */
static int object_or_null(Parser *P, const char *expected) {
    int c = peek(P);
    if (c == '{') return 1;
    if (c == 'n') {
        read_literal(P);
        return 0;
    }
    if (c == '[' || c == '"' || c == 't' || c == 'f' || c == 'N' || c == 'I' || c == '-' || is_digit(c))
        invalid(P, P->p, expected, (const uint8_t *)kind_of(P), strlen(kind_of(P)), 0);
    syntax(P, P->p, "expected a value");
}

/* An object that must be there (an element of a list: null is no message). */
static void require_object(Parser *P, const char *expected) {
    if (peek(P) == 'n') invalid(P, P->p, expected, (const uint8_t *)"null", 4, 0);
    object_or_null(P, expected);
}

/* The same for lists. */
static int list_or_null(Parser *P, const char *expected) {
    int c = peek(P);
    if (c == '[') return 1;
    if (c == 'n') {
        read_literal(P);
        return 0;
    }
    if (c == '{' || c == '"' || c == 't' || c == 'f' || c == 'N' || c == 'I' || c == '-' || is_digit(c))
        invalid(P, P->p, expected, (const uint8_t *)kind_of(P), strlen(kind_of(P)), 0);
    syntax(P, P->p, "expected a value");
}

/* ---------------------------------------------------------------- scalar fields */

/* Digits [p, q) as a magnitude; 0 when they overflow uint64. */
static inline int digits_value(const uint8_t *p, const uint8_t *q, uint64_t *out) {
    uint64_t v = 0;
    while (p < q && *p == '0') p++;
    if (q - p > 20) return 0;
    const uint8_t *safe = q - p > 19 ? q - 1 : q; /* 19 digits always fit */
    for (; p < safe; p++) v = v * 10 + (uint64_t)(*p - '0');
    if (p < q) {
        uint64_t d = (uint64_t)(*p - '0');
        if (v > (UINT64_MAX - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = v;
    return 1;
}

/* Checked number text as a double, correctly rounded as float() does. */
static double to_double(Parser *P, const uint8_t *s, size_t n) {
    /* strtod needs a terminated copy (s may be unescaped text in scratch) */
    P->number.len = 0;
    if (!buf_reserve(&P->number, n + 1)) out_of_memory(P);
    memcpy(P->number.data, s, n);
    P->number.data[n] = 0;
    return pt_strtod_c((const char *)P->number.data, NULL); /* '.' whatever locale Qt set */
}

/* sign and magnitude as an int64 (or a uint64 when is_unsigned) into *out;
 * 0 when out of range. */
static int fit(int neg, uint64_t mag, int is_unsigned, uint64_t *out) {
    if (is_unsigned) {
        if (neg && mag) return 0;
        *out = mag;
        return 1;
    }
    if (neg) {
        if (mag > (uint64_t)1 << 63) return 0;
        *out = (uint64_t)0 - mag;
        return 1;
    }
    if (mag > (uint64_t)INT64_MAX) return 0;
    *out = mag;
    return 1;
}

/* A JSON number as an integer: exact when integral, else truncated toward
 * zero as Python's int(float) does. */
static uint64_t number_as_int(Parser *P, int is_unsigned) {
    const uint8_t *at = P->p;
    int integral;
    const uint8_t *s = scan_number(P, &integral);
    size_t n = (size_t)(P->p - s);
    uint64_t out;
    if (integral) {
        int neg = *s == '-';
        uint64_t mag;
        if (digits_value(s + neg, P->p, &mag) && fit(neg, mag, is_unsigned, &out)) return out;
    } else {
        double d = trunc(to_double(P, s, n));
        if (is_unsigned ? d >= 0.0 && d < 18446744073709551616.0 : d >= -9223372036854775808.0 && d < 9223372036854775808.0)
            return is_unsigned || d >= 0 ? (uint64_t)d : (uint64_t)(int64_t)d;
    }
    invalid(P, at, is_unsigned ? "the number is out of range for uint64:" : "the number is out of range for int64:", s, n, 0);
}

/* Text holding an integer (an optional sign and decimal digits), as int()
 * reads it; 0 when it is no such text, else 1 with *out set (invalid()
 * when out of range). */
static int text_as_int(Parser *P, const uint8_t *at, const uint8_t *s, size_t n, int is_unsigned, int plus, uint64_t *out) {
    const uint8_t *q = s + n, *d = s;
    int neg = 0;
    if (d < q && (*d == '-' || (plus && *d == '+'))) neg = *d++ == '-';
    if (d == q) return 0;
    for (const uint8_t *c = d; c < q; c++)
        if ((uint8_t)(*c - '0') > 9) return 0;
    uint64_t mag;
    if (!digits_value(d, q, &mag) || !fit(neg, mag, is_unsigned, out))
        invalid(P, at, is_unsigned ? "the number is out of range for uint64:" : "the number is out of range for int64:", s, n, 1);
    return 1;
}

/* An int64 or uint64 field: a number, text of an integer, or null (0). */
static uint64_t get_int(Parser *P, int is_unsigned) {
    const uint8_t *at = P->p;
    int c = peek(P);
    if (c == '"') {
        size_t n;
        const uint8_t *s = read_text(P, &n);
        uint64_t out;
        if (!text_as_int(P, at, s, n, is_unsigned, 1, &out)) invalid(P, at, "expected an integer, got the text", s, n, 1);
        return out;
    }
    if (is_number_start(P)) return number_as_int(P, is_unsigned);
    if (c == '{' || c == '[') invalid(P, at, "expected a number, got", (const uint8_t *)kind_of(P), strlen(kind_of(P)), 0);
    int k = read_literal(P);
    if (k == L_NULL) return 0;
    if (k == L_TRUE || k == L_FALSE) invalid(P, at, "expected a number, got a boolean", NULL, 0, 0);
    invalid(P, at, "expected an integer, got", (const uint8_t *)LITERALS[k], strlen(LITERALS[k]), 0);
}

static inline int64_t get_int64(Parser *P) { return (int64_t)get_int(P, 0); }

static int lower_equals(const uint8_t *s, size_t n, const char *word) {
    size_t k = strlen(word);
    if (n != k) return 0;
    for (size_t i = 0; i < n; i++)
        if ((s[i] | 0x20) != (uint8_t)word[i]) return 0;
    return 1;
}

/* Text Python's float() reads the same way: a decimal number (digits with
 * an optional point, optional exponent) or nan / inf / infinity, signed. */
static int float_text(const uint8_t *s, size_t n) {
    const uint8_t *p = s, *q = s + n;
    if (p < q && (*p == '+' || *p == '-')) p++;
    if (lower_equals(p, (size_t)(q - p), "nan") || lower_equals(p, (size_t)(q - p), "inf") ||
        lower_equals(p, (size_t)(q - p), "infinity"))
        return 1;
    int digits = 0;
    while (p < q && is_digit(*p)) p++, digits++;
    if (p < q && *p == '.') {
        p++;
        while (p < q && is_digit(*p)) p++, digits++;
    }
    if (!digits) return 0;
    if (p < q && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < q && (*p == '+' || *p == '-')) p++;
        if (p >= q || !is_digit(*p)) return 0;
        while (p < q && is_digit(*p)) p++;
    }
    return p == q;
}

/* A double field: a number, NaN / Infinity / -Infinity, text of a number,
 * or null (0). */
static double get_double(Parser *P) {
    const uint8_t *at = P->p;
    int c = peek(P);
    if (c == '"') {
        size_t n;
        const uint8_t *s = read_text(P, &n);
        if (!float_text(s, n)) invalid(P, at, "expected a number, got the text", s, n, 1);
        return to_double(P, s, n);
    }
    if (is_number_start(P)) {
        int integral;
        const uint8_t *s = scan_number(P, &integral);
        double d = to_double(P, s, (size_t)(P->p - s));
        return d == 0.0 ? 0.0 : d; /* -0.0 too: the Python reader's `or 0` made it 0.0 */
    }
    if (c == '{' || c == '[') invalid(P, at, "expected a number, got", (const uint8_t *)kind_of(P), strlen(kind_of(P)), 0);
    switch (read_literal(P)) {
    case L_NULL: return 0.0;
    case L_NAN: return NAN;
    case L_INF: return INFINITY;
    case L_NINF: return -INFINITY;
    default: invalid(P, at, "expected a number, got a boolean", NULL, 0, 0);
    }
}

/* A MemoryActivity: its name, its number (also as text), or null (0). */
static int64_t get_activity(Parser *P) {
    const uint8_t *at = P->p;
    if (peek(P) != '"') return get_int64(P);
    size_t n;
    const uint8_t *s = read_text(P, &n);
    uint64_t out;
    if (text_as_int(P, at, s, n, 0, 0, &out)) return (int64_t)out;
    for (int k = 0; k < 5; k++)
        if (n == strlen(ACTIVITIES[k]) && memcmp(s, ACTIVITIES[k], n) == 0) return k;
    invalid(P, at, "unknown memory activity", s, n, 1);
}

/* A string field as an interned id: text or null (""). */
static int32_t get_text(Parser *P) {
    const uint8_t *at = P->p;
    int c = peek(P);
    if (c == '"') {
        size_t n;
        const uint8_t *s = read_text(P, &n);
        if (n == 0) return 0;
        int32_t id = intern(&P->strings, s, n, 1);
        if (id < 0) out_of_memory(P);
        return id;
    }
    if (c == 'n') {
        read_literal(P);
        return 0;
    }
    if (c == '{' || c == '[' || c == 't' || c == 'f' || c == 'N' || c == 'I' || c == '-' || is_digit(c))
        invalid(P, at, "expected text, got", (const uint8_t *)kind_of(P), strlen(kind_of(P)), 0);
    syntax(P, at, "expected a value");
}

/* ---------------------------------------------------------------- the schema */

/* Reads the value of field f (P->p at it) into target; depth: the object's. */
typedef void (*FieldReader)(Parser *P, int f, int depth, void *target);

/* The members of the object at P->p (opened at depth): known fields, each
 * at most once, by `read`, others skipped. Returns how many members it has. */
static int read_object(Parser *P, int depth, const Field *fields, int nfields, FieldReader read, void *target) {
    open_container(P, depth);
    int count = 0, f = -1;
    uint32_t seen = 0;
    const uint8_t *key_at;
    while (next_member(P, &count, fields, nfields, &f, &key_at)) {
        if (f < 0) {
            skip_value(P, depth);
            continue;
        }
        once(P, &seen, f, fields, key_at);
        push_name(P, fields[f].camel);
        read(P, f, depth, target);
        POP(P);
    }
    return count;
}

enum { ST_STACK, ST_HEAP, ST_FREE, ST_FRAG, ST_PEAK };
static const Field STATS_FIELDS[] = {
    FIELD("stackReservedBytes", "stack_reserved_bytes"), FIELD("heapAllocatedBytes", "heap_allocated_bytes"),
    FIELD("freeMemoryBytes", "free_memory_bytes"),       FIELD("fragmentation", "fragmentation"),
    FIELD("peakBytesInUse", "peak_bytes_in_use"),
};

static void stats_field(Parser *P, int f, int depth, void *target) {
    (void)depth;
    Row *r = target;
    switch (f) {
    case ST_STACK: r->stack = get_int64(P); break;
    case ST_HEAP: r->heap = get_int64(P); break;
    case ST_FREE: r->free = get_int64(P); break;
    case ST_FRAG: r->frag = get_double(P); break;
    case ST_PEAK: r->peak = get_int64(P); break;
    }
}

/* MemoryAggregationStats (object or null) at depth. */
static void parse_stats(Parser *P, int depth, Row *r) {
    if (object_or_null(P, "expected an object (MemoryAggregationStats), got")) read_object(P, depth, STATS_FIELDS, 5, stats_field, r);
}

enum { MD_ACTIVITY, MD_REQUESTED, MD_ALLOCATION, MD_ADDRESS, MD_OP, MD_STEP, MD_REGION, MD_DTYPE, MD_SHAPE };
static const Field METADATA_FIELDS[] = {
    FIELD("memoryActivity", "memory_activity"), FIELD("requestedBytes", "requested_bytes"),
    FIELD("allocationBytes", "allocation_bytes"), FIELD("address", "address"),
    FIELD("tfOpName", "tf_op_name"),            FIELD("stepId", "step_id"),
    FIELD("regionType", "region_type"),         FIELD("dataType", "data_type"),
    FIELD("tensorShape", "tensor_shape"),
};

static void metadata_field(Parser *P, int f, int depth, void *target) {
    (void)depth;
    Row *r = target;
    switch (f) {
    case MD_ACTIVITY: r->activity = get_activity(P); break;
    case MD_REQUESTED: r->requested = get_int64(P); break;
    case MD_ALLOCATION: r->allocation = get_int64(P); break;
    case MD_ADDRESS: r->address = get_int(P, 1); break;
    case MD_OP: r->op = get_text(P); break;
    case MD_STEP: r->step = get_int64(P); break;
    case MD_REGION: r->region = get_text(P); break;
    case MD_DTYPE: r->dtype = get_text(P); break;
    case MD_SHAPE: r->shape = get_text(P); break;
    }
}

/* MemoryActivityMetadata (object or null) at depth. */
static void parse_metadata(Parser *P, int depth, Row *r) {
    if (object_or_null(P, "expected an object (MemoryActivityMetadata), got")) read_object(P, depth, METADATA_FIELDS, 9, metadata_field, r);
}

enum { SN_TIME, SN_STATS, SN_METADATA };
static const Field SNAPSHOT_FIELDS[] = {
    FIELD("timeOffsetPs", "time_offset_ps"),
    FIELD("aggregationStats", "aggregation_stats"),
    FIELD("activityMetadata", "activity_metadata"),
};

static void snapshot_field(Parser *P, int f, int depth, void *target) {
    Row *r = target;
    switch (f) {
    case SN_TIME: r->time = get_int64(P); break;
    case SN_STATS: parse_stats(P, depth + 1, r); break;
    case SN_METADATA: parse_metadata(P, depth + 1, r); break;
    }
}

/* A list (or null) at depth of objects, each read by `element` (or, with
 * element NULL, as a MemoryProfileSnapshot appended to the columns). */
static void parse_list_of(Parser *P, int depth, const char *what, void (*element)(Parser *, int)) {
    if (!list_or_null(P, element ? "expected a list, got" : "expected a list of snapshots, got")) return;
    open_container(P, depth);
    int64_t i = 0;
    while (next_element(P, &i)) {
        push_index(P, i - 1);
        require_object(P, what);
        if (element) {
            element(P, depth + 1);
        } else {
            Row r = {0};
            read_object(P, depth + 1, SNAPSHOT_FIELDS, 3, snapshot_field, &r);
            if (!columns_push(&P->snap, &r)) out_of_memory(P);
        }
        POP(P);
    }
}

static void special_element(Parser *P, int depth) {
    Row r = {0};
    parse_metadata(P, depth, &r);
    if (!columns_push(&P->special, &r)) out_of_memory(P);
}

enum { AA_SNAPSHOT, AA_SPECIAL, AA_OCCURRENCES };
static const Field ACTIVE_FIELDS[] = {
    FIELD("snapshotIndex", "snapshot_index"),
    FIELD("specialIndex", "special_index"),
    FIELD("numOccurrences", "num_occurrences"),
};

static void active_field(Parser *P, int f, int depth, void *target) {
    (void)depth;
    ((int64_t *)target)[f] = get_int64(P);
}

static void active_element(Parser *P, int depth) {
    int64_t v[3] = {0, 0, 0};
    read_object(P, depth, ACTIVE_FIELDS, 3, active_field, v);
    if (P->nactive == P->cap_active) {
        int64_t cap = P->cap_active ? P->cap_active * 2 : 64;
        int64_t *g = PyMem_RawRealloc(P->active, sizeof(int64_t) * 3 * (size_t)cap);
        if (!g) out_of_memory(P);
        P->active = g;
        P->cap_active = cap;
    }
    memcpy(P->active + 3 * P->nactive++, v, sizeof v);
}

enum { SU_LIFETIME, SU_STATS, SU_TIME, SU_CAPACITY };
static const Field SUMMARY_FIELDS[] = {
    FIELD("peakBytesUsageLifetime", "peak_bytes_usage_lifetime"),
    FIELD("peakStats", "peak_stats"),
    FIELD("peakStatsTimePs", "peak_stats_time_ps"),
    FIELD("memoryCapacity", "memory_capacity"),
};

typedef struct {
    Allocator *a;
    Row stats;
} Summary;

static void summary_field(Parser *P, int f, int depth, void *target) {
    Summary *s = target;
    switch (f) {
    case SU_LIFETIME: s->a->summary[1] = get_int64(P); break;
    case SU_STATS: parse_stats(P, depth + 1, &s->stats); break;
    case SU_TIME: s->a->summary[2] = get_int64(P); break;
    case SU_CAPACITY: s->a->summary[0] = get_int64(P); break;
    }
}

/* MemoryProfileSummary (object or null); an object with no member at all
 * counts as absent (the Python reader tested its truth). */
static void parse_summary(Parser *P, int depth, Allocator *a) {
    if (!object_or_null(P, "expected an object (MemoryProfileSummary), got")) return;
    Summary s = {a, {0}};
    a->has_summary = read_object(P, depth, SUMMARY_FIELDS, 4, summary_field, &s) > 0;
    a->summary[3] = s.stats.stack;
    a->summary[4] = s.stats.heap;
    a->summary[5] = s.stats.free;
    a->frag = s.stats.frag;
}

enum { AL_SNAPSHOTS, AL_SUMMARY, AL_ACTIVE, AL_SPECIAL, AL_SAMPLED };
static const Field ALLOCATOR_FIELDS[] = {
    FIELD("memoryProfileSnapshots", "memory_profile_snapshots"),
    FIELD("profileSummary", "profile_summary"),
    FIELD("activeAllocations", "active_allocations"),
    FIELD("specialAllocations", "special_allocations"),
    FIELD("sampledTimelineSnapshots", "sampled_timeline_snapshots"),
};

static void allocator_field(Parser *P, int f, int depth, void *target) {
    Allocator *a = target;
    switch (f) {
    case AL_SNAPSHOTS:
    case AL_SAMPLED: {
        Range r = {P->snap.n, 0};
        parse_list_of(P, depth + 1, "expected an object (MemoryProfileSnapshot), got", NULL);
        r.end = P->snap.n;
        *(f == AL_SNAPSHOTS ? &a->snapshots : &a->sampled) = r;
        break;
    }
    case AL_SUMMARY: parse_summary(P, depth + 1, a); break;
    case AL_SPECIAL:
        a->special.first = P->special.n;
        parse_list_of(P, depth + 1, "expected an object (MemoryActivityMetadata), got", special_element);
        a->special.end = P->special.n;
        break;
    case AL_ACTIVE:
        a->active.first = P->nactive;
        parse_list_of(P, depth + 1, "expected an object (ActiveAllocation), got", active_element);
        a->active.end = P->nactive;
        break;
    }
}

/* PerAllocatorMemoryProfile (object or null) at depth. */
static void parse_allocator(Parser *P, int depth, Allocator *a) {
    a->snapshots.first = a->snapshots.end = P->snap.n;
    a->sampled = a->snapshots;
    a->special.first = a->special.end = P->special.n;
    a->active.first = a->active.end = P->nactive;
    if (object_or_null(P, "expected an object (PerAllocatorMemoryProfile), got"))
        read_object(P, depth, ALLOCATOR_FIELDS, 5, allocator_field, a);
}

/* memory_profile_per_allocator (object or null) at depth. */
static void parse_allocators(Parser *P, int depth) {
    if (!object_or_null(P, "expected an object (memory id: PerAllocatorMemoryProfile), got")) return;
    open_container(P, depth);
    int count = 0;
    for (;;) {
        ws(P);
        int c = peek(P);
        if (c == '}') {
            P->p++;
            return;
        }
        if (count++) {
            if (c != ',') syntax(P, P->p, "expected ',' or '}'");
            P->p++;
            ws(P);
        }
        if (peek(P) != '"') syntax(P, P->p, "expected a key in double quotes");
        const uint8_t *key_at = P->p;
        size_t n;
        const uint8_t *k = read_text(P, &n);
        int32_t id = intern(&P->strings, k, n, 1);
        if (id < 0) out_of_memory(P);
        ws(P);
        if (peek(P) != ':') syntax(P, P->p, "expected ':' after a key");
        P->p++;
        ws(P);
        if (P->p >= P->end) syntax(P, P->end, "");
        push_key(P, id);
        if (id >= P->cap_key_seen) {
            int64_t cap = P->cap_key_seen ? P->cap_key_seen : 64;
            while (cap <= id) cap *= 2;
            uint8_t *g = PyMem_RawRealloc(P->key_seen, (size_t)cap);
            if (!g) out_of_memory(P);
            memset(g + P->cap_key_seen, 0, (size_t)(cap - P->cap_key_seen));
            P->key_seen = g;
            P->cap_key_seen = cap;
        }
        if (P->key_seen[id]) invalid(P, key_at, "the memory id is given twice", NULL, 0, 0);
        P->key_seen[id] = 1;
        if (P->nallocs == P->cap_allocs) {
            int64_t cap = P->cap_allocs ? P->cap_allocs * 2 : 8;
            Allocator *g = PyMem_RawRealloc(P->allocs, sizeof(Allocator) * (size_t)cap);
            if (!g) out_of_memory(P);
            P->allocs = g;
            P->cap_allocs = cap;
        }
        Allocator *a = &P->allocs[P->nallocs];
        memset(a, 0, sizeof *a);
        a->key = id;
        parse_allocator(P, depth + 1, a);
        P->nallocs++;
        POP(P);
    }
}

enum { MP_ALLOCATORS, MP_NUM_HOSTS, MP_MEMORY_IDS, MP_VERSION };
static const Field PROFILE_FIELDS[] = {
    FIELD("memoryProfilePerAllocator", "memory_profile_per_allocator"),
    FIELD("numHosts", "num_hosts"),
    FIELD("memoryIds", "memory_ids"),
    FIELD("version", "version"),
};

/* Where the top-level object must start. */
static void document_start(Parser *P) {
    P->p = P->start;
    ws(P);
    if (peek(P) != '{') syntax(P, P->p, "expected an object");
}

static void document_end(Parser *P) {
    ws(P);
    if (P->p < P->end) syntax(P, P->p, "extra data after the document");
}

/* A document is a MemoryProfile by its map or its memory ids. */
static void profile_field(Parser *P, int f, int depth, void *target) {
    (void)target;
    P->recognized |= f == MP_ALLOCATORS || f == MP_MEMORY_IDS;
    switch (f) {
    case MP_ALLOCATORS: parse_allocators(P, depth + 1); break;
    case MP_NUM_HOSTS: P->num_hosts = get_int64(P); break;
    case MP_MEMORY_IDS: skip_value(P, depth); break; /* the map's keys say the same */
    case MP_VERSION: P->version = get_int64(P); break;
    }
}

/* MemoryProfile: the whole document. */
static void parse_document(Parser *P) {
    document_start(P);
    read_object(P, 1, PROFILE_FIELDS, 4, profile_field, NULL);
    document_end(P);
}

/* Syntax, depth and the top-level keys only: run after an invalid value, so
 * that errors are ranked as if the document had been parsed whole first. */
static void check_document(Parser *P) {
    P->recognized = 0;
    document_start(P);
    open_container(P, 1);
    int count = 0, f = -1;
    const uint8_t *key_at;
    while (next_member(P, &count, PROFILE_FIELDS, 4, &f, &key_at)) {
        P->recognized |= f == MP_ALLOCATORS || f == MP_MEMORY_IDS;
        skip_value(P, 1);
    }
    document_end(P);
}

static void run(Parser *P) {
    if (setjmp(P->jump) == 0) {
        parse_document(P);
        if (!P->recognized) fail(P, E_NOT_PROFILE, P->start, "no memoryProfilePerAllocator");
        return;
    }
    if (P->err != E_INVALID) return;
    /* keep the invalid value's report while the whole document is checked */
    int64_t offset = P->err_offset;
    const char *message = P->err_message;
    P->err = E_NONE;
    if (setjmp(P->jump) == 0) {
        check_document(P);
        if (!P->recognized) fail(P, E_NOT_PROFILE, P->start, "no memoryProfilePerAllocator");
        P->err = E_INVALID;
        P->err_offset = offset;
        P->err_message = message;
    }
}

/* ---------------------------------------------------------------- strings per list */

/* Renumbers the string columns of rows [first, end) to that list's own
 * table ("" first, then the op, region, dtype and shape columns in turn, by
 * first appearance, as the Python reader numbered them) and returns the
 * table as global ids (*count of them). map: one int32 per global id, all
 * -1, left so. */
static int32_t *local_strings(Columns *c, Range r, int32_t *map, int32_t *count) {
    int32_t cap = 64, n = 0;
    int32_t *ids = PyMem_RawMalloc(sizeof(int32_t) * (size_t)cap);
    if (!ids) return NULL;
    map[0] = 0;
    ids[n++] = 0;
    for (int k = 0; k < 4; k++) {
        int32_t *col = c->str[k];
        for (int64_t i = r.first; i < r.end; i++) {
            int32_t g = col[i];
            if (map[g] < 0) {
                if (n == cap) {
                    int32_t *grown = PyMem_RawRealloc(ids, sizeof(int32_t) * (size_t)(cap *= 2));
                    if (!grown) {
                        for (int32_t j = 0; j < n; j++) map[ids[j]] = -1;
                        PyMem_RawFree(ids);
                        return NULL;
                    }
                    ids = grown;
                }
                map[g] = n;
                ids[n++] = g;
            }
            col[i] = map[g];
        }
    }
    for (int32_t j = 0; j < n; j++) map[ids[j]] = -1;
    *count = n;
    return ids;
}

/* ---------------------------------------------------------------- Python objects */

static void parser_free(Parser *P) {
    intern_free(&P->strings);
    columns_free(&P->snap);
    columns_free(&P->special);
    PyMem_RawFree(P->active);
    PyMem_RawFree(P->allocs);
    PyMem_RawFree(P->key_seen);
    PyMem_RawFree(P->stack);
    buf_free(&P->scratch);
    buf_free(&P->number);
}

/* Python strings of the interned ids, made on first use. */
typedef struct {
    Interner *t;
    PyObject **cache;
} Texts;

static PyObject *text(Texts *x, int32_t id) {
    if (!x->cache[id]) {
        size_t n;
        const uint8_t *s = intern_bytes(x->t, id, &n);
        x->cache[id] = PyUnicode_DecodeUTF8((const char *)s, (Py_ssize_t)n, "surrogatepass");
        if (!x->cache[id]) return NULL;
    }
    Py_INCREF(x->cache[id]);
    return x->cache[id];
}

static PyObject *list_tuple(Texts *x, Range r, const int32_t *ids, int32_t n) {
    PyObject *strings = PyList_New(n);
    if (!strings) return NULL;
    for (int32_t i = 0; i < n; i++) {
        PyObject *u = text(x, ids[i]);
        if (!u) {
            Py_DECREF(strings);
            return NULL;
        }
        PyList_SET_ITEM(strings, i, u);
    }
    return Py_BuildValue("(LLN)", (long long)r.first, (long long)r.end, strings);
}

static PyObject *special_list(Parser *P, Texts *x, Range r) {
    PyObject *out = PyList_New(0);
    Columns *c = &P->special;
    for (int64_t i = r.first; out && i < r.end; i++) {
        PyObject *t[4];
        for (int k = 0; k < 4; k++) t[k] = text(x, c->str[k][i]);
        PyObject *row = NULL;
        if (t[0] && t[1] && t[2] && t[3])
            row = Py_BuildValue("(LLLKOLOOO)", (long long)c->i64[5][i], (long long)c->i64[6][i], (long long)c->i64[7][i],
                                (unsigned long long)c->address[i], t[0], (long long)c->i64[8][i], t[1], t[2], t[3]);
        for (int k = 0; k < 4; k++) Py_XDECREF(t[k]);
        if (!row || PyList_Append(out, row) < 0) Py_CLEAR(out);
        Py_XDECREF(row);
    }
    return out;
}

static PyObject *active_list(Parser *P, Range r) {
    PyObject *out = PyList_New(0);
    for (int64_t i = r.first; out && i < r.end; i++) {
        const int64_t *v = P->active + 3 * i;
        PyObject *row = Py_BuildValue("(LLL)", (long long)v[0], (long long)v[1], (long long)v[2]);
        if (!row || PyList_Append(out, row) < 0) Py_CLEAR(out);
        Py_XDECREF(row);
    }
    return out;
}

static int set_item(PyObject *d, const char *key, PyObject *value) {
    if (!value) return 0;
    int rc = PyDict_SetItemString(d, key, value);
    Py_DECREF(value);
    return rc == 0;
}

static PyObject *error_result(Parser *P) {
    int64_t line = 1;
    const uint8_t *line_start = P->start, *at = P->start + P->err_offset;
    for (const uint8_t *q = P->start; (q = memchr(q, '\n', (size_t)(at - q))) != NULL; q++) {
        line++;
        line_start = q + 1;
    }
    PyObject *r = PyDict_New();
    if (!r) return NULL;
    PyObject *value = Py_None;
    Py_INCREF(value);
    if (P->err_has_value) {
        Py_DECREF(value);
        value = PyUnicode_DecodeUTF8((const char *)P->err_value, (Py_ssize_t)P->err_value_len, "surrogatepass");
    }
    if (!set_item(r, "error", PyUnicode_FromString(ERROR_KINDS[P->err])) ||
        !set_item(r, "message", PyUnicode_FromString(P->err_message)) || !set_item(r, "value", value) ||
        !set_item(r, "quote", PyBool_FromLong(P->err_quote)) ||
        !set_item(r, "path", PyUnicode_DecodeUTF8(P->err_path, (Py_ssize_t)strlen(P->err_path), "replace")) ||
        !set_item(r, "offset", PyLong_FromLongLong(P->err_offset)) || !set_item(r, "line", PyLong_FromLongLong(line)) ||
        !set_item(r, "column", PyLong_FromLongLong((long long)(at - line_start) + 1))) {
        Py_DECREF(r);
        return NULL;
    }
    return r;
}

static const char *COLUMN_NAMES[] = {"time_ps", "stack", "heap", "free", "peak_in_use", "activity", "requested",
                                     "allocation", "step"};

static PyObject *result(Parser *P, int32_t **ids, int32_t *nids) {
    PyObject *r = PyDict_New(), *columns = PyDict_New(), *allocators = PyList_New(0);
    Texts x = {&P->strings, PyMem_Calloc((size_t)P->strings.n + 1, sizeof(PyObject *))};
    int ok = r && columns && allocators && x.cache;
    Columns *c = &P->snap;
    for (int k = 0; ok && k < N_INT64; k++) ok = set_item(columns, COLUMN_NAMES[k], raw_array((void **)&c->i64[k], c->n, NPY_INT64, 8));
    static const char *string_names[4] = {"op", "region", "dtype", "shape"};
    for (int k = 0; ok && k < 4; k++) ok = set_item(columns, string_names[k], raw_array((void **)&c->str[k], c->n, NPY_INT32, 4));
    ok = ok && set_item(columns, "address", raw_array((void **)&c->address, c->n, NPY_UINT64, 8));
    ok = ok && set_item(columns, "fragmentation", raw_array((void **)&c->frag, c->n, NPY_FLOAT64, 8));
    for (int64_t i = 0; ok && i < P->nallocs; i++) {
        Allocator *a = &P->allocs[i];
        PyObject *summary = Py_None;
        Py_INCREF(summary);
        if (a->has_summary) {
            Py_DECREF(summary);
            summary = Py_BuildValue("(LLLLLLd)", (long long)a->summary[0], (long long)a->summary[1], (long long)a->summary[2],
                                    (long long)a->summary[3], (long long)a->summary[4], (long long)a->summary[5], a->frag);
        }
        PyObject *row = Py_BuildValue("(NNNNNN)", text(&x, a->key), list_tuple(&x, a->snapshots, ids[2 * i], nids[2 * i]),
                                      list_tuple(&x, a->sampled, ids[2 * i + 1], nids[2 * i + 1]), summary,
                                      special_list(P, &x, a->special), active_list(P, a->active));
        ok = row && PyList_Append(allocators, row) == 0;
        Py_XDECREF(row);
    }
    if (x.cache)
        for (int32_t i = 0; i < P->strings.n; i++) Py_XDECREF(x.cache[i]);
    PyMem_Free(x.cache);
    if (ok) {
        ok = set_item(r, "columns", columns) && set_item(r, "allocators", allocators) &&
             set_item(r, "num_hosts", PyLong_FromLongLong(P->num_hosts)) && set_item(r, "version", PyLong_FromLongLong(P->version));
        columns = allocators = NULL;
    }
    Py_XDECREF(columns);
    Py_XDECREF(allocators);
    if (!ok) {
        Py_XDECREF(r);
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return NULL;
    }
    return r;
}

static PyObject *read_json(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *data;
    int max_depth;
    if (!PyArg_ParseTuple(args, "Oi", &data, &max_depth)) return NULL;
    if (max_depth < 1) {
        PyErr_SetString(PyExc_ValueError, "max_depth must be at least 1");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    Parser *P = PyMem_RawCalloc(1, sizeof(Parser));
    if (!P) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    P->start = P->p = view.buf;
    P->end = P->start + view.len;
    P->max_depth = max_depth;
    P->stack = PyMem_RawMalloc((size_t)max_depth + 2);
    int32_t **ids = NULL, *nids = NULL;
    PyObject *r = NULL;
    if (!P->stack || intern(&P->strings, (const uint8_t *)"", 0, 1) != 0) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    run(P);
    if (!P->err) { /* each list's own string table */
        ids = PyMem_RawCalloc((size_t)P->nallocs * 2 + 1, sizeof(int32_t *));
        nids = PyMem_RawCalloc((size_t)P->nallocs * 2 + 1, sizeof(int32_t));
        int32_t *map = PyMem_RawMalloc(sizeof(int32_t) * ((size_t)P->strings.n + 1));
        if (!ids || !nids || !map) {
            P->err = E_MEMORY;
        } else {
            memset(map, 0xFF, sizeof(int32_t) * (size_t)P->strings.n);
            for (int64_t i = 0; i < 2 * P->nallocs && !P->err; i++) {
                Allocator *a = &P->allocs[i / 2];
                ids[i] = local_strings(&P->snap, i % 2 ? a->sampled : a->snapshots, map, &nids[i]);
                if (!ids[i]) P->err = E_MEMORY;
            }
        }
        PyMem_RawFree(map);
        if (P->err) {
            P->err_message = "out of memory";
            P->err_offset = 0;
        }
    }
    Py_END_ALLOW_THREADS
    r = P->err ? error_result(P) : result(P, ids, nids);
done:
    if (ids)
        for (int64_t i = 0; i < 2 * P->nallocs; i++) PyMem_RawFree(ids[i]);
    PyMem_RawFree(ids);
    PyMem_RawFree(nids);
    parser_free(P);
    PyMem_RawFree(P);
    PyBuffer_Release(&view);
    return r;
}

static PyMethodDef methods[] = {
    {"read", read_json, METH_VARARGS,
     "read(data, max_depth) -> dict: a MemoryProfile JSON document as columns, or an error description"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_memory_json", .m_doc = NULL, .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__memory_json(void) {
    import_array();
    draw_hash_seed();
    if (!pt_c_numeric_init()) return PyErr_NoMemory();
    return PyModule_Create(&module);
}
