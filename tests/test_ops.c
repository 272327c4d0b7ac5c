/* The op layer's dispatch by weight type (ops/ops.h): each supported type
 * runs its own kernel and dequantizer, checked against the format's
 * definition (tests/kernel_ref.h), and any other type computes nothing: its
 * outputs are NaN, never another format's kernel run over its bytes. */
#include <math.h>
#include <string.h>

#include "ops/ops.h"
#include "tests/kernel_ref.h"
#include "tests/testlib.h"

enum { ROWS = 6, COLS = 64 };

/* Random quants in the format's range, every scale 1: the kernel's result is
 * then the exact integer dot (below 2^24, so exact in float too). */
static void fill_unit_scales(ml_qtensor *W, ml_qact *x, ref_rng *r) {
    uint64_t qb = ml_quant_bytes((ml_type)W->type, (uint64_t)W->rows * W->cols);
    for (uint64_t i = 0; i < qb; i++)
        W->q[i] = (int8_t)(W->type == ML_TYPE_Q8_0 ? ref_int(r, -ML_Q8_MAX, ML_Q8_MAX) : ref_int(r, 0, 255));
    for (int i = 0; i < W->rows * W->cols / ML_QK; i++) W->d[i] = 1.0f;
    for (int i = 0; i < x->n; i++) x->q[i] = (int8_t)ref_int(r, -ML_Q8_MAX, ML_Q8_MAX);
    for (int i = 0; i < x->n / ML_QK; i++) x->d[i] = 1.0f;
}

static void test_supported(ml_ops *o, ml_type t, const char *name, ref_rng *r) {
    int f0 = tl_failed;
    ml_qtensor W = ref_qtensor(t, ROWS, COLS);
    ml_qact x = ref_qact(COLS);
    float *y = ref_floats(ROWS), *row = ref_floats(COLS);
    fill_unit_scales(&W, &x, r);
    CHECK(ml_op_type_supported(t), "%s: ml_op_type_supported", name);
    ml_op_matvec(o, y, &W, &x);
    for (int i = 0; i < ROWS; i++)
        CHECK(y[i] == (float)ref_matvec_int_row(&W, &x, i), "%s matvec row %d: got %g, the %s dot is %lld",
              name, i, (double)y[i], name, (long long)ref_matvec_int_row(&W, &x, i));
    for (int i = 0; i < ROWS * COLS / ML_QK; i++) W.d[i] = ref_uniform(r, 0.5f, 2.0f);
    for (int i = 0; i < ROWS; i++) {
        ml_op_dequant_row(row, &W, i);
        int bad = 0;
        for (int e = 0; e < COLS; e++) bad += row[e] != ref_wd(&W, i, e / ML_QK) * (float)ref_wq(&W, i, e);
        CHECK(bad == 0, "%s dequant row %d: %d of %d elements differ from the format", name, i, bad, COLS);
    }
    char what[96];
    snprintf(what, sizeof what, "%s: matvec and dequant_row follow the %s layout", name, name);
    GROUP_DONE(what, f0);
    ref_qtensor_free(&W), ref_qact_free(&x), ref_free(y), ref_free(row);
}

static int count_nan(const float *v, int n) {
    int k = 0;
    for (int i = 0; i < n; i++) k += isnan(v[i]) != 0;
    return k;
}

/* A Q8_0-sized matrix relabelled with a type the ops have no kernel for. */
static void test_unsupported(ml_ops *o, ref_rng *r) {
    static const int types[] = {ML_TYPE_F32, 1, 3, 7, 9, 255};
    int f0 = tl_failed;
    ml_qtensor W = ref_qtensor(ML_TYPE_Q8_0, ROWS, COLS), W3 = ref_qtensor(ML_TYPE_Q8_0, ROWS, COLS);
    ml_qact x = ref_qact(COLS);
    float *y = ref_floats(ROWS), *u = ref_floats(ROWS), *row = ref_floats(COLS);
    fill_unit_scales(&W, &x, r);
    fill_unit_scales(&W3, &x, r);
    for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
        int t = types[k];
        W.type = W3.type = (uint8_t)t;
        CHECK(!ml_op_type_supported(t), "type %d: ml_op_type_supported says yes", t);
        ml_op_matvec(o, y, &W, &x);
        CHECK(count_nan(y, ROWS) == ROWS, "type %d: matvec gave %d of %d NaN rows", t, count_nan(y, ROWS), ROWS);
        ml_op_gate_up(o, y, u, &W, &W3, &x);
        CHECK(count_nan(y, ROWS) == ROWS, "type %d: gate_up gave %d of %d NaN rows", t, count_nan(y, ROWS), ROWS);
        ml_op_dequant_row(row, &W, 1);
        CHECK(count_nan(row, COLS) == COLS, "type %d: dequant_row gave %d of %d NaN", t, count_nan(row, COLS), COLS);
    }
    CHECK(!ml_op_type_supported(-1) && !ml_op_type_supported(1 << 20), "types out of the table's range");
    GROUP_DONE("types without a kernel (F32, 1, 3, 7, 9, 255): matvec, gate_up and dequant_row give NaN", f0);
    ref_qtensor_free(&W), ref_qtensor_free(&W3), ref_qact_free(&x), ref_free(y), ref_free(u), ref_free(row);
}

/* A batch of one token (a decode step through the one layer sequence):
 * ml_op_matmuls and ml_op_gate_up_batch give the single-token ops' bits. */
static void test_batch_of_one(ml_ops *o, ml_type t, const char *name, ref_rng *r) {
    int f0 = tl_failed;
    ml_qtensor W = ref_qtensor(t, ROWS, COLS), W3 = ref_qtensor(t, ROWS, COLS);
    ml_qact x = ref_qact(COLS);
    float *y = ref_floats(ROWS), *yb = ref_floats(ROWS), *u = ref_floats(ROWS), *ub = ref_floats(ROWS);
    fill_unit_scales(&W, &x, r);
    fill_unit_scales(&W3, &x, r);
    for (int i = 0; i < ROWS * COLS / ML_QK; i++) W.d[i] = ref_uniform(r, 0.5f, 2.0f);
    ml_qbatch X = {x.q, x.d, COLS, 1};
    ml_op_matvec(o, y, &W, &x);
    ml_matmul_job job = {yb, ROWS, &W};
    ml_op_matmuls(o, &job, 1, &X);
    CHECK(!memcmp(y, yb, ROWS * sizeof *y), "%s: matmuls of one token differ from the matvec", name);
    ml_op_gate_up(o, y, u, &W, &W3, &x);
    ml_op_gate_up_batch(o, yb, ub, &W, &W3, &X);
    CHECK(!memcmp(y, yb, ROWS * sizeof *y), "%s: gate_up_batch of one token differs from gate_up", name);
    char what[96];
    snprintf(what, sizeof what, "%s: a batch of one token gives the single-token ops' bits", name);
    GROUP_DONE(what, f0);
    ref_qtensor_free(&W), ref_qtensor_free(&W3), ref_qact_free(&x);
    ref_free(y), ref_free(yb), ref_free(u), ref_free(ub);
}

int ml_main(int argc, char **argv) {
    ref_opts opts = ref_parse_opts(argc, argv);
    ref_rng r = {opts.seed};
    ml_ops o;
    ml_err err = {{0}};
    if (ml_ops_init(&o, 1, &err)) {
        CHECK(0, "ml_ops_init: %s", err.msg);
        return tl_summary();
    }
    test_supported(&o, ML_TYPE_Q8_0, "Q8_0", &r);
    test_supported(&o, ML_TYPE_Q4_0, "Q4_0", &r);
    test_batch_of_one(&o, ML_TYPE_Q8_0, "Q8_0", &r);
    test_batch_of_one(&o, ML_TYPE_Q4_0, "Q4_0", &r);
    test_unsupported(&o, &r);
    ml_ops_free(&o);
    return tl_summary();
}
