/* Draft sources of speculative decoding (model/draft.c): what runner_generate asks for proposals. */
#ifndef RUNNER_MODEL_DRAFT_H
#define RUNNER_MODEL_DRAFT_H

#include <stdint.h>

#include "runner.h"

/*
 * Up to `max` tokens that may follow seq[0..n_seq) (every token of the sequence, the last one not
 * yet evaluated by the target) into out[]; returns how many (0: no proposal). Ids are below
 * n_vocab_target. A draft model's own evaluation happens here, on its context and pool.
 */
runner_status runner_draft_propose(runner_draft *d, const int32_t *seq, int32_t n_seq, int32_t max, int32_t n_vocab_target,
                                   int32_t *out, int32_t *n_out, const volatile int32_t *abort_flag, char *err, int32_t err_len);

/* The context the draft evaluates on (NULL for lookup), so the generation can let its pool rest. */
runner_context *runner_draft_context(const runner_draft *d);
int32_t runner_draft_n_max(const runner_draft *d);

/* MTP: whether the draft must see the target's hidden rows (runner_draft_observe after every target
 * evaluation of the generation, each at most one forward step of the target). */
int runner_draft_needs_hidden(const runner_draft *d);

/* Refuses a draft that cannot draft for this target context (MTP: another model, too short a context). */
runner_status runner_draft_check_target(const runner_draft *d, const runner_context *target, char *err, int32_t err_len);

/* The target just evaluated seq[pos, pos + n) in one forward step (its scratch holds their hidden
 * rows): MTP feeds its head the pairs whose next token seq has. Other kinds: nothing. */
runner_status runner_draft_observe(runner_draft *d, const runner_context *target, const int32_t *seq, int32_t n_seq, int32_t pos, int32_t n,
                                   const volatile int32_t *abort_flag, char *err, int32_t err_len);

/*
 * The target's cache dropped positions [keep, keep + discard) and re-roped the rest (a context shift):
 * the draft's own cache does the same, so it keeps mirroring the target's state (a fresh evaluation of
 * the shortened sequence would not: the target's kept keys were computed beside the dropped span).
 * Where its cache cannot shift, it forgets everything after keep and catches up by evaluating.
 */
void runner_draft_shift(runner_draft *d, int32_t keep, int32_t discard);

#endif
