/* Validating a grammar program: every index in range, every alternative closed by END, sets sorted
 * and disjoint, bounds ordered. The program comes from TypeScript's lowering (src/lib/grammar/lower.ts)
 * but is checked here as if hostile: a matcher never reads outside it. */
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "grammar/program.h"

#define PROGRAM_MAGIC 0x52475231
#define PROGRAM_VERSION 1
#define HEADER 8
#define MAX_CP 0x10FFFF

int gprog_set_has(const runner_grammar *g, int32_t s, uint32_t cp) {
    if (cp < 128) return (g->ascii[4 * s + (cp >> 5)] >> (cp & 31)) & 1u;
    return gprog_set_intersects(g, s, cp, cp);
}

/* The first range of set s whose hi >= lo (binary search), or the set's end. */
static int32_t first_range_reaching(const runner_grammar *g, int32_t s, uint32_t lo) {
    int32_t a = g->set_start[s], b = g->set_start[s + 1];
    while (a < b) {
        const int32_t mid = a + (b - a) / 2;
        if ((uint32_t)g->ranges[2 * mid + 1] < lo) a = mid + 1;
        else b = mid;
    }
    return a;
}

int gprog_set_intersects(const runner_grammar *g, int32_t s, uint32_t lo, uint32_t hi) {
    const int32_t r = first_range_reaching(g, s, lo);
    return r < g->set_start[s + 1] && (uint32_t)g->ranges[2 * r] <= hi;
}

int gprog_set_covers(const runner_grammar *g, int32_t s, uint32_t lo, uint32_t hi) {
    /* Ranges are merged (the check below refuses touching ones), so one range covers [lo, hi] or none does. */
    const int32_t r = first_range_reaching(g, s, lo);
    return r < g->set_start[s + 1] && (uint32_t)g->ranges[2 * r] <= lo && (uint32_t)g->ranges[2 * r + 1] >= hi;
}

static runner_status bad(char *err, int32_t err_len, const char *what, int64_t at) {
    return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "grammar program: %s (word %lld)", what, (long long)at);
}

runner_status runner_grammar_create(const int32_t *program, int64_t n_words, runner_grammar **out, char *err, int32_t err_len) {
    if (!out) return runner_fail(err, err_len, RUNNER_ERR_INVALID_ARGUMENT, "grammar_create: out is NULL");
    *out = NULL;
    if (!program || n_words < HEADER) return bad(err, err_len, "shorter than its header", 0);
    if (program[0] != PROGRAM_MAGIC || program[1] != PROGRAM_VERSION) return bad(err, err_len, "wrong magic or version", 0);
    for (int i = 2; i < HEADER; i++)
        if (program[i] < 0) return bad(err, err_len, "negative count in the header", i);
    const int64_t n_sets = program[2], n_ranges = program[3], n_rules = program[4], n_alts = program[5], n_elems = program[6];
    const int64_t need = HEADER + (n_sets + 1) + 2 * n_ranges + (n_rules + 1) + n_alts + 4 * n_elems;
    if (need != n_words) return bad(err, err_len, "its length does not match the header's counts", 0);
    if (program[7] >= n_rules) return bad(err, err_len, "start rule out of range", 7);

    runner_grammar *g = calloc(1, sizeof *g);
    int32_t *words = malloc((size_t)n_words * sizeof *words + 1);
    uint32_t *ascii = calloc((size_t)(4 * n_sets + 1), sizeof *ascii);
    if (!g || !words || !ascii) {
        free(g), free(words), free(ascii);
        return runner_fail(err, err_len, RUNNER_ERR_NO_MEMORY, "grammar_create: %lld words", (long long)n_words);
    }
    memcpy(words, program, (size_t)n_words * sizeof *words);
    g->words = words;
    g->ascii = ascii;
    g->n_sets = (int32_t)n_sets, g->n_ranges = (int32_t)n_ranges, g->n_rules = (int32_t)n_rules;
    g->n_alts = (int32_t)n_alts, g->n_elems = (int32_t)n_elems, g->start = program[7];
    int64_t o = HEADER;
    g->set_start = words + o, o += n_sets + 1;
    g->ranges = words + o, o += 2 * n_ranges;
    g->rule_alt = words + o, o += n_rules + 1;
    g->alt_start = words + o, o += n_alts;
    g->elems = words + o;

    runner_status st = RUNNER_OK;
    const int64_t sets_at = HEADER, ranges_at = HEADER + n_sets + 1, rules_at = ranges_at + 2 * n_ranges;
    const int64_t alts_at = rules_at + n_rules + 1, elems_at = alts_at + n_alts;
    /* Sets: monotone starts covering all ranges; ranges sorted, disjoint, in [0, MAX_CP]. */
    if (g->set_start[0] != 0 || g->set_start[n_sets] != n_ranges) st = bad(err, err_len, "set starts do not cover the ranges", sets_at);
    for (int64_t s = 0; st == RUNNER_OK && s < n_sets; s++) {
        const int32_t a = g->set_start[s], b = g->set_start[s + 1];
        if (a > b || b > n_ranges) {
            st = bad(err, err_len, "set start out of order", sets_at + s);
            break;
        }
        for (int32_t r = a; r < b; r++) {
            const int32_t lo = g->ranges[2 * r], hi = g->ranges[2 * r + 1];
            /* Merged (not even adjacent: coverage checks rely on it) and free of surrogates, which
             * no UTF-8 spells (a partial code point is judged by the interval it leaves). */
            if (lo < 0 || hi > MAX_CP || lo > hi || (r > a && lo <= g->ranges[2 * r - 1] + 1) || (lo <= 0xDFFF && hi >= 0xD800)) {
                st = bad(err, err_len, "code point range out of order, adjacent to the previous one, out of Unicode or over surrogates", ranges_at + 2 * r);
                break;
            }
            for (int32_t cp = lo; cp <= hi && cp < 128; cp++) ascii[4 * s + (cp >> 5)] |= 1u << (cp & 31);
        }
    }
    if (st == RUNNER_OK && (g->rule_alt[0] != 0 || g->rule_alt[n_rules] != n_alts)) st = bad(err, err_len, "rule alternatives do not cover the table", rules_at);
    for (int64_t r = 0; st == RUNNER_OK && r < n_rules; r++)
        if (g->rule_alt[r] > g->rule_alt[r + 1]) st = bad(err, err_len, "rule alternatives out of order", rules_at + r);
    for (int64_t a = 0; st == RUNNER_OK && a < n_alts; a++) {
        /* Each alternative starts right after the previous one's END (so every position is inside one). */
        const int32_t e0 = g->alt_start[a];
        if (e0 < 0 || e0 >= n_elems || (a == 0 && e0 != 0)) st = bad(err, err_len, "alternative start out of range", alts_at + a);
        else if (a > 0 && (e0 <= g->alt_start[a - 1] || g->elems[4 * (e0 - 1)] != GELEM_END)) st = bad(err, err_len, "alternatives overlap", alts_at + a);
    }
    if (st == RUNNER_OK && n_elems > 0 && g->elems[4 * (n_elems - 1)] != GELEM_END) st = bad(err, err_len, "the last alternative has no END", elems_at);
    for (int64_t e = 0; st == RUNNER_OK && e < n_elems; e++) {
        const int32_t *el = g->elems + 4 * e;
        int ok = 0;
        switch (el[0]) {
        case GELEM_END: ok = 1; break;
        case GELEM_CHARS: ok = el[1] >= 0 && el[1] < n_sets; break;
        case GELEM_REF: ok = el[1] >= 0 && el[1] < n_rules; break;
        case GELEM_REPEAT: ok = el[1] >= 0 && el[1] < n_rules && el[2] >= 0 && (el[3] == -1 || el[3] >= el[2]) && (el[3] != 0); break;
        default: break;
        }
        if (!ok) st = bad(err, err_len, "element kind or operand out of range", elems_at + 4 * e);
    }
    if (st != RUNNER_OK) {
        runner_grammar_free(g);
        return st;
    }
    *out = g;
    return RUNNER_OK;
}

void runner_grammar_free(runner_grammar *g) {
    if (!g) return;
    free(g->words);
    free(g->ascii);
    free(g);
}
