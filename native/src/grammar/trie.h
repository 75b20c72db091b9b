/* A vocabulary's tokens as byte tries: the matcher walks one per mask, so a byte prefix shared by
 * many tokens is advanced once. Immutable after create (shareable across threads). */
#ifndef RUNNER_GRAMMAR_TRIE_H
#define RUNNER_GRAMMAR_TRIE_H

#include <stdint.h>

#include "runner.h"

/* A trie in depth-first preorder: node 0 is the root (the empty prefix); a node's subtree is
 * [i, end[i]); tokens whose bytes end at node i are ids[tok[i] .. tok[i] + ntok[i]). */
typedef struct tpre {
    int32_t n_nodes, max_depth;
    uint8_t *edge;   /* the byte leading into each node */
    uint16_t *depth; /* bytes of the node's prefix (tokens are far shorter than 65535 bytes) */
    int32_t *end;
    int32_t *tok, *ntok;
    int32_t *ids;
    /* The subtree below node i: ASCII bytes on its edges (a 128-bit set), any byte >= 0x80 there,
     * and its tokens, ids[first[i] .. first[end[i]]) (first has n_nodes + 1 entries). */
    uint64_t *below_lo, *below_hi;
    uint8_t *below_high;
    int32_t *first;
} tpre;

struct runner_token_trie {
    int32_t n_vocab;
    tpre all;
    /* Plain string text: tokens whose bytes are whole, valid UTF-8 code points none of which is a
     * control character, `"` or `\` (what a JSON string body takes as it is); `rest` is the trie of
     * every other token with bytes. A state that returns to itself after any plain code point allows
     * every plain token at once, and only `rest` needs walking (mask.c). */
    uint32_t *plain_bits; /* [(n_vocab + 31) / 32] */
    tpre rest;
    uint8_t *bytes;   /* every token's bytes, for accept */
    int64_t *offsets; /* [n_vocab + 1] */
};

#endif
