/* The matcher's state, shared by its two files: matcher.c (stacks, closure, accept) and mask.c
 * (masks over the token trie). Not part of the engine's API (runner.h has that). */
#ifndef RUNNER_GRAMMAR_MATCHER_IMPL_H
#define RUNNER_GRAMMAR_MATCHER_IMPL_H

#include <stdint.h>

#include "grammar/program.h"
#include "grammar/trie.h"
#include "runner.h"

#define COMPLETE (-1)
/* node_get's failure. */
#define NODE_ERROR (-2)
/* The bottom of a stack cut to its top frames for a mask (what lies below is not looked at). */
#define BOTTOM (-3)
/* Tops of a cut state's set: a stack returned into BOTTOM at the last byte (ESC_NOW: the token is
 * allowed whatever lies below, since every stack can finish), or before it (ESC_PAST: it depends). */
#define ESC_NOW (-5)
#define ESC_PAST (-6)
/* Frames a mask looks at before it consults the rest of each stack (see fill_mask). */
#define CUT_DEPTH 2
/* A cut that would keep more frames of some stack than this is not made (the mask walks the whole state). */
#define MAX_CUT_KEEP 64
#define MAX_NODES (1 << 26)
/* A set with more stacks than this is refused: an ambiguity the grammar should not have. */
#define MAX_STACKS (1 << 16)
#define MAX_CLOSE_DEPTH 4096
/* Closure steps one byte may take (guards against grammars whose closures explode). */
#define MAX_CLOSE_STEPS (1 << 22)

/* gnode.utf8: (rem << 29) | (len << 26) | value, or with UTF8_ANY for value: any completion will do. */
#define UTF8_ANY (1u << 25)
#define UTF8_VALUE (UTF8_ANY - 1u)

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
    /* Masks already computed (mask.c): by the whole state, and by the state cut to its stacks' top
     * CUT_DEPTH frames. Each replaced round-robin. */
    struct mask_entry *cache;
    int32_t n_cache, next_victim;
    struct mask_entry *cut_cache;
    int32_t n_cut_cache, next_cut_victim;
    int32_t *key, *cut_key; /* scratch: the state's content, and the cut state's */
    int64_t cap_key, cap_cut_key;
    int32_t *unsure; /* scratch: tokens a cut state's walk could not decide */
    int32_t n_unsure, cap_unsure;
    int32_t *walk_ds; /* [trie max depth + 1]: the mask walk's path */
    runner_status fail;
    char *err;
    int32_t err_len;
};

typedef struct dstate {
    int64_t off;         /* the set's words in `sets` */
    uint32_t hash;
    uint8_t sure;        /* a token ending here is allowed: a live stack, COMPLETE or ESC_NOW */
    uint8_t unsure;      /* else, ESC_PAST: it depends on the frames below the cut */
    uint8_t loops_known; /* loop_lo/hi computed */
    uint64_t loop_lo, loop_hi; /* ASCII bytes that lead back to this very state */
    int32_t trans[256]; /* -2 not computed yet, -1 dead, else the dstate after that byte */
} dstate;

#define MASK_CACHE_ENTRIES 64

typedef struct mask_entry {
    uint32_t hash;
    int32_t n_key;
    int32_t *key;
    uint32_t *bits;      /* whole state: the mask; cut state: the tokens allowed whatever lies below */
    int32_t n_allowed, only;
    int32_t *unsure;     /* cut state: the tokens to try on the whole state */
    int32_t n_unsure;
} mask_entry;


/* matcher.c, for mask.c */
int gmatch_fail(runner_matcher *m, runner_status st, const char *msg);
int32_t gmatch_node(runner_matcher *m, int32_t pos, int32_t count, int32_t parent, uint32_t utf8);
void gmatch_rollback(runner_matcher *m, int32_t mark);
int gmatch_push_word(runner_matcher *m, int32_t w);
/* Advance the set at `from` by one byte into a new set pushed on top; its offset, or -1 on failure. */
int64_t gmatch_advance(runner_matcher *m, int64_t from, uint8_t b);
void gmatch_begin(runner_matcher *m, char *err, int32_t err_len);
runner_status gmatch_finish(runner_matcher *m, runner_status st);

#endif
