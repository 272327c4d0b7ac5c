#include "model/tok.h"

#include <string.h>

#include "core/file.h"
#include "model/gguf.h"

static ml_status check_vocab(ml_tok *t, const char *name, int vocab, ml_err *err) {
    if (t->bpe.n_tokens == vocab) return ML_OK;
    ml_status s = ml_errf(err, ML_E_FORMAT, "BPE tokenizer %s: %d tokens, but the model's vocab is %d", name,
                          t->bpe.n_tokens, vocab);
    ml_bpe_free(&t->bpe);
    return s;
}

ml_status ml_tok_load_buffer(ml_tok *t, const char *name, const void *data, size_t size, int vocab,
                             ml_err *err) {
    if (!t) return ml_errf(err, ML_E_ARG, "tokenizer: NULL tokenizer");
    memset(t, 0, sizeof *t);
    if (!ml_bpe_sniff(data, size)) {
        t->kind = ML_TOK_KIND_SP;
        return ml_tokenizer_load_buffer(&t->sp, name, data, size, vocab, err);
    }
    t->kind = ML_TOK_KIND_BPE;
    ml_status s = ml_bpe_load_buffer(&t->bpe, name, data, size, err);
    return s ? s : check_vocab(t, name, vocab, err);
}

ml_status ml_tok_load(ml_tok *t, const char *path, int vocab, ml_err *err) {
    if (!t || !path) return ml_errf(err, ML_E_ARG, "tokenizer: NULL tokenizer or path");
    memset(t, 0, sizeof *t);
    /* A file that does not open is the SentencePiece loader's to report, as it always was. */
    ml_file f;
    ml_err ignored;
    if (ml_file_open(&f, path, 1, &ignored) == ML_OK) {
        if (ml_gguf_sniff(f.data, f.size)) {
            ml_file_close(&f);
            return ml_errf(err, ML_E_FORMAT, "tokenizer %s is a GGUF file: as the model (-m) it brings its own "
                           "tokenizer; for a tokenizer file, extract it with tools/tokfile.py --gguf", path);
        }
        int bpe = ml_bpe_sniff(f.data, f.size);
        ml_status s = bpe ? ml_bpe_load_buffer(&t->bpe, path, f.data, f.size, err) : ML_OK;
        ml_file_close(&f);
        if (bpe) {
            t->kind = ML_TOK_KIND_BPE;
            return s ? s : check_vocab(t, path, vocab, err);
        }
    }
    t->kind = ML_TOK_KIND_SP;
    return ml_tokenizer_load(&t->sp, path, vocab, err);
}

ml_status ml_tok_load_or_embedded(ml_tok *t, const char *path, const void *bytes, size_t len, int vocab,
                                  ml_err *err) {
    if (path) return ml_tok_load(t, path, vocab, err);
    if (!len) return ml_errf(err, ML_E_ARG, "the model embeds no tokenizer: give a tokenizer file (-z FILE; the library: lml_model_options.tokenizer; Python: tokenizer=)");
    return ml_tok_load_buffer(t, "the model's embedded tokenizer", bytes, len, vocab, err);
}

void ml_tok_free(ml_tok *t) {
    if (!t) return;
    if (t->kind == ML_TOK_KIND_BPE) ml_bpe_free(&t->bpe);
    else ml_tokenizer_free(&t->sp);
}

int ml_tok_vocab(const ml_tok *t) {
    return t->kind == ML_TOK_KIND_BPE ? t->bpe.n_tokens : ml_tokenizer_vocab(&t->sp);
}

const char *ml_tok_kind_name(const ml_tok *t) {
    if (t->kind == ML_TOK_KIND_SP) return "SentencePiece (tokenizer.bin)";
    static const char *const names[ML_BPE_PRE_COUNT] = {"byte-level BPE (gpt-2)", "byte-level BPE (llama-bpe)",
                                                        "byte-level BPE (qwen2)", "byte-level BPE (smollm)"};
    return t->bpe.pre >= 0 && t->bpe.pre < ML_BPE_PRE_COUNT ? names[t->bpe.pre] : "byte-level BPE";
}

int ml_tok_bos(const ml_tok *t) { return t->kind == ML_TOK_KIND_BPE ? t->bpe.bos : ML_TOK_BOS; }
int ml_tok_eos(const ml_tok *t) { return t->kind == ML_TOK_KIND_BPE ? t->bpe.eos : ML_TOK_EOS; }
int ml_tok_eot(const ml_tok *t) { return t->kind == ML_TOK_KIND_BPE ? t->bpe.eot : -1; }
int ml_tok_add_bos(const ml_tok *t) { return t->kind == ML_TOK_KIND_BPE ? t->bpe.add_bos : 1; }

size_t ml_tok_max_tokens(const ml_tok *t, const char *text) {
    return t->kind == ML_TOK_KIND_BPE ? ml_bpe_max_tokens(&t->bpe, text, strlen(text)) : ml_tokenizer_max_tokens(text);
}

ml_status ml_tok_encode(const ml_tok *t, const char *text, int bos, int eos, int special, int *tokens,
                        int *n_tokens, ml_err *err) {
    if (t->kind == ML_TOK_KIND_SP) return ml_tokenizer_encode(&t->sp, text, bos, eos, tokens, n_tokens, err);
    if (!text || !n_tokens) return ml_errf(err, ML_E_ARG, "BPE encode: NULL text or count");
    size_t len = strlen(text), n = 0;
    int opts = (bos ? ML_BPE_BOS : 0) | (eos ? ML_BPE_EOS : 0) | (special ? ML_BPE_SPECIAL : 0);
    ml_status s = ml_bpe_encode(&t->bpe, text, len, opts, tokens, ml_bpe_max_tokens(&t->bpe, text, len), &n, err);
    *n_tokens = s ? 0 : (int)n;
    return s;
}

const char *ml_tok_decode(const ml_tok *t, int prev, int token, size_t *len) {
    if (t->kind == ML_TOK_KIND_SP) return ml_tokenizer_decode(&t->sp, prev, token, len);
    const char *p = ml_bpe_token(&t->bpe, token, len);
    if (p && ml_bpe_type(&t->bpe, token) == ML_BPE_CONTROL) *len = 0;
    return p;
}

const char *ml_tok_text(const ml_tok *t, int token, size_t *len) {
    if (t->kind == ML_TOK_KIND_BPE) return ml_bpe_token(&t->bpe, token, len);
    return ml_tokenizer_decode(&t->sp, -1, token, len);
}
