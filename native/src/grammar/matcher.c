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
 * Masks. fill_mask walks the token trie depth-first, advancing the set one byte per edge; what a
 * subtree creates is rolled back when the walk leaves it (nodes, their hash slots, sets: all LIFO),
 * so a mask allocates nothing after warm-up.
 */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "grammar/program.h"
#include "grammar/trie.h"

#define COMPLETE (-1)
#define MAX_NODES (1 << 26)
/* A set with more stacks than this is refused: an ambiguity the grammar should not have. */
#define MAX_STACKS (1 << 16)
#define MAX_CLOSE_DEPTH 4096
/* Closure steps one byte may take (guards against grammars whose closures explode). */
#define MAX_CLOSE_STEPS (1 << 22)

typedef struct gnode {
    int32_t pos, count, parent;
    uint32_t utf8; /* 0, or (rem << 29) | (len << 26) | value: a code point read up to rem bytes short */
} gnode;

struct runner_matcher {
    const runner_grammar *g;
    const runner_token_trie *t;
    gnode *nodes;
    int32_t *slot_of; /* [cap]: the hash slot of each node (for LIFO removal) */
    uint32_t *stamp;  /* [cap]: dedup mark of each node in the set being built */
    uint32_t *ret_stamp; /* [cap]: the closure being built has already returned into this node */
    int32_t n_nodes, cap;
    int32_t n_live; /* nodes the last compaction kept: the next one waits until the arena doubles them */
    int32_t *table; /* open addressing, -1 empty; size a power of two >= 2 * cap */
    uint32_t table_mask;
    int32_t *sets; /* set storage: a stack of sets, each [n, tops...] */
    int64_t n_sets, cap_sets;
    int64_t cur; /* offset of the current state's set */
    uint32_t gen;
    int32_t steps;
    /* The walk's automaton: each distinct set met during one mask, with its transitions by byte. */
    struct dstate *dstates;
    int32_t n_dstates, cap_dstates;
    int32_t *dtable; /* open addressing over dstates by set content, -1 empty */
    uint32_t dtable_mask;
    /* Masks already computed, by the state's content (a document revisits states: every token
     * inside one string value leaves the same stacks). Replaced round-robin. */
    struct mask_entry *cache;
    int32_t n_cache, next_victim;
    int32_t *key; /* scratch: the current state's content */
    int32_t *walk_ds; /* [trie max depth + 1]: the mask walk's path */
    int64_t cap_key;
    runner_status fail;
    char *err;
    int32_t err_len;
};

typedef struct dstate {
    int64_t off;         /* the set's words in `sets` */
    uint32_t hash;
    int32_t trans[256]; /* -2 not computed yet, -1 dead, else the dstate after that byte */
} dstate;

#define MASK_CACHE_ENTRIES 64

typedef struct mask_entry {
    uint32_t hash;
    int32_t n_key;
    int32_t *key;
    uint32_t *bits;
    int32_t n_allowed, only;
} mask_entry;

static uint32_t hash_node(int32_t pos, int32_t count, int32_t parent, uint32_t utf8) {
    uint64_t h = (uint64_t)(uint32_t)pos * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uint32_t)count + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    h ^= (uint64_t)(uint32_t)parent * 0xC2B2AE3D27D4EB4Full + (h << 6) + (h >> 2);
    h ^= (uint64_t)utf8 * 0x165667B19E3779F9ull + (h << 6) + (h >> 2);
    return (uint32_t)(h ^ (h >> 32));
}

static int fail(runner_matcher *m, runner_status st, const char *msg) {
    if (m->fail == RUNNER_OK) {
        m->fail = st;
        runner_fail(m->err, m->err_len, st, "grammar: %s", msg);
    }
    return -1;
}

static int grow_nodes(runner_matcher *m) {
    if (m->cap >= MAX_NODES) return fail(m, RUNNER_ERR_NO_MEMORY, "more than 2^26 parse nodes");
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
        return fail(m, RUNNER_ERR_NO_MEMORY, "parse nodes");
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

static int32_t node_get(runner_matcher *m, int32_t pos, int32_t count, int32_t parent, uint32_t utf8) {
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

static void rollback_nodes(runner_matcher *m, int32_t mark) {
    while (m->n_nodes > mark) {
        const int32_t i = --m->n_nodes;
        m->table[m->slot_of[i]] = -1;
    }
}

static int push_word(runner_matcher *m, int32_t w) {
    if (m->n_sets == m->cap_sets) {
        const int64_t cap = m->cap_sets ? m->cap_sets * 2 : 4096;
        int32_t *sets = realloc(m->sets, (size_t)cap * sizeof *sets);
        if (!sets) return fail(m, RUNNER_ERR_NO_MEMORY, "parse sets");
        m->sets = sets;
        m->cap_sets = cap;
    }
    m->sets[m->n_sets++] = w;
    return 0;
}

/* The set being built starts at `at` (its count word). */
static int add_top(runner_matcher *m, int64_t at, int32_t top) {
    if (top < COMPLETE) return -1;
    if (top >= 0) {
        if (m->stamp[top] == m->gen) return 0;
        m->stamp[top] = m->gen;
    } else {
        for (int64_t k = at + 1; k < m->n_sets; k++)
            if (m->sets[k] == COMPLETE) return 0;
    }
    if (m->sets[at] >= MAX_STACKS) return fail(m, RUNNER_ERR_UNSUPPORTED, "more than 65536 parse stacks at once: the grammar is too ambiguous");
    if (push_word(m, top) < 0) return -1;
    m->sets[at]++;
    return 0;
}

/* A return point at retpos: one that would only close an alternative is its parent (tail call). */
static int32_t return_point(runner_matcher *m, int32_t retpos, int32_t parent) {
    if (gprog_elem(m->g, retpos)[0] == GELEM_END) return parent;
    return node_get(m, retpos, 0, parent, 0);
}

static int enter_rule(runner_matcher *m, int64_t at, int32_t rule, int32_t ret, int depth);

/* Expand position pos (with a REPEAT's count) over `parent` until every stack waits on CHARS.
 * Returns into parents (END) and a REPEAT's exit are the loop, not recursion: they walk up the
 * document's stack, which may be as deep as its nesting, while `depth` bounds only the descent into
 * the grammar (entering rules). Recursing there made a valid document nested past MAX_CLOSE_DEPTH
 * with nullable tails (`v ::= "x" | "(" v ")"?`) fail, and put that depth on the C stack. */
static int close_at(runner_matcher *m, int64_t at, int32_t pos, int32_t count, int32_t parent, int depth) {
    if (depth > MAX_CLOSE_DEPTH) return fail(m, RUNNER_ERR_UNSUPPORTED, "a closure too deep or too large");
    for (;;) {
        if (++m->steps > MAX_CLOSE_STEPS) return fail(m, RUNNER_ERR_UNSUPPORTED, "a closure too deep or too large");
        const int32_t *e = gprog_elem(m->g, pos);
        switch (e[0]) {
        case GELEM_END: {
            if (parent < 0) return add_top(m, at, COMPLETE);
            /* What returning into a node adds depends on that node alone: the second return into it
             * within one closure adds nothing. Without this, ambiguous empty derivations (a stack of
             * pending nullable rules, `x ::= "a" x x | ""`) re-walked the same returns once per path. */
            if (m->ret_stamp[parent] == m->gen) return 0;
            m->ret_stamp[parent] = m->gen;
            const gnode p = m->nodes[parent];
            pos = p.pos, count = p.count, parent = p.parent;
            continue;
        }
        case GELEM_CHARS: return add_top(m, at, node_get(m, pos, 0, parent, 0));
        case GELEM_REF: {
            const int32_t ret = return_point(m, pos + 1, parent);
            if (ret < COMPLETE) return -1;
            return enter_rule(m, at, e[1], ret, depth);
        }
        case GELEM_REPEAT: {
            const int32_t min = e[2], max = e[3];
            if (max < 0 || count < max) {
                /* Without an upper bound, counts past min are all alike: saturate so states recur. */
                int32_t next = count + 1;
                if (max < 0 && next > min) next = min;
                const int32_t ret = node_get(m, pos, next, parent, 0);
                if (ret < 0 || enter_rule(m, at, e[1], ret, depth) < 0) return -1;
            }
            if (count < min) return 0;
            pos = pos + 1, count = 0; /* the exit: what follows the repetition */
            continue;
        }
        default: return fail(m, RUNNER_ERR_INTERNAL, "unknown element");
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
static int64_t advance(runner_matcher *m, int64_t from, uint8_t b) {
    const int64_t at = m->n_sets;
    if (push_word(m, 0) < 0) return -1;
    next_gen(m);
    m->steps = 0;
    const int32_t n = m->sets[from];
    for (int32_t k = 0; k < n; k++) {
        const int32_t top = m->sets[from + 1 + k];
        if (top == COMPLETE) continue;
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
            rem = nd.utf8 >> 29, len = (nd.utf8 >> 26) & 7u, val = nd.utf8 & 0x3FFFFFFu;
            val = (val << 6) | (b & 0x3Fu);
            rem--;
            if (rem == 0) {
                if (val >= MIN_FOR_LEN[len] && val <= 0x10FFFF && (val < 0xD800 || val > 0xDFFF) && gprog_set_has(m->g, set, val) &&
                    close_at(m, at, nd.pos + 1, 0, nd.parent, 0) < 0)
                    return -1;
                continue;
            }
        }
        /* Part of a code point: keep it while some completion is in the set. */
        uint32_t lo = val << (6 * rem), hi = lo | ((1u << (6 * rem)) - 1);
        if (lo < MIN_FOR_LEN[len]) lo = MIN_FOR_LEN[len];
        if (hi > 0x10FFFF) hi = 0x10FFFF;
        if (lo > hi || !gprog_set_intersects(m->g, set, lo, hi)) continue;
        const int32_t nn = node_get(m, nd.pos, 0, nd.parent, (rem << 29) | (len << 26) | val);
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
    rollback_nodes(m, 0);
    /* The arena only shrinks here, so node_get cannot fail: it never grows past old capacity. */
    for (int32_t i = 0; i < old_n; i++)
        if (map[i] == -1) map[i] = node_get(m, old[i].pos, old[i].count, old[i].parent < 0 ? old[i].parent : map[old[i].parent], old[i].utf8);
    m->n_sets = 0;
    m->cur = 0;
    m->sets[m->n_sets++] = n; /* fits: the storage held at least this set before */
    for (int32_t k = 0; k < n; k++) m->sets[m->n_sets++] = tops[k] < 0 ? tops[k] : map[tops[k]];
    m->n_live = m->n_nodes;
    free(old), free(map), free(tops);
}

static runner_status finish(runner_matcher *m, runner_status st) {
    const runner_status f = m->fail;
    m->fail = RUNNER_OK;
    m->err = NULL;
    m->err_len = 0;
    return f != RUNNER_OK ? f : st;
}

static void begin(runner_matcher *m, char *err, int32_t err_len) {
    m->fail = RUNNER_OK;
    m->err = err;
    m->err_len = err_len;
}

runner_status runner_matcher_reset(runner_matcher *m, char *err, int32_t err_len) {
    if (!m) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_reset: matcher is NULL");
    begin(m, err, err_len);
    rollback_nodes(m, 0);
    m->n_live = 0;
    m->n_sets = 0;
    m->cur = 0;
    m->steps = 0;
    next_gen(m);
    if (push_word(m, 0) == 0) enter_rule(m, 0, m->g->start, COMPLETE, 0);
    return finish(m, RUNNER_OK);
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
    free(m->cache), free(m->key), free(m->walk_ds);
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
        const int64_t next = advance(m, from, bytes[i]);
        if (next < 0) break;
        if (m->sets[next] == 0) {
            *dead_at = i;
            break;
        }
        from = next;
    }
    if (m->fail != RUNNER_OK || *dead_at >= 0) {
        rollback_nodes(m, node_mark);
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
    begin(m, err, err_len);
    return finish(m, accept_bytes(m, bytes, n, dead_at));
}

runner_status runner_matcher_accept_token(runner_matcher *m, int32_t token, char *err, int32_t err_len) {
    if (!m || !m->t) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_accept_token: no matcher or no vocabulary");
    if (token < 0 || token >= m->t->n_vocab) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_accept_token: token %d is outside the vocabulary", token);
    const int64_t a = m->t->offsets[token], b = m->t->offsets[token + 1];
    if (a == b) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "grammar: token %d has no text and is never allowed", token);
    int64_t dead_at = -1;
    begin(m, err, err_len);
    runner_status st = accept_bytes(m, m->t->bytes + a, b - a, &dead_at);
    if (st == RUNNER_OK && m->fail == RUNNER_OK && dead_at >= 0)
        return finish(m, runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "grammar: token %d is not allowed here (byte %lld of it)", token, (long long)dead_at));
    return finish(m, st);
}

static uint32_t hash_set(const int32_t *w, int32_t n) {
    uint64_t h = 0xCBF29CE484222325ull ^ (uint64_t)n;
    for (int32_t k = 0; k < n; k++) h = (h ^ (uint32_t)w[k]) * 0x100000001B3ull;
    return (uint32_t)(h ^ (h >> 29));
}

static int grow_dtable(runner_matcher *m) {
    const uint32_t size = m->dtable ? (m->dtable_mask + 1) * 2 : 256;
    int32_t *t = malloc((size_t)size * sizeof *t);
    if (!t) return fail(m, RUNNER_ERR_NO_MEMORY, "mask automaton");
    memset(t, 0xff, (size_t)size * sizeof *t);
    for (int32_t i = 0; i < m->n_dstates; i++) {
        uint32_t h = m->dstates[i].hash & (size - 1);
        while (t[h] >= 0) h = (h + 1) & (size - 1);
        t[h] = i;
    }
    free(m->dtable);
    m->dtable = t;
    m->dtable_mask = size - 1;
    return 0;
}

/* The dstate of the set at `off` (the top of `sets`): an equal set met before is reused and this
 * copy dropped. Tops are sorted first, so equal sets compare equal word by word. */
static int32_t intern(runner_matcher *m, int64_t off) {
    int32_t *w = m->sets + off + 1;
    const int32_t n = m->sets[off];
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && w[j - 1] > w[j]; j--) {
            const int32_t x = w[j];
            w[j] = w[j - 1], w[j - 1] = x;
        }
    const uint32_t hash = hash_set(w, n);
    if (!m->dtable || (uint32_t)(m->n_dstates + 1) * 2 > m->dtable_mask + 1) {
        if (grow_dtable(m) < 0) return -2;
        w = m->sets + off + 1;
    }
    uint32_t h = hash & m->dtable_mask;
    for (int32_t i; (i = m->dtable[h]) >= 0; h = (h + 1) & m->dtable_mask) {
        const dstate *d = &m->dstates[i];
        if (d->hash == hash && m->sets[d->off] == n && memcmp(m->sets + d->off + 1, w, (size_t)n * sizeof *w) == 0) {
            m->n_sets = off; /* drop the copy */
            return i;
        }
    }
    if (m->n_dstates == m->cap_dstates) {
        const int32_t cap = m->cap_dstates ? m->cap_dstates * 2 : 64;
        dstate *d = realloc(m->dstates, (size_t)cap * sizeof *d);
        if (!d) return fail(m, RUNNER_ERR_NO_MEMORY, "mask automaton"), -2;
        m->dstates = d;
        m->cap_dstates = cap;
    }
    const int32_t id = m->n_dstates++;
    dstate *d = &m->dstates[id];
    d->off = off;
    d->hash = hash;
    for (int i = 0; i < 256; i++) d->trans[i] = -2;
    m->dtable[h] = id;
    return id;
}

static int32_t step(runner_matcher *m, int32_t from, uint8_t b) {
    const int32_t known = m->dstates[from].trans[b];
    if (known != -2) return known;
    const int64_t next = advance(m, m->dstates[from].off, b);
    if (next < 0) return -2;
    const int32_t id = m->sets[next] == 0 ? (m->n_sets = next, -1) : intern(m, next);
    if (id == -2) return -2;
    m->dstates[from].trans[b] = id;
    return id;
}

/* The trie in preorder, one flat loop: a node's set is its parent's (kept per depth) advanced by its
 * byte through the automaton; a dead node skips its whole subtree. */
static int walk(runner_matcher *m, int32_t root_ds, uint32_t *bits, int32_t *n_allowed, int32_t *last) {
    const runner_token_trie *t = m->t;
    int32_t *ds_at = m->walk_ds; /* [max_depth + 1]: the dstate of the current path at each depth */
    ds_at[0] = root_ds;
    const int32_t n = t->n_nodes;
    for (int32_t i = 1; i < n;) {
        const int32_t d = t->pre_depth[i];
        const int32_t next = step(m, ds_at[d - 1], t->pre_edge[i]);
        if (next == -2) return -1;
        if (next < 0) {
            i = t->pre_end[i];
            continue;
        }
        ds_at[d] = next;
        const int32_t k0 = t->pre_tok[i], nk = t->pre_ntok[i];
        for (int32_t k = 0; k < nk; k++) {
            const int32_t id = t->tok_ids[k0 + k];
            bits[id >> 5] |= 1u << (id & 31);
            *last = id;
        }
        *n_allowed += nk;
        i++;
    }
    return 0;
}

/* The current state's content, independent of node numbering: each stack as its (pos, count, utf8)
 * chain to the bottom, in the set's order. Two equal states listed in different orders miss each
 * other in the cache (a recomputation, never a wrong mask). */
static int32_t state_key(runner_matcher *m) {
    const int32_t n = m->sets[m->cur];
    int64_t len = 0;
    for (int32_t k = 0; k < n; k++) {
        for (int32_t i = m->sets[m->cur + 1 + k];; i = m->nodes[i].parent) {
            if (len + 4 > m->cap_key) {
                const int64_t cap = m->cap_key ? m->cap_key * 2 : 256;
                int32_t *key = realloc(m->key, (size_t)cap * sizeof *key);
                if (!key) return -1;
                m->key = key;
                m->cap_key = cap;
            }
            if (i < 0) {
                m->key[len++] = -1; /* end of this stack (or COMPLETE) */
                break;
            }
            m->key[len++] = m->nodes[i].pos, m->key[len++] = m->nodes[i].count, m->key[len++] = (int32_t)m->nodes[i].utf8;
        }
    }
    return len > INT32_MAX ? -1 : (int32_t)len;
}

static mask_entry *cache_find(runner_matcher *m, uint32_t hash, int32_t n_key) {
    for (int32_t i = 0; i < m->n_cache; i++) {
        mask_entry *e = &m->cache[i];
        if (e->hash == hash && e->n_key == n_key && memcmp(e->key, m->key, (size_t)n_key * sizeof *m->key) == 0) return e;
    }
    return NULL;
}

static void cache_store(runner_matcher *m, uint32_t hash, int32_t n_key, const uint32_t *bits, int32_t n_allowed, int32_t only) {
    const size_t n_words = (size_t)(m->t->n_vocab + 31) / 32;
    if (!m->cache && !(m->cache = calloc(MASK_CACHE_ENTRIES, sizeof *m->cache))) return;
    mask_entry *e;
    if (m->n_cache < MASK_CACHE_ENTRIES) e = &m->cache[m->n_cache++];
    else e = &m->cache[m->next_victim], m->next_victim = (m->next_victim + 1) % MASK_CACHE_ENTRIES;
    int32_t *key = realloc(e->key, (size_t)(n_key ? n_key : 1) * sizeof *key);
    if (key) e->key = key;
    if (!e->bits) e->bits = malloc(n_words * sizeof *e->bits);
    if (!key || !e->bits) {
        e->n_key = -1; /* unusable; never matches */
        return;
    }
    memcpy(e->key, m->key, (size_t)n_key * sizeof *key);
    memcpy(e->bits, bits, n_words * sizeof *bits);
    e->hash = hash, e->n_key = n_key, e->n_allowed = n_allowed, e->only = only;
}

runner_status runner_matcher_fill_mask(runner_matcher *m, uint32_t *allowed, int32_t *n_allowed, int32_t *only, char *err, int32_t err_len) {
    if (!m || !m->t || !allowed) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_fill_mask: no matcher, vocabulary or mask");
    begin(m, err, err_len);
    const size_t n_words = (size_t)(m->t->n_vocab + 31) / 32;
    /* Sorted by node index (creation order), so the same state reached the same way keys alike. */
    int32_t *cur = m->sets + m->cur + 1;
    const int32_t n = m->sets[m->cur];
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && cur[j - 1] > cur[j]; j--) {
            const int32_t x = cur[j];
            cur[j] = cur[j - 1], cur[j - 1] = x;
        }
    const int32_t n_key = state_key(m);
    const uint32_t hash = n_key >= 0 ? hash_set(m->key, n_key) : 0;
    const mask_entry *hit = n_key >= 0 ? cache_find(m, hash, n_key) : NULL;
    if (hit) {
        memcpy(allowed, hit->bits, n_words * sizeof *allowed);
        if (n_allowed) *n_allowed = hit->n_allowed;
        if (only) *only = hit->only;
        return finish(m, RUNNER_OK);
    }
    memset(allowed, 0, n_words * sizeof *allowed);
    int32_t count = 0, last = -1;
    const int32_t node_mark = m->n_nodes;
    const int64_t set_mark = m->n_sets;
    /* The current set, copied to the top so that interning may sort it. */
    int ok = push_word(m, n) == 0;
    for (int32_t k = 0; ok && k < n; k++) ok = push_word(m, m->sets[m->cur + 1 + k]) == 0;
    const int32_t root = ok ? intern(m, set_mark) : -2;
    if (root >= 0 && !m->walk_ds) m->walk_ds = malloc((size_t)(m->t->max_depth + 1) * sizeof *m->walk_ds);
    if (root >= 0 && !m->walk_ds) fail(m, RUNNER_ERR_NO_MEMORY, "mask walk");
    else if (root >= 0) walk(m, root, allowed, &count, &last);
    /* Forget the automaton (its sets and nodes live in the storage rolled back below). */
    for (int32_t i = 0; i < m->n_dstates; i++) {
        uint32_t h = m->dstates[i].hash & m->dtable_mask;
        while (m->dtable[h] != i) h = (h + 1) & m->dtable_mask;
        m->dtable[h] = -1;
    }
    m->n_dstates = 0;
    rollback_nodes(m, node_mark);
    m->n_sets = set_mark;
    if (n_allowed) *n_allowed = count;
    if (only) *only = count == 1 ? last : -1;
    if (m->fail == RUNNER_OK && n_key >= 0) cache_store(m, hash, n_key, allowed, count, count == 1 ? last : -1);
    return finish(m, RUNNER_OK);
}

int32_t runner_matcher_n_vocab(const runner_matcher *m) { return m && m->t ? m->t->n_vocab : 0; }
