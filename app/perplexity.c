#include "app/perplexity.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include "core/path.h"

ml_ppl_layout ml_ppl_layout_of(int n_tokens, int ctx) {
    ml_ppl_layout l = {.ctx = ctx, .n_chunks = ctx > 0 ? n_tokens / ctx : 0, .first = ctx / 2};
    l.n_scored = ctx - 1 - l.first;
    return l;
}

ml_log_norm ml_log_norm_of(const float *x, int n) {
    float mx = x[0];
    for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
    double s = 0;
    for (int i = 0; i < n; i++) s += exp((double)x[i] - mx);
    return (ml_log_norm){mx, log(s)};
}

void ml_mean_add(ml_mean_acc *a, double v) {
    a->sum += v;
    a->sum2 += v * v;
    a->n++;
}

double ml_mean(const ml_mean_acc *a) { return a->n ? a->sum / (double)a->n : 0.0; }

double ml_mean_stderr(const ml_mean_acc *a) {
    if (a->n < 2) return 0.0;
    double m = ml_mean(a), var = a->sum2 / (double)a->n - m * m;
    /* var is a difference of near-equal sums: rounding can make it -0.0001 ulp */
    return var > 0 ? sqrt(var / (double)(a->n - 1)) : 0.0;
}

double ml_kl_div(const float *base, ml_log_norm zb, const float *logits, ml_log_norm z, int vocab) {
    double kl = 0;
    for (int i = 0; i < vocab; i++) {
        double lp_base = ml_log_prob(zb, base[i]), lp = ml_log_prob(z, logits[i]);
        kl += exp(lp_base) * (lp_base - lp);
    }
    return kl;
}

uint64_t ml_tokens_hash(const int *tokens, long n) {
    uint64_t h = 0xcbf29ce484222325u;
    for (long i = 0; i < n; i++)
        for (int b = 0; b < 4; b++) {
            h ^= ((uint32_t)tokens[i] >> (8 * b)) & 0xffu;
            h *= 0x100000001b3u;
        }
    return h;
}

/* ---- the KL base file ------------------------------------------------------ */

static const char kl_magic[8] = {'M', 'L', 'K', 'L', 'B', 'A', 'S', '1'};

static void put_le(unsigned char *p, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_le(const unsigned char *p, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

ml_status ml_kl_write_header(FILE *f, const ml_kl_header *h, const char *path, ml_err *err) {
    unsigned char b[ML_KL_HEADER_BYTES] = {0};
    memcpy(b, kl_magic, sizeof kl_magic);
    put_le(b + 8, h->vocab, 4);
    put_le(b + 12, h->ctx, 4);
    put_le(b + 16, h->n_chunks, 4);
    put_le(b + 20, h->n_scored, 4);
    put_le(b + 24, h->tokens_hash, 8);
    if (fwrite(b, 1, sizeof b, f) != sizeof b) return ml_errf(err, ML_E_IO, "%s: write failed", path);
    return ML_OK;
}

ml_status ml_kl_read_header(FILE *f, const ml_kl_header *want, const char *path, ml_err *err) {
    unsigned char b[ML_KL_HEADER_BYTES];
    size_t got = fread(b, 1, sizeof b, f);
    if (got != sizeof b)
        return ml_errf(err, ML_E_FORMAT, "%s: %zu bytes, shorter than the %d-byte header of a KL base file",
                       path, got, ML_KL_HEADER_BYTES);
    if (memcmp(b, kl_magic, sizeof kl_magic))
        return ml_errf(err, ML_E_FORMAT, "%s: not a KL base file (no 'MLKLBAS1' magic)", path);
    ml_kl_header h = {(uint32_t)get_le(b + 8, 4), (uint32_t)get_le(b + 12, 4), (uint32_t)get_le(b + 16, 4),
                      (uint32_t)get_le(b + 20, 4), get_le(b + 24, 8)};
    /* What differs, in the order a user would check it. */
    if (h.vocab != want->vocab)
        return ml_errf(err, ML_E_FORMAT, "%s: made with a model of vocab %u; this model's vocab is %u",
                       path, h.vocab, want->vocab);
    if (h.ctx != want->ctx)
        return ml_errf(err, ML_E_FORMAT, "%s: made with -c %u; this run has -c %u", path, h.ctx, want->ctx);
    if (h.n_chunks != want->n_chunks || h.n_scored != want->n_scored || h.tokens_hash != want->tokens_hash)
        return ml_errf(err, ML_E_FORMAT,
                       "%s: made from another text (%u chunks, token hash %016llx; this text: %u chunks, %016llx)",
                       path, h.n_chunks, (unsigned long long)h.tokens_hash, want->n_chunks,
                       (unsigned long long)want->tokens_hash);
    ml_stat_t st;
    uint64_t size = ML_KL_HEADER_BYTES + (uint64_t)h.n_chunks * h.n_scored * h.vocab * sizeof(float);
    if (ml_fstat(fileno(f), &st) == 0 && st.is_reg && st.size != size)
        return ml_errf(err, ML_E_FORMAT, "%s: %llu bytes, expected %llu (%u chunks x %u positions x %u logits)",
                       path, (unsigned long long)st.size, (unsigned long long)size, h.n_chunks, h.n_scored,
                       h.vocab);
    return ML_OK;
}

ml_status ml_kl_read_row(FILE *f, float *row, int vocab, long index, const char *path, ml_err *err) {
    if (fread(row, sizeof *row, (size_t)vocab, f) != (size_t)vocab)
        return ml_errf(err, ML_E_FORMAT, "%s: record %ld is cut short (file truncated?)", path, index);
    for (int i = 0; i < vocab; i++)
        if (!isfinite(row[i]))
            return ml_errf(err, ML_E_FORMAT, "%s: record %ld, logit %d is not finite", path, index, i);
    return ML_OK;
}
