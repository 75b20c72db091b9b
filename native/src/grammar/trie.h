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
    uint8_t *bytes;   /* every token's bytes, for accept */
    int64_t *offsets; /* [n_vocab + 1] */
};

#endif
