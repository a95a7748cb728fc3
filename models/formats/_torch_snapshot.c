/* A PyTorch CUDA memory snapshot pickle straight into the columns of
 * profscope.models.data.cuda_snapshot (one pass over the opcodes, no Python
 * object per trace entry, block or frame; the GIL released meanwhile).
 *
 * The opcodes accepted, the limits and the refusals are safe_pickle's
 * (profscope.models.core.safe_pickle, the reference this must equal): plain
 * data of protocols 2-5 only, every import or call opcode refused by name and
 * offset before anything is built; nesting depth and a tree count of objects
 * bounded (a shared object counts once per place); no container changed after
 * it is placed in another (so no cycle).
 *
 * Values live on a C stack (scalars, string spans into the buffer, container
 * ids). A container's role in the snapshot (the top dict, device_traces, one
 * device's trace, an entry, its frames list, a frame, segments, a segment,
 * its blocks, a block, a segment_pool_id) is inferred when it is created,
 * from where it stands on the stack the way Python's pickler lays out a dict
 * or a list (key before value; MARK ... SETITEMS/APPENDS or a single
 * SETITEM/APPEND), and checked when its parent takes it. Rows are made as
 * their dicts are filled (SETITEMS comes once all of a dict's values are
 * built), so a cut file still gives every complete entry. A pickle laid out
 * otherwise (a shared entry, a container taken by another parent than
 * inferred) is "irregular": the caller reads it with the reference decoder.
 * Frames are interned as (name, filename, line) and whole frames lists as
 * sequences of frame ids; strings are interned as spans of the buffer. */
#include "_cbuffers.h"
#include "intern.h"

enum { T_ABSENT, T_NONE, T_BOOL, T_INT, T_BIG, T_FLOAT, T_STR, T_BYTES, T_LIST, T_DICT, T_TUPLE };
enum {
    R_OTHER, R_TOP, R_TRACES, R_TRACE, R_ENTRY, R_FRAMES, R_FRAME, R_SEGMENTS, R_SEGMENT, R_BLOCKS, R_BLOCK, R_POOL
};
enum {
    K_OTHER, K_SEGMENTS, K_DEVICE_TRACES, K_ACTION, K_ADDR, K_SIZE, K_STREAM, K_TIME_US, K_FRAMES, K_DEVICE_FREE,
    K_CATEGORY, K_DEVICE, K_ADDRESS, K_TOTAL_SIZE, K_SEGMENT_TYPE, K_SEGMENT_POOL_ID, K_IS_EXPANDABLE,
    K_ALLOCATED_SIZE, K_ACTIVE_SIZE, K_REQUESTED_SIZE, K_BLOCKS, K_STATE, K_NAME, K_FILENAME, K_LINE, K_COUNT
};
static const char *const KEY_NAMES[K_COUNT] = {
    "", "segments", "device_traces", "action", "addr", "size", "stream", "time_us", "frames", "device_free",
    "category", "device", "address", "total_size", "segment_type", "segment_pool_id", "is_expandable",
    "allocated_size", "active_size", "requested_size", "blocks", "state", "name", "filename", "line"};
/* cuda_snapshot.ACTIONS and BLOCK_STATES, in order */
static const char *const ACTIONS[] = {"alloc",        "free_requested", "free_completed", "segment_alloc",
                                      "segment_free", "segment_map",    "segment_unmap",  "snapshot",
                                      "oom",          "annotate"};
enum { N_ACTIONS = 10, OOM = 8 };
static const char *const STATES[] = {"active_allocated", "active_awaiting_free", "inactive", "active_pending_free"};
enum { N_STATES = 4 };
#define NO_TIME INT64_MIN
#define NO_SIZE (-1)
enum { F_ADDR_INT = 1, F_SIZE_INT = 2, F_FILLED = 4, F_REQ_INT = 8 }; /* row flags */

/* errors: refusals (raised as safe_pickle raises them) and damage (a cut) */
enum {
    E_NONE, E_NOT_PICKLE, E_FORBIDDEN, E_NESTING, E_OBJECTS, E_BIGINT, E_CYCLE_CHANGED, E_CYCLE_SELF, E_UNHASHABLE,
    E_MEMORY, E_REFUSALS_END, /* below: damage */
    E_TRUNCATED, E_NO_MARK, E_ODD, E_NOT_MUTABLE, E_STOP
};

typedef struct {
    int64_t a, b; /* int; double bits; string offset and length; container id */
    uint8_t tag;
} Val;

typedef struct {
    int64_t size, count, payload, consumed;
    int32_t parent, key, depth;
    uint8_t type, role, sealed, flags; /* flags: 1 unhashable (a tuple holding a list or dict), 2 filled */
} Box;

typedef struct {
    uint8_t *action, *flags;
    uint64_t *addr;
    int64_t *size, *stream, *time, *dfree;
    int32_t *frames, *cat, *aux;
    int64_t n, cap;
} Dev;

typedef struct {
    int32_t *device, *type, *pool, *first;
    uint64_t *address;
    int64_t *total, *stream, *alloc, *active, *req, *nblocks;
    int8_t *exp;
    uint8_t *filled;
    int64_t n, cap;
} Segs;

typedef struct {
    uint64_t *address;
    int64_t *size, *req;
    uint8_t *state, *flags;
    int32_t *frames, *aux;
    int64_t n, cap;
} Blks;

enum { CODE_CACHE = 512 };
typedef struct {
    int64_t off, len; /* off + 1: 0 is an empty slot */
    int code;
} CodeCache;

typedef struct {
    const uint8_t *d;
    int64_t n;
    CodeCache codes[3][CODE_CACHE]; /* keys, actions, block states */
    int64_t max_depth, max_objects;
    Val *stack;
    int64_t sp, scap;
    int64_t *marks;
    int64_t nm, mcap;
    Val *memo;
    int64_t memo_cap, memo_len, memo_top; /* slots [0, memo_top) are cleared or set */
    Box *box;
    int64_t nbox, boxcap;
    Interner strings, names, frames, tbs; /* output strings; unknown action/state names; frame triples; tracebacks */
    int32_t empty_frame, none_name;
    int32_t *scratch; /* the frames list being filled */
    int64_t nscratch, scratch_cap;
    int32_t scratch_owner;
    Dev **devs;
    int64_t ndev, devcap;
    int32_t traces_box, segments_box, top_box;
    int64_t traces_slots; /* device slots: device_traces' items */
    Segs seg;
    Blks blk;
    int has_traces, traces_list, has_segments, segments_list, result_dict;
    int err;
    int64_t err_at, err_k;
    int err_op;
    const char *irregular;
    int release;      /* the buffer maps a file: pages read leave the resident set as the reading passes them */
    int64_t released; /* up to here */
} P;

/* ---------------------------------------------------------------- growth */

static int grow(void **p, int64_t cap, size_t item) {
    void *q = PyMem_RawRealloc(*p, (size_t)cap * item + 1);
    if (!q) return 0;
    *p = q;
    return 1;
}
#define GROW(ptr, cap) grow((void **)&(ptr), (cap), sizeof(*(ptr)))

static int dev_grow(Dev *v) {
    int64_t cap = v->cap ? 2 * v->cap : 1024;
    if (!GROW(v->action, cap) || !GROW(v->flags, cap) || !GROW(v->addr, cap) || !GROW(v->size, cap) ||
        !GROW(v->stream, cap) || !GROW(v->time, cap) || !GROW(v->dfree, cap) || !GROW(v->frames, cap) ||
        !GROW(v->cat, cap) || !GROW(v->aux, cap))
        return 0;
    v->cap = cap;
    return 1;
}

static int seg_grow(Segs *s) {
    int64_t cap = s->cap ? 2 * s->cap : 256;
    if (!GROW(s->device, cap) || !GROW(s->type, cap) || !GROW(s->pool, cap) || !GROW(s->first, cap) ||
        !GROW(s->address, cap) || !GROW(s->total, cap) || !GROW(s->stream, cap) || !GROW(s->alloc, cap) ||
        !GROW(s->active, cap) || !GROW(s->req, cap) || !GROW(s->nblocks, cap) || !GROW(s->exp, cap) ||
        !GROW(s->filled, cap))
        return 0;
    s->cap = cap;
    return 1;
}

static int blk_grow(Blks *b) {
    int64_t cap = b->cap ? 2 * b->cap : 1024;
    if (!GROW(b->address, cap) || !GROW(b->size, cap) || !GROW(b->req, cap) || !GROW(b->state, cap) ||
        !GROW(b->flags, cap) || !GROW(b->frames, cap) || !GROW(b->aux, cap))
        return 0;
    b->cap = cap;
    return 1;
}

static void fail(P *S, int err, int64_t at) {
    if (!S->err) {
        S->err = err;
        S->err_at = at;
    }
}

static void irregular(P *S, const char *why) {
    if (!S->irregular && !S->err) S->irregular = why;
}

static int push(P *S, Val v) {
    if (S->sp == S->scap) {
        int64_t cap = S->scap ? 2 * S->scap : 1024;
        if (!GROW(S->stack, cap)) return 0;
        S->scap = cap;
    }
    S->stack[S->sp++] = v;
    return 1;
}

/* ---------------------------------------------------------------- keys and roles */

static int is_box(const Val *v) { return v->tag == T_LIST || v->tag == T_DICT || v->tag == T_TUPLE; }

/* The index of the string v among names[0..n) (n when none), remembered by the string's offset: a pickle
 * writes each string once and refers to it through the memo after. */
static int code_of(P *S, const Val *v, const char *const *names, int n, int table) {
    if (v->tag != T_STR) return n;
    CodeCache *c = &S->codes[table][(uint64_t)v->a % CODE_CACHE];
    if (c->off == v->a + 1 && c->len == v->b) return c->code;
    int code = n;
    for (int k = 0; k < n; k++)
        if ((size_t)v->b == strlen(names[k]) && memcmp(S->d + v->a, names[k], (size_t)v->b) == 0) {
            code = k;
            break;
        }
    *c = (CodeCache){v->a + 1, v->b, code};
    return code;
}

static int key_code(P *S, const Val *v) {
    int k = code_of(S, v, KEY_NAMES + 1, K_COUNT - 1, 0);
    return k == K_COUNT - 1 ? K_OTHER : k + 1;
}

/* The role of a child of a container of role parent: list items (key < 0) or a dict's value under key. */
static int child_role(int parent, int key, int type) {
    switch (parent) {
    case R_TOP:
        if (type == T_LIST && key == K_DEVICE_TRACES) return R_TRACES;
        if (type == T_LIST && key == K_SEGMENTS) return R_SEGMENTS;
        return R_OTHER;
    case R_TRACES: return key < 0 && type == T_LIST ? R_TRACE : R_OTHER;
    case R_TRACE: return key < 0 && type == T_DICT ? R_ENTRY : R_OTHER;
    case R_ENTRY:
    case R_BLOCK: return key == K_FRAMES && type == T_LIST ? R_FRAMES : R_OTHER;
    case R_FRAMES: return key < 0 && type == T_DICT ? R_FRAME : R_OTHER;
    case R_SEGMENTS: return key < 0 && type == T_DICT ? R_SEGMENT : R_OTHER;
    case R_SEGMENT:
        if (key == K_BLOCKS && type == T_LIST) return R_BLOCKS;
        if (key == K_SEGMENT_POOL_ID && (type == T_LIST || type == T_TUPLE)) return R_POOL;
        return R_OTHER;
    case R_BLOCKS: return key < 0 && type == T_DICT ? R_BLOCK : R_OTHER;
    default: return R_OTHER;
    }
}

/* Where the container c, about to stand at stack position p, will go: its parent, key (or index) and role. */
static void infer(P *S, Box *c, int64_t p) {
    c->parent = -1;
    c->key = K_OTHER;
    c->role = R_OTHER;
    const Val *below = p >= 1 ? &S->stack[p - 1] : NULL;
    if (below && below->tag == T_LIST) { /* a single APPEND to the list below (one whose items this fits) */
        Box *b = &S->box[below->a];
        int role = child_role(b->role, -1, c->type);
        if (role != R_OTHER) {
            c->parent = (int32_t)below->a;
            c->key = (int32_t)b->count;
            c->role = (uint8_t)role;
            return;
        }
    }
    int64_t m = S->nm ? S->marks[S->nm - 1] : -1;
    if (m >= 1 && m <= p && m <= S->sp && (S->stack[m - 1].tag == T_LIST || S->stack[m - 1].tag == T_DICT)) {
        Box *t = &S->box[S->stack[m - 1].a];
        c->parent = (int32_t)S->stack[m - 1].a;
        if (S->stack[m - 1].tag == T_DICT) {
            if ((p - m) % 2 == 1) {
                c->key = key_code(S, &S->stack[p - 1]);
                c->role = (uint8_t)child_role(t->role, c->key, c->type);
            } else
                c->parent = -1; /* a container where a key goes: no dict takes it */
        } else {
            c->key = (int32_t)(t->count + (p - m));
            c->role = (uint8_t)child_role(t->role, -1, c->type);
        }
        return;
    }
    if (p >= 2 && S->stack[p - 1].tag == T_STR && S->stack[p - 2].tag == T_DICT) { /* a single SETITEM */
        Box *t = &S->box[S->stack[p - 2].a];
        c->parent = (int32_t)S->stack[p - 2].a;
        c->key = key_code(S, &S->stack[p - 1]);
        c->role = (uint8_t)child_role(t->role, c->key, c->type);
        return;
    }
    if (p >= 1 && below->tag == T_LIST) { /* a single APPEND to a list whose items play no part */
        c->parent = (int32_t)below->a;
        c->key = (int32_t)S->box[below->a].count;
        return;
    }
    if (p == 0 && c->type == T_DICT && S->top_box < 0) c->role = R_TOP;
}

/* ---------------------------------------------------------------- rows */

static int32_t dev_row(P *S, int64_t device, int64_t *row) {
    if (device >= S->ndev) {
        int64_t n = device + 1;
        if (n > S->devcap) {
            int64_t cap = S->devcap ? 2 * S->devcap : 8;
            while (cap < n) cap *= 2;
            if (!GROW(S->devs, cap)) return 0;
            memset(S->devs + S->devcap, 0, sizeof(Dev *) * (size_t)(cap - S->devcap));
            S->devcap = cap;
        }
        S->ndev = n;
    }
    Dev *v = S->devs[device];
    if (!v) {
        v = S->devs[device] = PyMem_RawCalloc(1, sizeof(Dev));
        if (!v) return 0;
    }
    if (v->n == v->cap && !dev_grow(v)) return 0;
    int64_t i = *row = v->n++;
    v->action[i] = N_ACTIONS;
    v->flags[i] = 0;
    v->addr[i] = 0;
    v->size[i] = v->stream[i] = v->dfree[i] = 0;
    v->time[i] = NO_TIME;
    v->frames[i] = -1;
    v->cat[i] = 0;
    v->aux[i] = S->none_name;
    return 1;
}

static int new_box(P *S, int type, int64_t p, int64_t *id) {
    if (S->nbox == S->boxcap) {
        int64_t cap = S->boxcap ? 2 * S->boxcap : 4096;
        if (cap > INT32_MAX) return 0;
        if (!GROW(S->box, cap)) return 0;
        S->boxcap = cap;
    }
    Box *c = &S->box[*id = S->nbox++];
    memset(c, 0, sizeof(*c));
    c->type = (uint8_t)type;
    c->size = c->depth = 1;
    c->payload = -1;
    infer(S, c, p);
    switch (c->role) {
    case R_TOP: S->top_box = (int32_t)*id; break;
    case R_TRACES:
        if (S->traces_box >= 0) irregular(S, "two device_traces lists");
        S->traces_box = (int32_t)*id;
        break;
    case R_SEGMENTS:
        if (S->segments_box >= 0) irregular(S, "two segments lists");
        S->segments_box = (int32_t)*id;
        break;
    case R_TRACE: {
        int64_t row;
        (void)row;
        if (c->key >= S->ndev) { /* the device's slot, even if it stays empty */
            if (!dev_row(S, c->key, &row)) return 0;
            S->devs[c->key]->n--;
        }
        break;
    }
    case R_ENTRY: {
        int64_t device = S->box[c->parent].key;
        if (!dev_row(S, device, &c->payload)) return 0;
        break;
    }
    case R_SEGMENT: {
        Segs *s = &S->seg;
        if (s->n == s->cap && !seg_grow(s)) return 0;
        int64_t i = c->payload = s->n++;
        s->device[i] = s->type[i] = s->pool[i] = 0;
        s->first[i] = -1;
        s->address[i] = 0;
        s->total[i] = s->stream[i] = s->nblocks[i] = 0;
        s->alloc[i] = s->active[i] = s->req[i] = NO_SIZE;
        s->exp[i] = -1;
        s->filled[i] = 0;
        break;
    }
    case R_BLOCKS: c->payload = S->blk.n; break;
    case R_BLOCK: {
        Blks *b = &S->blk;
        if (b->n == b->cap && !blk_grow(b)) return 0;
        int64_t i = c->payload = b->n++;
        b->address[i] = 0;
        b->size[i] = b->req[i] = 0;
        b->state[i] = N_STATES;
        b->flags[i] = 0;
        b->frames[i] = -1;
        b->aux[i] = S->none_name;
        break;
    }
    default: break;
    }
    return 1;
}

static int32_t str_id(P *S, const Val *v) {
    return v->tag == T_STR ? intern(&S->strings, S->d + v->a, (size_t)v->b, 0) : 0;
}

static int is_int(const Val *v) { return v->tag == T_INT; }
static int64_t int_of(const Val *v) { return v->tag == T_INT ? v->a : 0; }

/* The traceback id of a frames list (interned when first taken), -1 when empty or not a list. */
static int32_t tb_of(P *S, const Val *v) {
    if (v->tag != T_LIST) return -1;
    Box *c = &S->box[v->a];
    if (c->role != R_FRAMES) return -1;
    if (c->payload == -1) {
        if (S->scratch_owner != (int32_t)v->a) c->payload = -2; /* nothing was appended: [] */
        else {
            int32_t tb = intern(&S->tbs, (const uint8_t *)S->scratch, sizeof(int32_t) * (size_t)S->nscratch, 1);
            if (tb < 0) {
                fail(S, E_MEMORY, 0);
                return -1;
            }
            c->payload = tb;
            S->scratch_owner = -1;
            S->nscratch = 0;
        }
    }
    return c->payload >= 0 ? (int32_t)c->payload : -1;
}

static int32_t name_of(P *S, const Val *v) {
    if (v->tag != T_STR) return S->none_name;
    return intern(&S->names, S->d + v->a, (size_t)v->b, 0);
}

static int32_t state_code(P *S, const Val *v, int32_t *aux) {
    int code = code_of(S, v, STATES, N_STATES, 2);
    *aux = code == N_STATES ? name_of(S, v) : S->none_name;
    return code;
}

/* A frame dict's (name, filename, line) as the frame interner holds them. */
typedef struct {
    int32_t name, filename;
    int64_t line;
} Frame;

static int32_t frame_id(P *S, Frame f) {
    return intern(&S->frames, (const uint8_t *)&f, sizeof f, 1);
}

/* Fills the row of the dict c (its role's) from the pairs items[0..n). */
static void fill(P *S, Box *c, const Val *items, int64_t n) {
    if (c->role == R_TOP) {
        for (int64_t i = 0; i + 1 < n; i += 2) {
            int k = key_code(S, &items[i]);
            if (k == K_DEVICE_TRACES) S->has_traces = 1, S->traces_list = items[i + 1].tag == T_LIST;
            if (k == K_SEGMENTS) S->has_segments = 1, S->segments_list = items[i + 1].tag == T_LIST;
        }
        return;
    }
    if (c->role == R_ENTRY) {
        Dev *v = S->devs[S->box[c->parent].key];
        int64_t r = c->payload;
        v->flags[r] |= F_FILLED;
        for (int64_t i = 0; i + 1 < n; i += 2) {
            const Val *x = &items[i + 1];
            switch (key_code(S, &items[i])) {
            case K_ACTION: {
                int code = code_of(S, x, ACTIONS, N_ACTIONS, 1);
                v->action[r] = (uint8_t)code;
                v->aux[r] = code == N_ACTIONS ? name_of(S, x) : S->none_name;
                break;
            }
            case K_ADDR:
                v->addr[r] = (uint64_t)int_of(x);
                v->flags[r] = (uint8_t)((v->flags[r] & ~F_ADDR_INT) | (is_int(x) ? F_ADDR_INT : 0));
                break;
            case K_SIZE:
                v->size[r] = int_of(x);
                v->flags[r] = (uint8_t)((v->flags[r] & ~F_SIZE_INT) | (is_int(x) ? F_SIZE_INT : 0));
                break;
            case K_STREAM: v->stream[r] = int_of(x); break;
            case K_TIME_US: v->time[r] = is_int(x) ? x->a : NO_TIME; break;
            case K_FRAMES: v->frames[r] = tb_of(S, x); break;
            case K_DEVICE_FREE: v->dfree[r] = int_of(x); break;
            case K_CATEGORY: v->cat[r] = str_id(S, x); break;
            default: break;
            }
        }
        return;
    }
    if (c->role == R_SEGMENT) {
        Segs *s = &S->seg;
        int64_t r = c->payload;
        s->filled[r] = 1;
        for (int64_t i = 0; i + 1 < n; i += 2) {
            const Val *x = &items[i + 1];
            switch (key_code(S, &items[i])) {
            case K_DEVICE: s->device[r] = (int32_t)int_of(x); break;
            case K_ADDRESS: s->address[r] = (uint64_t)int_of(x); break;
            case K_TOTAL_SIZE: s->total[r] = int_of(x); break;
            case K_STREAM: s->stream[r] = int_of(x); break;
            case K_SEGMENT_TYPE: s->type[r] = str_id(S, x); break;
            case K_SEGMENT_POOL_ID:
                s->pool[r] = (x->tag == T_TUPLE || x->tag == T_LIST) && S->box[x->a].payload > 0
                                 ? (int32_t)S->box[x->a].payload
                                 : 0;
                break;
            case K_IS_EXPANDABLE: s->exp[r] = (int8_t)(x->tag == T_BOOL ? x->a : -1); break;
            case K_ALLOCATED_SIZE: s->alloc[r] = is_int(x) ? x->a : NO_SIZE; break;
            case K_ACTIVE_SIZE: s->active[r] = is_int(x) ? x->a : NO_SIZE; break;
            case K_REQUESTED_SIZE: s->req[r] = is_int(x) ? x->a : NO_SIZE; break;
            case K_BLOCKS:
                if (x->tag == T_LIST && S->box[x->a].role == R_BLOCKS) {
                    s->first[r] = (int32_t)S->box[x->a].payload;
                    s->nblocks[r] = S->box[x->a].consumed;
                } else {
                    s->first[r] = -1;
                    s->nblocks[r] = 0;
                }
                break;
            default: break;
            }
        }
        return;
    }
    if (c->role == R_BLOCK) {
        Blks *b = &S->blk;
        int64_t r = c->payload;
        b->flags[r] |= F_FILLED;
        for (int64_t i = 0; i + 1 < n; i += 2) {
            const Val *x = &items[i + 1];
            switch (key_code(S, &items[i])) {
            case K_ADDRESS:
                b->address[r] = (uint64_t)int_of(x);
                b->flags[r] = (uint8_t)((b->flags[r] & ~F_ADDR_INT) | (is_int(x) ? F_ADDR_INT : 0));
                break;
            case K_SIZE: b->size[r] = int_of(x); break;
            case K_REQUESTED_SIZE:
                b->req[r] = int_of(x);
                b->flags[r] = (uint8_t)((b->flags[r] & ~F_REQ_INT) | (is_int(x) ? F_REQ_INT : 0));
                break;
            case K_STATE: b->state[r] = (uint8_t)state_code(S, x, &b->aux[r]); break;
            case K_FRAMES: b->frames[r] = tb_of(S, x); break;
            default: break;
            }
        }
        return;
    }
    if (c->role == R_FRAME) {
        Frame f = {0, 0, 0};
        if (c->payload >= 0) { /* filled before: its values so far */
            size_t len;
            memcpy(&f, intern_bytes(&S->frames, (int32_t)c->payload, &len), sizeof f);
        }
        for (int64_t i = 0; i + 1 < n; i += 2) {
            const Val *x = &items[i + 1];
            switch (key_code(S, &items[i])) {
            case K_NAME: f.name = str_id(S, x); break;
            case K_FILENAME: f.filename = str_id(S, x); break;
            case K_LINE: f.line = int_of(x); break;
            default: break;
            }
        }
        c->payload = frame_id(S, f);
        if (c->payload < 0) fail(S, E_MEMORY, 0);
    }
}

/* Whether the containers among items may be taken by target (as inferred), for the roles that fill rows. */
static int taken_as_inferred(P *S, int64_t target, const Val *items, int64_t n, int dict) {
    Box *t = &S->box[target];
    for (int64_t i = dict ? 1 : 0; i < n; i += dict ? 2 : 1) {
        if (!is_box(&items[i])) continue;
        Box *c = &S->box[items[i].a];
        int role = child_role(t->role, dict ? key_code(S, &items[i - 1]) : -1, c->type);
        /* what fills no row may be shared (frames, frames lists, the rest), wherever it was first placed */
        if (c->role == role && (role == R_OTHER || role == R_FRAME || role == R_FRAMES || role == R_POOL)) continue;
        if (c->parent != target || c->role != role) return 0;
        if (dict ? key_code(S, &items[i - 1]) != c->key : (c->role == R_TRACE && c->key != t->count + i)) return 0;
        if (c->role == R_ENTRY && c->payload != t->consumed++) return 0;
        if (c->role == R_BLOCK && c->payload != t->payload + t->consumed++) return 0;
    }
    return 1;
}

/* The tree size and depth of a container holding items (safe_pickle's measure), sealing each. */
static int measure(P *S, const Val *items, int64_t n, int64_t *depth, int64_t *size, int64_t at) {
    for (int64_t i = 0; i < n; i++) {
        if (is_box(&items[i])) {
            Box *c = &S->box[items[i].a];
            c->sealed = 1;
            *size += c->size;
            if (c->depth >= *depth) *depth = c->depth + 1;
        } else
            *size += 1;
    }
    if (*depth > S->max_depth) {
        fail(S, E_NESTING, at);
        return 0;
    }
    if (*size > S->max_objects) {
        fail(S, E_OBJECTS, at);
        return 0;
    }
    return 1;
}

/* ---------------------------------------------------------------- opcodes */

static int64_t pop_mark(P *S, int64_t at) {
    if (!S->nm) {
        fail(S, E_NO_MARK, at);
        return -1;
    }
    int64_t k = S->marks[--S->nm];
    return k < S->sp ? k : S->sp;
}

static int memo_put(P *S, int64_t idx, int64_t at) {
    if (idx >= S->memo_cap) {
        int64_t cap = S->memo_cap ? S->memo_cap : 1024;
        while (cap <= idx) cap *= 2;
        if (idx > 2 * S->memo_len + (1 << 20)) { /* a memo index no pickler writes: as safe_pickle, but sparse */
            irregular(S, "a sparse memo");
            return 0;
        }
        if (!GROW(S->memo, cap)) {
            fail(S, E_MEMORY, at);
            return 0;
        }
        S->memo_cap = cap;
    }
    if (idx >= S->memo_top) { /* slots are cleared as the indices reach them, not as the memo grows */
        memset(S->memo + S->memo_top, 0, sizeof(Val) * (size_t)(idx + 1 - S->memo_top));
        S->memo_top = idx + 1;
    }
    if (S->memo[idx].tag == T_ABSENT) S->memo_len++;
    S->memo[idx] = S->stack[S->sp - 1];
    return 1;
}

/* A value pushed again (memo get, DUP): shared frames and scalars only, else the layout is not the pickler's. */
static int again(P *S, Val v) {
    if (is_box(&v)) {
        int role = S->box[v.a].role;
        if (role != R_OTHER && role != R_FRAME && role != R_FRAMES && role != R_POOL) {
            irregular(S, "a shared trace entry, segment or block");
            return 0;
        }
    }
    return push(S, v);
}

#define NEED(k)                                                                                                    \
    do {                                                                                                           \
        if ((uint64_t)(k) > (uint64_t)(n - p)) {                                                                   \
            fail(S, E_TRUNCATED, at);                                                                              \
            return;                                                                                                \
        }                                                                                                          \
    } while (0)

static uint32_t u32(const uint8_t *q) { return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24; }
static uint64_t u64(const uint8_t *q) { return (uint64_t)u32(q) | (uint64_t)u32(q + 4) << 32; }

/* A tuple of items[0..k) (k values at the top of the stack), pushed in their place. */
static void make_tuple(P *S, int64_t k, int64_t at) {
    int64_t base = S->sp - k, id;
    S->sp = base;
    Val *items = S->stack + base;
    int64_t depth = 1, size = 1;
    int unhashable = 0;
    for (int64_t i = 0; i < k; i++)
        if (items[i].tag == T_LIST || items[i].tag == T_DICT ||
            (items[i].tag == T_TUPLE && (S->box[items[i].a].flags & 1)))
            unhashable = 1;
    if (!measure(S, items, k, &depth, &size, at)) return;
    /* the items stay readable above the stack top while the tuple is made */
    Val *copy = k ? PyMem_RawMalloc(sizeof(Val) * (size_t)k) : NULL;
    if (k && !copy) {
        fail(S, E_MEMORY, at);
        return;
    }
    if (k) memcpy(copy, items, sizeof(Val) * (size_t)k);
    if (!new_box(S, T_TUPLE, base, &id)) {
        PyMem_RawFree(copy);
        fail(S, E_MEMORY, at);
        return;
    }
    Box *c = &S->box[id];
    c->depth = (int32_t)depth;
    c->size = size;
    c->flags = (uint8_t)unhashable;
    if (c->role == R_POOL) { /* segment_pool_id: its numbers (and strings) joined by "," */
        char text[512];
        size_t len = 0;
        for (int64_t i = 0; i < k; i++) {
            char one[32];
            const char *src = one;
            size_t m;
            if (copy[i].tag == T_INT) m = (size_t)snprintf(one, sizeof one, "%lld", (long long)copy[i].a);
            else if (copy[i].tag == T_STR) src = (const char *)S->d + copy[i].a, m = (size_t)copy[i].b;
            else continue;
            if (len + m + 1 > sizeof text) {
                irregular(S, "a long segment_pool_id");
                break;
            }
            if (len) text[len++] = ',';
            memcpy(text + len, src, m);
            len += m;
        }
        c->payload = intern(&S->strings, (const uint8_t *)text, len, 1);
    }
    PyMem_RawFree(copy);
    push(S, (Val){id, 0, T_TUPLE});
}

static void run(P *S) {
    const uint8_t *d = S->d;
    int64_t n = S->n, p = 2;
    if (n < 2 || d[0] != 0x80 || d[1] < 2 || d[1] > 5) {
        fail(S, E_NOT_PICKLE, 0);
        return;
    }
    for (;;) {
        if (S->err || S->irregular) return;
        int64_t at = p;
        if (S->release && p - S->released > (64 << 20)) { /* strings behind stay readable: they are read again */
            pt_release_pages(d + S->released, (size_t)(p - S->released));
            S->released = p;
        }
        if (p >= n) {
            fail(S, E_TRUNCATED, at);
            return;
        }
        int op = d[p++];
        Val v = {0, 0, T_NONE};
        switch (op) {
        case 0x8C: /* SHORT_BINUNICODE */
        case 0x58: /* BINUNICODE */
        case 0x8D: /* BINUNICODE8 */
        case 0x43: /* SHORT_BINBYTES */
        case 0x42: /* BINBYTES */
        case 0x8E: /* BINBYTES8 */
        case 0x96: /* BYTEARRAY8 */ {
            int w = op == 0x8C || op == 0x43 ? 1 : op == 0x58 || op == 0x42 ? 4 : 8;
            NEED(w);
            uint64_t k = w == 1 ? d[p] : w == 4 ? u32(d + p) : u64(d + p);
            p += w;
            NEED(k);
            v = (Val){p, (int64_t)k, (uint8_t)(op == 0x8C || op == 0x58 || op == 0x8D ? T_STR : T_BYTES)};
            p += (int64_t)k;
            if (!push(S, v)) fail(S, E_MEMORY, at);
            break;
        }
        case 0x94: /* MEMOIZE */
            if (!S->sp) {
                fail(S, E_TRUNCATED, at);
                return;
            }
            if (!memo_put(S, S->memo_len, at)) return;
            if (S->memo_len > S->max_objects) fail(S, E_OBJECTS, at);
            break;
        case 0x71: /* BINPUT */
        case 0x72: /* LONG_BINPUT */ {
            int w = op == 0x71 ? 1 : 4;
            NEED(w);
            int64_t idx = w == 1 ? d[p] : u32(d + p);
            p += w;
            if (!S->sp) {
                fail(S, E_TRUNCATED, at);
                return;
            }
            if (!memo_put(S, idx, at)) return;
            if (op == 0x72 && S->memo_len > S->max_objects) fail(S, E_OBJECTS, at);
            break;
        }
        case 0x68: /* BINGET */
        case 0x6A: /* LONG_BINGET */ {
            int w = op == 0x68 ? 1 : 4;
            NEED(w);
            int64_t idx = w == 1 ? d[p] : u32(d + p);
            p += w;
            if (idx >= S->memo_top || S->memo[idx].tag == T_ABSENT) {
                fail(S, E_TRUNCATED, at);
                return;
            }
            if (!again(S, S->memo[idx]) && !S->irregular) fail(S, E_MEMORY, at);
            break;
        }
        case 0x4B: /* BININT1 */
            NEED(1);
            v = (Val){d[p], 0, T_INT};
            p += 1;
            if (!push(S, v)) fail(S, E_MEMORY, at);
            break;
        case 0x4D: /* BININT2 */
            NEED(2);
            v = (Val){d[p] | d[p + 1] << 8, 0, T_INT};
            p += 2;
            if (!push(S, v)) fail(S, E_MEMORY, at);
            break;
        case 0x4A: /* BININT */
            NEED(4);
            v = (Val){(int32_t)u32(d + p), 0, T_INT};
            p += 4;
            if (!push(S, v)) fail(S, E_MEMORY, at);
            break;
        case 0x8A: /* LONG1 */
        case 0x8B: /* LONG4 */ {
            int w = op == 0x8A ? 1 : 4;
            NEED(w);
            uint64_t k = w == 1 ? d[p] : u32(d + p);
            p += w;
            if (k > 64) {
                S->err_k = (int64_t)k;
                fail(S, E_BIGINT, at);
                return;
            }
            NEED(k);
            /* two's complement, little-endian; beyond int64 it is no number of a snapshot's (T_BIG) */
            uint64_t x = 0;
            int neg = k && (d[p + k - 1] & 0x80);
            int fits = 1;
            for (uint64_t i = 0; i < k; i++) {
                if (i < 8) x |= (uint64_t)d[p + i] << (8 * i);
                else if (d[p + i] != (neg ? 0xFF : 0)) fits = 0;
            }
            if (k < 8 && neg) x |= ~(uint64_t)0 << (8 * k);
            if (k >= 8 && (int)((x >> 63) & 1) != neg) fits = 0;
            v = (Val){(int64_t)x, 0, (uint8_t)(fits ? T_INT : T_BIG)};
            p += (int64_t)k;
            if (!push(S, v)) fail(S, E_MEMORY, at);
            break;
        }
        case 0x47: /* BINFLOAT */
            NEED(8);
            v = (Val){0, 0, T_FLOAT};
            p += 8;
            if (!push(S, v)) fail(S, E_MEMORY, at);
            break;
        case 0x88: /* NEWTRUE */
        case 0x89: /* NEWFALSE */
            if (!push(S, (Val){op == 0x88, 0, T_BOOL})) fail(S, E_MEMORY, at);
            break;
        case 0x4E: /* NONE */
            if (!push(S, v)) fail(S, E_MEMORY, at);
            break;
        case 0x28: /* MARK */
            if (S->nm == S->mcap) {
                int64_t cap = S->mcap ? 2 * S->mcap : 64;
                if (!GROW(S->marks, cap)) {
                    fail(S, E_MEMORY, at);
                    return;
                }
                S->mcap = cap;
            }
            S->marks[S->nm++] = S->sp;
            if (S->nm > S->max_depth) fail(S, E_NESTING, at);
            break;
        case 0x7D: /* EMPTY_DICT */
        case 0x5D: /* EMPTY_LIST */ {
            int64_t id;
            if (!new_box(S, op == 0x7D ? T_DICT : T_LIST, S->sp, &id)) {
                fail(S, E_MEMORY, at);
                return;
            }
            if (!push(S, (Val){id, 0, (uint8_t)(op == 0x7D ? T_DICT : T_LIST)})) fail(S, E_MEMORY, at);
            break;
        }
        case 0x29: /* EMPTY_TUPLE */ make_tuple(S, 0, at); break;
        case 0x85: /* TUPLE1 */
        case 0x86: /* TUPLE2 */
        case 0x87: /* TUPLE3 */ {
            int64_t k = op - 0x84;
            if (S->sp < k) {
                fail(S, E_TRUNCATED, at);
                return;
            }
            make_tuple(S, k, at);
            break;
        }
        case 0x74: /* TUPLE */ {
            int64_t k = pop_mark(S, at);
            if (k < 0) return;
            make_tuple(S, S->sp - k, at);
            break;
        }
        case 0x75: /* SETITEMS */
        case 0x73: /* SETITEM */
        case 0x65: /* APPENDS */
        case 0x61: /* APPEND */ {
            int dict = op == 0x75 || op == 0x73;
            int64_t k;
            if (op == 0x75 || op == 0x65) {
                if ((k = pop_mark(S, at)) < 0) return;
            } else {
                if (S->sp < (dict ? 3 : 2)) {
                    fail(S, E_TRUNCATED, at);
                    return;
                }
                k = S->sp - (dict ? 2 : 1);
            }
            int64_t nitems = S->sp - k;
            if (k < 1) {
                fail(S, E_TRUNCATED, at);
                return;
            }
            Val *items = S->stack + k, *tv = &S->stack[k - 1];
            if (dict && nitems % 2) {
                fail(S, E_ODD, at);
                return;
            }
            if (tv->tag != (dict ? T_DICT : T_LIST)) {
                fail(S, E_NOT_MUTABLE, at);
                return;
            }
            Box *t = &S->box[tv->a];
            if (t->sealed) {
                fail(S, E_CYCLE_CHANGED, at);
                return;
            }
            int64_t depth = t->depth, size = t->size;
            if (!measure(S, items, nitems, &depth, &size, at)) return;
            if (t->sealed) {
                fail(S, E_CYCLE_SELF, at);
                return;
            }
            t->depth = (int32_t)depth;
            t->size = size;
            if (dict)
                for (int64_t i = 0; i < nitems; i += 2)
                    if (is_box(&items[i]) && (items[i].tag != T_TUPLE || (S->box[items[i].a].flags & 1))) {
                        fail(S, E_UNHASHABLE, at);
                        return;
                    }
            if (!taken_as_inferred(S, tv->a, items, nitems, dict)) {
                irregular(S, "a container taken by another parent than its place shows");
                return;
            }
            if (dict) fill(S, t, items, nitems);
            else if (t->role == R_FRAMES) {
                if (S->scratch_owner != (int32_t)tv->a) {
                    if (S->scratch_owner >= 0 && S->box[S->scratch_owner].payload == -1) {
                        irregular(S, "two frames lists filled at once");
                        return;
                    }
                    S->scratch_owner = (int32_t)tv->a;
                    S->nscratch = 0;
                }
                if (S->nscratch + nitems > S->scratch_cap) {
                    int64_t cap = S->scratch_cap ? S->scratch_cap : 256;
                    while (cap < S->nscratch + nitems) cap *= 2;
                    if (!GROW(S->scratch, cap)) {
                        fail(S, E_MEMORY, at);
                        return;
                    }
                    S->scratch_cap = cap;
                }
                for (int64_t i = 0; i < nitems; i++) {
                    int64_t f = items[i].tag == T_DICT ? S->box[items[i].a].payload : -1;
                    S->scratch[S->nscratch++] = f >= 0 ? (int32_t)f : S->empty_frame;
                }
            } else if (t->role == R_POOL && nitems) {
                irregular(S, "a segment_pool_id list");
                return;
            }
            t->count += dict ? nitems / 2 : nitems;
            if (t->role == R_FRAME || t->role == R_ENTRY || t->role == R_SEGMENT || t->role == R_BLOCK)
                t->flags |= 2;
            if (t->role == R_TRACES) S->traces_slots = t->count;
            S->sp = k;
            break;
        }
        case 0x95: /* FRAME */ p += 8; break;
        case 0x80: /* PROTO */ p += 1; break;
        case 0x30: /* POP */
            if (S->sp && S->sp > (S->nm ? S->marks[S->nm - 1] : -1)) {
                if (is_box(&S->stack[S->sp - 1]) && S->box[S->stack[S->sp - 1].a].role != R_OTHER) {
                    irregular(S, "a container popped");
                    return;
                }
                S->sp--;
            } else if (pop_mark(S, at) < 0)
                return;
            break;
        case 0x31: /* POP_MARK */ {
            int64_t k = pop_mark(S, at);
            if (k < 0) return;
            for (int64_t i = k; i < S->sp; i++)
                if (is_box(&S->stack[i]) && S->box[S->stack[i].a].role != R_OTHER) {
                    irregular(S, "a container popped");
                    return;
                }
            S->sp = k;
            break;
        }
        case 0x32: /* DUP */
            if (!S->sp) {
                fail(S, E_TRUNCATED, at);
                return;
            }
            if (!again(S, S->stack[S->sp - 1]) && !S->irregular) fail(S, E_MEMORY, at);
            break;
        case 0x2E: /* STOP */
            if (S->sp != 1 || S->nm) {
                S->err_k = S->sp;
                fail(S, E_STOP, at);
                return;
            }
            S->result_dict = S->stack[0].tag == T_DICT && S->box[S->stack[0].a].role == R_TOP;
            if (S->stack[0].tag == T_DICT && !S->result_dict) irregular(S, "the snapshot dict made elsewhere");
            return;
        default:
            S->err_op = op;
            fail(S, E_FORBIDDEN, at);
            return;
        }
    }
}

/* ---------------------------------------------------------------- results */

static PyObject *strings_of(const Interner *t) {
    PyObject *list = intern_list(t, "surrogatepass");
    if (!list && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        list = intern_list(t, "replace");
    }
    return list;
}

/* Counts of the names of unknown actions (states) as {name: count}. */
static PyObject *counted(const Interner *names, const int64_t *counts) {
    PyObject *all = strings_of(names), *out = PyDict_New();
    for (int32_t i = 0; all && out && i < names->n; i++) {
        if (!counts[i]) continue;
        PyObject *c = PyLong_FromLongLong(counts[i]);
        if (!c || PyDict_SetItem(out, PyList_GET_ITEM(all, i), c) < 0) Py_CLEAR(out);
        Py_XDECREF(c);
    }
    Py_XDECREF(all);
    if (!all) Py_CLEAR(out);
    return out;
}

static int set(PyObject *dict, const char *key, PyObject *value) {
    if (!value) return 0;
    int r = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return r == 0;
}

/* Settles what was read into final columns (without the GIL): a cut file keeps its complete rows; blocks default
 * their address (the segment's plus the sizes before) and requested size; unknowns and missing fields counted. */
typedef struct {
    int64_t *action_counts, *state_counts;
    int64_t missing_addr, missing_size;
    int64_t cut_device, cut_entries, cut_segments;
    int cut_in_traces;
} Tally;

static int settle(P *S, Tally *T) {
    int cut = S->err > E_REFUSALS_END;
    /* segments: complete ones only when cut; block ranges in order */
    int64_t nseg = S->seg.n, cum = 0;
    if (cut)
        while (nseg && !S->seg.filled[nseg - 1]) nseg--;
    S->seg.n = nseg;
    int32_t *start = PyMem_RawMalloc(sizeof(int32_t) * (size_t)(nseg + 1));
    if (!start) return 0;
    for (int64_t i = 0; i < nseg; i++) {
        if (S->seg.nblocks[i] && S->seg.first[i] != cum) {
            PyMem_RawFree(start);
            irregular(S, "blocks out of their segments' order");
            return 1;
        }
        start[i] = (int32_t)cum;
        uint64_t at = S->seg.address[i];
        for (int64_t b = cum; b < cum + S->seg.nblocks[i]; b++) {
            if (!(S->blk.flags[b] & F_ADDR_INT)) S->blk.address[b] = at;
            if (!(S->blk.flags[b] & F_REQ_INT)) S->blk.req[b] = S->blk.size[b];
            at += (uint64_t)S->blk.size[b];
        }
        cum += S->seg.nblocks[i];
    }
    start[nseg] = (int32_t)cum;
    PyMem_RawFree(S->seg.first);
    S->seg.first = start;
    if (cum != S->blk.n && !cut) {
        irregular(S, "blocks outside a segment");
        return 1;
    }
    S->blk.n = cum;
    T->action_counts = PyMem_RawCalloc((size_t)S->names.n + 1, sizeof(int64_t));
    T->state_counts = PyMem_RawCalloc((size_t)S->names.n + 1, sizeof(int64_t));
    if (!T->action_counts || !T->state_counts) return 0;
    for (int64_t b = 0; b < S->blk.n; b++)
        if (S->blk.state[b] == N_STATES) T->state_counts[S->blk.aux[b]]++;
    /* traces: the device cut keeps its complete entries */
    int64_t slots = S->traces_slots;
    T->cut_device = -1;
    if (cut && S->traces_box >= 0) {
        T->cut_in_traces = 1;
        for (int64_t dv = S->ndev - 1; dv >= 0; dv--)
            if (S->devs[dv]) {
                Dev *v = S->devs[dv];
                while (v->n && !(v->flags[v->n - 1] & F_FILLED)) v->n--;
                T->cut_device = dv;
                T->cut_entries = v->n;
                break;
            }
        if (T->cut_device + 1 > slots) slots = T->cut_device + 1;
    }
    S->traces_slots = slots;
    T->cut_segments = nseg;
    for (int64_t dv = 0; dv < S->ndev && dv < slots; dv++) {
        Dev *v = S->devs[dv];
        for (int64_t i = 0; v && i < v->n; i++) {
            if (v->action[i] == N_ACTIONS) T->action_counts[v->aux[i]]++;
            if (v->action[i] != OOM && !(v->flags[i] & F_ADDR_INT)) T->missing_addr++;
            if (!(v->flags[i] & F_SIZE_INT)) T->missing_size++;
        }
    }
    return 1;
}

static PyObject *device_dict(Dev *v) {
    PyObject *r = PyDict_New();
    if (!r || !set(r, "action", raw_array((void **)&v->action, v->n, NPY_UINT8, 1)) ||
        !set(r, "addr", raw_array((void **)&v->addr, v->n, NPY_UINT64, 8)) || !set(r, "size", raw_array((void **)&v->size, v->n, NPY_INT64, 8)) ||
        !set(r, "stream", raw_array((void **)&v->stream, v->n, NPY_INT64, 8)) ||
        !set(r, "time_us", raw_array((void **)&v->time, v->n, NPY_INT64, 8)) ||
        !set(r, "frames", raw_array((void **)&v->frames, v->n, NPY_INT32, 4)) ||
        !set(r, "device_free", raw_array((void **)&v->dfree, v->n, NPY_INT64, 8)) ||
        !set(r, "category", raw_array((void **)&v->cat, v->n, NPY_INT32, 4)))
        Py_CLEAR(r);
    return r;
}

static PyObject *tracebacks(P *S) {
    int64_t total = 0;
    for (int32_t t = 0; t < S->tbs.n; t++) total += S->tbs.entries[t].len / 4;
    int64_t *start = PyMem_RawMalloc(sizeof(int64_t) * ((size_t)S->tbs.n + 1));
    int32_t *name = PyMem_RawMalloc(sizeof(int32_t) * (size_t)total + 1);
    int32_t *file = PyMem_RawMalloc(sizeof(int32_t) * (size_t)total + 1);
    int64_t *line = PyMem_RawMalloc(sizeof(int64_t) * (size_t)total + 1);
    PyObject *r = PyDict_New();
    if (start && name && file && line && r) {
        int64_t k = 0;
        for (int32_t t = 0; t < S->tbs.n; t++) {
            size_t len;
            const uint8_t *ids = intern_bytes(&S->tbs, t, &len);
            start[t] = k;
            for (size_t j = 0; j < len / 4; j++, k++) {
                int32_t f;
                memcpy(&f, ids + 4 * j, 4);
                Frame fr;
                size_t flen;
                memcpy(&fr, intern_bytes(&S->frames, f, &flen), sizeof fr);
                name[k] = fr.name;
                file[k] = fr.filename;
                line[k] = fr.line;
            }
        }
        start[S->tbs.n] = k;
        if (set(r, "start", raw_array((void **)&start, S->tbs.n + 1, NPY_INT64, 8)) && set(r, "name", raw_array((void **)&name, total, NPY_INT32, 4)) &&
            set(r, "filename", raw_array((void **)&file, total, NPY_INT32, 4)) && set(r, "line", raw_array((void **)&line, total, NPY_INT64, 8)))
            return r;
    } else if (!PyErr_Occurred())
        PyErr_NoMemory();
    PyMem_RawFree(start);
    PyMem_RawFree(name);
    PyMem_RawFree(file);
    PyMem_RawFree(line);
    Py_XDECREF(r);
    return NULL;
}

static const char *const ERROR_NAMES[] = {
    "", "not_pickle", "forbidden", "nesting", "objects", "bigint", "cycle_changed", "cycle_self", "unhashable",
    "memory", "", "truncated", "no_mark", "odd", "not_mutable", "stop"};

static PyObject *result(P *S, Tally *T) {
    PyObject *r = PyDict_New();
    if (!r) return NULL;
    const char *status = S->irregular ? "irregular" : !S->err ? "ok" : S->err < E_REFUSALS_END ? "refused" : "cut";
    if (!set(r, "status", PyUnicode_FromString(status)) || !set(r, "error", PyUnicode_FromString(ERROR_NAMES[S->err])) ||
        !set(r, "offset", PyLong_FromLongLong(S->err_at)) || !set(r, "opcode", PyLong_FromLong(S->err_op)) ||
        !set(r, "count", PyLong_FromLongLong(S->err_k)) ||
        !set(r, "irregular", PyUnicode_FromString(S->irregular ? S->irregular : "")) ||
        !set(r, "started", PyBool_FromLong(S->top_box >= 0)))
        goto bad;
    if (S->irregular || (S->err && S->err < E_REFUSALS_END)) return r;
    if (!set(r, "is_dict", PyBool_FromLong(S->result_dict || (S->err && S->top_box >= 0))) ||
        !set(r, "has_traces", PyBool_FromLong(S->has_traces || (S->err && S->traces_box >= 0))) ||
        !set(r, "traces_list", PyBool_FromLong(S->traces_list || (S->err && S->traces_box >= 0))) ||
        !set(r, "has_segments", PyBool_FromLong(S->has_segments || (S->err && S->segments_box >= 0))) ||
        !set(r, "segments_list", PyBool_FromLong(S->segments_list || (S->err && S->segments_box >= 0))))
        goto bad;
    PyObject *traces = PyList_New(0);
    if (!set(r, "traces", traces)) goto bad;
    for (int64_t dv = 0; dv < S->traces_slots; dv++) { /* None for a slot that is no list: no arrays for it */
        PyObject *one = dv < S->ndev && S->devs[dv] ? device_dict(S->devs[dv]) : (Py_INCREF(Py_None), Py_None);
        if (!one || PyList_Append(traces, one) < 0) {
            Py_XDECREF(one);
            goto bad;
        }
        Py_DECREF(one);
    }
    Segs *s = &S->seg;
    Blks *b = &S->blk;
    if (!set(r, "seg_device", raw_array((void **)&s->device, s->n, NPY_INT32, 4)) ||
        !set(r, "seg_address", raw_array((void **)&s->address, s->n, NPY_UINT64, 8)) ||
        !set(r, "seg_total_size", raw_array((void **)&s->total, s->n, NPY_INT64, 8)) ||
        !set(r, "seg_stream", raw_array((void **)&s->stream, s->n, NPY_INT64, 8)) ||
        !set(r, "seg_segment_type", raw_array((void **)&s->type, s->n, NPY_INT32, 4)) ||
        !set(r, "seg_pool_id", raw_array((void **)&s->pool, s->n, NPY_INT32, 4)) ||
        !set(r, "seg_is_expandable", raw_array((void **)&s->exp, s->n, NPY_INT8, 1)) ||
        !set(r, "seg_allocated_size", raw_array((void **)&s->alloc, s->n, NPY_INT64, 8)) ||
        !set(r, "seg_active_size", raw_array((void **)&s->active, s->n, NPY_INT64, 8)) ||
        !set(r, "seg_requested_size", raw_array((void **)&s->req, s->n, NPY_INT64, 8)) ||
        !set(r, "seg_block_start", raw_array((void **)&s->first, s->n + 1, NPY_INT32, 4)) ||
        !set(r, "blk_address", raw_array((void **)&b->address, b->n, NPY_UINT64, 8)) ||
        !set(r, "blk_size", raw_array((void **)&b->size, b->n, NPY_INT64, 8)) ||
        !set(r, "blk_requested_size", raw_array((void **)&b->req, b->n, NPY_INT64, 8)) ||
        !set(r, "blk_state", raw_array((void **)&b->state, b->n, NPY_UINT8, 1)) ||
        !set(r, "blk_frames", raw_array((void **)&b->frames, b->n, NPY_INT32, 4)) || !set(r, "tracebacks", tracebacks(S)) ||
        !set(r, "strings", strings_of(&S->strings)) || !set(r, "unknown_actions", counted(&S->names, T->action_counts)) ||
        !set(r, "unknown_states", counted(&S->names, T->state_counts)) ||
        !set(r, "missing_addr", PyLong_FromLongLong(T->missing_addr)) ||
        !set(r, "missing_size", PyLong_FromLongLong(T->missing_size)) ||
        !set(r, "cut_in_traces", PyBool_FromLong(T->cut_in_traces)) ||
        !set(r, "cut_device", PyLong_FromLongLong(T->cut_device)) ||
        !set(r, "cut_entries", PyLong_FromLongLong(T->cut_entries)) ||
        !set(r, "cut_segments", PyLong_FromLongLong(T->cut_segments)))
        goto bad;
    return r;
bad:
    Py_DECREF(r);
    return NULL;
}

static void release_all(P *S) {
    PyMem_RawFree(S->stack);
    PyMem_RawFree(S->marks);
    PyMem_RawFree(S->memo);
    PyMem_RawFree(S->box);
    PyMem_RawFree(S->scratch);
    intern_free(&S->strings);
    intern_free(&S->names);
    intern_free(&S->frames);
    intern_free(&S->tbs);
    for (int64_t i = 0; i < S->ndev; i++) {
        Dev *v = S->devs[i];
        if (!v) continue;
        PyMem_RawFree(v->action);
        PyMem_RawFree(v->flags);
        PyMem_RawFree(v->addr);
        PyMem_RawFree(v->size);
        PyMem_RawFree(v->stream);
        PyMem_RawFree(v->time);
        PyMem_RawFree(v->dfree);
        PyMem_RawFree(v->frames);
        PyMem_RawFree(v->cat);
        PyMem_RawFree(v->aux);
        PyMem_RawFree(v);
    }
    PyMem_RawFree(S->devs);
    Segs *s = &S->seg;
    void *segp[] = {s->device, s->type, s->pool, s->first, s->address, s->total, s->stream,
                    s->alloc, s->active, s->req, s->nblocks, s->exp, s->filled};
    for (size_t i = 0; i < sizeof segp / sizeof *segp; i++) PyMem_RawFree(segp[i]);
    Blks *b = &S->blk;
    void *blkp[] = {b->address, b->size, b->req, b->state, b->flags, b->frames, b->aux};
    for (size_t i = 0; i < sizeof blkp / sizeof *blkp; i++) PyMem_RawFree(blkp[i]);
}

static PyObject *read_snapshot(PyObject *Py_UNUSED(module), PyObject *args) {
    PyObject *data;
    long long max_depth, max_objects;
    int release_pages = 0;
    if (!PyArg_ParseTuple(args, "OLL|p", &data, &max_depth, &max_objects, &release_pages)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0) return NULL;
    P *S = PyMem_RawCalloc(1, sizeof(P));
    if (!S) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    S->d = view.buf;
    S->n = view.len;
    S->max_depth = max_depth;
    S->max_objects = max_objects;
    S->release = release_pages;
    S->traces_box = S->segments_box = S->top_box = S->scratch_owner = -1;
    S->strings.base = S->names.base = S->d;
    S->strings.base_len = S->names.base_len = (size_t)S->n;
    Tally T = {0};
    PyObject *r = NULL;
    int ok = intern(&S->strings, (const uint8_t *)"", 0, 1) == 0 &&
             (S->none_name = intern(&S->names, (const uint8_t *)"(none)", 6, 1)) == 0 &&
             (S->empty_frame = frame_id(S, (Frame){0, 0, 0})) == 0;
    if (ok) {
        Py_BEGIN_ALLOW_THREADS
        run(S);
        if (!S->irregular && (!S->err || S->err > E_REFUSALS_END) && !settle(S, &T)) S->err = E_MEMORY;
        Py_END_ALLOW_THREADS
    }
    if (!ok || S->err == E_MEMORY) PyErr_NoMemory();
    else r = result(S, &T);
    PyMem_RawFree(T.action_counts);
    PyMem_RawFree(T.state_counts);
    release_all(S);
    PyMem_RawFree(S);
    PyBuffer_Release(&view);
    return r;
}

static PyMethodDef methods[] = {
    {"read", read_snapshot, METH_VARARGS,
     "read(data, max_depth, max_objects, release=False) -> dict: a snapshot pickle's columns, or why not; "
     "release: data maps a file read-only, and pages read may leave the resident set"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, .m_name = "_torch_snapshot", .m_doc = NULL, .m_size = -1, .m_methods = methods};

PyMODINIT_FUNC PyInit__torch_snapshot(void) {
    import_array();
    draw_hash_seed();
    return PyModule_Create(&module);
}
