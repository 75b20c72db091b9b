/* A grammar program (runner.h "constrained decoding" documents the layout): validated once, then
 * read by every matcher over it. Immutable after create, so matchers on several threads may share it. */
#ifndef RUNNER_GRAMMAR_PROGRAM_H
#define RUNNER_GRAMMAR_PROGRAM_H

#include <stdint.h>

#include "runner.h"

enum { GELEM_END = 0, GELEM_CHARS = 1, GELEM_REF = 2, GELEM_REPEAT = 3 };

struct runner_grammar {
    int32_t n_sets, n_ranges, n_rules, n_alts, n_elems, start;
    int32_t *set_start; /* [n_sets + 1] into ranges (pairs) */
    int32_t *ranges;    /* [2 * n_ranges] */
    int32_t *rule_alt;  /* [n_rules + 1] into alt_start */
    int32_t *alt_start; /* [n_alts] element index */
    int32_t *elems;     /* [4 * n_elems]: kind, a, b, c */
    uint32_t *ascii;    /* [4 * n_sets]: ASCII members of each set, a bitmap */
    int32_t *words;     /* the one allocation the pointers above point into */
};

static inline const int32_t *gprog_elem(const runner_grammar *g, int32_t pos) { return g->elems + 4 * (int64_t)pos; }

/* Does set `s` hold code point cp? */
int gprog_set_has(const runner_grammar *g, int32_t s, uint32_t cp);
/* Does set `s` hold every code point in [lo, hi]? */
int gprog_set_covers(const runner_grammar *g, int32_t s, uint32_t lo, uint32_t hi);
/* Does set `s` hold any code point in [lo, hi]? */
int gprog_set_intersects(const runner_grammar *g, int32_t s, uint32_t lo, uint32_t hi);

#endif
