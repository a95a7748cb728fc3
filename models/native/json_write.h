/* JSON text exactly as Python's json.dumps writes it (ensure_ascii), for the
 * extensions that write exports (_jsonrows, _stepstats, xspace's _trace):
 * integers, floats (float.__repr__, and NaN / Infinity), strings from UTF-8
 * bytes. Each writer puts its text into room the caller has reserved and
 * returns the end of what it wrote. Include after _cbuffers.h (Python.h). */
#ifndef PROFSCOPE_JSON_WRITE_H
#define PROFSCOPE_JSON_WRITE_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "portable.h"

/* Decimal text of integers (20 digits and a sign at most), two digits at a
 * time. */
static const char DIGIT_PAIRS[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

static inline char *write_uint(char *w, uint64_t v, int negative) {
    if (negative) *w++ = '-';
    int n = 1; /* the digits, written from the last pair back */
    for (uint64_t p = 10; n < 20 && v >= p; p *= 10) n++;
    char *d = w + n;
    while (v >= 100) {
        d -= 2;
        memcpy(d, DIGIT_PAIRS + 2 * (v % 100), 2);
        v /= 100;
    }
    if (v >= 10) memcpy(d - 2, DIGIT_PAIRS + 2 * v, 2);
    else d[-1] = (char)('0' + v);
    return w + n;
}

static inline char *write_int(char *w, int64_t v) {
    return v < 0 ? write_uint(w, (uint64_t)0 - (uint64_t)v, 1) : write_uint(w, (uint64_t)v, 0);
}

/* Unsigned 128-bit integers for json_repr, modulo 2^128 (MSVC has no
 * __int128; pt_mul64 gives the 64 x 64 products). */
typedef struct {
    uint64_t hi, lo;
} U128;

static inline U128 u128_mul(uint64_t x, U128 y) { /* x * y */
    U128 r;
    r.lo = pt_mul64(x, y.lo, &r.hi);
    r.hi += x * y.hi;
    return r;
}

static inline U128 u128_shr(U128 x, int s) { /* x >> s, 0 < s < 128 */
    U128 r;
    r.hi = s >= 64 ? 0 : x.hi >> s;
    r.lo = s >= 64 ? x.hi >> (s - 64) : (x.lo >> s) | (x.hi << (64 - s));
    return r;
}

static inline int u128_low_zero(U128 x, int s) { /* (x & (2^s - 1)) == 0, 0 < s < 128 */
    if (s < 64) return !(x.lo & ((1ULL << s) - 1));
    return !x.lo && !(x.hi & ((1ULL << (s - 64)) - 1));
}

static inline U128 u128_add(U128 x, uint64_t y) { /* x + y */
    x.lo += y;
    x.hi += x.lo < y;
    return x;
}

static inline U128 u128_sub(U128 x, uint64_t y) { /* x - y */
    x.hi -= x.lo < y;
    x.lo -= y;
    return x;
}

static inline int u128_lt(U128 x, U128 y) { return x.hi < y.hi || (x.hi == y.hi && x.lo < y.lo); }

/* The most json_repr and json_float write. */
#define JSON_FLOAT_ROOM 32

/* float.__repr__ of v: NULL with a Python error set on failure. Python's
 * big-number dtoa takes ~1.5 us for a 17-digit time, so for 1e-4 <= v <
 * 2^53 (written in fixed notation) this finds the shortest decimal that
 * reads back as v, the closest to v among those, with exact 128-bit
 * arithmetic; other values go to PyOS_double_to_string. */
static inline char *json_repr(char *w, double v) {
    uint64_t bits;
    memcpy(&bits, &v, 8);
    int biased = (int)((bits >> 52) & 0x7ff);
    if (!(v >= 1e-4 && v < 9007199254740992.0) || biased == 0) goto python;
    uint64_t m = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
    int q = 1075 - biased; /* v = m / 2^q, 0 <= q <= 66 here */
    /* The interval of reals that read back as v, scaled by 2^(q + 2):
     * half an ulp each side (a quarter below a power of two), ends included
     * when m is even (ties read back to the even mantissa). */
    uint64_t lo = 4 * m - (m == (1ULL << 52) ? 1 : 2), hi = 4 * m + 2, mid = 4 * m;
    int shift = q + 2, inclusive = !(m & 1);
    U128 scale = {0, 1};
    uint64_t digits = 0;
    int k = 0;
    for (;; k++, scale = u128_mul(10, scale)) {
        U128 a = u128_mul(lo, scale), b = u128_mul(hi, scale);
        U128 dmin = u128_add(u128_shr(a, shift), !u128_low_zero(a, shift) || !inclusive);
        U128 dmax = u128_sub(u128_shr(b, shift), u128_low_zero(b, shift) && !inclusive);
        if (!u128_lt(dmax, dmin)) {
            /* the nearest, ties to even: the bits below d are above or at a half */
            U128 c = u128_mul(mid, scale), d = u128_shr(c, shift);
            int half_bit = (int)(u128_shr(c, shift - 1).lo & 1), below_half = !u128_low_zero(c, shift - 1);
            if (half_bit && (below_half || (d.lo & 1))) d = u128_add(d, 1);
            U128 pick = u128_lt(d, dmin) ? dmin : u128_lt(dmax, d) ? dmax : d;
            if (pick.hi) goto python; /* never: 17 digits are enough */
            digits = pick.lo;
            break;
        }
        if (k == 22) goto python;
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
    if (n <= k) { /* 0.00ddd */
        *w++ = '0';
        *w++ = '.';
        for (int z = 0; z < k - n; z++) *w++ = '0';
        memcpy(w, dg, n);
        return w + n;
    }
    memcpy(w, dg, n - k);
    w += n - k;
    *w++ = '.';
    if (!k) {
        *w++ = '0';
        return w;
    }
    memcpy(w, dg + n - k, k);
    return w + k;
python:;
    char *s = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!s) return NULL;
    size_t len = strlen(s);
    if (len > JSON_FLOAT_ROOM) { /* never for a double's repr */
        PyMem_Free(s);
        PyErr_SetString(PyExc_ValueError, "a float's text is too long");
        return NULL;
    }
    memcpy(w, s, len);
    PyMem_Free(s);
    return w + len;
}

/* A float as json.dumps writes it: NaN, Infinity, -Infinity, else repr. */
static inline char *json_float(char *w, double v) {
    if (v != v) return memcpy(w, "NaN", 3), w + 3;
    if (v == HUGE_VAL) return memcpy(w, "Infinity", 8), w + 8;
    if (v == -HUGE_VAL) return memcpy(w, "-Infinity", 9), w + 9;
    return json_repr(w, v);
}

/* One code point as json.dumps(ensure_ascii=True) writes it inside a
 * string: short escapes, printable ASCII as it is, else \uXXXX (lowercase
 * hex, a surrogate pair above U+FFFF). 12 bytes at most. */
static inline char *json_escaped(char *w, uint32_t cp) {
    static const char hex[] = "0123456789abcdef";
    switch (cp) {
    case '"': return memcpy(w, "\\\"", 2), w + 2;
    case '\\': return memcpy(w, "\\\\", 2), w + 2;
    case '\n': return memcpy(w, "\\n", 2), w + 2;
    case '\r': return memcpy(w, "\\r", 2), w + 2;
    case '\t': return memcpy(w, "\\t", 2), w + 2;
    case '\b': return memcpy(w, "\\b", 2), w + 2;
    case '\f': return memcpy(w, "\\f", 2), w + 2;
    }
    if (cp >= 0x20 && cp < 0x7f) {
        *w++ = (char)cp;
        return w;
    }
    if (cp >= 0x10000) { /* a surrogate pair */
        uint32_t v = cp - 0x10000;
        return json_escaped(json_escaped(w, 0xd800 | (v >> 10)), 0xdc00 | (v & 0x3ff));
    }
    w[0] = '\\';
    w[1] = 'u';
    w[2] = hex[(cp >> 12) & 15];
    w[3] = hex[(cp >> 8) & 15];
    w[4] = hex[(cp >> 4) & 15];
    w[5] = hex[cp & 15];
    return w + 6;
}

/* Bytes json.dumps writes as they are: printable ASCII but '"' and '\\'. */
static const uint8_t JSON_PLAIN[256] = {
    ['\x20'] = 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, /* 0x20-0x2f, '"' at 0x22 */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,            /* 0x30-0x3f */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,            /* 0x40-0x4f */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,            /* 0x50-0x5f, '\\' at 0x5c */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,            /* 0x60-0x6f */
    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,            /* 0x70-0x7f, DEL escaped */
};

/* Length of the valid UTF-8 sequence of two to four bytes at p (strict, as
 * Python decodes: no overlong forms, surrogates or values past U+10FFFF),
 * its code point in *cp; 0 if invalid. */
static inline int utf8_sequence(const uint8_t *p, const uint8_t *end, uint32_t *cp) {
    uint8_t c = p[0];
    int n;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        *cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        *cp = c & 0x0f;
        if (c == 0xe0) lo = 0xa0;
        if (c == 0xed) hi = 0x9f; /* no surrogates */
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        *cp = c & 0x07;
        if (c == 0xf0) lo = 0x90;
        if (c == 0xf4) hi = 0x8f;
    } else {
        return 0;
    }
    if (end - p < n || p[1] < lo || p[1] > hi) return 0;
    for (int i = 1; i < n; i++) {
        if (i > 1 && (p[i] < 0x80 || p[i] > 0xbf)) return 0;
        *cp = (*cp << 6) | (p[i] & 0x3f);
    }
    return n;
}

/* The most json_utf8 writes for len bytes: "\u0001" is 6 bytes per byte. */
#define JSON_STRING_ROOM(len) (6 * (size_t)(len) + 2)

/* The quoted JSON string of UTF-8 bytes; NULL (nothing else set) when they
 * are not valid UTF-8, for the caller to refuse or decode otherwise. */
static inline char *json_utf8(char *w, const uint8_t *s, size_t len) {
    const uint8_t *p = s, *end = s + len;
    *w++ = '"';
    while (p < end) {
        const uint8_t *run = p; /* printable ASCII goes as it is */
        while (p < end && JSON_PLAIN[*p]) p++;
        memcpy(w, run, (size_t)(p - run));
        w += p - run;
        if (p == end) break;
        uint32_t cp = *p;
        int n = 1;
        if (*p >= 0x80 && !(n = utf8_sequence(p, end, &cp))) return NULL;
        w = json_escaped(w, cp);
        p += n;
    }
    *w++ = '"';
    return w;
}

#endif
