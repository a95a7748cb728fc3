/* One string interner for the C extensions (_chrome_json, _memory_json,
 * _stepstats, _logscan, _protowire, _parquet): distinct byte strings get ids
 * 0, 1, 2, ... in the order they first come.
 *
 * The table is open addressing over (hash, id) slots that doubles before it
 * is half full; a slot keeps the low 32 bits of the string's hash (its home
 * slot and a check that spares most byte comparisons), so growing never reads
 * the strings again. Each string is either copied into the interner's arena
 * (copy = 1: text decoded into scratch, or a copy kept near the table for the
 * cache) or left where it lies in the caller's buffer t->base (copy = 0:
 * spans of a file), chosen per string. The hash is hash_bytes of _cbuffers.h.
 *
 * A zeroed Interner is an empty one (set base before adding spans of a
 * buffer); nothing is allocated before the first string. Everything but
 * intern_list runs without the GIL. Include _cbuffers.h first. */
#ifndef PROFSCOPE_INTERN_H
#define PROFSCOPE_INTERN_H

typedef struct {
    uint32_t hash; /* low 32 bits of the string's hash */
    uint32_t id1;  /* id + 1; 0: an empty slot */
} InternSlot;

typedef struct {
    int64_t off; /* >= 0: at base + off; < 0: in the arena at -off - 1 */
    int64_t len;
} InternEntry;

typedef struct {
    const uint8_t *base; /* the caller's buffer, for strings not copied */
    size_t base_len;     /* its length, for intern_spans' checks */
    InternSlot *slots;   /* mask + 1 of them, or NULL */
    size_t mask;
    InternEntry *entries; /* by id */
    int32_t n, cap;
    uint8_t *arena;
    size_t arena_len, arena_cap;
} Interner;

static inline void intern_free(Interner *t) {
    PyMem_RawFree(t->slots);
    PyMem_RawFree(t->entries);
    PyMem_RawFree(t->arena);
    t->slots = NULL;
    t->entries = NULL;
    t->arena = NULL;
    t->n = t->cap = 0;
    t->mask = t->arena_len = t->arena_cap = 0;
}

/* The bytes of id (and their number in *len). */
static inline const uint8_t *intern_bytes(const Interner *t, int32_t id, size_t *len) {
    const InternEntry *e = &t->entries[id];
    *len = (size_t)e->len;
    return e->off >= 0 ? t->base + e->off : t->arena + (-e->off - 1);
}

/* a[0..n) == b[0..n), without a call for the short strings of profiles. */
static inline int intern_same(const uint8_t *a, const uint8_t *b, size_t n) {
    uint64_t x, y;
    if (n < 8) {
        while (n--)
            if (*a++ != *b++) return 0;
        return 1;
    }
    if (n > 64) return memcmp(a, b, n) == 0;
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y) return 0;
    }
    memcpy(&x, a + n - 8, 8); /* the last 8 bytes, overlapping */
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

/* The id of p[0..len) whose hash_bytes is hash, or -1 with the empty slot
 * where it would go in *slot (for intern_add). */
static inline int32_t intern_find(const Interner *t, const uint8_t *p, size_t len, uint64_t hash, size_t *slot) {
    uint32_t h = (uint32_t)hash;
    size_t i = h & t->mask;
    if (t->slots)
        for (InternSlot s; (s = t->slots[i]).id1; i = (i + 1) & t->mask) {
            if (s.hash != h) continue;
            size_t n;
            const uint8_t *q = intern_bytes(t, (int32_t)(s.id1 - 1), &n);
            if (n == len && intern_same(q, p, len)) return (int32_t)(s.id1 - 1);
        }
    *slot = i;
    return -1;
}

/* Fetches the slot where a string of this hash is looked for first. */
static inline void intern_prefetch(const Interner *t, uint64_t hash) {
    pt_prefetch(t->slots + ((uint32_t)hash & t->mask));
}

/* Doubles the slots (1024 at first), placing each again by its kept hash. */
static inline int intern_grow(Interner *t) {
    size_t cap = t->slots ? 2 * (t->mask + 1) : 1024;
    InternSlot *slots = PyMem_RawCalloc(cap, sizeof(InternSlot));
    if (!slots) return 0;
    for (size_t i = 0; t->slots && i <= t->mask; i++) {
        if (!t->slots[i].id1) continue;
        size_t j = t->slots[i].hash & (cap - 1);
        while (slots[j].id1) j = (j + 1) & (cap - 1);
        slots[j] = t->slots[i];
    }
    PyMem_RawFree(t->slots);
    t->slots = slots;
    t->mask = cap - 1;
    return 1;
}

/* Adds p[0..len), not there (intern_find gave hash and slot, nothing added
 * since); copy: into the arena, else p lies in t->base. Its id, or -1 when
 * out of memory. */
static inline int32_t intern_add(Interner *t, const uint8_t *p, size_t len, uint64_t hash, size_t slot, int copy) {
    if (t->n >= INT32_MAX - 1) return -1;
    if ((size_t)(t->n + 1) * 2 > t->mask + 1) { /* also when there are no slots yet */
        if (!intern_grow(t)) return -1;
        for (slot = (uint32_t)hash & t->mask; t->slots[slot].id1;) slot = (slot + 1) & t->mask;
    }
    if (t->n == t->cap) {
        int32_t cap = t->cap ? (t->cap > INT32_MAX / 2 ? INT32_MAX - 1 : 2 * t->cap) : 256;
        InternEntry *grown = PyMem_RawRealloc(t->entries, sizeof(InternEntry) * (size_t)cap);
        if (!grown) return -1;
        t->entries = grown;
        t->cap = cap;
    }
    int64_t off;
    if (!copy) off = p - t->base;
    else {
        if (t->arena_len + len > t->arena_cap) {
            size_t cap = t->arena_cap ? t->arena_cap : 4096;
            while (t->arena_len + len > cap) cap *= 2;
            uint8_t *grown = PyMem_RawRealloc(t->arena, cap);
            if (!grown) return -1;
            t->arena = grown;
            t->arena_cap = cap;
        }
        if (len) memcpy(t->arena + t->arena_len, p, len);
        off = -(int64_t)t->arena_len - 1;
        t->arena_len += len;
    }
    int32_t id = t->n++;
    t->entries[id] = (InternEntry){off, (int64_t)len};
    t->slots[slot] = (InternSlot){(uint32_t)hash, (uint32_t)id + 1};
    return id;
}

/* The id of p[0..len), added if new (see intern_add); -1 when out of memory. */
static inline int32_t intern(Interner *t, const uint8_t *p, size_t len, int copy) {
    uint64_t hash = hash_bytes(p, len);
    size_t slot = 0;
    int32_t id = intern_find(t, p, len, hash, &slot);
    return id >= 0 ? id : intern_add(t, p, len, hash, slot, copy);
}

/* Span k of intern_spans: 1 in the buffer, 0 absent, -1 outside it. */
static inline int intern_span(const Interner *t, const int64_t *at, const int64_t *to, size_t k, int ends,
                              int64_t *off, int64_t *len) {
    *off = at[k];
    *len = ends ? to[k] - *off : to[k];
    if (*off < 0 || *len < 0) return 0;
    return *len == 0 || ((uint64_t)*off <= t->base_len && (uint64_t)*len <= t->base_len - (uint64_t)*off) ? 1 : -1;
}

/* Interns the n strings t->base[at[k * step] ...) of a column into ids[k]:
 * each ends at to[k * step] (ends) or has that length. A span with a
 * negative offset or length gets id 0 (callers with absent strings intern ""
 * first). first, unless NULL, gets for each new id the k where it came.
 * Hashes are computed AHEAD strings early and their slots prefetched, so
 * that the table's cache misses overlap instead of queueing. Returns 0, -1
 * when out of memory, -2 for a span outside the buffer. */
static inline int intern_spans(Interner *t, const int64_t *at, const int64_t *to, size_t step, int ends, size_t n,
                               int copy, int32_t *ids, int64_t *first) {
    enum { AHEAD = 16 };
    uint64_t hashes[AHEAD];
    int64_t off, len;
    if (!t->slots && !intern_grow(t)) return -1;
    for (size_t k = 0; k < n && k < AHEAD; k++) {
        hashes[k] = intern_span(t, at, to, k * step, ends, &off, &len) > 0 ? hash_bytes(t->base + off, (size_t)len) : 0;
        intern_prefetch(t, hashes[k]);
    }
    for (size_t k = 0; k < n; k++) {
        int r = intern_span(t, at, to, k * step, ends, &off, &len);
        uint64_t hash = hashes[k % AHEAD];
        if (k + AHEAD < n) {
            int64_t o2, l2;
            uint64_t next = intern_span(t, at, to, (k + AHEAD) * step, ends, &o2, &l2) > 0
                                ? hash_bytes(t->base + o2, (size_t)l2)
                                : 0;
            hashes[k % AHEAD] = next;
            intern_prefetch(t, next);
        }
        if (r < 0) return -2;
        if (r == 0) {
            ids[k] = 0;
            continue;
        }
        const uint8_t *p = t->base + off;
        size_t slot = 0;
        int32_t id = intern_find(t, p, (size_t)len, hash, &slot);
        if (id < 0) {
            if ((id = intern_add(t, p, (size_t)len, hash, slot, copy)) < 0) return -1;
            if (first) first[id] = (int64_t)k;
        }
        ids[k] = id;
    }
    return 0;
}

/* The strings as a list of str (UTF-8 decoded with errors); needs the GIL. */
static inline PyObject *intern_list(const Interner *t, const char *errors) {
    PyObject *list = PyList_New(t->n);
    for (int32_t id = 0; list && id < t->n; id++) {
        size_t n;
        const uint8_t *p = intern_bytes(t, id, &n);
        PyObject *s = PyUnicode_DecodeUTF8((const char *)p, (Py_ssize_t)n, errors);
        if (!s) Py_CLEAR(list);
        else PyList_SET_ITEM(list, id, s);
    }
    return list;
}

#endif
