/*
 * Masks: which tokens of the vocabulary may come next, from the matcher's current state.
 *
 * The walk. The token trie, in preorder, is one flat loop: a node's set of stacks is its parent's
 * advanced by the node's byte, and a dead node skips its whole subtree. The sets come from a small
 * automaton built during the walk: each distinct set met is interned once with its transitions by
 * byte, so a byte is advanced once per (set, byte), not once per trie node.
 *
 * Two caches, because a document revisits states in two ways.
 *  - The whole state: every token inside one unconstrained string leaves the same stacks.
 *  - The state cut to each stack's top CUT_DEPTH frames: the same string rule inside another
 *    property, another array item, another nesting level has different frames below, but the same
 *    top. The walk of a cut state sorts every token three ways: allowed whatever lies below (a live
 *    stack at its end, or the cut stack returned into the cut exactly at its last byte: every stack
 *    can finish, lowering saw to that), refused (no stack survives), or unsure (a stack returned
 *    into the cut and had bytes left: `",` after a string). Only the unsure ones, usually a few
 *    thousand of Llama 3's 128,256, are then tried on the whole state. Exact by construction: the
 *    cut only ever defers a decision, never makes one it cannot.
 */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "grammar/matcher_impl.h"

static uint32_t hash_words(const int32_t *w, int64_t n) {
    uint64_t h = 0xCBF29CE484222325ull ^ (uint64_t)n;
    for (int64_t k = 0; k < n; k++) h = (h ^ (uint32_t)w[k]) * 0x100000001B3ull;
    return (uint32_t)(h ^ (h >> 29));
}

/* ---- the walk's automaton ---------------------------------------------------------------- */

static int grow_dtable(runner_matcher *m) {
    const uint32_t size = m->dtable ? (m->dtable_mask + 1) * 2 : 256;
    int32_t *t = malloc((size_t)size * sizeof *t);
    if (!t) return gmatch_fail(m, RUNNER_ERR_NO_MEMORY, "mask automaton");
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

static void sort_words(int32_t *w, int32_t n) {
    for (int32_t i = 1; i < n; i++)
        for (int32_t j = i; j > 0 && w[j - 1] > w[j]; j--) {
            const int32_t x = w[j];
            w[j] = w[j - 1], w[j - 1] = x;
        }
}

/* The dstate of the set at `off` (the top of `sets`): an equal set met before is reused and this
 * copy dropped. Tops are sorted first, so equal sets compare equal word by word. */
static int32_t intern(runner_matcher *m, int64_t off) {
    const int32_t n = m->sets[off];
    sort_words(m->sets + off + 1, n);
    const uint32_t hash = hash_words(m->sets + off + 1, n);
    if ((!m->dtable || (uint32_t)(m->n_dstates + 1) * 2 > m->dtable_mask + 1) && grow_dtable(m) < 0) return NODE_ERROR;
    const int32_t *w = m->sets + off + 1;
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
        if (!d) return gmatch_fail(m, RUNNER_ERR_NO_MEMORY, "mask automaton"), NODE_ERROR;
        m->dstates = d;
        m->cap_dstates = cap;
    }
    const int32_t id = m->n_dstates++;
    dstate *d = &m->dstates[id];
    d->off = off;
    d->hash = hash;
    d->sure = d->unsure = d->loops_known = 0;
    for (int32_t k = 0; k < n; k++) {
        if (w[k] >= 0 || w[k] == COMPLETE || w[k] == ESC_NOW) d->sure = 1;
        else if (w[k] == ESC_PAST) d->unsure = 1;
    }
    for (int i = 0; i < 256; i++) d->trans[i] = -2;
    m->dtable[h] = id;
    return id;
}

static int32_t step(runner_matcher *m, int32_t from, uint8_t b) {
    const int32_t known = m->dstates[from].trans[b];
    if (known != -2) return known;
    const int64_t next = gmatch_advance(m, m->dstates[from].off, b);
    if (next < 0) return NODE_ERROR;
    const int32_t id = m->sets[next] == 0 ? (m->n_sets = next, -1) : intern(m, next);
    if (id == NODE_ERROR) return NODE_ERROR;
    m->dstates[from].trans[b] = id;
    return id;
}

/* The set at `off` copied to the top of the storage and interned (interning sorts it in place). */
static int32_t intern_copy(runner_matcher *m, int64_t off) {
    const int64_t at = m->n_sets;
    const int32_t n = m->sets[off];
    if (gmatch_push_word(m, n) < 0) return NODE_ERROR;
    for (int32_t k = 0; k < n; k++)
        if (gmatch_push_word(m, m->sets[off + 1 + k]) < 0) return NODE_ERROR;
    return intern(m, at);
}

static void forget_automaton(runner_matcher *m) {
    for (int32_t i = 0; i < m->n_dstates; i++) {
        uint32_t h = m->dstates[i].hash & m->dtable_mask;
        while (m->dtable[h] != i) h = (h + 1) & m->dtable_mask;
        m->dtable[h] = -1;
    }
    m->n_dstates = 0;
}

static int add_unsure(runner_matcher *m, int32_t id) {
    if (m->n_unsure == m->cap_unsure) {
        const int32_t cap = m->cap_unsure ? m->cap_unsure * 2 : 1024;
        int32_t *u = realloc(m->unsure, (size_t)cap * sizeof *u);
        if (!u) return gmatch_fail(m, RUNNER_ERR_NO_MEMORY, "mask walk");
        m->unsure = u;
        m->cap_unsure = cap;
    }
    m->unsure[m->n_unsure++] = id;
    return 0;
}

/* The ASCII bytes after which dstate d is d again (computed once per dstate). 0, or -1 on failure. */
static int self_loops(runner_matcher *m, int32_t d) {
    if (m->dstates[d].loops_known) return 0;
    uint64_t lo = 0, hi = 0;
    for (int b = 0; b < 128; b++) {
        const int32_t next = step(m, d, (uint8_t)b);
        if (next == NODE_ERROR) return -1;
        if (next == d) {
            if (b < 64) lo |= 1ull << b;
            else hi |= 1ull << (b - 64);
        }
    }
    dstate *ds = &m->dstates[d]; /* after the steps: the array may have moved */
    ds->loop_lo = lo, ds->loop_hi = hi, ds->loops_known = 1;
    return 0;
}

/* A subtree this large, under a byte that looped, is worth asking whether it can be taken whole. */
#define SKIP_MIN_NODES 32

/* A trie in preorder from the dstate `root`: sure tokens into bits, unsure ones into m->unsure.
 * A subtree whose bytes all lead the state back to itself is taken whole, without visiting it:
 * every token in it ends in that same state (a string body's runs of plain ASCII). */
static int walk(runner_matcher *m, int32_t root, uint32_t *bits, const tpre *p) {
    if (!m->walk_ds && !(m->walk_ds = malloc((size_t)(m->t->all.max_depth + 1) * sizeof *m->walk_ds)))
        return gmatch_fail(m, RUNNER_ERR_NO_MEMORY, "mask walk");
    int32_t *ds_at = m->walk_ds; /* the dstate of the current path at each depth */
    ds_at[0] = root;
    const int32_t n = p->n_nodes;
    for (int32_t i = 1; i < n;) {
        const int32_t d = p->depth[i];
        const int32_t next = step(m, ds_at[d - 1], p->edge[i]);
        if (next == NODE_ERROR) return -1;
        if (next < 0) {
            i = p->end[i];
            continue;
        }
        ds_at[d] = next;
        if (next == ds_at[d - 1] && p->end[i] - i >= SKIP_MIN_NODES && !p->below_high[i]) {
            if (self_loops(m, next) < 0) return -1;
            const dstate *ds = &m->dstates[next];
            if ((p->below_lo[i] & ~ds->loop_lo) == 0 && (p->below_hi[i] & ~ds->loop_hi) == 0 && (ds->sure || ds->unsure)) {
                for (int32_t k = p->first[i]; k < p->first[p->end[i]]; k++) {
                    const int32_t id = p->ids[k];
                    if (ds->sure) bits[id >> 5] |= 1u << (id & 31);
                    else if (add_unsure(m, id) < 0) return -1;
                }
                i = p->end[i];
                continue;
            }
        }
        const int32_t k0 = p->tok[i], nk = p->ntok[i];
        if (nk > 0 && m->dstates[next].sure) {
            for (int32_t k = 0; k < nk; k++) {
                const int32_t id = p->ids[k0 + k];
                bits[id >> 5] |= 1u << (id & 31);
            }
        } else if (nk > 0 && m->dstates[next].unsure) {
            for (int32_t k = 0; k < nk; k++)
                if (add_unsure(m, p->ids[k0 + k]) < 0) return -1;
        }
        i++;
    }
    return 0;
}

/* After `rem` more continuation bytes (any of 80..BF), is every path back at d0? memo: pairs known good. */
static int back_to(runner_matcher *m, int32_t d, int rem, int32_t d0, int32_t *memo, int *n_memo) {
    if (d < 0) return 0;
    if (rem == 0) return d == d0;
    for (int k = 0; k < *n_memo; k++)
        if (memo[2 * k] == d && memo[2 * k + 1] == rem) return 1;
    for (int c = 0x80; c <= 0xBF; c++)
        if (!back_to(m, step(m, d, (uint8_t)c), rem - 1, d0, memo, n_memo)) return 0;
    if (*n_memo < 64) memo[2 * *n_memo] = d, memo[2 * *n_memo + 1] = rem, (*n_memo)++;
    return 1;
}

/* Does the dstate return to itself after every plain code point (trie.h: what a JSON string body
 * takes as it is)? Then every plain token is allowed from it, and nothing else about them need be
 * asked. The check runs on the automaton: its string-body states are a handful (matcher.c forgets
 * which code point a prefix was once every completion will do), so it costs a few thousand
 * cached transitions. */
static int absorbs_plain(runner_matcher *m, int32_t d0) {
    if (!m->dstates[d0].sure) return 0;
    for (int b = 0x20; b < 0x80; b++)
        if (b != '"' && b != '\\' && step(m, d0, (uint8_t)b) != d0) return 0;
    /* Lead bytes with the second bytes that keep the code point valid (RFC 3629's table). */
    static const struct {
        uint8_t lead_lo, lead_hi, second_lo, second_hi, len;
    } LEADS[] = {{0xC2, 0xDF, 0x80, 0xBF, 2}, {0xE0, 0xE0, 0xA0, 0xBF, 3}, {0xE1, 0xEC, 0x80, 0xBF, 3}, {0xED, 0xED, 0x80, 0x9F, 3},
                 {0xEE, 0xEF, 0x80, 0xBF, 3}, {0xF0, 0xF0, 0x90, 0xBF, 4}, {0xF1, 0xF3, 0x80, 0xBF, 4}, {0xF4, 0xF4, 0x80, 0x8F, 4}};
    int32_t memo[128];
    int n_memo = 0;
    for (size_t r = 0; r < sizeof LEADS / sizeof LEADS[0]; r++)
        for (int lead = LEADS[r].lead_lo; lead <= LEADS[r].lead_hi; lead++) {
            const int32_t p = step(m, d0, (uint8_t)lead);
            if (p < 0) return 0;
            for (int c = LEADS[r].second_lo; c <= LEADS[r].second_hi; c++)
                if (!back_to(m, step(m, p, (uint8_t)c), LEADS[r].len - 2, d0, memo, &n_memo)) return 0;
        }
    return 1;
}

/* Every token from `root`: the plain ones at once when root absorbs them, then a walk of the rest. */
static int walk_from(runner_matcher *m, int32_t root, uint32_t *bits) {
    const runner_token_trie *t = m->t;
    if (absorbs_plain(m, root)) {
        const size_t n_words = (size_t)(t->n_vocab + 31) / 32;
        for (size_t w = 0; w < n_words; w++) bits[w] |= t->plain_bits[w];
        return walk(m, root, bits, &t->rest);
    }
    return m->fail == RUNNER_OK ? walk(m, root, bits, &t->all) : -1;
}

/* ---- cutting a state, and the keys of states -------------------------------------------------- */

/* The current set with its stacks cut at one level (BOTTOM below), pushed on top of the storage;
 * its offset, or -1. The level is the same for every stack, counted from the bottom, so that frames
 * the stacks share are cut alike (a string's characters and its closing quote return into the same
 * frame: cut at different heights, a state would no longer return to itself after a character). The
 * shallowest stack keeps CUT_DEPTH frames. *cut says whether anything was cut. */
static int64_t cut_state(runner_matcher *m, int *cut) {
    const int64_t at = m->n_sets;
    const int32_t n = m->sets[m->cur];
    *cut = 0;
    int32_t min_depth = INT32_MAX;
    for (int32_t k = 0; k < n; k++) {
        int32_t depth = 0;
        for (int32_t i = m->sets[m->cur + 1 + k]; i >= 0; i = m->nodes[i].parent) depth++;
        if (m->sets[m->cur + 1 + k] >= 0 && depth < min_depth) min_depth = depth;
    }
    const int32_t level = min_depth == INT32_MAX ? 0 : min_depth - CUT_DEPTH; /* nodes at depth <= level go */
    if (gmatch_push_word(m, 0) < 0) return -1;
    for (int32_t k = 0; k < n; k++) {
        int32_t top = m->sets[m->cur + 1 + k];
        int32_t depth = 0;
        for (int32_t i = top; i >= 0; i = m->nodes[i].parent) depth++;
        if (top >= 0 && level > 0) {
            /* Rebuild its top depth - level frames over BOTTOM (hash-consed, so equal cuts meet). */
            *cut = 1;
            int32_t chain[MAX_CUT_KEEP];
            const int32_t keep = depth - level;
            if (keep > MAX_CUT_KEEP) {
                m->n_sets = at, *cut = 0;
                return at; /* no cut: the caller walks the whole state */
            }
            int32_t i = top;
            for (int32_t d = 0; d < keep; d++) chain[d] = i, i = m->nodes[i].parent;
            int32_t below = BOTTOM;
            for (int32_t d = keep - 1; d >= 0; d--) {
                const gnode nd = m->nodes[chain[d]];
                below = gmatch_node(m, nd.pos, nd.count, below, nd.utf8);
                if (below == NODE_ERROR) return -1;
            }
            top = below;
        }
        int dup = 0;
        for (int64_t j = at + 1; j < m->n_sets; j++) dup |= m->sets[j] == top;
        if (!dup) {
            if (gmatch_push_word(m, top) < 0) return -1;
            m->sets[at]++;
        }
    }
    sort_words(m->sets + at + 1, m->sets[at]);
    return at;
}

/* A set's content, independent of node numbering: each stack as its (pos, count, utf8) chain to
 * the bottom, in the set's order (sorted by node index: the same state reached the same way keys
 * alike; equal states listed in other orders only miss each other). Returns the length, or -1. */
static int64_t state_key(runner_matcher *m, int64_t off, int32_t **buf, int64_t *cap) {
    const int32_t n = m->sets[off];
    int64_t len = 0;
    for (int32_t k = 0; k < n; k++) {
        for (int32_t i = m->sets[off + 1 + k];; i = m->nodes[i].parent) {
            if (len + 4 > *cap) {
                const int64_t c = *cap ? *cap * 2 : 256;
                int32_t *b = realloc(*buf, (size_t)c * sizeof *b);
                if (!b) return -1;
                *buf = b;
                *cap = c;
            }
            if (i < 0) {
                (*buf)[len++] = i; /* how this stack ends: COMPLETE, BOTTOM, or a marker */
                break;
            }
            (*buf)[len++] = m->nodes[i].pos, (*buf)[len++] = m->nodes[i].count, (*buf)[len++] = (int32_t)m->nodes[i].utf8;
        }
    }
    return len;
}

/* ---- the caches ------------------------------------------------------------------------------- */

static mask_entry *cache_find(mask_entry *c, int32_t n, uint32_t hash, const int32_t *key, int64_t n_key) {
    for (int32_t i = 0; i < n; i++)
        if (c[i].hash == hash && c[i].n_key == n_key && memcmp(c[i].key, key, (size_t)n_key * sizeof *key) == 0) return &c[i];
    return NULL;
}

/* A slot to overwrite (round-robin once full), or NULL without memory; its key and bits are set. */
static mask_entry *cache_slot(runner_matcher *m, mask_entry **c, int32_t *n, int32_t *victim, uint32_t hash, const int32_t *key, int64_t n_key,
                              const uint32_t *bits) {
    const size_t n_words = (size_t)(m->t->n_vocab + 31) / 32;
    if (n_key > INT32_MAX || (!*c && !(*c = calloc(MASK_CACHE_ENTRIES, sizeof **c)))) return NULL;
    mask_entry *e;
    if (*n < MASK_CACHE_ENTRIES) e = &(*c)[(*n)++];
    else e = &(*c)[*victim], *victim = (*victim + 1) % MASK_CACHE_ENTRIES;
    e->n_key = -1; /* unusable until filled */
    int32_t *k = realloc(e->key, (size_t)(n_key ? n_key : 1) * sizeof *k);
    if (k) e->key = k;
    if (!e->bits) e->bits = malloc(n_words * sizeof *e->bits);
    if (!k || !e->bits) return NULL;
    memcpy(e->key, key, (size_t)n_key * sizeof *key);
    memcpy(e->bits, bits, n_words * sizeof *bits);
    e->hash = hash;
    e->n_key = (int32_t)n_key;
    return e;
}

/* ---- the mask --------------------------------------------------------------------------------- */

/* Try each unsure token's bytes on the whole current state; the ones that survive join the mask. */
static int settle_unsure(runner_matcher *m, const int32_t *unsure, int32_t n_unsure, uint32_t *bits) {
    const runner_token_trie *t = m->t;
    const int32_t root = intern_copy(m, m->cur);
    if (root == NODE_ERROR) return -1;
    for (int32_t u = 0; u < n_unsure; u++) {
        const int32_t id = unsure[u];
        int32_t d = root;
        for (int64_t b = t->offsets[id]; b < t->offsets[id + 1] && d >= 0; b++) d = step(m, d, t->bytes[b]);
        if (d == NODE_ERROR) return -1;
        if (d >= 0) bits[id >> 5] |= 1u << (id & 31);
    }
    return 0;
}

runner_status runner_matcher_fill_mask(runner_matcher *m, uint32_t *allowed, int32_t *n_allowed, int32_t *only, char *err, int32_t err_len) {
    if (!m || !m->t || !allowed) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "matcher_fill_mask: no matcher, vocabulary or mask");
    gmatch_begin(m, err, err_len);
    const size_t n_words = (size_t)(m->t->n_vocab + 31) / 32;
    sort_words(m->sets + m->cur + 1, m->sets[m->cur]);
    const int64_t n_key = state_key(m, m->cur, &m->key, &m->cap_key);
    const uint32_t hash = n_key >= 0 ? hash_words(m->key, n_key) : 0;
    const mask_entry *hit = n_key >= 0 ? cache_find(m->cache, m->n_cache, hash, m->key, n_key) : NULL;
    if (hit) {
        memcpy(allowed, hit->bits, n_words * sizeof *allowed);
        if (n_allowed) *n_allowed = hit->n_allowed;
        if (only) *only = hit->only;
        return gmatch_finish(m, RUNNER_OK);
    }
    memset(allowed, 0, n_words * sizeof *allowed);
    const int32_t node_mark = m->n_nodes;
    const int64_t set_mark = m->n_sets;
    int cut = 0;
    const int64_t cut_at = cut_state(m, &cut);
    m->n_unsure = 0;
    if (cut_at < 0) {
        /* out of memory: m->fail says so */
    } else if (!cut) {
        const int32_t root = intern_copy(m, m->cur);
        if (root >= 0) walk_from(m, root, allowed);
    } else {
        const int64_t n_cut_key = state_key(m, cut_at, &m->cut_key, &m->cap_cut_key);
        const uint32_t cut_hash = n_cut_key >= 0 ? hash_words(m->cut_key, n_cut_key) : 0;
        const mask_entry *c = n_cut_key >= 0 ? cache_find(m->cut_cache, m->n_cut_cache, cut_hash, m->cut_key, n_cut_key) : NULL;
        const int32_t *unsure;
        int32_t n_unsure;
        if (c) {
            memcpy(allowed, c->bits, n_words * sizeof *allowed);
            unsure = c->unsure, n_unsure = c->n_unsure;
        } else {
            const int32_t root = intern(m, cut_at);
            if (root >= 0 && walk_from(m, root, allowed) == 0 && n_cut_key >= 0) {
                mask_entry *e = cache_slot(m, &m->cut_cache, &m->n_cut_cache, &m->next_cut_victim, cut_hash, m->cut_key, n_cut_key, allowed);
                int32_t *u = e ? realloc(e->unsure, (size_t)(m->n_unsure ? m->n_unsure : 1) * sizeof *u) : NULL;
                if (u) {
                    memcpy(u, m->unsure, (size_t)m->n_unsure * sizeof *u);
                    e->unsure = u, e->n_unsure = m->n_unsure;
                } else if (e) {
                    e->n_key = -1;
                }
            }
            forget_automaton(m);
            unsure = m->unsure, n_unsure = m->n_unsure;
        }
        if (m->fail == RUNNER_OK) settle_unsure(m, unsure, n_unsure, allowed);
    }
    forget_automaton(m);
    gmatch_rollback(m, node_mark);
    m->n_sets = set_mark;
    int32_t count = 0, last = -1;
    for (size_t w = 0; w < n_words; w++) {
        const int c = __builtin_popcount(allowed[w]);
        if (c > 0) last = (int32_t)(w * 32) + 31 - __builtin_clz(allowed[w]);
        count += c;
    }
    if (n_allowed) *n_allowed = count;
    if (only) *only = count == 1 ? last : -1;
    if (m->fail == RUNNER_OK && n_key >= 0) {
        mask_entry *e = cache_slot(m, &m->cache, &m->n_cache, &m->next_victim, hash, m->key, n_key, allowed);
        if (e) e->n_allowed = count, e->only = count == 1 ? last : -1;
    }
    return gmatch_finish(m, RUNNER_OK);
}
