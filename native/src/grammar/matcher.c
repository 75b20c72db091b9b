/*
 * The matcher: a pushdown automaton over a grammar program, fed UTF-8 bytes.
 *
 * State. A parse stack is a chain of immutable nodes (pos, count, parent, utf8): the top node's pos
 * is a CHARS element waiting for a code point (utf8 != 0 when part of one has been read); the nodes
 * below are return points (the element after a REF, or a REPEAT element with its iteration count).
 * The state is a set of such stacks (a grammar may be ambiguous), plus COMPLETE when the bytes so
 * far are a whole document. Nodes are hash-consed, so equal stacks are the same node and a set
 * deduplicates by index.
 *
 * Exactness. Lowering pruned every alternative that cannot complete, so every stack that survives a
 * byte can still finish a document: a token is allowed exactly when its bytes leave a non-empty set.
 * A code point cut mid-way is kept only while some completion of it is in the set (the interval its
 * leading bits leave, intersected with the set), so byte-fallback tokens are judged exactly too.
 *
 * Masks are mask.c's; this file owns the stacks, the closure and accepting bytes and tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "grammar/matcher_impl.h"

static uint32_t hash_node(int32_t pos, int32_t count, int32_t parent, uint32_t utf8) {
    uint64_t h = (uint64_t)(uint32_t)pos * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uint32_t)count + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)parent * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
    h ^= (uint64_t)utf8 * 0x165667B19E3779F9ull + (h << 6) + (h >> 2);
    return (uint32_t)(h ^ (h >> 32));
}

int gmatch_fail(runner_matcher *m, runner_status st, const char *msg) {
    if (m->fail == RUNNER_OK) {
        m->fail = st;
        runner_fail(m->err, m->err_len, st, "grammar: %s", msg);
    }
    return -1;
}

static int grow_nodes(runner_matcher *m) {
    if (m->cap >= MAX_NODES) return gmatch_fail(m, RUNNER_ERR_NO_MEMORY, "more than 2^26 parse nodes");
    const int32_t cap = m->cap ? m->cap * 2 : 1024;
    gnode *nodes = realloc(m->nodes, (size_t)cap * sizeof *nodes);
    if (nodes) m->nodes = nodes;
    int32_t *slot_of = realloc(m->slot_of, (size_t)cap * sizeof *slot_of);
    if (slot_of) m->slot_of = slot_of;
    uint32_t *stamp = realloc(m->stamp, (size_t)cap * sizeof *stamp);
    if (stamp) m->stamp = stamp;
    uint32_t *ret_stamp = realloc(m->ret_stamp, (size_t)cap * sizeof *ret_stamp);
    if (ret_stamp) m->ret_stamp = ret_stamp;
    int32_t *table = malloc((size_t)cap * 2 * sizeof *table);
    if (!nodes || !slot_of || !stamp || !ret_stamp || !table) {
        free(table);
        return gmatch_fail(m, RUNNER_ERR_NO_MEMORY, "parse nodes");
    }
    memset(m->stamp + m->cap, 0, (size_t)(cap - m->cap) * sizeof *stamp);
    memset(m->ret_stamp + m->cap, 0, (size_t)(cap - m->cap) * sizeof *ret_stamp);
    memset(table, 0xff, (size_t)cap * 2 * sizeof *table);
    free(m->table);
    m->table = table;
    m->table_mask = (uint32_t)cap * 2 - 1;
    m->cap = cap;
    /* Reinsert in creation order: LIFO removal stays valid for linear probing. */
    for (int32_t i = 0; i < m->n_nodes; i++) {
        const gnode *n = &m->nodes[i];
        uint32_t h = hash_node(n->pos, n->count, n->parent, n->utf8) & m->table_mask;
        while (m->table[h] >= 0) h = (h + 1) & m->table_mask;
        m->table[h] = i;
        m->slot_of[i] = (int32_t)h;
    }
    return 0;
}

int32_t gmatch_node(runner_matcher *m, int32_t pos, int32_t count, int32_t parent, uint32_t utf8) {
    if (m->n_nodes == m->cap && grow_nodes(m) < 0) return -2;
    uint32_t h = hash_node(pos, count, parent, utf8) & m->table_mask;
    for (int32_t i; (i = m->table[h]) >= 0; h = (h + 1) & m->table_mask) {
        const gnode *n = &m->nodes[i];
        if (n->pos == pos && n->count == count && n->parent == parent && n->utf8 == utf8) return i;
    }
    const int32_t i = m->n_nodes++;
    m->nodes[i] = (gnode){pos, count, parent, utf8};
    m->stamp[i] = 0;
    m->ret_stamp[i] = 0;
    m->table[h] = i;
    m->slot_of[i] = (int32_t)h;
    return i;
}

void gmatch_rollback(runner_matcher *m, int32_t mark) {
    while (m->n_nodes > mark) {
        const int32_t i = --m->n_nodes;
        m->table[m->slot_of[i]] = -1;
    }
}

int gmatch_push_word(runner_matcher *m, int32_t w) {
    if (m->n_sets == m->cap_sets) {
        const int64_t cap = m->cap_sets ? m->cap_sets * 2 : 4096;
        int32_t *sets = realloc(m->sets, (size_t)cap * sizeof *sets);
        if (!sets) return gmatch_fail(m, RUNNER_ERR_NO_MEMORY, "parse sets");
        m->sets = sets;
        m->cap_sets = cap;
    }
    m->sets[m->n_sets++] = w;
    return 0;
}

/* The set being built starts at `at` (its count word). */
static int add_top(runner_matcher *m, int64_t at, int32_t top) {
    if (top == NODE_ERROR) return -1;
    if (top >= 0) {
        if (m->stamp[top] == m->gen) return 0;
        m->stamp[top] = m->gen;
    } else {
        for (int64_t k = at + 1; k < m->n_sets; k++)
            if (m->sets[k] == top) return 0;
    }
    if (m->sets[at] >= MAX_STACKS) return gmatch_fail(m, RUNNER_ERR_UNSUPPORTED, "more than 65536 parse stacks at once: the grammar is too ambiguous");
    if (gmatch_push_word(m, top) < 0) return -1;
    m->sets[at]++;
    return 0;
}

/* A return point at retpos: one that would only close an alternative is its parent (tail call). */
static int32_t return_point(runner_matcher *m, int32_t retpos, int32_t parent) {
    if (gprog_elem(m->g, retpos)[0] == GELEM_END) return parent;
    return gmatch_node(m, retpos, 0, parent, 0);
}

static int enter_rule(runner_matcher *m, int64_t at, int32_t rule, int32_t ret, int depth);

/* Expand position pos (with a REPEAT's count) over `parent` until every stack waits on CHARS.
 * Returns into parents (END) and a REPEAT's exit are the loop, not recursion: they walk up the
 * document's stack, which may be as deep as its nesting, while `depth` bounds only the descent into
 * the grammar (entering rules). Recursing there made a valid document nested past MAX_CLOSE_DEPTH
 * with nullable tails (`v ::= "x" | "(" v ")"?`) fail, and put that depth on the C stack. */
static int close_at(runner_matcher *m, int64_t at, int32_t pos, int32_t count, int32_t parent, int depth) {
    if (depth > MAX_CLOSE_DEPTH) return gmatch_fail(m, RUNNER_ERR_UNSUPPORTED, "a closure too deep or too large");
    for (;;) {
        if (++m->steps > MAX_CLOSE_STEPS) return gmatch_fail(m, RUNNER_ERR_UNSUPPORTED, "a closure too deep or too large");
        const int32_t *e = gprog_elem(m->g, pos);
        switch (e[0]) {
        case GELEM_END: {
            if (parent == COMPLETE) return add_top(m, at, COMPLETE);
            if (parent == BOTTOM) return add_top(m, at, ESC_NOW);
            /* What returning into a node adds depends on that node alone: the second return into it
             * within one closure adds nothing. Without this, ambiguous empty derivations (a stack of
             * pending nullable rules, `x ::= "a" x x | ""`) re-walked the same returns once per path. */
            if (m->ret_stamp[parent] == m->gen) return 0;
            m->ret_stamp[parent] = m->gen;
            const gnode p = m->nodes[parent];
            pos = p.pos, count = p.count, parent = p.parent;
            continue;
        }
        case GELEM_CHARS: return add_top(m, at, gmatch_node(m, pos, 0, parent, 0));
        case GELEM_REF: {
            const int32_t ret = return_point(m, pos + 1, parent);
            if (ret == NODE_ERROR) return -1;
            return enter_rule(m, at, e[1], ret, depth);
        }
        case GELEM_REPEAT: {
            const int32_t min = e[2], max = e[3];
            if (max < 0 || count < max) {
                /* Without an upper bound, counts past min are all alike: saturate so states recur. */
                int32_t next = count + 1;
                if (max < 0 && next > min) next = min;
                const int32_t ret = gmatch_node(m, pos, next, parent, 0);
                if (ret < 0 || enter_rule(m, at, e[1], ret, depth) < 0) return -1;
            }
            if (count < min) return 0;
            pos = pos + 1, count = 0; /* the exit: what follows the repetition */
            continue;
        }
        default: return gmatch_fail(m, RUNNER_ERR_INTERNAL, "unknown element");
        }
    }
}

static int enter_rule(runner_matcher *m, int64_t at, int32_t rule, int32_t ret, int depth) {
    const runner_grammar *g = m->g;
    for (int32_t a = g->rule_alt[rule]; a < g->rule_alt[rule + 1]; a++)
        if (close_at(m, at, g->alt_start[a], 0, ret, depth + 1) < 0) return -1;
    return 0;
}

/* A fresh mark for the stamps of one closure (every stamp cleared once when the counter wraps). */
static void next_gen(runner_matcher *m) {
    if (++m->gen == 0) {
        if (m->cap) memset(m->stamp, 0, (size_t)m->cap * sizeof *m->stamp), memset(m->ret_stamp, 0, (size_t)m->cap * sizeof *m->ret_stamp);
        m->gen = 1;
    }
}

static const uint32_t MIN_FOR_LEN[5] = {0, 0, 0x80, 0x800, 0x10000};

/* Advance the set at `from` by one byte into a new set pushed on top; returns its offset, or -1. */
int64_t gmatch_advance(runner_matcher *m, int64_t from, uint8_t b) {
    const int64_t at = m->n_sets;
    if (gmatch_push_word(m, 0) < 0) return -1;
    next_gen(m);
    m->steps = 0;
    const int32_t n = m->sets[from];
    for (int32_t k = 0; k < n; k++) {
        const int32_t top = m->sets[from + 1 + k];
        if (top < 0) {
            /* A finished document takes no more bytes; a cut stack that escaped stays "it depends". */
            if ((top == ESC_NOW || top == ESC_PAST) && add_top(m, at, ESC_PAST) < 0) return -1;
            continue;
        }
        const gnode nd = m->nodes[top];
        const int32_t set = gprog_elem(m->g, nd.pos)[1];
        uint32_t rem, len, val;
        if (nd.utf8 == 0) {
            if (b < 0x80) {
                if (gprog_set_has(m->g, set, b) && close_at(m, at, nd.pos + 1, 0, nd.parent, 0) < 0) return -1;
                continue;
            }
            if (b >= 0xC2 && b <= 0xDF) len = 2, val = b & 0x1Fu;
            else if (b >= 0xE0 && b <= 0xEF) len = 3, val = b & 0x0Fu;
            else if (b >= 0xF0 && b <= 0xF4) len = 4, val = b & 0x07u;
            else continue;
            rem = len - 1;
        } else {
            if ((b & 0xC0) != 0x80) continue;
            rem = nd.utf8 >> 29, len = (nd.utf8 >> 26) & 7u, val = nd.utf8 & UTF8_VALUE;
            if (nd.utf8 & UTF8_ANY) {
                /* Every completion of this prefix is a valid code point of the set. */
                if (rem == 1) {
                    if (close_at(m, at, nd.pos + 1, 0, nd.parent, 0) < 0) return -1;
                } else if (add_top(m, at, gmatch_node(m, nd.pos, 0, nd.parent, ((rem - 1) << 29) | (len << 26) | UTF8_ANY)) < 0) {
                    return -1;
                }
                continue;
            }
            val = (val << 6) | (b & 0x3Fu);
            rem--;
            if (rem == 0) {
                if (val >= MIN_FOR_LEN[len] && val <= 0x10FFFF && (val < 0xD800 || val > 0xDFFF) && gprog_set_has(m->g, set, val) &&
                    close_at(m, at, nd.pos + 1, 0, nd.parent, 0) < 0)
                    return -1;
                continue;
            }
        }
        /* Part of a code point: keep it while some completion is in the set. When every completion
         * is (no overlong form, no surrogate, nothing past U+10FFFF, all in the set), forget which
         * prefix it was: the string-body states of a mask's automaton then number a handful instead
         * of one per lead and continuation byte in the vocabulary. */
        const uint32_t raw_lo = val << (6 * rem), raw_hi = raw_lo | ((1u << (6 * rem)) - 1);
        uint32_t lo = raw_lo, hi = raw_hi;
        if (lo < MIN_FOR_LEN[len]) lo = MIN_FOR_LEN[len];
        if (hi > 0x10FFFF) hi = 0x10FFFF;
        if (lo > hi || !gprog_set_intersects(m->g, set, lo, hi)) continue;
        const int any = raw_lo >= MIN_FOR_LEN[len] && raw_hi <= 0x10FFFF && (raw_hi < 0xD800 || raw_lo > 0xDFFF) && gprog_set_covers(m->g, set, raw_lo, raw_hi);
        const int32_t nn = gmatch_node(m, nd.pos, 0, nd.parent, (rem << 29) | (len << 26) | (any ? UTF8_ANY : val));
        if (nn < 0 || add_top(m, at, nn) < 0) return -1;
    }
    return m->fail == RUNNER_OK ? at : -1;
}

/* Copy the live stacks of the current set into a fresh arena (accepts leave garbage behind). A
 * parent is always created before its children, so one pass in index order rebuilds every chain. */
static void compact(runner_matcher *m) {
    const int32_t old_n = m->n_nodes;
    const int32_t n = m->sets[m->cur];
    gnode *old = malloc((size_t)old_n * sizeof *old);
    int32_t *map = malloc((size_t)old_n * sizeof *map);
    int32_t *tops = malloc((size_t)(n ? n : 1) * sizeof *tops);
    if (!old || !map || !tops || old_n == 0) {
        free(old), free(map), free(tops);
        return; /* an optimisation: without memory for it, keep the arena as it is */
    }
    memcpy(old, m->nodes, (size_t)old_n * sizeof *old);
    memcpy(tops, m->sets + m->cur + 1, (size_t)n * sizeof *tops);
    /* Mark the live nodes: -1 live, -2 dead. */
    for (int32_t i = 0; i < old_n; i++) map[i] = -2;
    for (int32_t k = 0; k < n; k++)
        for (int32_t i = tops[k]; i >= 0 && map[i] == -2; i = old[i].parent) map[i] = -1;
    gmatch_rollback(m, 0);
    /* The arena only shrinks here, so node_get cannot fail: it never grows past old capacity. */
    for (int32_t i = 0; i < old_n; i++)
        if (map[i] == -1) map[i] = gmatch_node(m, old[i].pos, old[i].count, old[i].parent < 0 ? old[i].parent : map[old[i].parent], old[i].utf8);
    m->n_sets = 0;
    m->cur = 0;
    m->sets[m->n_sets++] = n; /* fits: the storage held at least this set before */
    for (int32_t k = 0; k < n; k++) m->sets[m->n_sets++] = tops[k] < 0 ? tops[k] : map[tops[k]];
    m->n_live = m->n_nodes;
    free(old), free(map), free(tops);
}

runner_status gmatch_finish(runner_matcher *m, runner_status st) {
    const runner_status f = m->fail;
    m->fail = RUNNER_OK;
    m->err = NULL;
    m->err_len = 0;
    return f != RUNNER_OK ? f : st;
}

void gmatch_begin(runner_matcher *m, char *err, int32_t err_len) {
    m->fail = RUNNER_OK;
    m->err = err;
    m->err_len = err_len;
}

runner_status runner_matcher_reset(runner_matcher *m, char *err, int32_t err_len) {
    if (!m) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_reset: matcher is NULL");
    gmatch_begin(m, err, err_len);
    gmatch_rollback(m, 0);
    m->n_live = 0;
    m->n_sets = 0;
    m->cur = 0;
    m->steps = 0;
    next_gen(m);
    if (gmatch_push_word(m, 0) == 0) enter_rule(m, 0, m->g->start, COMPLETE, 0);
    return gmatch_finish(m, RUNNER_OK);
}

runner_status runner_matcher_create(const runner_grammar *g, const runner_token_trie *t, runner_matcher **out, char *err, int32_t err_len) {
    if (!out || !g) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_create: grammar or out is NULL");
    *out = NULL;
    runner_matcher *m = calloc(1, sizeof *m);
    if (!m) return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "matcher_create");
    m->g = g;
    m->t = t;
    const runner_status st = runner_matcher_reset(m, err, err_len);
    if (st != RUNNER_OK) {
        runner_matcher_free(m);
        return st;
    }
    *out = m;
    return RUNNER_OK;
}

void runner_matcher_free(runner_matcher *m) {
    if (!m) return;
    for (int32_t i = 0; i < m->n_cache; i++) free(m->cache[i].key), free(m->cache[i].bits);
    for (int32_t i = 0; i < m->n_cut_cache; i++) free(m->cut_cache[i].key), free(m->cut_cache[i].bits), free(m->cut_cache[i].unsure);
    free(m->cache), free(m->cut_cache), free(m->key), free(m->cut_key), free(m->unsure), free(m->walk_ds);
    free(m->nodes), free(m->slot_of), free(m->stamp), free(m->ret_stamp), free(m->table), free(m->sets), free(m->dstates), free(m->dtable);
    free(m);
}

int runner_matcher_is_complete(const runner_matcher *m) {
    if (!m) return 0;
    const int32_t n = m->sets[m->cur];
    for (int32_t k = 0; k < n; k++)
        if (m->sets[m->cur + 1 + k] == COMPLETE) return 1;
    return 0;
}

/* Advance the current state by bytes; on a dead end the state is unchanged and *dead_at says where. */
static runner_status accept_bytes(runner_matcher *m, const uint8_t *bytes, int64_t n, int64_t *dead_at) {
    const int32_t node_mark = m->n_nodes;
    const int64_t set_mark = m->n_sets;
    int64_t from = m->cur;
    for (int64_t i = 0; i < n; i++) {
        const int64_t next = gmatch_advance(m, from, bytes[i]);
        if (next < 0) break;
        if (m->sets[next] == 0) {
            *dead_at = i;
            break;
        }
        from = next;
    }
    if (m->fail != RUNNER_OK || *dead_at >= 0) {
        gmatch_rollback(m, node_mark);
        m->n_sets = set_mark;
        return RUNNER_OK;
    }
    /* The new state replaces the old one: move it to the bottom of the set storage. */
    const int32_t len = m->sets[from] + 1;
    memmove(m->sets, m->sets + from, (size_t)len * sizeof *m->sets);
    m->n_sets = len;
    m->cur = 0;
    /* Compact when at least half the arena is garbage since the last compaction kept n_live nodes
     * (a deep stack is all live: compacting on the count of tops alone copied it on every accept,
     * quadratic in the nesting depth). Amortised O(1) per node created. */
    if (m->n_nodes > 4096 && m->n_nodes > 4 * (len + 64) && m->n_nodes > 2 * m->n_live) compact(m);
    return RUNNER_OK;
}

runner_status runner_matcher_accept_bytes(runner_matcher *m, const uint8_t *bytes, int64_t n, int64_t *dead_at, char *err, int32_t err_len) {
    if (!m || (n > 0 && !bytes) || n < 0 || !dead_at) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_accept_bytes: bad arguments");
    *dead_at = -1;
    gmatch_begin(m, err, err_len);
    return gmatch_finish(m, accept_bytes(m, bytes, n, dead_at));
}

runner_status runner_matcher_accept_token(runner_matcher *m, int32_t token, char *err, int32_t err_len) {
    if (!m || !m->t) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_accept_token: no matcher or no vocabulary");
    if (token < 0 || token >= m->t->n_vocab) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_accept_token: token %d is outside the vocabulary", token);
    const int64_t a = m->t->offsets[token], b = m->t->offsets[token + 1];
    if (a == b) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "grammar: token %d has no text and is never allowed", token);
    int64_t dead_at = -1;
    gmatch_begin(m, err, err_len);
    runner_status st = accept_bytes(m, m->t->bytes + a, b - a, &dead_at);
    if (st == RUNNER_OK && m->fail == RUNNER_OK && dead_at >= 0)
        return gmatch_finish(m, runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "grammar: token %d is not allowed here (byte %lld of it)", token, (long long)dead_at));
    return gmatch_finish(m, st);
}

int32_t runner_matcher_n_vocab(const runner_matcher *m) { return m && m->t ? m->t->n_vocab : 0; }
