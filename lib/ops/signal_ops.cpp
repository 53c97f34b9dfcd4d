// Signal op family of the reference evaluator (opset 17): DFT, STFT, the Hann/Hamming/Blackman
// windows and MelWeightMatrix. Transforms run in double precision; a complex value is the last
// dimension of size 2 (real, imaginary), a real signal has last dimension 1.
#include <cmath>
#include <complex>
#include <numbers>

#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

using cd = std::complex<double>;

// ---------------------------------------------------------------------------------------------
// The discrete Fourier transform of any length: mixed radix (smallest prime factor first), with
// a direct sum for small prime lengths and Bluestein's chirp-z for large ones, so every length
// costs O(n log n)-ish. sign = -1 forward (e^{-2πi jk/n}), +1 inverse (unscaled).

// e^{sign·2πi·k/n}, with k reduced mod n so large products stay accurate.
cd twiddle(uint64_t k, uint64_t n, int sign) {
  double a = 2.0 * std::numbers::pi * static_cast<double>(k % n) / static_cast<double>(n);
  return {std::cos(a), sign * std::sin(a)};
}

std::vector<cd> transform(const std::vector<cd>& x, int sign);

std::vector<cd> bluestein(const std::vector<cd>& x, int sign) {
  const uint64_t n = x.size();
  uint64_t m = 1;
  while (m < 2 * n - 1) m <<= 1;
  // w[j] = e^{sign·πi·j²/n} = twiddle(j², 2n); j² is reduced mod 2n before multiplying out.
  std::vector<cd> w(n);
  for (uint64_t j = 0; j < n; ++j) w[j] = twiddle((j % (2 * n)) * (j % (2 * n)) % (2 * n), 2 * n, sign);
  std::vector<cd> a(m), b(m);
  for (uint64_t j = 0; j < n; ++j) a[j] = x[j] * w[j];
  b[0] = std::conj(w[0]);
  for (uint64_t j = 1; j < n; ++j) b[j] = b[m - j] = std::conj(w[j]);
  std::vector<cd> fa = transform(a, -1), fb = transform(b, -1);
  for (uint64_t i = 0; i < m; ++i) fa[i] *= fb[i];
  std::vector<cd> conv = transform(fa, +1);
  std::vector<cd> out(n);
  for (uint64_t k = 0; k < n; ++k) out[k] = w[k] * conv[k] / static_cast<double>(m);
  return out;
}

std::vector<cd> transform(const std::vector<cd>& x, int sign) {
  const uint64_t n = x.size();
  if (n <= 1) return x;
  uint64_t p = n;
  for (uint64_t f = 2; f * f <= n; ++f)
    if (n % f == 0) {
      p = f;
      break;
    }
  if (p == n) {  // prime length
    if (n > 512) return bluestein(x, sign);
    std::vector<cd> out(n);
    for (uint64_t k = 0; k < n; ++k) {
      cd acc = 0;
      for (uint64_t j = 0; j < n; ++j) acc += x[j] * twiddle(j * k, n, sign);
      out[k] = acc;
    }
    return out;
  }
  // n = p·m: X[k] = Σ_r e^{sign·2πi·rk/n} · DFT_m(x[r], x[r+p], ...)[k mod m].
  const uint64_t m = n / p;
  std::vector<std::vector<cd>> sub(p);
  for (uint64_t r = 0; r < p; ++r) {
    std::vector<cd> part(m);
    for (uint64_t j = 0; j < m; ++j) part[j] = x[j * p + r];
    sub[r] = transform(part, sign);
  }
  std::vector<cd> tw(n);
  for (uint64_t k = 0; k < n; ++k) tw[k] = twiddle(k, n, sign);
  std::vector<cd> out(n);
  for (uint64_t k = 0; k < n; ++k) {
    cd acc = 0;
    for (uint64_t r = 0; r < p; ++r) acc += tw[(r * k) % n] * sub[r][k % m];
    out[k] = acc;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

Expected<DType> outputDType(const ir::Node& node, int64_t fallback) {
  int64_t v = node.attrInt("output_datatype", fallback);
  auto dt = dtypeFromOnnx(v);
  if (!dt || *dt == DType::String || *dt == DType::Undefined || *dt == DType::Complex64 || *dt == DType::Complex128)
    return Error("output_datatype " + std::to_string(v) + " is not supported");
  return *dt;
}

// ---------------------------------------------------------------------------------------------
// DFT-17: input [batch, n1, ..., nk, 1|2], optional dft_length; attributes axis, inverse, onesided.

Expected<std::vector<Tensor>> evalDft(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0));
  const Tensor& x = *xp;
  POPRT_TRY(requireFloat(x, "input"));
  const DType dtype = x.dtype();
  const Shape& s = x.shape();
  const int64_t rank = static_cast<int64_t>(s.size());
  if (rank < 2) return Error("input must have rank >= 2, got shape " + shapeToString(s));
  if (s.back() != 1 && s.back() != 2) return Error("the last dimension must be 1 (real) or 2 (complex), got " + shapeToString(s));
  int64_t axis = node.attrInt("axis", 1);
  if (axis < -rank || axis > rank - 2 || axis == -1)
    return Error("axis " + std::to_string(axis) + " is out of range for input rank " + std::to_string(rank));
  if (axis < 0) axis += rank;
  const bool inverse = node.attrInt("inverse", 0) != 0;
  const bool onesided = node.attrInt("onesided", 0) != 0;
  if (inverse && onesided) return Error("inverse and onesided cannot both be set");
  const int64_t n_in = s[static_cast<size_t>(axis)];
  int64_t n = n_in;
  if (in.size() > 1 && in[1]) {
    POPRT_ASSIGN_OR_RETURN(n, scalarInt(*in[1], "dft_length"));
    if (n <= 0) return Error("dft_length must be positive, got " + std::to_string(n));
  }
  if (n > kMaxElements) return Error("dft_length " + std::to_string(n) + " is too large");
  const int64_t n_out = onesided && n > 0 ? n / 2 + 1 : n;
  Shape out_shape = s;
  out_shape[static_cast<size_t>(axis)] = n_out;
  out_shape.back() = 2;
  POPRT_TRY(checkedElementCount(out_shape));
  const int64_t comps = s.back();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= s[static_cast<size_t>(d)];
  for (int64_t d = axis + 1; d < rank - 1; ++d) inner *= s[static_cast<size_t>(d)];
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xs, toDoubles(x));
  std::vector<double> ys(static_cast<size_t>(outer * n_out * inner * 2));
  std::vector<cd> buf(static_cast<size_t>(n));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        if (j >= n_in) {
          buf[static_cast<size_t>(j)] = 0;
          continue;
        }
        int64_t at = ((o * n_in + j) * inner + i) * comps;
        buf[static_cast<size_t>(j)] = cd(xs[static_cast<size_t>(at)], comps == 2 ? xs[static_cast<size_t>(at + 1)] : 0.0);
      }
      std::vector<cd> f = transform(buf, inverse ? +1 : -1);
      for (int64_t k = 0; k < n_out; ++k) {
        cd v = f[static_cast<size_t>(k)];
        if (inverse) v /= static_cast<double>(n);
        int64_t at = ((o * n_out + k) * inner + i) * 2;
        ys[static_cast<size_t>(at)] = v.real();
        ys[static_cast<size_t>(at + 1)] = v.imag();
      }
    }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(dtype, out_shape, ys));
  return single(std::move(y));
}

// ---------------------------------------------------------------------------------------------
// STFT-17: signal [batch, length, 1|2], frame_step, optional window [frame_length], optional
// frame_length; attribute onesided (default 1). Output [batch, frames, bins, 2].

Expected<std::vector<Tensor>> evalStft(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* sp, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(const Tensor* stepp, requireInput(in, 1));
  const Tensor& sig = *sp;
  POPRT_TRY(requireFloat(sig, "signal"));
  const DType dtype = sig.dtype();
  Shape s = sig.shape();
  if (s.size() == 2) s.push_back(1);  // [batch, length] is taken as a real signal
  if (s.size() != 3 || (s[2] != 1 && s[2] != 2))
    return Error("signal must have shape [batch, length, 1|2], got " + shapeToString(sig.shape()));
  const int64_t batch = s[0], length = s[1], comps = s[2];
  POPRT_ASSIGN_OR_RETURN(int64_t step, scalarInt(*stepp, "frame_step"));
  if (step <= 0) return Error("frame_step must be positive, got " + std::to_string(step));
  const Tensor* window = optionalInput(in, 2);
  const Tensor* flen = optionalInput(in, 3);
  int64_t frame_length = -1;
  std::vector<double> win;
  if (window) {
    POPRT_TRY(requireFloat(*window, "window"));
    if (window->shape().size() != 1) return Error("window must be 1-D, got shape " + shapeToString(window->shape()));
    frame_length = window->shape()[0];
    POPRT_ASSIGN_OR_RETURN(win, toDoubles(*window));
  }
  if (flen) {
    POPRT_ASSIGN_OR_RETURN(int64_t fl, scalarInt(*flen, "frame_length"));
    if (window && fl != frame_length)
      return Error("frame_length " + std::to_string(fl) + " differs from the window length " + std::to_string(frame_length));
    frame_length = fl;
  }
  if (frame_length < 0) return Error("needs a window or a frame_length");
  if (frame_length == 0 || frame_length > length)
    return Error("frame_length " + std::to_string(frame_length) + " must be in [1, " + std::to_string(length) + "]");
  if (win.empty()) win.assign(static_cast<size_t>(frame_length), 1.0);
  const bool onesided = node.attrInt("onesided", 1) != 0;
  const int64_t frames = 1 + (length - frame_length) / step;
  const int64_t bins = onesided ? frame_length / 2 + 1 : frame_length;
  Shape out_shape{batch, frames, bins, 2};
  POPRT_TRY(checkedElementCount(out_shape));
  POPRT_ASSIGN_OR_RETURN(std::vector<double> xs, toDoubles(sig));
  std::vector<double> ys(static_cast<size_t>(batch * frames * bins * 2));
  std::vector<cd> buf(static_cast<size_t>(frame_length));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t j = 0; j < frame_length; ++j) {
        int64_t at = (b * length + f * step + j) * comps;
        double w = win[static_cast<size_t>(j)];
        buf[static_cast<size_t>(j)] = cd(xs[static_cast<size_t>(at)] * w, comps == 2 ? xs[static_cast<size_t>(at + 1)] * w : 0.0);
      }
      std::vector<cd> out = transform(buf, -1);
      for (int64_t k = 0; k < bins; ++k) {
        int64_t at = ((b * frames + f) * bins + k) * 2;
        ys[static_cast<size_t>(at)] = out[static_cast<size_t>(k)].real();
        ys[static_cast<size_t>(at + 1)] = out[static_cast<size_t>(k)].imag();
      }
    }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(dtype, out_shape, ys));
  return single(std::move(y));
}

// ---------------------------------------------------------------------------------------------
// Generalized cosine windows: y[n] = Σ_k (-1)^k a_k cos(2πkn/N), N = size (periodic) or size-1.

Expected<std::vector<Tensor>> evalWindow(const ir::Node& node, const std::vector<const Tensor*>& in,
                                         const std::vector<double>& coeffs) {
  POPRT_ASSIGN_OR_RETURN(const Tensor* sizep, requireInput(in, 0));
  POPRT_ASSIGN_OR_RETURN(int64_t size, scalarInt(*sizep, "size"));
  if (size < 0 || size > kMaxElements) return Error("window size " + std::to_string(size) + " is out of range");
  POPRT_ASSIGN_OR_RETURN(DType dtype, outputDType(node, 1));
  const bool periodic = node.attrInt("periodic", 1) != 0;
  const int64_t denom = periodic ? size : size - 1;
  std::vector<double> ys(static_cast<size_t>(size));
  for (int64_t n = 0; n < size; ++n) {
    if (denom == 0) {  // a symmetric window of one sample is 1, as in numpy/scipy
      ys[static_cast<size_t>(n)] = 1.0;
      continue;
    }
    double v = 0, sign = 1;
    for (size_t k = 0; k < coeffs.size(); ++k, sign = -sign)
      v += sign * coeffs[k] *
           std::cos(2.0 * std::numbers::pi * static_cast<double>(k) * static_cast<double>(n) / static_cast<double>(denom));
    ys[static_cast<size_t>(n)] = v;
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(dtype, {size}, ys));
  return single(std::move(y));
}

// ---------------------------------------------------------------------------------------------
// MelWeightMatrix-17: [dft_length/2 + 1, num_mel_bins] triangular filters, computed the way the
// ONNX reference does (num_mel_bins + 2 equally spaced mel points, floored to FFT bins).

Expected<std::vector<Tensor>> evalMelWeightMatrix(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  for (size_t i = 0; i < 5; ++i) POPRT_TRY(requireInput(in, i));
  POPRT_ASSIGN_OR_RETURN(int64_t num_mel_bins, scalarInt(*in[0], "num_mel_bins"));
  POPRT_ASSIGN_OR_RETURN(int64_t dft_length, scalarInt(*in[1], "dft_length"));
  POPRT_ASSIGN_OR_RETURN(int64_t sample_rate, scalarInt(*in[2], "sample_rate"));
  POPRT_ASSIGN_OR_RETURN(double lower_hz, scalarDouble(*in[3], "lower_edge_hertz"));
  POPRT_ASSIGN_OR_RETURN(double upper_hz, scalarDouble(*in[4], "upper_edge_hertz"));
  POPRT_ASSIGN_OR_RETURN(DType dtype, outputDType(node, 1));
  if (num_mel_bins < 0) return Error("num_mel_bins must be non-negative, got " + std::to_string(num_mel_bins));
  if (dft_length <= 0) return Error("dft_length must be positive, got " + std::to_string(dft_length));
  if (sample_rate <= 0) return Error("sample_rate must be positive, got " + std::to_string(sample_rate));
  if (!(lower_hz >= 0) || !(upper_hz >= lower_hz) || !std::isfinite(upper_hz))
    return Error("need 0 <= lower_edge_hertz <= upper_edge_hertz");
  if (dft_length > kMaxElements) return Error("dft_length " + std::to_string(dft_length) + " is too large");
  const int64_t spec_bins = dft_length / 2 + 1;
  Shape out_shape{spec_bins, num_mel_bins};
  POPRT_TRY(checkedElementCount(out_shape));
  auto hzToMel = [](double hz) { return 2595.0 * std::log10(1.0 + hz / 700.0); };
  auto melToHz = [](double mel) { return 700.0 * (std::pow(10.0, mel / 2595.0) - 1.0); };
  const double low_mel = hzToMel(lower_hz), high_mel = hzToMel(upper_hz);
  const double mel_step = (high_mel - low_mel) / static_cast<double>(num_mel_bins + 2);
  std::vector<int64_t> fbins(static_cast<size_t>(num_mel_bins + 2));
  for (size_t i = 0; i < fbins.size(); ++i) {
    double hz = melToHz(static_cast<double>(i) * mel_step + low_mel);
    double bin = std::floor(static_cast<double>(dft_length + 1) * hz / static_cast<double>(sample_rate));
    // Bins past the spectrum are kept out of range (and skipped below) rather than wrapped.
    fbins[i] = static_cast<int64_t>(std::min(bin, static_cast<double>(spec_bins)));
  }
  std::vector<double> ys(static_cast<size_t>(spec_bins * num_mel_bins), 0.0);
  auto set = [&](int64_t row, int64_t col, double v) {
    if (row >= 0 && row < spec_bins) ys[static_cast<size_t>(row * num_mel_bins + col)] = v;
  };
  for (int64_t i = 0; i < num_mel_bins; ++i) {
    const int64_t lo = fbins[static_cast<size_t>(i)], center = fbins[static_cast<size_t>(i + 1)],
                  hi = fbins[static_cast<size_t>(i + 2)];
    if (center == lo) {
      set(center, i, 1.0);
    } else {
      for (int64_t j = lo; j <= center; ++j) set(j, i, static_cast<double>(j - lo) / static_cast<double>(center - lo));
    }
    if (hi > center)
      for (int64_t j = center; j < hi; ++j) set(j, i, static_cast<double>(hi - j) / static_cast<double>(hi - center));
  }
  POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(dtype, out_shape, ys));
  return single(std::move(y));
}

EvalFn windowOp(std::vector<double> coeffs) {
  return
      [coeffs](const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) { return evalWindow(node, in, coeffs); };
}

}  // namespace

void registerSignalOps(std::vector<OpDef>& ops) {
  ops.push_back({"DFT", Fp16Policy::KeepFp32, LoweringFamily::None, evalDft, {}, ""});
  ops.push_back({"STFT", Fp16Policy::KeepFp32, LoweringFamily::None, evalStft, {}, ""});
  ops.push_back({"HannWindow", Fp16Policy::Convert, LoweringFamily::None, windowOp({0.5, 0.5}), {}, ""});
  ops.push_back({"HammingWindow", Fp16Policy::Convert, LoweringFamily::None, windowOp({25.0 / 46.0, 21.0 / 46.0}), {}, ""});
  ops.push_back({"BlackmanWindow", Fp16Policy::Convert, LoweringFamily::None, windowOp({0.42, 0.5, 0.08}), {}, ""});
  ops.push_back({"MelWeightMatrix", Fp16Policy::KeepFp32, LoweringFamily::None, evalMelWeightMatrix, {}, ""});
}

}  // namespace poprt::ops
