// The row codelets (layouts in lib/exec/codelets.h): Reduce, Softmax, Norm, BatchNorm (per
// channel), Attention (one head's rows) and CumSum, each kind's check, run, cycles and flops together
// (sim/codelet_kinds.h). Statistics (sums, means, variances, softmax denominators) accumulate in double as
// the reference evaluator does, so device and host results agree to float rounding.
#include "sim/activations.h"
#include "sim/codelet_kinds.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "sim/codelet_util.h"
#include "sim/row_sums.h"

namespace poprt::sim {
namespace {

constexpr uint64_t kTranscendentalCycles = 4;  // exp/log/sqrt per element, as the Unary estimate

// An [outer][extent][inner] view's sizes, capped (negative when a product is beyond the cap).
int64_t rowsInSize(int64_t outer, int64_t extent, int64_t inner) { return capMul(capMul(outer, extent), inner); }

// Fields [out, in], both [outer][extent][inner] (Softmax, CumSum).
Status checkSameShapeRows(const VertexView& v, int64_t outer, int64_t extent, int64_t inner, const std::string& what) {
  POPRT_TRY(expectFloatFields(v, 2, what.c_str()));
  const int64_t size = rowsInSize(outer, extent, inner);
  if (size < 0) return Error(what + " vertex has bad sizes");
  if (!fieldHolds(v.fields[0], size) || !fieldHolds(v.fields[1], size))
    return Error(what + " vertex field sizes do not match its shape");
  return okStatus();
}

}  // namespace

// ---- Reduce --------------------------------------------------------------------------------------

Status checkReduce(const exec::ReduceParams& p, const VertexView& v) {
  POPRT_TRY(expectFloatFields(v, 2, "Reduce"));
  if (rowsInSize(p.outer, p.extent, p.inner) < 0) return Error("Reduce vertex has bad sizes");
  if (p.kind < exec::kReduceSum || p.kind > exec::kLastReduceKind) return Error("Reduce vertex has an unknown kind");
  if (p.act && !isActivationKind(p.act->kind)) return Error("Reduce vertex has an unknown activation");
  if (!fieldHolds(v.fields[0], capMul(p.outer, p.inner)) || !fieldHolds(v.fields[1], rowsInSize(p.outer, p.extent, p.inner)))
    return Error("Reduce vertex field sizes do not match its shape");
  return okStatus();
}

void runReduce(const exec::ReduceParams& p, const VertexView& v, uint8_t* mem) {
  const exec::ReduceKind kind = p.kind;
  const int64_t outer = p.outer, extent = p.extent, inner = p.inner;
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  if (kind == exec::kReduceSum) {
    if (v.input_rows) {  // the rows where the exchange's sources hold them
      for (int64_t o = 0; o < outer; ++o)
        sumRows(rowPointers(mem, v.input_rows + o * extent, extent), extent, inner, out + o * inner);
    } else {
      for (int64_t o = 0; o < outer; ++o) sumRows(in + o * extent * inner, extent, inner, out + o * inner);
    }
    if (p.act) activate(p.act->activation(), out, out, outer * inner);
    return;
  }
  const double inf = std::numeric_limits<double>::infinity();
  double init = kind == exec::kReduceProd ? 1.0 : kind == exec::kReduceMax ? -inf : kind == exec::kReduceMin ? inf : 0.0;
  thread_local std::vector<double> acc, mx;  // reused: a conv's partial sums make many small Reduce vertices
  acc.resize(static_cast<size_t>(inner));
  mx.resize(static_cast<size_t>(inner));
  for (int64_t o = 0; o < outer; ++o) {
    const float* x = in + o * extent * inner;
    std::fill(acc.begin(), acc.end(), init);
    if (kind == exec::kReduceLogSumExp) {  // log(sum(exp(x - max))) + max
      std::fill(mx.begin(), mx.end(), -inf);
      for (int64_t e = 0; e < extent; ++e)
        for (int64_t i = 0; i < inner; ++i) {
          double xv = x[e * inner + i];
          if (!std::isnan(mx[i]) && (std::isnan(xv) || xv > mx[i])) mx[i] = xv;
        }
      for (int64_t e = 0; e < extent; ++e)
        for (int64_t i = 0; i < inner; ++i)
          if (std::isfinite(mx[i])) acc[i] += std::exp(static_cast<double>(x[e * inner + i]) - mx[i]);
      for (int64_t i = 0; i < inner; ++i)
        out[o * inner + i] = static_cast<float>(std::isfinite(mx[i]) ? std::log(acc[i]) + mx[i] : mx[i]);
      continue;
    }
    if (kind == exec::kReduceMean || kind == exec::kReduceLogSum)
      addRows(acc.data(), x, extent, inner);
    else
      for (int64_t e = 0; e < extent; ++e) {
        const float* row = x + e * inner;
        switch (kind) {
          case exec::kReduceProd:
            for (int64_t i = 0; i < inner; ++i) acc[i] *= row[i];
            break;
          case exec::kReduceL1:
            for (int64_t i = 0; i < inner; ++i) acc[i] += std::fabs(static_cast<double>(row[i]));
            break;
          case exec::kReduceL2:
          case exec::kReduceSumSquare:
            for (int64_t i = 0; i < inner; ++i) acc[i] += static_cast<double>(row[i]) * row[i];
            break;
          case exec::kReduceMax:  // NaN wins, as in the evaluator
            for (int64_t i = 0; i < inner; ++i)
              if (!std::isnan(acc[i]) && (std::isnan(row[i]) || row[i] > acc[i])) acc[i] = row[i];
            break;
          case exec::kReduceMin:
            for (int64_t i = 0; i < inner; ++i)
              if (!std::isnan(acc[i]) && (std::isnan(row[i]) || row[i] < acc[i])) acc[i] = row[i];
            break;
          default: break;
        }
      }
    for (int64_t i = 0; i < inner; ++i) {
      double a = acc[i];
      if (kind == exec::kReduceMean) a /= static_cast<double>(extent);  // 0/0 = NaN when empty
      if (kind == exec::kReduceL2) a = std::sqrt(a);
      if (kind == exec::kReduceLogSum) a = std::log(a);
      out[o * inner + i] = static_cast<float>(a);
    }
  }
  if (p.act) activate(p.act->activation(), out, out, outer * inner);
}

int64_t reduceInputRowFloats(const exec::ReduceParams& p) { return p.kind == exec::kReduceSum ? p.inner : 0; }

uint64_t cyclesReduce(const exec::ReduceParams& p, const VertexView&, const exec::CostModel& cost) {
  const uint64_t n = static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.extent) * static_cast<uint64_t>(p.inner);
  const uint64_t per = p.kind == exec::kReduceLogSumExp ? kTranscendentalCycles : 1;
  const uint64_t act = p.act ? cost.vectorCycles(static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.inner)) : 0;
  return cost.kVertexOverheadCycles + cost.vectorCycles(n, per) + act;
}

uint64_t flopsReduce(const exec::ReduceParams& p, const VertexView&) {  // one per input element
  return static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.extent) * static_cast<uint64_t>(p.inner);
}

// ---- Softmax -------------------------------------------------------------------------------------

Status checkSoftmax(const exec::SoftmaxParams& p, const VertexView& v) {
  return checkSameShapeRows(v, p.outer, p.extent, p.inner, "Softmax");
}

void runSoftmax(const exec::SoftmaxParams& p, const VertexView& v, uint8_t* mem) {
  const bool log = p.log;
  const int64_t outer = p.outer, extent = p.extent, inner = p.inner;
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  std::vector<double> e(static_cast<size_t>(extent));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      const int64_t base = o * extent * inner + i;
      double mx = -std::numeric_limits<double>::infinity();
      for (int64_t k = 0; k < extent; ++k) {
        double x = in[base + k * inner];
        if (!std::isnan(mx) && (std::isnan(x) || x > mx || k == 0)) mx = x;
      }
      double sum = 0;
      for (int64_t k = 0; k < extent; ++k) sum += (e[k] = std::exp(static_cast<double>(in[base + k * inner]) - mx));
      const double log_sum = std::log(sum);
      for (int64_t k = 0; k < extent; ++k)
        out[base + k * inner] = static_cast<float>(log ? in[base + k * inner] - mx - log_sum : e[k] / sum);
    }
}

uint64_t cyclesSoftmax(const exec::SoftmaxParams& p, const VertexView&, const exec::CostModel& cost) {
  const uint64_t n = static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.extent) * static_cast<uint64_t>(p.inner);
  return cost.kVertexOverheadCycles + cost.vectorCycles(n, 2 + kTranscendentalCycles);  // max, exp+sum, scale
}

uint64_t flopsSoftmax(const exec::SoftmaxParams& p, const VertexView&) {  // max, exp, sum, scale
  return 4 * static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.extent) * static_cast<uint64_t>(p.inner);
}

// ---- Norm ----------------------------------------------------------------------------------------

Status checkNorm(const exec::NormParams& p, const VertexView& v) {
  if (v.fields.size() != 3 && v.fields.size() != 4) return Error("Norm vertex expects 3 or 4 fields");
  POPRT_TRY(expectFloatFields(v, v.fields.size(), "Norm"));
  const int64_t rows = p.rows, N = p.N, channels = p.channels, row_begin = p.row_begin;
  const bool per_row = p.per_row;
  if (capMul(rows, N) < 0 || channels < 1 || channels > kProductCap || row_begin < 0 || row_begin > kProductCap)
    return Error("Norm vertex has bad sizes");
  if (!fieldHolds(v.fields[0], rows * N) || !fieldHolds(v.fields[1], rows * N))
    return Error("Norm vertex field sizes do not match its shape");
  const int64_t affine = per_row ? channels : N;
  for (size_t f = 2; f < v.fields.size(); ++f)
    if (!fieldHolds(v.fields[f], affine)) return Error("Norm vertex scale or bias size does not match its mode");
  return okStatus();
}

void runNorm(const exec::NormParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t rows = p.rows, N = p.N, channels = p.channels, row_begin = p.row_begin;
  const bool per_row = p.per_row;
  const double eps = p.epsilon;
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  const float* scale = f32(mem, v.fields[2]);
  const float* bias = v.fields.size() > 3 ? f32(mem, v.fields[3]) : nullptr;
  for (int64_t r = 0; r < rows; ++r) {
    const float* x = in + r * N;
    float* y = out + r * N;
    double sum = 0, sq = 0;
    for (int64_t k = 0; k < N; ++k) sum += x[k];
    const double mean = sum / static_cast<double>(N);
    for (int64_t k = 0; k < N; ++k) sq += (x[k] - mean) * (x[k] - mean);
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(N) + eps);
    if (per_row) {
      const int64_t c = (row_begin + r) % channels;
      const double s = scale[c] * inv, b = bias ? bias[c] : 0.0;
      for (int64_t k = 0; k < N; ++k) y[k] = static_cast<float>((x[k] - mean) * s + b);
    } else {
      for (int64_t k = 0; k < N; ++k) y[k] = static_cast<float>((x[k] - mean) * inv * scale[k] + (bias ? bias[k] : 0.0f));
    }
  }
}

uint64_t cyclesNorm(const exec::NormParams& p, const VertexView&, const exec::CostModel& cost) {
  const uint64_t n = static_cast<uint64_t>(p.rows) * static_cast<uint64_t>(p.N);
  return cost.kVertexOverheadCycles + cost.vectorCycles(n, 3) + kTranscendentalCycles * static_cast<uint64_t>(p.rows);
}

uint64_t flopsNorm(const exec::NormParams& p, const VertexView&) {  // mean, variance, normalise, scale, shift
  return 5 * static_cast<uint64_t>(p.rows) * static_cast<uint64_t>(p.N);
}

// ---- BatchNorm -----------------------------------------------------------------------------------

Status checkBatchNorm(const exec::BatchNormParams& p, const VertexView& v) {
  POPRT_TRY(expectFloatFields(v, 6, "BatchNorm"));
  const int64_t count = p.count, begin = p.begin, channels = p.channels, inner = p.inner, c0 = p.c_first, cn = p.c_count;
  for (int64_t x : {count, begin, channels, inner, c0, cn})
    if (x < 0 || x > kProductCap) return Error("BatchNorm vertex has bad sizes");
  if (channels < 1 || inner < 1 || c0 + cn > channels) return Error("BatchNorm vertex has bad sizes");
  if (!fieldHolds(v.fields[0], count) || !fieldHolds(v.fields[1], count))
    return Error("BatchNorm vertex field sizes do not match its count");
  for (size_t f = 2; f < 6; ++f)
    if (!fieldHolds(v.fields[f], cn)) return Error("BatchNorm vertex per-channel fields do not hold its channel slice");
  // Every element's channel must lie in the slice: all channels, or a range that does not wrap.
  if (count > 0 && !(c0 == 0 && cn == channels)) {
    const int64_t g0 = begin / inner, g1 = (begin + count - 1) / inner;
    if (g1 - g0 + 1 >= channels || g0 % channels > g1 % channels || g0 % channels < c0 || g1 % channels >= c0 + cn)
      return Error("BatchNorm vertex elements fall outside its channel slice");
  }
  return okStatus();
}

void runBatchNorm(const exec::BatchNormParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t count = p.count, begin = p.begin, channels = p.channels, inner = p.inner, c0 = p.c_first;
  const double eps = p.epsilon;
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  const float *scale = f32(mem, v.fields[2]), *bias = f32(mem, v.fields[3]), *mean = f32(mem, v.fields[4]),
              *var = f32(mem, v.fields[5]);
  // Runs of elements that share a channel: one scale and shift each.
  for (int64_t i = 0; i < count;) {
    const int64_t g = begin + i, c = (g / inner) % channels - c0, run = std::min(count - i, inner - g % inner);
    const double s = scale[c] / std::sqrt(static_cast<double>(var[c]) + eps);
    const double m = mean[c], b = bias[c];
    for (int64_t k = i; k < i + run; ++k) out[k] = static_cast<float>((in[k] - m) * s + b);
    i += run;
  }
}

uint64_t cyclesBatchNorm(const exec::BatchNormParams& p, const VertexView&, const exec::CostModel& cost) {
  return cost.kVertexOverheadCycles + cost.vectorCycles(static_cast<uint64_t>(p.count));
}

uint64_t flopsBatchNorm(const exec::BatchNormParams& p, const VertexView&) { return 4 * static_cast<uint64_t>(p.count); }

// ---- Attention -----------------------------------------------------------------------------------

Status checkAttention(const exec::AttentionParams& p, const VertexView& v) {
  POPRT_TRY(expectFloatFields(v, p.has_mask ? 5 : 4, "Attention"));
  const int64_t rows = p.rows, keys = p.keys, D = p.D, Dv = p.Dv;
  if (capMul(rows, D) < 0 || capMul(keys, D) < 0 || capMul(keys, Dv) < 0 || capMul(rows, keys) < 0 || capMul(rows, Dv) < 0)
    return Error("Attention vertex has bad sizes");
  if (!fieldHolds(v.fields[0], rows * Dv) || !fieldHolds(v.fields[1], rows * D) || !fieldHolds(v.fields[2], keys * D) ||
      !fieldHolds(v.fields[3], keys * Dv) || (p.has_mask && !fieldHolds(v.fields[4], rows * keys)))
    return Error("Attention vertex field sizes do not match its shape");
  return okStatus();
}

void runAttention(const exec::AttentionParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t rows = p.rows, keys = p.keys, D = p.D, Dv = p.Dv;
  const double scale = p.scale;
  float* out = f32(mem, v.fields[0]);
  const float *q = f32(mem, v.fields[1]), *k = f32(mem, v.fields[2]), *val = f32(mem, v.fields[3]);
  const float* mask = p.has_mask ? f32(mem, v.fields[4]) : nullptr;
  std::vector<double> s(static_cast<size_t>(keys)), y(static_cast<size_t>(Dv));
  for (int64_t i = 0; i < rows; ++i) {
    double mx = -std::numeric_limits<double>::infinity();
    for (int64_t j = 0; j < keys; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < D; ++d) dot += static_cast<double>(q[i * D + d]) * k[j * D + d];
      s[j] = scale * dot + (mask ? mask[i * keys + j] : 0.0f);
      mx = std::max(mx, s[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < keys; ++j) sum += (s[j] = std::exp(s[j] - mx));
    std::fill(y.begin(), y.end(), 0.0);
    for (int64_t j = 0; j < keys; ++j)
      for (int64_t e = 0; e < Dv; ++e) y[e] += s[j] * val[j * Dv + e];
    for (int64_t e = 0; e < Dv; ++e) out[i * Dv + e] = static_cast<float>(y[e] / sum);
  }
}

uint64_t cyclesAttention(const exec::AttentionParams& p, const VertexView&, const exec::CostModel& cost) {
  const uint64_t rows = static_cast<uint64_t>(p.rows), keys = static_cast<uint64_t>(p.keys);
  const uint64_t macs = rows * keys * static_cast<uint64_t>(p.D + p.Dv);
  return cost.kVertexOverheadCycles + cost.macCycles(macs) + cost.vectorCycles(rows * keys, kTranscendentalCycles);
}

uint64_t flopsAttention(const exec::AttentionParams& p,
                        const VertexView&) {  // the two matmuls' multiply-adds, then the softmax
  const auto u = [](int64_t x) { return static_cast<uint64_t>(x); };
  return 2 * u(p.rows) * u(p.keys) * u(p.D + p.Dv) + 4 * u(p.rows) * u(p.keys);
}

// ---- CumSum --------------------------------------------------------------------------------------

Status checkCumSum(const exec::CumSumParams& p, const VertexView& v) {
  return checkSameShapeRows(v, p.outer, p.extent, p.inner, "CumSum");
}

void runCumSum(const exec::CumSumParams& p, const VertexView& v, uint8_t* mem) {
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  thread_local std::vector<double> acc;
  acc.resize(static_cast<size_t>(p.inner));
  for (int64_t o = 0; o < p.outer; ++o) {
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int64_t j = 0; j < p.extent; ++j) {
      const int64_t k = p.reverse ? p.extent - 1 - j : j;
      const float* x = in + (o * p.extent + k) * p.inner;
      float* y = out + (o * p.extent + k) * p.inner;
      for (int64_t i = 0; i < p.inner; ++i) {
        if (!p.exclusive) acc[i] += x[i];
        y[i] = static_cast<float>(acc[i]);
        if (p.exclusive) acc[i] += x[i];
      }
    }
  }
}

uint64_t cyclesCumSum(const exec::CumSumParams& p, const VertexView&, const exec::CostModel& cost) {
  const uint64_t n = static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.extent) * static_cast<uint64_t>(p.inner);
  return cost.kVertexOverheadCycles + cost.vectorCycles(n);
}

uint64_t flopsCumSum(const exec::CumSumParams& p, const VertexView&) {  // one add per element
  return static_cast<uint64_t>(p.outer) * static_cast<uint64_t>(p.extent) * static_cast<uint64_t>(p.inner);
}

}  // namespace poprt::sim
