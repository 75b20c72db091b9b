/*
 * nl.h: IQ4_NL and MXFP4 (nl.c, nl_avx2.c, nl_avx512.c): layouts, tables, kernel declarations.
 */
#ifndef RUNNER_NL_H
#define RUNNER_NL_H

#include "quant/quant_impl.h"

#define IQ4_NL_BYTES 18
#define IQ4_NL_QS 2
#define MXFP4_BYTES 17
#define MXFP4_QS 1

extern const int8_t runner_kvalues_iq4nl[16];
extern const int8_t runner_kvalues_mxfp4[16];

/* ggml_e8m0_to_fp32_half: 2^(e - 128) (e 0 and 1 give the subnormals 2^-128 and 2^-127). */
static inline float runner_e8m0_half(uint8_t e) {
    const uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    return f32_from_bits(bits);
}

RUNNER_DECLARE_TO_FLOAT(runner_to_float_iq4_nl);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_iq4_nl);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_iq4_nl_q8_0_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_iq4_nl_q8_0_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_iq4_nl_q8_0_avx512);

RUNNER_DECLARE_TO_FLOAT(runner_to_float_mxfp4);
RUNNER_DECLARE_FROM_FLOAT(runner_quantize_ref_mxfp4);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_mxfp4_q8_0_scalar);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_mxfp4_q8_0_avx2);
RUNNER_DECLARE_VEC_DOT(runner_vec_dot_mxfp4_q8_0_avx512);

#endif /* RUNNER_NL_H */
