/* Building the token trie: tokens sorted by their bytes, then one pass that opens a node per new
 * byte of each token, breadth-first so that every node's children are contiguous. Tokens with no
 * bytes (control tokens) are not in the trie: no grammar can allow them. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "grammar/trie.h"

typedef struct sort_ctx {
    const uint8_t *bytes;
    const int64_t *off;
} sort_ctx;
/* qsort has no context argument in C11: a merge sort with one. */

static int cmp_tokens(const int32_t a, const int32_t b, const sort_ctx *c) {
    const int64_t la = c->off[a + 1] - c->off[a], lb = c->off[b + 1] - c->off[b];
    const int64_t n = la < lb ? la : lb;
    const int r = memcmp(c->bytes + c->off[a], c->bytes + c->off[b], (size_t)n);
    if (r != 0) return r;
    if (la != lb) return la < lb ? -1 : 1;
    return a < b ? -1 : (a > b);
}

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

void runner_token_trie_free(runner_token_trie *t) {
    if (!t) return;
    free(t->nodes), free(t->edge), free(t->tok_ids), free(t->bytes), free(t->offsets);
    free(t->pre_edge), free(t->pre_depth), free(t->pre_end), free(t->pre_tok), free(t->pre_ntok);
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
    /* At most one node per byte, plus the root. */
    const int64_t max_nodes = total + 1;
    if (t) {
        t->nodes = calloc((size_t)max_nodes, sizeof *t->nodes);
        t->edge = calloc((size_t)max_nodes, 1);
        t->tok_ids = malloc((size_t)n_vocab * sizeof *t->tok_ids);
        t->bytes = malloc((size_t)total + 1);
        t->offsets = malloc((size_t)(n_vocab + 1) * sizeof *t->offsets);
    }
    if (!t || !order || !tmp || !t->nodes || !t->edge || !t->tok_ids || !t->bytes || !t->offsets || max_nodes > INT32_MAX) {
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

    /* Breadth-first over depth d: the tokens sorted by bytes make every node a contiguous run
     * [lo, hi) of `order` sharing a d-byte prefix; its children split the run by byte d. */
    typedef struct run {
        int32_t lo, hi, node;
    } run;
    run *queue = malloc((size_t)max_nodes * sizeof *queue);
    int32_t *depth = malloc((size_t)max_nodes * sizeof *depth); /* prefix length of each node (kept for the preorder) */
    if (!queue || !depth) {
        free(queue), free(depth), free(order), free(tmp), runner_token_trie_free(t);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "token_trie_create: queue");
    }
    int32_t head = 0, tail = 0, n_nodes = 1, n_tok = 0;
    queue[tail++] = (run){0, n, 0};
    depth[0] = 0;
    while (head < tail) {
        const run r = queue[head++];
        const int32_t d = depth[r.node];
        int32_t i = r.lo;
        /* Tokens of exactly d bytes end at this node (they sort first in the run). */
        t->nodes[r.node].tok_start = n_tok;
        while (i < r.hi && offsets[order[i] + 1] - offsets[order[i]] == d) t->tok_ids[n_tok++] = order[i++];
        t->nodes[r.node].n_tok = n_tok - t->nodes[r.node].tok_start;
        t->nodes[r.node].first_child = n_nodes;
        while (i < r.hi) {
            const uint8_t b = t->bytes[offsets[order[i]] + d];
            int32_t j = i + 1;
            while (j < r.hi && t->bytes[offsets[order[j]] + d] == b) j++;
            const int32_t child = n_nodes++;
            t->edge[child] = b;
            depth[child] = d + 1;
            queue[tail++] = (run){i, j, child};
            i = j;
        }
        t->nodes[r.node].n_children = n_nodes - t->nodes[r.node].first_child;
    }
    free(queue), free(order), free(tmp);
    t->n_nodes = n_nodes;
    /* Preorder: an explicit stack of (node, next child) from the root. */
    t->pre_edge = malloc((size_t)n_nodes);
    t->pre_depth = malloc((size_t)n_nodes * sizeof *t->pre_depth);
    t->pre_end = malloc((size_t)n_nodes * sizeof *t->pre_end);
    t->pre_tok = malloc((size_t)n_nodes * sizeof *t->pre_tok);
    t->pre_ntok = malloc((size_t)n_nodes * sizeof *t->pre_ntok);
    int32_t *stack = malloc((size_t)n_nodes * sizeof *stack), *at = malloc((size_t)n_nodes * sizeof *at);
    if (!t->pre_edge || !t->pre_depth || !t->pre_end || !t->pre_tok || !t->pre_ntok || !stack || !at) {
        free(stack), free(at), free(depth), runner_token_trie_free(t);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "token_trie_create: preorder");
    }
    int32_t sp = 0, next = 0;
    t->max_depth = 0;
    stack[sp++] = 0;
    while (sp > 0) {
        const int32_t node = stack[sp - 1];
        if (node >= 0) {
            /* First visit: emit it, then its children in byte order. */
            const int32_t i = next++;
            at[node] = i;
            t->pre_edge[i] = t->edge[node];
            if (depth[node] > 65535) {
                free(stack), free(at), free(depth), runner_token_trie_free(t);
                return runner_fail(err, err_len, RUNNER_ERR_UNSUPPORTED, "token_trie_create: a token longer than 65535 bytes");
            }
            t->pre_depth[i] = (uint16_t)depth[node];
            if (depth[node] > t->max_depth) t->max_depth = depth[node];
            t->pre_tok[i] = t->nodes[node].tok_start;
            t->pre_ntok[i] = t->nodes[node].n_tok;
            stack[sp - 1] = -1 - node; /* visited: its end is set when it comes up again */
            const tnode *tn = &t->nodes[node];
            for (int32_t c = tn->first_child + tn->n_children - 1; c >= tn->first_child; c--) stack[sp++] = c;
        } else {
            t->pre_end[at[-1 - node]] = next;
            sp--;
        }
    }
    free(stack), free(at), free(depth);
    *out = t;
    return RUNNER_OK;
}
