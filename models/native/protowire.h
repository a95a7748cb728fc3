/* Protobuf wire format, for the extensions that read serialized messages
 * in place (_protowire, _stepstats, xspace's _trace) and the one that writes
 * varints (_parquet): varints read and written, a field's tag and payload
 * read, a payload skipped. Groups (wire types 3, 4) are not used by the
 * schemas read here and count as malformed. */
#ifndef PROFSCOPE_PROTOWIRE_H
#define PROFSCOPE_PROTOWIRE_H

#include <stdint.h>

/* The bytes still to read: [p, end). */
typedef struct {
    const uint8_t *p, *end;
} Cursor;

/* Reads one varint; returns 0 on truncation or overlong encoding. */
static inline int read_varint(Cursor *c, uint64_t *out) {
    if (c->p < c->end && *c->p < 0x80) { /* one byte: tags, small ids and lengths */
        *out = *c->p++;
        return 1;
    }
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (c->p >= c->end) return 0;
        uint8_t b = *c->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return 0;
}

/* Skips a field's payload of the given wire type; returns 0 if malformed. */
static inline int skip_field(Cursor *c, int wire) {
    uint64_t n;
    switch (wire) {
    case 0: return read_varint(c, &n);
    case 1:
        if (c->end - c->p < 8) return 0;
        c->p += 8;
        return 1;
    case 2:
        if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return 0;
        c->p += n;
        return 1;
    case 5:
        if (c->end - c->p < 4) return 0;
        c->p += 4;
        return 1;
    default: return 0;
    }
}

/* One field: its number and wire type, a varint's value, or a
 * length-delimited payload as a sub-cursor (fixed-width ones are skipped). */
typedef struct {
    uint64_t number;
    int wire;
    uint64_t value;
    Cursor sub;
} WireField;

/* Reads the next field of c into *f; returns 0 if malformed. */
static inline int next_field(Cursor *c, WireField *f) {
    uint64_t tag, n;
    if (!read_varint(c, &tag)) return 0;
    f->number = tag >> 3;
    f->wire = (int)(tag & 7);
    if (f->wire == 0) return read_varint(c, &f->value);
    if (f->wire == 2) {
        if (!read_varint(c, &n) || n > (uint64_t)(c->end - c->p)) return 0;
        f->sub.p = c->p;
        f->sub.end = c->p + n;
        c->p += n;
        return 1;
    }
    return skip_field(c, f->wire);
}

/* Writes v as a varint (10 bytes at most) at w; returns the end. */
static inline uint8_t *put_varint(uint8_t *w, uint64_t v) {
    while (v >= 0x80) {
        *w++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *w++ = (uint8_t)v;
    return w;
}

#endif
