/* Reading JSON strings, for the JSON scanners (_chrome_json, _memory_json):
 * \uXXXX values, code points as UTF-8, string bodies unescaped. */
#ifndef PROFSCOPE_JSON_LEX_H
#define PROFSCOPE_JSON_LEX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The value of the four hex digits at p, or -1. */
static inline int32_t json_hex4(const uint8_t *p, const uint8_t *end) {
    if (end - p < 4) return -1;
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t c = p[i], l = c | 0x20;
        int h = c >= '0' && c <= '9' ? c - '0' : l >= 'a' && l <= 'f' ? l - 'a' + 10 : -1;
        if (h < 0) return -1;
        v = v * 16 + h;
    }
    return v;
}

/* cp as UTF-8 at o (4 bytes at most; a surrogate as 3, as 'surrogatepass'
 * writes it); returns the length. */
static inline size_t put_utf8(uint8_t *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | (cp >> 6));
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | (cp >> 12));
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | (cp >> 18));
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the JSON string body [p, q) into out, writing at most cap bytes
 * (whole characters only; the text never grows, so cap = q - p is always
 * enough). Returns the bytes written; *all is 0 when the output was cut. A
 * high surrogate escape followed by a low one is one character, as in
 * json.loads; a lone surrogate is kept (keep_surrogates, for 'surrogatepass'
 * text) or becomes U+FFFD. Lax where the body was not checked: a bad \u or
 * a trailing backslash gives U+FFFD, unknown escapes keep the escaped byte. */
static inline size_t json_unescape(const uint8_t *p, const uint8_t *q, uint8_t *out, size_t cap, int *all,
                                   int keep_surrogates) {
    size_t n = 0;
    *all = 1;
    while (p < q) {
        uint8_t tmp[8];
        size_t k;
        const uint8_t *bs = memchr(p, '\\', (size_t)(q - p));
        const uint8_t *stop = bs ? bs : q;
        size_t run = (size_t)(stop - p);
        if (n + run > cap) {
            memcpy(out + n, p, cap - n);
            *all = 0;
            return cap;
        }
        memcpy(out + n, p, run);
        n += run;
        if (!bs) break;
        p = bs + 1;
        if (p >= q) {
            k = put_utf8(tmp, 0xFFFD);
        } else {
            uint8_t c = *p++;
            switch (c) {
            case 'b': tmp[0] = '\b'; k = 1; break;
            case 'f': tmp[0] = '\f'; k = 1; break;
            case 'n': tmp[0] = '\n'; k = 1; break;
            case 'r': tmp[0] = '\r'; k = 1; break;
            case 't': tmp[0] = '\t'; k = 1; break;
            case 'u': {
                int32_t v = json_hex4(p, q), lo;
                uint32_t cp = 0xFFFD;
                if (v >= 0) {
                    p += 4;
                    cp = (uint32_t)v;
                    if (cp >= 0xD800 && cp < 0xDC00 && q - p >= 6 && p[0] == '\\' && p[1] == 'u' &&
                        (lo = json_hex4(p + 2, q)) >= 0xDC00 && lo < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
                        p += 6;
                    } else if (cp >= 0xD800 && cp < 0xE000 && !keep_surrogates) {
                        cp = 0xFFFD;
                    }
                }
                k = put_utf8(tmp, cp);
                break;
            }
            default: tmp[0] = c; k = 1; break; /* \" \\ \/ and lax others */
            }
        }
        if (n + k > cap) {
            *all = 0;
            return n;
        }
        memcpy(out + n, tmp, k);
        n += k;
    }
    return n;
}

#endif
