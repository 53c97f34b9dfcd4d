// ConvPartial and Pool: the sliding-window codelets. Both see up to three spatial dims (fewer are
// padded with leading dims of extent 1) and clip every window to the input they hold, so padding
// costs no memory. ConvPartial multiplies its block's weights with its input read in place (a 1x1
// kernel), through rows of a zero-padded copy or of the input itself (planes), or through an
// im2col matrix, or as interleaved dot products (long filters over a few frames), each output
// summing its products in one fixed order whichever way; small blocks run a run's vertices
// several at once, sharing their set-up (runConvPartialTogether). Pool loops over the taps.
#include "sim/activations.h"
#include "sim/codelet_kinds.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "lib/exec/codelets.h"
#include "lib/ops/graphcore_ops.h"
#include "lib/support/gemm.h"
#include "sim/codelet_util.h"

namespace poprt::sim {
namespace {

int64_t floorDiv(int64_t a, int64_t b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// a / s and a % s by a stride or dilation, mostly 1: a division takes tens of cycles, and a small
// vertex's set-up made several per tap (a sixth of its time in resnet20_cifar's commonest vertex).
int64_t divBy(int64_t a, int64_t s) { return s == 1 ? a : a / s; }
int64_t modBy(int64_t a, int64_t s) { return s == 1 ? 0 : a % s; }

// The geometry of a vertex, padded to three spatial dims.
struct Window3 {
  int64_t in[3], out[3], kernel[3], stride[3], dil[3], start[3], pend[3];
  int64_t inSize() const { return capMul(capMul(in[0], in[1]), in[2]); }
  int64_t outSize() const { return capMul(capMul(out[0], out[1]), out[2]); }
  int64_t kernelSize() const { return capMul(capMul(kernel[0], kernel[1]), kernel[2]); }
};

// The window of a vertex's arrays (in, out, kernel, stride, dilation, start, padded end; Conv has
// no padded end), each of `rank` values, padded to three dims with leading ones (start: zero).
Window3 windowOf(std::initializer_list<std::span<const int64_t>> arrays) {
  Window3 w;
  int64_t* dst[7] = {w.in, w.out, w.kernel, w.stride, w.dil, w.start, w.pend};
  const int64_t defaults[7] = {1, 1, 1, 1, 1, 0, 1};
  for (int a = 0; a < 7; ++a) {
    const std::span<const int64_t> src = a < static_cast<int>(arrays.size()) ? arrays.begin()[a] : std::span<const int64_t>();
    for (int64_t d = 0; d < 3; ++d) {
      const int64_t at = d - (3 - static_cast<int64_t>(src.size()));
      dst[a][d] = at >= 0 ? src[static_cast<size_t>(at)] : defaults[a];
    }
  }
  return w;
}
Window3 windowOf(const exec::ConvPartialParams& p) {
  return windowOf({p.in_dims, p.out_dims, p.kernel, p.strides, p.dilations, p.starts});
}
Window3 windowOf(const exec::PoolParams& p) {
  return windowOf({p.in_dims, p.out_dims, p.kernel, p.strides, p.dilations, p.starts, p.padded_ends});
}

Status checkWindow(const Window3& w, const char* what) {
  const int64_t ext = exec::kMaxWindowExtent, lim = exec::kMaxWindowStart;
  for (int d = 0; d < 3; ++d) {
    if (w.in[d] < 0 || w.in[d] > ext || w.out[d] < 0 || w.out[d] > ext || w.kernel[d] < 0 || w.kernel[d] > ext)
      return Error(std::string(what) + " vertex has a bad dim or kernel size");
    if (w.stride[d] < 1 || w.stride[d] > ext || w.dil[d] < 1 || w.dil[d] > ext)
      return Error(std::string(what) + " vertex has a bad stride or dilation");
    if (w.start[d] < -lim || w.start[d] > lim || w.pend[d] < -lim || w.pend[d] > lim)
      return Error(std::string(what) + " vertex has a bad window start");
  }
  return okStatus();
}

// The outputs o in [lo, hi) of one dim whose tap (offset `tap` = k * dilation) falls inside the input.
void validOutputs(const Window3& w, int d, int64_t tap, int64_t& lo, int64_t& hi) {
  const int64_t first = -w.start[d] - tap;              // o * stride >= first
  const int64_t last = w.in[d] - 1 - w.start[d] - tap;  // o * stride <= last
  if (w.stride[d] == 1) {                               // most convs: no division
    lo = std::max<int64_t>(0, first);
    hi = last < 0 ? 0 : std::min<int64_t>(w.out[d], last + 1);
  } else {
    lo = std::max<int64_t>(0, -floorDiv(-first, w.stride[d]));  // ceil(first / stride)
    hi = last < 0 ? 0 : std::min<int64_t>(w.out[d], floorDiv(last, w.stride[d]) + 1);
  }
  if (hi < lo) hi = lo;
}

// dst[q] = src[q * stride] for q < n. Stride 2 (a convnet's downsampling: every tap of a strided
// window reads every other column) gets its own loop, which the compiler vectorises with shuffles
// where a variable stride stays one float at a time: fastestdet's first conv, its costliest step on
// the simulator, spent 80% of its time in these copies.
POPRT_VECTOR_CLONES void copyStrided(const float* src, int64_t stride, int64_t n, float* dst) {
  if (stride == 1) {
    std::copy(src, src + n, dst);
  } else if (stride == 2) {
    for (int64_t q = 0; q < n; ++q) dst[q] = src[2 * q];
  } else {
    for (int64_t q = 0; q < n; ++q) dst[q] = src[q * stride];
  }
}

// A Max pool's step: v when greater, or when it is a NaN (which then stays, so a window with a
// NaN tap ends NaN, whatever follows).
inline float maxStep(float v, float acc) { return v > acc || v != v ? v : acc; }

// One tap of a pool across outputs: for q < n, acc[q] takes src[q * stride] (Max: maxStep; Avg:
// added). Strides 1 and 2 get loops of their own, which the compiler vectorises.
template <bool kMax, int64_t kStride>
void poolTapAs(const float* src, int64_t stride, int64_t n, float* acc) {
  const int64_t s = kStride > 0 ? kStride : stride;
  for (int64_t q = 0; q < n; ++q) {
    const float v = src[q * s];
    if constexpr (kMax)
      acc[q] = maxStep(v, acc[q]);
    else
      acc[q] += v;
  }
}
POPRT_VECTOR_CLONES void poolTap(bool is_max, const float* src, int64_t stride, int64_t n, float* acc) {
  if (is_max) {
    if (stride == 1) return poolTapAs<true, 1>(src, stride, n, acc);
    if (stride == 2) return poolTapAs<true, 2>(src, stride, n, acc);
    return poolTapAs<true, 0>(src, stride, n, acc);
  }
  if (stride == 1) return poolTapAs<false, 1>(src, stride, n, acc);
  if (stride == 2) return poolTapAs<false, 2>(src, stride, n, acc);
  return poolTapAs<false, 0>(src, stride, n, acc);
}

// validOutputs for every tap of dim d: ranges[k].
void tapOutputRanges(const Window3& w, int d, std::vector<std::pair<int64_t, int64_t>>& ranges) {
  ranges.resize(static_cast<size_t>(w.kernel[d]));
  for (int64_t k = 0; k < w.kernel[d]; ++k) {
    auto& [lo, hi] = ranges[static_cast<size_t>(k)];
    validOutputs(w, d, k * w.dil[d], lo, hi);
  }
}
// The same for each dim, worked out once per vertex: ranges[d][k].
void tapOutputRanges(const Window3& w, std::vector<std::pair<int64_t, int64_t>> (&ranges)[3]) {
  for (int d = 0; d < 3; ++d) tapOutputRanges(w, d, ranges[d]);
}

// Per output index of dim d: the input position of tap 0, the taps [lo, hi) inside the input,
// and the taps inside the padded input (for count_include_pad).
struct Taps {
  int64_t first, lo, hi, padded;
};
void outputTaps(const Window3& w, int d, std::vector<Taps>& taps) {
  taps.resize(static_cast<size_t>(w.out[d]));
  for (int64_t o = 0; o < w.out[d]; ++o) {
    const int64_t s = w.start[d] + o * w.stride[d];
    int64_t lo = s >= 0 ? 0 : std::min(w.kernel[d], (-s + w.dil[d] - 1) / w.dil[d]);
    int64_t hi = s >= w.in[d] ? 0 : std::min(w.kernel[d], (w.in[d] - 1 - s) / w.dil[d] + 1);
    if (hi < lo) hi = lo;
    const int64_t pad_hi = w.pend[d] - 1 - s;
    taps[static_cast<size_t>(o)] = {s, lo, hi, pad_hi < 0 ? 0 : std::min(w.kernel[d], pad_hi / w.dil[d] + 1)};
  }
}

// im2col output by output, each output's row of taps at once: for kernels wider than the output
// rows (a long 1-D filter over a few frames, say), where im2col's tap-by-tap loop would mostly
// be loop overhead. Same matrix as im2col.
void im2colByOutput(const Window3& w, const float* x, int64_t channels, int64_t l0, int64_t l1, float* col) {
  const int64_t Pin = w.inSize(), width = w.out[2], pc = (l1 - l0) * width, K = w.kernelSize();
  std::fill(col, col + channels * K * pc, 0.0f);
  thread_local std::vector<Taps> taps[3];
  for (int d = 0; d < 3; ++d) outputTaps(w, d, taps[d]);
  for (int64_t line = l0; line < l1; ++line) {
    const Taps& tz = taps[0][static_cast<size_t>(line / w.out[1])];
    const Taps& ty = taps[1][static_cast<size_t>(line % w.out[1])];
    for (int64_t ox = 0; ox < width; ++ox) {
      const Taps& tx = taps[2][static_cast<size_t>(ox)];
      const int64_t q = (line - l0) * width + ox;
      for (int64_t c = 0; c < channels; ++c)
        for (int64_t kz = tz.lo; kz < tz.hi; ++kz)
          for (int64_t ky = ty.lo; ky < ty.hi; ++ky) {
            const float* row =
                x + c * Pin + ((tz.first + kz * w.dil[0]) * w.in[1] + ty.first + ky * w.dil[1]) * w.in[2] + tx.first;
            float* dst = col + (c * K + (kz * w.kernel[1] + ky) * w.kernel[2]) * pc + q;
            for (int64_t kx = tx.lo; kx < tx.hi; ++kx) dst[kx * pc] = row[kx * w.dil[2]];
          }
    }
  }
}

// im2col of one group for the output lines [l0, l1) (a line is out[2] positions at one (z, y)):
// col[(c*K + k)][q] is the input under tap k of output position l0*out[2] + q, or 0. Where a tap
// reads is the same for every channel, so it is worked out once per tap and line.
void im2col(const Window3& w, const float* x, int64_t channels, int64_t l0, int64_t l1, float* col) {
  const int64_t Pin = w.in[0] * w.in[1] * w.in[2], width = w.out[2], pc = (l1 - l0) * width;
  const int64_t K = w.kernel[0] * w.kernel[1] * w.kernel[2], sx = w.stride[2];
  thread_local std::vector<int64_t> line_src;  // per line: the input offset of its first valid position, or -1
  thread_local std::vector<std::pair<int64_t, int64_t>> ranges[3];
  thread_local std::vector<std::pair<int64_t, int64_t>> line_zy;  // per line: (oz, oy)
  tapOutputRanges(w, ranges);
  line_src.resize(static_cast<size_t>(l1 - l0));
  line_zy.resize(static_cast<size_t>(l1 - l0));
  for (int64_t line = l0; line < l1; ++line) line_zy[static_cast<size_t>(line - l0)] = {line / w.out[1], line % w.out[1]};
  for (int64_t kz = 0; kz < w.kernel[0]; ++kz)
    for (int64_t ky = 0; ky < w.kernel[1]; ++ky)
      for (int64_t kx = 0; kx < w.kernel[2]; ++kx) {
        const int64_t k = (kz * w.kernel[1] + ky) * w.kernel[2] + kx;
        const auto [lo0, hi0] = ranges[0][static_cast<size_t>(kz)];
        const auto [lo1, hi1] = ranges[1][static_cast<size_t>(ky)];
        const int64_t lo[3] = {lo0, lo1, ranges[2][static_cast<size_t>(kx)].first};
        const int64_t hi[3] = {hi0, hi1, ranges[2][static_cast<size_t>(kx)].second};
        for (int64_t line = l0; line < l1; ++line) {
          const auto [oz, oy] = line_zy[static_cast<size_t>(line - l0)];
          const bool valid = oz >= lo[0] && oz < hi[0] && oy >= lo[1] && oy < hi[1] && lo[2] < hi[2];
          const int64_t iz = w.start[0] + oz * w.stride[0] + kz * w.dil[0];
          const int64_t iy = w.start[1] + oy * w.stride[1] + ky * w.dil[1];
          line_src[static_cast<size_t>(line - l0)] =
              valid ? (iz * w.in[1] + iy) * w.in[2] + (w.start[2] + lo[2] * sx + kx * w.dil[2]) : -1;
        }
        const int64_t n = hi[2] - lo[2];
        const int64_t* starts = line_src.data();  // a local pointer: the copies below cannot move it
        for (int64_t c = 0; c < channels; ++c) {
          const float* xc = x + c * Pin;
          float* row = col + (c * K + k) * pc;
          for (int64_t i = 0; i < l1 - l0; ++i) {
            float* dst = row + i * width;
            const int64_t at = starts[i];
            if (at < 0) {
              std::fill(dst, dst + width, 0.0f);
              continue;
            }
            std::fill(dst, dst + lo[2], 0.0f);
            copyStrided(xc + at, sx, n, dst + lo[2]);
            std::fill(dst + hi[2], dst + width, 0.0f);
          }
        }
      }
}

// Without scratch memory, tap by tap: out[j] += w[j][c][k] * (input under tap k). For blocks whose
// im2col lines would not fit the scratch budget.
POPRT_VECTOR_CLONES void convDirect(const Window3& w, const float* x, const float* wts, int64_t Cg, int64_t Mb, float* out) {
  const int64_t Pin = w.in[0] * w.in[1] * w.in[2], P = w.out[0] * w.out[1] * w.out[2];
  const int64_t K = w.kernel[0] * w.kernel[1] * w.kernel[2];
  std::fill(out, out + Mb * P, 0.0f);
  for (int64_t j = 0; j < Mb; ++j)
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t kz = 0; kz < w.kernel[0]; ++kz)
        for (int64_t ky = 0; ky < w.kernel[1]; ++ky)
          for (int64_t kx = 0; kx < w.kernel[2]; ++kx) {
            const float wv = wts[(j * Cg + c) * K + (kz * w.kernel[1] + ky) * w.kernel[2] + kx];
            int64_t lo[3], hi[3];
            validOutputs(w, 0, kz * w.dil[0], lo[0], hi[0]);
            validOutputs(w, 1, ky * w.dil[1], lo[1], hi[1]);
            validOutputs(w, 2, kx * w.dil[2], lo[2], hi[2]);
            for (int64_t oz = lo[0]; oz < hi[0]; ++oz)
              for (int64_t oy = lo[1]; oy < hi[1]; ++oy) {
                const int64_t iz = w.start[0] + oz * w.stride[0] + kz * w.dil[0];
                const int64_t iy = w.start[1] + oy * w.stride[1] + ky * w.dil[1];
                const float* src =
                    x + c * Pin + (iz * w.in[1] + iy) * w.in[2] + (w.start[2] + lo[2] * w.stride[2] + kx * w.dil[2]);
                float* dst = out + j * P + (oz * w.out[1] + oy) * w.out[2];
                for (int64_t ox = lo[2]; ox < hi[2]; ++ox) dst[ox] += wv * src[(ox - lo[2]) * w.stride[2]];
              }
          }
}

constexpr int64_t kScratchFloats = int64_t{1} << 22;  // im2col scratch per chunk (16 MiB)
constexpr int64_t kLineFloats = 8;                    // an AVX2 vector: output lines this wide get products of their own

// The input floats of a block that runs with others (convPartialRunsTogether): eight such inputs
// (128 KiB) stay in the caches from their moves to their products.
constexpr int64_t kTogetherInputFloats = 4096;

// A plane (no depth), strides up to 2 (a convnet's downsampling), and taps reaching at most as
// far again as the output rows are wide (so at most half the product's columns are dropped): the
// padded-input product below applies. It pays when the floats it writes (the phase planes, and for
// lines narrower than a vector the product and the copy out of it) are fewer than im2col's (a copy
// of the input per tap): not for an STFT's 512 taps at a stride of 160.
bool paddedProductPays(const Window3& w, int64_t Cg, int64_t Mb) {
  if (!(w.in[0] == 1 && w.out[0] == 1 && w.kernel[0] == 1 && w.start[0] == 0 && w.stride[1] <= 2 && w.stride[2] <= 2 &&
        divBy((w.kernel[2] - 1) * w.dil[2], w.stride[2]) <= w.out[2]))
    return false;
  const double h = static_cast<double>(w.out[1]), width = static_cast<double>(w.out[2]);
  const double qw = width + static_cast<double>(divBy((w.kernel[2] - 1) * w.dil[2], w.stride[2]));
  const double qh = h + static_cast<double>(divBy((w.kernel[1] - 1) * w.dil[1], w.stride[1]));
  const double planes = static_cast<double>(Cg * w.stride[1] * w.stride[2]) * qh * qw;
  const double product = qw == width || w.out[2] >= kLineFloats ? 0 : 2 * static_cast<double>(Mb) * h * qw;
  return planes + product < static_cast<double>(Cg) * static_cast<double>(w.kernel[1] * w.kernel[2]) * h * width;
}

// The conv of one group as a product with rows of a zero-padded copy of its input, in place of an
// im2col matrix (a copy of the input per tap). The copy is split by phase, (row, column) mod the
// strides, so that every tap reads a phase plane at unit stride: input (y*s1 + ky*d1, x*s2 + kx*d2)
// is element y*qw + x + (ky*d1 / s1)*qw + kx*d2 / s2 of phase (ky*d1 % s1, kx*d2 % s2), where a
// plane is qw = out[2] + the taps' reach / s2 wide. Row (c, ky, kx) of the product is that plane of
// c from that offset on, and the product runs over y*qw + x for every x < qw: the columns past
// out[2] of each line read the next line's edge and are dropped. Each output sums the same
// products in the same order as with im2col (padding taps are zeros in both): the same bits.
//
// The layout of the copy, the same for every vertex of a run: the copy's size and where each row
// of the product starts in it.
struct PaddedLayout {
  int64_t qw = 0, qh = 0, plane = 0, phases = 0, n = 0, floats = 0;
  std::vector<int64_t> row_at;  // by row (c, ky, kx)
};

void layOutPadded(const Window3& w, int64_t Cg, PaddedLayout& l) {
  const int64_t h = w.out[1], k1 = w.kernel[1], k2 = w.kernel[2], s1 = w.stride[1], s2 = w.stride[2];
  const int64_t reach = divBy((k2 - 1) * w.dil[2], s2);  // of the taps, in columns of a phase plane
  l.qw = w.out[2] + reach;
  l.qh = h + divBy((k1 - 1) * w.dil[1], s1);
  l.plane = l.qh * l.qw;
  l.phases = s1 * s2;
  l.n = h * l.qw;
  l.floats = Cg * l.phases * l.plane + reach;  // planes [c][phase], then the last line's overhang (dropped columns)
  // Each tap's place in its channel's planes: the divisions once per tap.
  l.row_at.resize(static_cast<size_t>(Cg * k1 * k2));
  for (int64_t ky = 0, k = 0; ky < k1; ++ky)
    for (int64_t kx = 0; kx < k2; ++kx) {
      const int64_t oy = ky * w.dil[1], ox = kx * w.dil[2];
      const int64_t phase = modBy(oy, s1) * s2 + modBy(ox, s2);
      l.row_at[static_cast<size_t>(k++)] = phase * l.plane + divBy(oy, s1) * l.qw + divBy(ox, s2);
    }
  for (int64_t c = 1; c < Cg; ++c)
    for (int64_t k = 0; k < k1 * k2; ++k)
      l.row_at[static_cast<size_t>(c * k1 * k2 + k)] = l.row_at[static_cast<size_t>(k)] + c * l.phases * l.plane;
}

// Copies a group's input into its phase planes. What it does not write, the padding, stays as it
// was: zeros, written once for all the vertices of a run.
void copyPadded(const Window3& w, const PaddedLayout& l, const float* x, int64_t Cg, float* padded) {
  const int64_t s1 = w.stride[1], s2 = w.stride[2];
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t ry = 0; ry < s1; ++ry)
      for (int64_t rx = 0; rx < s2; ++rx) {
        float* q = padded + (c * l.phases + ry * s2 + rx) * l.plane;
        // Columns xx with input column ix = start + xx*s2 + rx inside [0, in).
        const int64_t first = w.start[2] + rx, x0 = first >= 0 ? 0 : divBy(-first + s2 - 1, s2);
        const int64_t x1 = std::min(l.qw, w.in[2] - first <= 0 ? 0 : divBy(w.in[2] - first + s2 - 1, s2));
        for (int64_t yy = 0; yy < l.qh; ++yy) {
          const int64_t iy = w.start[1] + yy * s1 + ry;
          if (iy < 0 || iy >= w.in[1] || x1 <= x0) continue;
          const float* src = x + (c * w.in[1] + iy) * w.in[2];  // the input row; column xx reads first + xx*s2
          copyStrided(src + first + x0 * s2, s2, x1 - x0, q + yy * l.qw + x0);
        }
      }
}

// The product of one group over the rows of its padded copy, the dropped columns left out: output
// line y is columns [y*qw, y*qw + width) of the product. Lines of a vector or more go straight
// into the output, a product each; shorter ones as one product, copied out line by line.
void productPadded(const Window3& w, const PaddedLayout& l, const float* const* row_of, const float* wts, int64_t Mb,
                   float* out) {
  const int64_t h = w.out[1], width = w.out[2], rows = static_cast<int64_t>(l.row_at.size()), n = l.n;
  if (l.qw == width) return gemmRows(wts, Mb, rows, row_of, 0, n, out, n);  // no dropped columns
  if (width >= kLineFloats) {
    for (int64_t y = 0; y < h; ++y) gemmRows(wts, Mb, rows, row_of, y * l.qw, width, out + y * width, h * width);
    return;
  }
  thread_local std::vector<float> product;
  product.resize(static_cast<size_t>(Mb * n));
  gemmRows(wts, Mb, rows, row_of, 0, n, product.data(), n);
  for (int64_t j = 0; j < Mb; ++j)
    for (int64_t y = 0; y < h; ++y)
      std::copy(product.data() + j * n + y * l.qw, product.data() + j * n + y * l.qw + width, out + (j * h + y) * width);
}

// Every output's every tap inside the input (no padding, no clipped window), few outputs (a
// vector of gemm's would leave most of its lanes idle) and a kernel wider than the output rows:
// an STFT's 512-tap filter over two frames. Such a block's sums are long chains of dependent
// adds, which run faster as dot products interleaved with other vertices' (runConvPartialTogether).
bool chainsPay(const Window3& w) {
  if (w.outSize() == 0 || w.outSize() > 4 || w.kernel[2] <= w.out[2]) return false;
  for (int d = 0; d < 3; ++d)
    if (w.start[d] < 0 || w.start[d] + (w.out[d] - 1) * w.stride[d] + (w.kernel[d] - 1) * w.dil[d] >= w.in[d]) return false;
  return true;
}

// A group's taps as runs over its input, in im2col's row order (channel, then kz, ky, kx).
void tapRuns(const Window3& w, int64_t Cg, std::vector<TapRun>& runs) {
  runs.clear();
  const int64_t Pin = w.inSize();
  for (int64_t c = 0; c < Cg; ++c)
    for (int64_t kz = 0; kz < w.kernel[0]; ++kz)
      for (int64_t ky = 0; ky < w.kernel[1]; ++ky) {
        const int64_t row = c * Pin + (kz * w.dil[0] * w.in[1] + ky * w.dil[1]) * w.in[2];
        if (w.dil[2] == 1) {
          runs.push_back({row, w.kernel[2]});
        } else {
          for (int64_t kx = 0; kx < w.kernel[2]; ++kx) runs.push_back({row + kx * w.dil[2], 1});
        }
      }
}

// The dot products of a vertex's outputs, appended to `chains`: output (g, j, o) sums group g's
// weights of channel j against the input under o's window.
void appendChains(const exec::ConvPartialParams& p, const Window3& w, const VertexView& v, uint8_t* mem,
                  std::vector<DotChain>& chains) {
  const int64_t Cg = p.in_channels, Mb = p.out_channels, Pin = w.inSize(), P = w.outSize();
  const int64_t rows = Cg * w.kernelSize();
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  const float* wts = f32(mem, v.fields[2]);
  for (int64_t g = 0; g < p.groups; ++g)
    for (int64_t j = 0; j < Mb; ++j)
      for (int64_t oz = 0; oz < w.out[0]; ++oz)
        for (int64_t oy = 0; oy < w.out[1]; ++oy)
          for (int64_t ox = 0; ox < w.out[2]; ++ox) {
            const int64_t first = ((w.start[0] + oz * w.stride[0]) * w.in[1] + w.start[1] + oy * w.stride[1]) * w.in[2] +
                                  w.start[2] + ox * w.stride[2];
            chains.push_back({wts + (g * Mb + j) * rows, in + g * Cg * Pin + first,
                              out + (g * Mb + j) * P + (oz * w.out[1] + oy) * w.out[2] + ox});
          }
}

// Bias and activation, after the product.
void convEpilogue(const exec::ConvPartialParams& p, const Window3& w, const VertexView& v, uint8_t* mem) {
  const int64_t P = w.outSize(), channels = p.groups * p.out_channels;
  float* out = f32(mem, v.fields[0]);
  if (p.has_bias) {
    const float* bias = f32(mem, v.fields[3]);
    for (int64_t c = 0; c < channels; ++c) {
      float* o = out + c * P;
      const float b = bias[c];
      for (int64_t i = 0; i < P; ++i) o[i] += b;
    }
  }
  // One span for every channel: Sigmoid and Swish run in blocks of 32 (sim/logistic.h).
  if (p.act) activate(p.act->activation(), out, out, channels * P);
}

}  // namespace

bool convPartialRunsTogether(const exec::ConvPartialParams& p) {
  // Blocks whose inputs, eight at a time, stay in the caches between their moves and their product
  // (capMul's -1, past its cap, is not one).
  const int64_t floats = capMul(capMul(p.groups, p.in_channels), windowOf(p).inSize());
  return floats >= 0 && floats <= kTogetherInputFloats;
}

namespace {

// A 1x1 kernel with unit strides, no offset and equal extents: the product reads the input as it is.
bool readsInputAsIs(const Window3& w) {
  bool direct = w.kernelSize() == 1;
  for (int d = 0; d < 3; ++d) direct = direct && w.stride[d] == 1 && w.start[d] == 0 && w.in[d] == w.out[d];
  return direct;
}

}  // namespace

int64_t convInputPlaneFloats(const exec::ConvPartialParams& p) {
  const Window3 w = windowOf(p);
  // chainsPay never takes a 1x1 kernel (its kernel is wider than the output rows).
  return readsInputAsIs(w) ? w.inSize() : 0;
}

namespace {

// Whether a block's product reads a zero-padded copy of its input (productPadded), the copy and the
// product within the scratch budget.
bool copiesPadded(const Window3& w, int64_t Cg, int64_t Mb) {
  const int64_t width = w.out[2];
  return paddedProductPays(w, Cg, Mb) &&
         capMul(capMul(Cg, capMul(w.stride[1], w.stride[2])),
                capMul(w.out[1] + divBy((w.kernel[1] - 1) * w.dil[1], w.stride[1]) + 1, 2 * width + 1)) <= kScratchFloats &&
         capMul(Mb, capMul(w.out[1], 2 * width + 1)) <= kScratchFloats;
}

// Unit strides, no padding and no dropped columns read (none, or lines that get products of their
// own): the input is its own padded copy, and the rows point into it.
bool copyIsInput(const Window3& w, const PaddedLayout& l) {
  return l.phases == 1 && w.start[1] == 0 && w.start[2] == 0 && w.in[1] == l.qh && w.in[2] == l.qw &&
         (l.qw == w.out[2] || w.out[2] >= kLineFloats);
}

}  // namespace

std::optional<InputCopyPlaces> convInputCopyPlaces(const exec::ConvPartialParams& p) {
  const Window3 w = windowOf(p);
  const int64_t Cg = p.in_channels, Mb = p.out_channels;
  if (p.groups != 1 || Mb <= 0 || w.outSize() <= 0 || Cg * w.kernelSize() <= 0 || chainsPay(w) || readsInputAsIs(w) ||
      !copiesPadded(w, Cg, Mb))
    return std::nullopt;
  PaddedLayout l;
  layOutPadded(w, Cg, l);
  if (l.phases != 1 || copyIsInput(w, l)) return std::nullopt;
  // copyPadded's places with unit strides: input (c, iy, ix) at plane c, line iy - start[1],
  // column ix - start[2].
  return InputCopyPlaces{Cg, w.in[1], w.in[2], l.plane, w.start[1], w.start[2], l.qh, l.qw};
}

void runConvPartialTogether(const exec::ConvPartialParams& p, const VertexView* const* vs, size_t n, uint8_t* mem,
                            const InputMoves* input_moves) {
  const int64_t groups = p.groups, Cg = p.in_channels, Mb = p.out_channels;
  const Window3 w = windowOf(p);
  const int64_t Pin = w.inSize(), P = w.outSize(), K = w.kernelSize(), rows = Cg * K;
  if (P == 0 || groups == 0 || Mb == 0) return;
  if (rows > 0 && chainsPay(w)) {
    thread_local std::vector<TapRun> runs;
    thread_local std::vector<DotChain> chains;
    tapRuns(w, Cg, runs);
    chains.clear();
    for (size_t i = 0; i < n; ++i) appendChains(p, w, *vs[i], mem, chains);
    dotChains(chains.data(), static_cast<int64_t>(chains.size()), runs.data(), static_cast<int64_t>(runs.size()));
    for (size_t i = 0; i < n; ++i) convEpilogue(p, w, *vs[i], mem);
    return;
  }
  const bool direct = readsInputAsIs(w);
  const int64_t width = w.out[2], lines = w.out[0] * w.out[1];
  // Output lines per im2col chunk, within the scratch budget (0: too wide, go tap by tap).
  const int64_t line_floats = capMul(rows, width);
  const int64_t chunk = line_floats < 0 ? 0 : line_floats > 0 ? std::min(lines, kScratchFloats / line_floats) : lines;
  const bool padded = copiesPadded(w, Cg, Mb);
  // The padded copy's layout, its zeros and its rows, for all the vertices given.
  thread_local PaddedLayout layout;
  thread_local std::vector<float> copy;
  thread_local std::vector<const float*> row_of;
  bool in_place = false;
  if (padded && !direct) {
    layOutPadded(w, Cg, layout);
    row_of.resize(layout.row_at.size());
    in_place = copyIsInput(w, layout);
    if (!in_place) {
      copy.assign(static_cast<size_t>(layout.floats), 0.0f);
      for (size_t r = 0; r < row_of.size(); ++r) row_of[r] = copy.data() + layout.row_at[r];
    }
  }
  thread_local std::vector<float> col;
  for (size_t i = 0; i < n; ++i) {
    const VertexView& v = *vs[i];
    float* out = f32(mem, v.fields[0]);
    const float* in = f32(mem, v.fields[1]);
    const float* wts = f32(mem, v.fields[2]);
    for (int64_t g = 0; g < groups; ++g) {
      float* og = out + g * Mb * P;
      const float* x = in + g * Cg * Pin;
      const float* wg = wts + g * Mb * rows;
      if (rows == 0) {
        std::fill(og, og + Mb * P, 0.0f);
      } else if (direct && v.input_rows) {  // the planes where the exchange's sources hold them
        gemmRows(wg, Mb, rows, rowPointers(mem, v.input_rows + g * Cg, Cg), 0, P, og, P);
      } else if (direct) {
        gemm(wg, Mb, rows, x, P, P, og, P);
      } else if (padded) {
        if (in_place)
          for (size_t r = 0; r < row_of.size(); ++r) row_of[r] = x + layout.row_at[r];
        else if (input_moves && input_moves[i].first != input_moves[i].last)  // the exchange's moves, into the copy
          makeMoves(input_moves[i].first, input_moves[i].last, reinterpret_cast<uint8_t*>(copy.data()), mem);
        else
          copyPadded(w, layout, x, Cg, copy.data());
        productPadded(w, layout, row_of.data(), wg, Mb, og);
      } else if (chunk == 0) {
        convDirect(w, x, wg, Cg, Mb, og);
      } else {
        col.resize(static_cast<size_t>(rows * chunk * width));
        for (int64_t l0 = 0; l0 < lines; l0 += chunk) {
          const int64_t l1 = std::min(lines, l0 + chunk), pc = (l1 - l0) * width;
          if (w.kernel[2] > width)
            im2colByOutput(w, x, Cg, l0, l1, col.data());
          else
            im2col(w, x, Cg, l0, l1, col.data());
          gemm(wg, Mb, rows, col.data(), pc, pc, og + l0 * width, P);
        }
      }
    }
    convEpilogue(p, w, v, mem);
  }
}

Status checkConvPartial(const exec::ConvPartialParams& p, const VertexView& v) {
  if (p.rank < 0 || p.rank > exec::kMaxWindowRank) return Error("ConvPartial vertex has a bad rank");
  if (p.act && !isActivationKind(p.act->kind)) return Error("ConvPartial vertex has an unknown activation");
  const int64_t groups = p.groups, in_ch = p.in_channels, out_ch = p.out_channels;
  POPRT_TRY(expectFloatFields(v, p.has_bias ? 4 : 3, "ConvPartial"));
  const int64_t ext = exec::kMaxWindowExtent;
  if (groups < 0 || groups > ext || in_ch < 0 || in_ch > ext || out_ch < 0 || out_ch > ext)
    return Error("ConvPartial vertex has bad channel counts");
  const Window3 w = windowOf(p);
  POPRT_TRY(checkWindow(w, "ConvPartial"));
  const int64_t oc = capMul(groups, out_ch);
  if (!fieldHolds(v.fields[0], capMul(oc, w.outSize())) || !fieldHolds(v.fields[1], capMul(capMul(groups, in_ch), w.inSize())) ||
      !fieldHolds(v.fields[2], capMul(capMul(oc, in_ch), w.kernelSize())) || (p.has_bias && !fieldHolds(v.fields[3], oc)))
    return Error("ConvPartial vertex field sizes do not match its shape");
  return okStatus();
}

void runConvPartial(const exec::ConvPartialParams& p, const VertexView& v, uint8_t* mem) {
  const VertexView* one = &v;
  runConvPartialTogether(p, &one, 1, mem, nullptr);
}

uint64_t cyclesConvPartial(const exec::ConvPartialParams& p, const VertexView&, const exec::CostModel& cost) {
  const Window3 w = windowOf(p);
  // Every tap counts, padding included (the AMP runs whole kernel rows); then the epilogue.
  const double outputs = static_cast<double>(p.groups) * static_cast<double>(p.out_channels) * static_cast<double>(w.outSize());
  const double macs = outputs * static_cast<double>(p.in_channels) * static_cast<double>(w.kernelSize());
  const double cycles = std::ceil(macs / cost.macsPerCycle()) + std::ceil(outputs / cost.vectorWidth());
  return cost.kVertexOverheadCycles + static_cast<uint64_t>(std::min(cycles, 1e18));
}

uint64_t flopsConvPartial(const exec::ConvPartialParams& p, const VertexView&) {
  const Window3 w = windowOf(p);
  // As the cost model counts the taps (padding included); a bias adds one per output.
  const double outputs = static_cast<double>(p.groups) * static_cast<double>(p.out_channels) * static_cast<double>(w.outSize());
  const double flops =
      2 * outputs * static_cast<double>(p.in_channels) * static_cast<double>(w.kernelSize()) + (p.has_bias ? outputs : 0);
  return static_cast<uint64_t>(std::min(flops, 1e18));
}

Status checkPool(const exec::PoolParams& p, const VertexView& v) {
  if (p.rank < 0 || p.rank > exec::kMaxWindowRank) return Error("Pool vertex has bad params");
  POPRT_TRY(expectFloatFields(v, 2, "Pool"));
  if (p.channels < 0 || p.channels > exec::kMaxWindowExtent) return Error("Pool vertex has a bad channel count");
  if (p.kind != exec::kPoolMax && p.kind != exec::kPoolAvg) return Error("Pool vertex has an unknown kind");
  const Window3 w = windowOf(p);
  POPRT_TRY(checkWindow(w, "Pool"));
  if (!fieldHolds(v.fields[0], capMul(p.channels, w.outSize())) || !fieldHolds(v.fields[1], capMul(p.channels, w.inSize())))
    return Error("Pool vertex field sizes do not match its shape");
  return okStatus();
}

namespace {

// A pool's result for one output from the sum or max of its taps (a Max's NaN: poolTap keeps it).
float poolResult(bool is_max, bool include_pad, float acc, const Taps& tz, const Taps& ty, const Taps& tx) {
  if (is_max) return acc != acc ? std::numeric_limits<float>::quiet_NaN() : acc;
  const double count = include_pad
                           ? static_cast<double>(tz.padded) * static_cast<double>(ty.padded) * static_cast<double>(tx.padded)
                           : static_cast<double>((tz.hi - tz.lo) * (ty.hi - ty.lo) * (tx.hi - tx.lo));
  return static_cast<float>(static_cast<double>(acc) / count);
}

}  // namespace

void runPool(const exec::PoolParams& p, const VertexView& v, uint8_t* mem) {
  const int64_t channels = p.channels;
  const bool is_max = p.kind == exec::kPoolMax, include_pad = p.count_include_pad;
  const Window3 w = windowOf(p);
  const int64_t Pin = w.inSize(), P = w.outSize(), width = w.out[2];
  float* out = f32(mem, v.fields[0]);
  const float* in = f32(mem, v.fields[1]);
  if (P == 0 || channels == 0) return;
  thread_local std::vector<Taps> taps[3];
  for (int d = 0; d < 3; ++d) outputTaps(w, d, taps[d]);
  const float empty = is_max ? -std::numeric_limits<float>::infinity() : 0.0f;
  // A row of outputs at a time, tap by tap across the row, in vectors (each output still takes
  // its taps in the same order: the same bits), where a row has at least as many outputs as its
  // kernel has taps; else (a global pool, a window wider than the input) one output at a time,
  // over only the taps inside the input, as the work must stay bounded by what the window reads.
  if (w.kernel[2] <= width) {
    thread_local std::vector<std::pair<int64_t, int64_t>> row_taps;  // per tap kx: the outputs it reaches
    tapOutputRanges(w, 2, row_taps);
    thread_local std::vector<float> acc;
    acc.resize(static_cast<size_t>(width));
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t oz = 0; oz < w.out[0]; ++oz) {
        const Taps& tz = taps[0][static_cast<size_t>(oz)];
        for (int64_t oy = 0; oy < w.out[1]; ++oy) {
          const Taps& ty = taps[1][static_cast<size_t>(oy)];
          std::fill(acc.begin(), acc.end(), empty);
          for (int64_t kz = tz.lo; kz < tz.hi; ++kz)
            for (int64_t ky = ty.lo; ky < ty.hi; ++ky) {
              const float* row = in + c * Pin + ((tz.first + kz * w.dil[0]) * w.in[1] + ty.first + ky * w.dil[1]) * w.in[2];
              for (int64_t kx = 0; kx < w.kernel[2]; ++kx) {
                const auto [lo, hi] = row_taps[static_cast<size_t>(kx)];
                if (lo < hi)
                  poolTap(is_max, row + w.start[2] + lo * w.stride[2] + kx * w.dil[2], w.stride[2], hi - lo, acc.data() + lo);
              }
            }
          float* orow = out + c * P + (oz * w.out[1] + oy) * width;
          for (int64_t ox = 0; ox < width; ++ox)
            orow[ox] = poolResult(is_max, include_pad, acc[static_cast<size_t>(ox)], tz, ty, taps[2][static_cast<size_t>(ox)]);
        }
      }
    return;
  }
  for (int64_t c = 0; c < channels; ++c) {
    const float* x = in + c * Pin;
    float* o = out + c * P;
    for (int64_t oz = 0; oz < w.out[0]; ++oz) {
      const Taps& tz = taps[0][static_cast<size_t>(oz)];
      for (int64_t oy = 0; oy < w.out[1]; ++oy) {
        const Taps& ty = taps[1][static_cast<size_t>(oy)];
        for (int64_t ox = 0; ox < width; ++ox) {
          const Taps& tx = taps[2][static_cast<size_t>(ox)];
          float acc = empty;
          for (int64_t kz = tz.lo; kz < tz.hi; ++kz) {
            const int64_t iz = tz.first + kz * w.dil[0];
            for (int64_t ky = ty.lo; ky < ty.hi; ++ky) {
              const float* row = x + (iz * w.in[1] + ty.first + ky * w.dil[1]) * w.in[2];
              for (int64_t kx = tx.lo; kx < tx.hi; ++kx) {
                const float val = row[tx.first + kx * w.dil[2]];
                if (is_max)
                  acc = maxStep(val, acc);
                else
                  acc += val;
              }
            }
          }
          o[(oz * w.out[1] + oy) * width + ox] = poolResult(is_max, include_pad, acc, tz, ty, tx);
        }
      }
    }
  }
}

uint64_t cyclesPool(const exec::PoolParams& p, const VertexView&, const exec::CostModel& cost) {
  const Window3 w = windowOf(p);
  const double outputs = static_cast<double>(p.channels) * static_cast<double>(w.outSize());
  const double taps = outputs * static_cast<double>(w.kernelSize());
  const double cycles = std::ceil((taps + outputs) / cost.vectorWidth());
  return cost.kVertexOverheadCycles + static_cast<uint64_t>(std::min(cycles, 1e18));
}

uint64_t flopsPool(const exec::PoolParams& p, const VertexView&) {
  const Window3 w = windowOf(p);
  const double taps = static_cast<double>(p.channels) * static_cast<double>(w.outSize()) * static_cast<double>(w.kernelSize());
  return static_cast<uint64_t>(std::min(taps, 1e18));  // a compare or an add per tap
}

}  // namespace poprt::sim
