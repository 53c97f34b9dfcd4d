// The MatMul codelet (layout in lib/exec/codelets.h): out = alpha * A x B + beta * bias, with an
// optional activation epilogue; its check, run, cycles and flops (sim/codelet_kinds.h).
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "sim/codelet_kinds.h"
#include "sim/codelet_util.h"
#include "sim/gemm.h"

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

Status checkMatMul(const exec::Vertex& v) {
  const auto& p = v.params;
  const bool act = p.size() == 7;
  if (!(p.size() == 6 && v.fparams.size() == 2) && !(act && v.fparams.size() == 6)) return Error("MatMul vertex has bad params");
  if (act && !isActivationKind(p[6])) return Error("MatMul vertex has an unknown activation");
  POPRT_TRY(expectFloatFields(v, p[5] == exec::kBiasNone ? 3 : 4, "MatMul"));
  int64_t rows = p[0], K = p[1], cols = p[2];
  const int64_t limit = int64_t{1} << 24;
  if (rows < 0 || K < 0 || cols < 0 || rows > limit || K > limit || cols > limit || p[5] < 0 || p[5] > exec::kBiasFull)
    return Error("MatMul vertex has bad sizes");
  auto bytes = [](int64_t a, int64_t b) { return static_cast<uint64_t>(a) * static_cast<uint64_t>(b) * 4; };
  if (v.fields[0].bytes != bytes(rows, cols) || v.fields[1].bytes != bytes(rows, K) || v.fields[2].bytes != bytes(K, cols))
    return Error("MatMul vertex field sizes do not match its shape");
  if (p[5] != exec::kBiasNone) {
    int64_t n = p[5] == exec::kBiasScalar ? 1 : p[5] == exec::kBiasRow ? cols : p[5] == exec::kBiasColumn ? rows : rows * cols;
    if (v.fields[3].bytes != bytes(n, 1)) return Error("MatMul vertex bias size does not match its mode");
  }
  return okStatus();
}

void runMatMul(const exec::Vertex& v, uint8_t* mem) {
  const int64_t rows = v.params[0], K = v.params[1], cols = v.params[2];
  const bool ta = v.params[3] != 0, tb = v.params[4] != 0;
  const int64_t bias_mode = v.params[5];
  const float alpha = v.fparams[0], beta = v.fparams[1];
  float* out = f32(mem, v.fields[0]);
  const float* a = f32(mem, v.fields[1]);
  const float* b = f32(mem, v.fields[2]);
  const float* bias = bias_mode != exec::kBiasNone ? f32(mem, v.fields[3]) : nullptr;
  const bool has_act = v.params.size() == 7;
  ops::graphcore::Activation act;
  if (has_act) act = vertexActivation(v.params[6], v.fparams, 2);
  thread_local std::vector<float> a_rows, b_rows;
  if (ta) a = untransposed(a, rows, K, a_rows);
  if (tb) b = untransposed(b, K, cols, b_rows);
  gemm(a, rows, K, b, cols, cols, out, cols);
  if (alpha == 1.0f && !bias && !has_act) return;
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + r * cols;
    for (int64_t c = 0; c < cols; ++c) {
      float x = alpha * o[c];
      if (bias) {
        float bv = bias_mode == exec::kBiasScalar   ? bias[0]
                   : bias_mode == exec::kBiasRow    ? bias[c]
                   : bias_mode == exec::kBiasColumn ? bias[r]
                                                    : bias[r * cols + c];
        x += beta * bv;
      }
      o[c] = x;
    }
    if (has_act) activate(act, o, o, cols);
  }
}

uint64_t cyclesMatMul(const exec::Vertex& v, const exec::Target& t) {
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  const uint64_t macs = u(v.params[0]) * u(v.params[1]) * u(v.params[2]);
  const uint64_t epilogue = u(v.params[0]) * u(v.params[2]);
  return kVertexOverheadCycles + ceilDiv(macs, t.fp32_macs_per_cycle) + ceilDiv(epilogue, t.vector_width_fp32);
}

uint64_t flopsMatMul(const exec::Vertex& v) {  // a multiply-add counts 2, the bias 1 per output
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  const auto& p = v.params;
  return 2 * u(p[0]) * u(p[1]) * u(p[2]) + (p[5] != exec::kBiasNone ? u(p[0]) * u(p[2]) : 0);
}

}  // namespace poprt::sim
