/*
 * sample.h: choosing the next token from a row of logits, in native code (it touches every
 * vocabulary entry on every token). One sampler per generation; not thread-safe.
 *
 * Order of the chain (documented in docs/sampling.md and fixed: the same seed and inputs give the
 * same tokens on every machine):
 *   1. logit bias (added), 2. repeat / presence / frequency penalties over the last
 *   `penalty_last_n` accepted tokens (end-of-generation tokens exempt), 3. if temperature <= 0:
 *   greedy argmax (ties: lowest id), else 4. top-k, 5. top-p, 6. min-p, 7. temperature,
 *   8. softmax and one draw from the generator.
 * Reported log-probabilities are log-softmax over the whole vocabulary of the logits after steps 1-2
 * (before truncation and temperature): what the model assigned, as OpenAI's `logprobs` means.
 */
#ifndef RUNNER_SAMPLE_H
#define RUNNER_SAMPLE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RUNNER_MAX_TOP_LOGPROBS 20

typedef struct runner_sampler_params {
    float temperature;        /* <= 0: greedy */
    int32_t top_k;            /* <= 0: off */
    float top_p;              /* >= 1: off */
    float min_p;              /* <= 0: off */
    float repeat_penalty;     /* 1: off (llama.cpp's rule: positive logits divided, negative multiplied) */
    float presence_penalty;   /* 0: off */
    float frequency_penalty;  /* 0: off */
    int32_t penalty_last_n;   /* window of accepted tokens the penalties look at; 0: off */
    uint64_t seed;            /* every value is valid, 0 included */
    int32_t n_top_logprobs;   /* 0..RUNNER_MAX_TOP_LOGPROBS */
    const int32_t *bias_tokens; /* n_bias token ids ... */
    const float *bias_values;   /* ... and what to add to their logits (-INFINITY bans) */
    int32_t n_bias;
    const int32_t *exempt_tokens; /* tokens penalties never touch (end-of-generation) */
    int32_t n_exempt;
} runner_sampler_params;

typedef struct runner_sample_result {
    int32_t token;
    float logprob;                                   /* of `token`, see above */
    int32_t n_top;                                   /* entries filled below, sorted by logprob desc, ties by id */
    int32_t top_tokens[RUNNER_MAX_TOP_LOGPROBS];
    float top_logprobs[RUNNER_MAX_TOP_LOGPROBS];
} runner_sample_result;

typedef struct runner_sampler runner_sampler;

/* Copies what it needs from params (arrays included). NULL on bad params or allocation failure;
 * `err` (if not NULL) then names the parameter and value. */
runner_sampler *runner_sampler_create(const runner_sampler_params *params, int32_t n_vocab, char *err, int32_t err_len);
void runner_sampler_free(runner_sampler *s);

/* Record a token in the penalty history (prompt tokens and generated ones). */
void runner_sampler_accept(runner_sampler *s, int32_t token);

/* Pick a token from logits[0..n_vocab) (not modified). Returns the token, or -1 if every logit is
 * banned / not finite (out->token is then -1 too). */
int32_t runner_sampler_sample(runner_sampler *s, const float *logits, runner_sample_result *out);

#ifdef __cplusplus
}
#endif

#endif /* RUNNER_SAMPLE_H */
