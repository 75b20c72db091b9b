/* A vocabulary's tokens as a byte trie: the matcher walks it once per mask, so a byte prefix shared
 * by many tokens is advanced once. Immutable after create (shareable across threads). */
#ifndef RUNNER_GRAMMAR_TRIE_H
#define RUNNER_GRAMMAR_TRIE_H

#include <stdint.h>

#include "runner.h"

typedef struct tnode {
    int32_t first_child; /* children are contiguous: [first_child, first_child + n_children) */
    int32_t n_children;
    int32_t tok_start;   /* tokens whose bytes end here: tok_ids[tok_start .. tok_start + n_tok) */
    int32_t n_tok;
} tnode;

struct runner_token_trie {
    int32_t n_vocab;
    int32_t n_nodes;
    tnode *nodes;     /* node 0 is the root (the empty prefix) */
    uint8_t *edge;    /* [n_nodes]: the byte leading into each node */
    int32_t *tok_ids; /* grouped by node */
    /* The same trie in depth-first preorder, for the mask walk: a flat loop that skips a dead
     * subtree in one step. Entry 0 is the root; pre_end[i] is the index just past i's subtree. */
    uint8_t *pre_edge;
    uint16_t *pre_depth;  /* bytes of the prefix (tokens are far shorter than 65535 bytes) */
    int32_t *pre_end;
    int32_t *pre_tok;     /* tokens ending here: tok_ids[pre_tok[i] .. pre_tok[i] + pre_ntok[i]) */
    int32_t *pre_ntok;
    int32_t max_depth;
    uint8_t *bytes;   /* every token's bytes, for accept */
    int64_t *offsets; /* [n_vocab + 1] */
};

#endif
