/*
 * k_parts256.h: the 256-bit integer halves of the Q4_K, Q5_K and Q3_K dots, shared by k_avx2.c
 * (KACC = VPMADDWD then VPADDD) and k_avx512.c (KACC = VPDPWSSD, AVX-512 VNNI on ymm: measured
 * faster on Zen 4 than the zmm forms for these three types, whose zmm versions spend more on
 * shifts and VPERMW than they save). Include after defining KACC(acc, p16, scale16) and K256(name).
 * Each *_part sets *pi (and *pm) to int32 lanes whose sums are the super-block's isum (and msum).
 */
/* int16 lanes 0-7 = scale j of src, lanes 8-15 = scale j + 1 (src holds 8 int16 scales in both halves). */
static ALWAYS_INLINE __m256i K256(pair16)(__m256i src, int j) {
    const __m128i lo = _mm_set1_epi16((short)(((2 * j + 1) << 8) | (2 * j)));
    const __m128i hi = _mm_set1_epi16((short)(((2 * j + 3) << 8) | (2 * j + 2)));
    return _mm256_shuffle_epi8(src, _mm256_set_m128i(hi, lo));
}

/* int16 scale j in every lane, from the scales as int16 in both 128-bit halves. */
static ALWAYS_INLINE __m256i K256(bcast16)(__m256i sc16, int j) {
    const __m256i idx = _mm256_set1_epi16((short)(((2 * j + 1) << 8) | (2 * j)));
    return _mm256_shuffle_epi8(sc16, idx);
}

static ALWAYS_INLINE void K256(q4k_part)(const uint8_t *xb, const uint8_t *yb, __m256i *pi, __m256i *pm) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m128i sm = k4_unpack(xb + Q4_K_SCALES);
    *pm = k4_mvec(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), yb);
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    __m256i a = _mm256_setzero_si256(), a1 = _mm256_setzero_si256(); /* two chains: VPDPWSSD latency */
    for (int c = 0; c < 4; c++) {
        const __m256i q = ld256(xb + Q4_K_QS + 32 * c);
        const __m256i lo = _mm256_and_si256(q, m4), hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), m4);
        const __m256i plo = _mm256_maddubs_epi16(lo, ld256(yb + Q8_K_QS + 64 * c));
        const __m256i phi = _mm256_maddubs_epi16(hi, ld256(yb + Q8_K_QS + 64 * c + 32));
        a = KACC(a, plo, K256(bcast16)(sc16, 2 * c));
        a1 = KACC(a1, phi, K256(bcast16)(sc16, 2 * c + 1));
    }
    *pi = _mm256_add_epi32(a, a1);
}

static ALWAYS_INLINE void K256(q5k_part)(const uint8_t *xb, const uint8_t *yb, __m256i *pi, __m256i *pm) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m1 = _mm256_set1_epi8(1);
    const __m128i sm = k4_unpack(xb + Q5_K_SCALES);
    *pm = k4_mvec(_mm_cvtepu8_epi16(_mm_srli_si128(sm, 8)), yb);
    const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
    /* bit 0 of each byte of hb is the fifth bit of the next low-nibble values (shifting a 16-bit
     * lane right by at most 7 in all never moves the high byte's bits down to bit 0) */
    __m256i hb = ld256(xb + Q5_K_QH);
    __m256i a = _mm256_setzero_si256(), a1 = _mm256_setzero_si256(); /* two chains: VPDPWSSD latency */
    for (int c = 0; c < 4; c++) {
        const __m256i q = ld256(xb + Q5_K_QS + 32 * c);
        const __m256i lo = _mm256_or_si256(_mm256_and_si256(q, m4), _mm256_slli_epi16(_mm256_and_si256(hb, m1), 4));
        const __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
                                           _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hb, 1), m1), 4));
        hb = _mm256_srli_epi16(hb, 2);
        const __m256i plo = _mm256_maddubs_epi16(lo, ld256(yb + Q8_K_QS + 64 * c));
        const __m256i phi = _mm256_maddubs_epi16(hi, ld256(yb + Q8_K_QS + 64 * c + 32));
        a = KACC(a, plo, K256(bcast16)(sc16, 2 * c));
        a1 = KACC(a1, phi, K256(bcast16)(sc16, 2 * c + 1));
    }
    *pi = _mm256_add_epi32(a, a1);
}

static ALWAYS_INLINE void K256(q3k_part)(const uint8_t *xb, const uint8_t *yb, __m256i *pi, __m256i *pm) {
    (void)pm;
    const __m256i m2 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1);
    const __m256i sc16 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(k3_unpack(xb + Q3_K_SCALES)), _mm256_set1_epi16(32));
    const __m256i bias = bsum_vec(sc16, yb);
    const __m256i half_sc[2] = {_mm256_permute2x128_si256(sc16, sc16, 0x00), _mm256_permute2x128_si256(sc16, sc16, 0x11)};
    /* shifting 16-bit lanes right by at most 7 in all keeps bit 0 (and 1) of each byte its own */
    __m256i hb = ld256(xb + Q3_K_HMASK);
    __m256i a = _mm256_setzero_si256(), a1 = _mm256_setzero_si256(); /* two chains: VPDPWSSD latency */
    for (int h = 0; h < 2; h++) {
        __m256i qs = ld256(xb + Q3_K_QS + 32 * h);
        for (int k = 0; k < 4; k++) {
            const __m256i q = _mm256_or_si256(_mm256_and_si256(qs, m2), _mm256_slli_epi16(_mm256_and_si256(hb, m1), 2));
            qs = _mm256_srli_epi16(qs, 2);
            hb = _mm256_srli_epi16(hb, 1);
            const __m256i p = _mm256_maddubs_epi16(q, ld256(yb + Q8_K_QS + 128 * h + 32 * k));
            if (k & 1)
                a1 = KACC(a1, p, K256(pair16)(half_sc[h], 2 * k));
            else
                a = KACC(a, p, K256(pair16)(half_sc[h], 2 * k));
        }
    }
    *pi = _mm256_sub_epi32(_mm256_add_epi32(a, a1), _mm256_slli_epi32(bias, 2)); /* - 4 * (sc6_j - 32) * bsums[j] */
}

