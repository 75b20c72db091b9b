/*
 * sample.h: choosing the next token from a row of logits, in native code (it touches every
 * vocabulary entry on every token). One sampler per generation; not thread-safe. Every buffer is
 * allocated at create (sized by n_vocab, overflow-checked): accept and sample never allocate.
 *
 * Order of the chain (docs/sampling.md has the formulas; the order is fixed, so the same seed and
 * inputs give the same tokens on every machine):
 *   1. logit bias (added), 2. repeat / presence / frequency penalties over the last
 *   `penalty_last_n` accepted tokens (exempt tokens untouched), then every logit that is not finite
 *   (NaN, +inf, -inf) is excluded: it is never chosen and has probability 0.
 *   3. if temperature == 0: greedy argmax (ties: lowest id), else 4. top-k, 5. top-p, 6. min-p,
 *   7. temperature, 8. softmax over the survivors in double and one draw from the generator
 *   (rng.h): the first survivor, in ascending id order, where the running sum of weights exceeds
 *   u * (sum of all survivor weights).
 * Steps 4-6 each keep a prefix of the survivors ranked by (logit desc, id asc), so ties at a cut
 * keep the lower ids. top-p and min-p use probabilities before temperature, as llama.cpp's default
 * chain (top-k, top-p, min-p, then temperature) does.
 * Reported log-probabilities (on request) are log-softmax over the whole vocabulary of the logits
 * after steps 1-2 (before truncation and temperature): what the model assigned, as OpenAI's
 * `logprobs` means. Excluded tokens have logprob -inf and never appear in the top list.
 */
#ifndef RUNNER_SAMPLE_H
#define RUNNER_SAMPLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUNNER_MAX_TOP_LOGPROBS 20
/* Upper bound of penalty_last_n: the window is a ring of int32 allocated at create. */
#define RUNNER_MAX_PENALTY_LAST_N (1 << 24)

/* Return values of runner_sampler_sample besides a token id. */
#define RUNNER_SAMPLE_NONE (-1)    /* every logit excluded (banned or not finite) */
#define RUNNER_SAMPLE_INVALID (-2) /* s or logits is NULL */

typedef struct runner_sampler_params {
    float temperature;        /* finite, >= 0; 0: greedy */
    int32_t top_k;            /* >= 0; 0: off */
    float top_p;              /* (0, 1]; 1: off */
    float min_p;              /* [0, 1]; 0: off */
    float repeat_penalty;     /* finite, > 0; 1: off (llama.cpp's rule: positive logits divided, others multiplied) */
    float presence_penalty;   /* finite; 0: off */
    float frequency_penalty;  /* finite; 0: off */
    int32_t penalty_last_n;   /* 0..RUNNER_MAX_PENALTY_LAST_N accepted tokens the penalties look at; 0: off */
    uint64_t seed;            /* every value is valid, 0 included */
    int32_t logprobs;         /* nonzero: fill out->logprob and the top list (costs one exp per vocab entry) */
    int32_t n_top_logprobs;   /* 0..RUNNER_MAX_TOP_LOGPROBS; > 0 needs logprobs */
    const int32_t *bias_tokens; /* n_bias distinct token ids in [0, n_vocab) ... */
    const float *bias_values;   /* ... and what to add to their logits: finite, or -INFINITY (bans) */
    int32_t n_bias;
    const int32_t *exempt_tokens; /* tokens penalties never touch (end-of-generation), in [0, n_vocab) */
    int32_t n_exempt;
} runner_sampler_params;

typedef struct runner_sample_result {
    int32_t token;                                   /* as returned */
    float logprob;                                   /* of `token` (see above); NaN unless params.logprobs */
    int32_t n_top;                                   /* entries filled below, sorted by logprob desc, ties by id */
    int32_t top_tokens[RUNNER_MAX_TOP_LOGPROBS];
    float top_logprobs[RUNNER_MAX_TOP_LOGPROBS];
} runner_sample_result;

typedef struct runner_sampler runner_sampler;

/* Copies what it needs from params (arrays included). NULL on bad params or allocation failure;
 * `err` (if not NULL and err_len > 0) then holds a NUL-terminated message naming the parameter
 * and its value. */
runner_sampler *runner_sampler_create(const runner_sampler_params *params, int32_t n_vocab, char *err, int32_t err_len);
void runner_sampler_free(runner_sampler *s);

int32_t runner_sampler_n_vocab(const runner_sampler *s);

/* Record a token in the penalty history (prompt tokens and generated ones). Returns 0, or -1 when
 * s is NULL or token is outside [0, n_vocab) (the history is then unchanged). */
int runner_sampler_accept(runner_sampler *s, int32_t token);

/* Pick a token from logits[0..n_vocab) (not modified). Returns the token, RUNNER_SAMPLE_NONE if
 * every logit is excluded, RUNNER_SAMPLE_INVALID if s or logits is NULL; out (may be NULL) gets
 * the same token. Does not record the token: call runner_sampler_accept with it. With
 * temperature > 0 every call that returns a token consumes exactly one draw of the generator;
 * greedy consumes none. */
int32_t runner_sampler_sample(runner_sampler *s, const float *logits, runner_sample_result *out);

#ifdef __cplusplus
}
#endif

#endif /* RUNNER_SAMPLE_H */
