// MatMul (numpy semantics) and Gemm. The evaluator accumulates in double for floating types.
#include <Eigen/Dense>
#include <algorithm>
#include <type_traits>

#include "lib/ops/broadcast.h"
#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"
#include "lib/support/gemm.h"
#include "lib/support/parallel.h"

namespace poprt::ops {
namespace {

template <class T>
using Acc = std::conditional_t<std::is_integral_v<T>, int64_t, double>;
template <class S>
using Mat = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
constexpr int64_t kFewRows = 8;  // a Gemm with at most this many rows reads B without widening it

// Floating operands are multiplied in double with Eigen (blocked, vectorised; the calibration of a
// BERT-sized model runs dozens of GFLOP), each operand matrix widened once; in float32 when the
// context asks for float32 sums and the operands are float32, read and written in place.
template <class S, class P>
void widen(P p, int64_t offset, int64_t rows, int64_t cols, Mat<S>& m) {
  m.resize(rows, cols);
  for (int64_t i = 0; i < rows * cols; ++i) m.data()[i] = static_cast<S>(toCompute(p[offset + i]));
}

// out [M x N] = a [M x K] * b [K x N] in float32 sums (rows contiguous): the simulator's
// register-tiled product (lib/support/gemm.h), 2-3x Eigen's portable build on an AVX2 or AVX-512
// CPU, blocks of rows on different cores when the product is large.
void multiplyFloat32(const float* a, const float* b, float* out, int64_t M, int64_t K, int64_t N) {
  const int64_t parts = parallelParts(M * K * N, M), rows = (M + parts - 1) / parts;
  parallelFor(parts, [&](int64_t part) {
    const int64_t r0 = part * rows, n = std::min(M - r0, rows);
    if (n > 0) gemm(a + r0 * K, n, K, b, N, N, out + r0 * N, N);
  });
}

// out = a * b (out sized already), blocks of rows on different cores when the product is large.
template <class A, class B, class Out>
void multiply(const A& a, const B& b, Out&& out) {
  const int64_t M = a.rows();
  const int64_t parts = parallelParts(M * a.cols() * b.cols(), M);
  const int64_t rows = (M + parts - 1) / parts;
  parallelFor(parts, [&](int64_t part) {
    const int64_t r0 = part * rows, n = std::min(M - r0, rows);
    if (n > 0) out.middleRows(r0, n).noalias() = a.middleRows(r0, n) * b;
  });
}

Expected<std::vector<Tensor>> evalMatMul(const std::vector<const Tensor*>& in, const EvalContext& ctx) {
  if (in.size() != 2 || !in[0] || !in[1]) return Error("expects 2 inputs");
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  if (a.dtype() != b.dtype()) return Error("input dtypes differ");
  if (a.shape().empty() || b.shape().empty()) return Error("inputs must have rank >= 1");
  // 1-D operands are promoted to matrices and the added dim is dropped from the result.
  Shape sa = a.shape(), sb = b.shape();
  bool a_vec = sa.size() == 1, b_vec = sb.size() == 1;
  if (a_vec) sa.insert(sa.begin(), 1);
  if (b_vec) sb.push_back(1);
  int64_t M = sa[sa.size() - 2], K = sa.back(), N = sb.back();
  if (sb[sb.size() - 2] != K)
    return Error("inner dimensions differ: " + shapeToString(a.shape()) + " x " + shapeToString(b.shape()));
  Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
  POPRT_ASSIGN_OR_RETURN(Shape batch, broadcastShapes(batch_a, batch_b));
  Shape out_shape = batch;
  if (!a_vec) out_shape.push_back(M);
  if (!b_vec) out_shape.push_back(N);
  POPRT_ASSIGN_OR_RETURN(Tensor y, makeOutput(a.dtype(), out_shape));
  std::vector<int64_t> stride_a = broadcastStrides(batch_a, batch), stride_b = broadcastStrides(batch_b, batch);
  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  Status st = dispatchNumeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      auto pa = a.data<T>();
      auto pb = b.data<T>();
      auto py = y.data<T>();
      std::vector<int64_t> bstrides = contiguousStrides(batch);
      // B shared by every product (a weight) and A's batches in order: one product of all of A's
      // rows, large enough to split over the cores (attention as PyTorch exports it multiplies a
      // [197, 1, 768] activation by a weight: one 197-row product, not 197 one-row ones).
      const bool stacked = batch_a == batch && std::all_of(stride_b.begin(), stride_b.end(), [](int64_t s) { return s == 0; });
      const int64_t rows = stacked ? batches * M : M, products_count = stacked ? 1 : batches;
      auto products = [&](auto scalar) {
        using S = decltype(scalar);
        // Operands of the sums' type are read in place; others widened once per distinct matrix.
        std::vector<S> wa, wb;
        const S *da = nullptr, *db = nullptr;
        auto operand = [&](auto p, int64_t offset, int64_t count, std::vector<S>& widened) -> const S* {
          if constexpr (std::is_same_v<T, S>) return p.data() + offset;
          widened.resize(static_cast<size_t>(count));
          for (int64_t i = 0; i < count; ++i) widened[static_cast<size_t>(i)] = static_cast<S>(toCompute(p[offset + i]));
          return widened.data();
        };
        Mat<S> my;
        int64_t widened_a = -1, widened_b = -1;  // the offsets da and db point at
        for (int64_t bi = 0; bi < products_count; ++bi) {
          const int64_t oa = broadcastOffset(bi, bstrides, stride_a) * rows * K;
          const int64_t ob = broadcastOffset(bi, bstrides, stride_b) * K * N;
          if (oa != widened_a) da = operand(pa, widened_a = oa, rows * K, wa);
          if (ob != widened_b) db = operand(pb, widened_b = ob, K * N, wb);
          if constexpr (std::is_same_v<T, float> && std::is_same_v<S, float>) {
            multiplyFloat32(da, db, py.data() + bi * rows * N, rows, K, N);
            continue;
          }
          const Eigen::Map<const Mat<S>> ma(da, rows, K), mb(db, K, N);
          if constexpr (std::is_same_v<T, S>) {
            multiply(ma, mb, Eigen::Map<Mat<S>>(py.data() + bi * rows * N, rows, N));
          } else {
            my.resize(rows, N);
            multiply(ma, mb, my);
            for (int64_t i = 0; i < rows * N; ++i)
              py[bi * rows * N + i] = fromCompute<T>(static_cast<typename ComputeType<T>::type>(my.data()[i]));
          }
        }
      };
      if constexpr (std::is_same_v<T, float>) {
        if (ctx.float32Sums()) return products(float{});
      }
      if constexpr (!std::is_integral_v<T>) return products(double{});
      for (int64_t bi = 0; bi < batches; ++bi) {
        const int64_t oa = broadcastOffset(bi, bstrides, stride_a) * M * K;
        const int64_t ob = broadcastOffset(bi, bstrides, stride_b) * K * N;
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) {
            Acc<T> acc = 0;
            for (int64_t k = 0; k < K; ++k)
              acc += static_cast<Acc<T>>(toCompute(pa[oa + m * K + k])) * static_cast<Acc<T>>(toCompute(pb[ob + k * N + n]));
            py[bi * M * N + m * N + n] = fromCompute<T>(static_cast<typename ComputeType<T>::type>(acc));
          }
      }
    }
  });
  POPRT_TRY(st);
  if (a.dtype() == DType::Bool) return Error("dtype bool is not supported");
  return single(std::move(y));
}

Expected<std::vector<Tensor>> evalGemm(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext& ctx) {
  if (in.size() < 2 || !in[0] || !in[1]) return Error("expects inputs A and B");
  const Tensor& a = *in[0];
  const Tensor& b = *in[1];
  const Tensor* c = optionalInput(in, 2);
  if (a.shape().size() != 2 || b.shape().size() != 2) return Error("A and B must be 2-D");
  bool ta = node.attrInt("transA", 0) != 0, tb = node.attrInt("transB", 0) != 0;
  double alpha = node.attrFloat("alpha", 1.0f), beta = node.attrFloat("beta", 1.0f);
  int64_t M = ta ? a.shape()[1] : a.shape()[0], K = ta ? a.shape()[0] : a.shape()[1];
  int64_t Kb = tb ? b.shape()[1] : b.shape()[0], N = tb ? b.shape()[0] : b.shape()[1];
  if (K != Kb) return Error("inner dimensions differ: " + shapeToString(a.shape()) + " x " + shapeToString(b.shape()));
  Shape out_shape{M, N};
  std::vector<int64_t> sc;
  if (c) {
    POPRT_ASSIGN_OR_RETURN(Shape bc, broadcastShapes(c->shape(), out_shape));
    if (bc != out_shape)
      return Error("C of shape " + shapeToString(c->shape()) + " does not broadcast to " + shapeToString(out_shape));
    sc = broadcastStrides(c->shape(), out_shape);
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, makeOutput(a.dtype(), out_shape));
  Status st = dispatchNumeric(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) {
      auto pa = a.data<T>();
      auto pb = b.data<T>();
      auto py = y.data<T>();
      auto finish = [&](int64_t m, int64_t n, double product) {
        double acc = alpha * product;
        if (c) acc += beta * static_cast<double>(toCompute(c->data<T>()[m * sc[0] + n * sc[1]]));
        py[m * N + n] = fromCompute<T>(static_cast<typename ComputeType<T>::type>(acc));
      };
      // (Integer Gemm is computed in double too: alpha and beta are floats.)
      if (M <= kFewRows) {
        // A batch-1 classifier's layer: B is read as it is, not widened to double (VGG's
        // 25088 x 4096 weight would take 800 MB), each of its elements once per row of A.
        auto at = [&](int64_t m, int64_t k) { return static_cast<double>(toCompute(pa[ta ? k * M + m : m * K + k])); };
        std::vector<double> row(N);
        for (int64_t m = 0; m < M; ++m) {
          std::fill(row.begin(), row.end(), 0.0);
          if (tb) {
            for (int64_t n = 0; n < N; ++n)
              for (int64_t k = 0; k < K; ++k) row[n] += at(m, k) * static_cast<double>(toCompute(pb[n * K + k]));
          } else {
            for (int64_t k = 0; k < K; ++k) {
              const double ak = at(m, k);
              for (int64_t n = 0; n < N; ++n) row[n] += ak * static_cast<double>(toCompute(pb[k * N + n]));
            }
          }
          for (int64_t n = 0; n < N; ++n) finish(m, n, row[n]);
        }
        return;
      }
      auto products = [&](auto scalar) {
        using S = decltype(scalar);
        Mat<S> ma, mb, my(M, N);
        widen(pa, 0, a.shape()[0], a.shape()[1], ma);
        widen(pb, 0, b.shape()[0], b.shape()[1], mb);
        if (ta && tb)
          multiply(ma.transpose(), mb.transpose(), my);
        else if (ta)
          multiply(ma.transpose(), mb, my);
        else if (tb)
          multiply(ma, mb.transpose(), my);
        else
          multiply(ma, mb, my);
        for (int64_t m = 0; m < M; ++m)
          for (int64_t n = 0; n < N; ++n) finish(m, n, static_cast<double>(my(m, n)));
      };
      if constexpr (std::is_same_v<T, float>) {
        if (ctx.float32Sums()) return products(float{});
      }
      products(double{});
    }
  });
  POPRT_TRY(st);
  return single(std::move(y));
}

}  // namespace

void registerMatMulOps(std::vector<OpDef>& ops) {
  ops.push_back({"MatMul", Fp16Policy::AccumulateFp32, LoweringFamily::MatMul,
                 [](const ir::Node&, const std::vector<const Tensor*>& in, EvalContext& ctx) { return evalMatMul(in, ctx); }});
  ops.push_back({"Gemm", Fp16Policy::AccumulateFp32, LoweringFamily::MatMul, evalGemm});
}

}  // namespace poprt::ops
