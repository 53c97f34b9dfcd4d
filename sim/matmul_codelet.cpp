// The MatMul codelet (layout in lib/exec/codelets.h): out = alpha * A x B + beta * bias, with an
// optional activation epilogue; its check, run, cycles and flops (sim/codelet_kinds.h).
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/support/gemm.h"
#include "sim/activations.h"
#include "sim/codelet_kinds.h"
#include "sim/codelet_util.h"

namespace poprt::sim {
namespace {

// A rows x cols matrix stored transposed (cols x rows), laid out as it is into `buf`.
const float* untransposed(const float* m, int64_t rows, int64_t cols, std::vector<float>& buf) {
  buf.resize(static_cast<size_t>(rows * cols));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) buf[static_cast<size_t>(r * cols + c)] = m[c * rows + r];
  return buf.data();
}

}  // namespace

Status checkMatMul(const exec::MatMulParams& p, const VertexView& v) {
  if (p.act && !isActivationKind(p.act->kind)) return Error("MatMul vertex has an unknown activation");
  if (p.bias_mode < exec::kBiasNone || p.bias_mode > exec::kBiasFull) return Error("MatMul vertex has a bad bias mode");
  POPRT_TRY(expectFloatFields(v, p.bias_mode == exec::kBiasNone ? 3 : 4, "MatMul"));
  const int64_t rows = p.rows, K = p.K, cols = p.cols;
  const int64_t limit = int64_t{1} << 24;
  if (rows < 0 || K < 0 || cols < 0 || rows > limit || K > limit || cols > limit) return Error("MatMul vertex has bad sizes");
  if (!fieldHolds(v.fields[0], rows * cols) || !fieldHolds(v.fields[1], rows * K) || !fieldHolds(v.fields[2], K * cols))
    return Error("MatMul vertex field sizes do not match its shape");
  if (p.bias_mode != exec::kBiasNone) {
    const int64_t n = p.bias_mode == exec::kBiasScalar   ? 1
                      : p.bias_mode == exec::kBiasRow    ? cols
                      : p.bias_mode == exec::kBiasColumn ? rows
                                                         : rows * cols;
    if (!fieldHolds(v.fields[3], n)) return Error("MatMul vertex bias size does not match its mode");
  }
  return okStatus();
}

void runMatMul(const exec::MatMulParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t rows = p.rows, K = p.K, cols = p.cols;
  const float alpha = p.alpha, beta = p.beta;
  float* out = f32(mem, v.fields[0]);
  const float* a = f32(mem, v.fields[1]);
  const float* b = f32(mem, v.fields[2]);
  const float* bias = p.bias_mode != exec::kBiasNone ? f32(mem, v.fields[3]) : nullptr;
  thread_local std::vector<float> a_rows, b_rows;
  if (p.trans_a) a = untransposed(a, rows, K, a_rows);
  if (p.trans_b) b = untransposed(b, K, cols, b_rows);
  gemm(a, rows, K, b, cols, cols, out, cols);
  if (alpha == 1.0f && !bias && !p.act) return;
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      float x = alpha * o[c];
      if (bias) {
        float bv = p.bias_mode == exec::kBiasScalar   ? bias[0]
                   : p.bias_mode == exec::kBiasRow    ? bias[c]
                   : p.bias_mode == exec::kBiasColumn ? bias[r]
                                                      : bias[r * cols + c];
        x += beta * bv;
      }
      o[c] = x;
    }
  }
  if (p.act) activate(p.act->activation(), out, out, rows * cols);  // one span: sim/logistic.h runs blocks of 32
}

uint64_t cyclesMatMul(const exec::MatMulParams& p, const VertexView&, const exec::CostModel& cost) {
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  const uint64_t macs = u(p.rows) * u(p.K) * u(p.cols);
  const uint64_t epilogue = u(p.rows) * u(p.cols);
  return cost.kVertexOverheadCycles + cost.macCycles(macs) + cost.vectorCycles(epilogue);
}

uint64_t flopsMatMul(const exec::MatMulParams& p, const VertexView&) {  // a multiply-add counts 2, the bias 1 per output
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  return 2 * u(p.rows) * u(p.K) * u(p.cols) + (p.bias_mode != exec::kBiasNone ? u(p.rows) * u(p.cols) : 0);
}

}  // namespace poprt::sim
