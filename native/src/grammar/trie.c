/* Building the token tries: the tokens sorted by their bytes, then one pass that opens a node per
 * byte not shared with the previous token and closes the subtrees it leaves (preorder falls out).
 * Tokens with no bytes (control tokens) are in no trie: no grammar can allow them. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "grammar/trie.h"

typedef struct sort_ctx {
    const uint8_t *bytes;
    const int64_t *off;
} sort_ctx;

static int cmp_tokens(const int32_t a, const int32_t b, const sort_ctx *c) {
    const int64_t la = c->off[a + 1] - c->off[a], lb = c->off[b + 1] - c->off[b];
    const int64_t n = la < lb ? la : lb;
    const int r = memcmp(c->bytes + c->off[a], c->bytes + c->off[b], (size_t)n);
    if (r != 0) return r;
    if (la != lb) return la < lb ? -1 : 1;
    return a < b ? -1 : (a > b);
}

/* qsort has no context argument in C11: a merge sort with one. */
static void merge_sort(int32_t *v, int32_t *tmp, int32_t n, const sort_ctx *c) {
    if (n < 2) return;
    const int32_t h = n / 2;
    merge_sort(v, tmp, h, c);
    merge_sort(v + h, tmp, n - h, c);
    int32_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = cmp_tokens(v[i], v[j], c) <= 0 ? v[i++] : v[j++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

static void tpre_free(tpre *p) {
    free(p->edge), free(p->depth), free(p->end), free(p->tok), free(p->ntok), free(p->ids);
    free(p->below_lo), free(p->below_hi), free(p->below_high), free(p->first);
    memset(p, 0, sizeof *p);
}

/* The preorder trie of `order[0..n)` (token ids sorted by bytes, all non-empty). 0, or -1 without
 * memory, or -2 for a token over 65535 bytes. */
static int tpre_build(tpre *p, const uint8_t *bytes, const int64_t *off, const int32_t *order, int32_t n, int64_t total) {
    const int64_t cap = total + 1;
    if (cap > INT32_MAX) return -1;
    p->edge = malloc((size_t)cap);
    p->depth = malloc((size_t)cap * sizeof *p->depth);
    p->end = malloc((size_t)cap * sizeof *p->end);
    p->tok = calloc((size_t)cap, sizeof *p->tok);
    p->ntok = calloc((size_t)cap, sizeof *p->ntok);
    p->ids = malloc((size_t)(n ? n : 1) * sizeof *p->ids);
    p->below_lo = calloc((size_t)cap, sizeof *p->below_lo);
    p->below_hi = calloc((size_t)cap, sizeof *p->below_hi);
    p->below_high = calloc((size_t)cap, 1);
    p->first = malloc((size_t)(cap + 1) * sizeof *p->first);
    int32_t *path = malloc((size_t)65537 * sizeof *path); /* node of the current path at each depth */
    int32_t *parent = malloc((size_t)cap * sizeof *parent);
    if (!p->edge || !p->depth || !p->end || !p->tok || !p->ntok || !p->ids || !p->below_lo || !p->below_hi || !p->below_high || !p->first || !path ||
        !parent) {
        free(path), free(parent);
        return -1;
    }
    int32_t nodes = 1, n_ids = 0, depth = 0;
    p->edge[0] = 0, p->depth[0] = 0, path[0] = 0;
    p->max_depth = 0;
    const uint8_t *prev = NULL;
    for (int32_t t = 0; t < n; t++) {
        const int32_t id = order[t];
        const uint8_t *b = bytes + off[id];
        const int64_t len = off[id + 1] - off[id];
        if (len > 65535) {
            free(path), free(parent);
            return -2;
        }
        /* The current path spells prev[0 .. depth): keep what this token shares with it. */
        int32_t k = 0;
        while (k < depth && k < len && prev[k] == b[k]) k++;
        for (int32_t d = depth; d > k; d--) p->end[path[d]] = nodes;
        for (int32_t d = k + 1; d <= len; d++) {
            const int32_t i = nodes++;
            p->edge[i] = b[d - 1], p->depth[i] = (uint16_t)d;
            p->first[i] = n_ids; /* this subtree's tokens all come after this point (sorted order) */
            parent[i] = path[d - 1];
            path[d] = i;
        }
        depth = (int32_t)len;
        if (depth > p->max_depth) p->max_depth = depth;
        const int32_t at = path[depth];
        if (p->ntok[at] == 0) p->tok[at] = n_ids; /* equal byte strings sort together: one run */
        p->ids[n_ids++] = id;
        p->ntok[at]++;
        prev = b;
    }
    for (int32_t d = depth; d >= 0; d--) p->end[path[d]] = nodes;
    p->n_nodes = nodes;
    p->first[0] = 0;
    p->first[nodes] = n_ids;
    /* Children come after their parent in preorder: one backward pass gathers the bytes below. */
    for (int32_t i = nodes - 1; i >= 1; i--) {
        const int32_t q = parent[i];
        const uint8_t e = p->edge[i];
        p->below_lo[q] |= p->below_lo[i], p->below_hi[q] |= p->below_hi[i], p->below_high[q] |= p->below_high[i];
        if (e >= 0x80) p->below_high[q] = 1;
        else if (e < 64) p->below_lo[q] |= 1ull << e;
        else p->below_hi[q] |= 1ull << (e - 64);
    }
    free(path), free(parent);
    return 0;
}

/* Whole, valid UTF-8 code points, none of them a control character, `"` or `\`. */
static int plain_text(const uint8_t *b, int64_t n) {
    if (n == 0) return 0;
    for (int64_t i = 0; i < n;) {
        const uint8_t c = b[i];
        if (c < 0x80) {
            if (c < 0x20 || c == '"' || c == '\\') return 0;
            i++;
            continue;
        }
        int len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1Fu;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0Fu;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07u;
        else return 0;
        if (i + len > n) return 0;
        for (int k = 1; k < len; k++) {
            if ((b[i + k] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (b[i + k] & 0x3Fu);
        }
        static const uint32_t min_for_len[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_for_len[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += len;
    }
    return 1;
}

void runner_token_trie_free(runner_token_trie *t) {
    if (!t) return;
    tpre_free(&t->all), tpre_free(&t->rest);
    free(t->plain_bits), free(t->bytes), free(t->offsets);
    free(t);
}

runner_status runner_token_trie_create(const uint8_t *bytes, const int64_t *offsets, int32_t n_vocab, runner_token_trie **out, char *err,
                                       int32_t err_len) {
    if (!out) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "token_trie_create: out is NULL");
    *out = NULL;
    if (!offsets || n_vocab < 1 || offsets[0] != 0) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "token_trie_create: offsets must start at 0");
    for (int32_t i = 0; i < n_vocab; i++)
        if (offsets[i + 1] < offsets[i]) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "token_trie_create: offsets[%d] decreases", i + 1);
    const int64_t total = offsets[n_vocab];
    if (total > 0 && !bytes) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "token_trie_create: bytes is NULL");

    runner_token_trie *t = calloc(1, sizeof *t);
    int32_t *order = malloc((size_t)n_vocab * sizeof *order), *tmp = malloc((size_t)n_vocab * sizeof *tmp);
    if (t) {
        t->bytes = malloc((size_t)total + 1);
        t->offsets = malloc((size_t)(n_vocab + 1) * sizeof *t->offsets);
        t->plain_bits = calloc((size_t)(n_vocab + 31) / 32, sizeof *t->plain_bits);
    }
    if (!t || !order || !tmp || !t->bytes || !t->offsets || !t->plain_bits) {
        free(order), free(tmp), runner_token_trie_free(t);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "token_trie_create: %d tokens, %lld bytes", n_vocab, (long long)total);
    }
    t->n_vocab = n_vocab;
    if (total > 0) memcpy(t->bytes, bytes, (size_t)total);
    memcpy(t->offsets, offsets, (size_t)(n_vocab + 1) * sizeof *offsets);
    const sort_ctx c = {t->bytes, t->offsets};
    int32_t n = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if (offsets[i + 1] > offsets[i]) order[n++] = i;
    merge_sort(order, tmp, n, &c);
    int st = tpre_build(&t->all, t->bytes, t->offsets, order, n, total);
    /* The rest: the sorted order without the plain tokens (still sorted). */
    int32_t n_rest = 0;
    int64_t rest_bytes = 0;
    for (int32_t k = 0; st == 0 && k < n; k++) {
        const int32_t id = order[k];
        if (plain_text(t->bytes + offsets[id], offsets[id + 1] - offsets[id])) t->plain_bits[id >> 5] |= 1u << (id & 31);
        else tmp[n_rest++] = id, rest_bytes += offsets[id + 1] - offsets[id];
    }
    if (st == 0) st = tpre_build(&t->rest, t->bytes, t->offsets, tmp, n_rest, rest_bytes);
    free(order), free(tmp);
    if (st != 0) {
        runner_token_trie_free(t);
        return st == -2 ? runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "token_trie_create: a token longer than 65535 bytes")
                        : runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "token_trie_create: the tries");
    }
    *out = t;
    return RUNNER_OK;
}
