/* TensorFlow timeline.py's reading of StepStats node labels, shared by
 * profscope.models.formats._labels (the timeline) and profscope.models.formats._stepstats
 * (memory analysis, Chrome trace rows). Static inline: each module gets
 * its own copy. */
#ifndef PROFSCOPE_LABELS_H
#define PROFSCOPE_LABELS_H

#include <stdint.h>
#include <string.h>

/* Last occurrence of byte ch in [p, end), or NULL. */
static inline const uint8_t *last_byte(const uint8_t *p, const uint8_t *end, uint8_t ch) {
    while (end > p) {
        if (*--end == ch) return end;
    }
    return NULL;
}

/* timeline.py reads `name = Op(in0, in1)` with the greedy pattern
 * `(.*) = (.*)\((.*)\)` on the first line; this finds the same groups: the
 * op ends at the last '(' before the last ')', the name at the last " = "
 * before that. Returns 0 when the pattern does not match (timeline.py's
 * "unknown"), else sets the op and the inputs text. */
static inline int match_op_label(const uint8_t *p, const uint8_t *end, const uint8_t **op, const uint8_t **op_end,
                                 const uint8_t **inputs, const uint8_t **inputs_end) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl) end = nl;
    const uint8_t *close = last_byte(p, end, ')');
    if (!close) return 0;
    const uint8_t *open = last_byte(p, close, '(');
    if (!open) return 0;
    const uint8_t *eq = NULL;
    for (const uint8_t *q = open - 3; q >= p; q--)
        if (q[0] == ' ' && q[1] == '=' && q[2] == ' ') { eq = q; break; }
    if (!eq) return 0;
    *op = eq + 3;
    *op_end = open;
    *inputs = open + 1;
    *inputs_end = close;
    return 1;
}

/* GPU stream labels carry the node as `...@@name:op#...`: the node is
 * label[@@+2 : #] when both occur in that order, else the node name;
 * timeline.py then splits it at ':' into node and op. Sets the node; the
 * op is NULL when there is no ':' ("unknown"). */
static inline void match_kernel_label(const uint8_t *p, const uint8_t *end, const uint8_t *name,
                                      const uint8_t *name_end, const uint8_t **node, const uint8_t **node_end,
                                      const uint8_t **op, const uint8_t **op_end) {
    const uint8_t *at = NULL, *hash = memchr(p, '#', (size_t)(end - p));
    for (const uint8_t *q = p; q + 1 < end; q++)
        if (q[0] == '@' && q[1] == '@') { at = q; break; }
    const uint8_t *nb = name, *ne = name_end;
    if (at && hash && at + 2 < hash) {
        nb = at + 2;
        ne = hash;
    }
    const uint8_t *colon = memchr(nb, ':', (size_t)(ne - nb));
    *node = nb;
    *node_end = colon ? colon : ne;
    *op = *op_end = NULL;
    if (colon) {
        const uint8_t *next = memchr(colon + 1, ':', (size_t)(ne - colon - 1));
        *op = colon + 1;
        *op_end = next ? next : ne;
    }
}

#endif
