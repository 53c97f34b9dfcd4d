// Recurrent op family of the reference evaluator (see registry.h): RNN, GRU and LSTM with every
// output, both layouts, reverse and bidirectional directions, sequence_lens, initial states,
// peepholes, clip, input_forget and the activation list of the spec. Arithmetic is in double;
// outputs take the dtype of X. A batch item with sequence length 0 keeps its initial state and
// gets zeros in Y.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "lib/ops/op_util.h"
#include "lib/ops/registry.h"
#include "lib/ops/scalar_math.h"
#include "lib/support/dtype_dispatch.h"

namespace poprt::ops {
namespace {

// ---- input checks ------------------------------------------------------------------------------

Status expectShape(const Tensor& t, const Shape& want, const std::string& what) {
  if (t.shape() != want) return Error(what + " has shape " + shapeToString(t.shape()) + ", expected " + shapeToString(want));
  return okStatus();
}

// ---- activations -------------------------------------------------------------------------------

struct Activation {
  enum Kind { Relu, Tanh, Sigmoid, Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus };
  Kind kind = Tanh;
  double alpha = 0, beta = 0;

  double operator()(double x) const {  // the functions of lib/ops/scalar_math.h, as the ops of these names
    switch (kind) {
      case Relu: return scalar::relu(x);
      case Tanh: return std::tanh(x);
      case Sigmoid: return scalar::sigmoid(x);
      case Affine: return scalar::affine(x, alpha, beta);
      case LeakyRelu: return scalar::leakyRelu(x, alpha);
      case ThresholdedRelu: return scalar::thresholdedRelu(x, alpha);
      case ScaledTanh: return scalar::scaledTanh(x, alpha, beta);
      case HardSigmoid: return scalar::hardSigmoid(x, alpha, beta);
      case Elu: return scalar::elu(x, alpha);
      case Softsign: return scalar::softsign(x);
      case Softplus: return scalar::softplus(x);
    }
    return x;
  }
};

// The activations of every direction (nf per direction, direction-major). activation_alpha and
// activation_beta are consumed in order by the functions that take them.
Expected<std::vector<Activation>> parseActivations(const ir::Node& node, int64_t num_dirs,
                                                   const std::vector<std::string>& defaults) {
  std::vector<std::string> names;
  if (auto it = node.attributes.find("activations"); it != node.attributes.end()) {
    auto* v = std::get_if<std::vector<std::string>>(&it->second.value);
    if (!v) return Error("attribute 'activations' must be a list of strings");
    names = *v;
    if (num_dirs == 2 && names.size() == defaults.size()) names.insert(names.end(), v->begin(), v->end());
  } else {
    for (int64_t d = 0; d < num_dirs; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
  }
  if (names.size() != defaults.size() * static_cast<size_t>(num_dirs))
    return Error("attribute 'activations' has " + std::to_string(names.size()) + " functions, expected " +
                 std::to_string(defaults.size() * static_cast<size_t>(num_dirs)));
  const std::vector<float> alphas = node.attrFloats("activation_alpha"), betas = node.attrFloats("activation_beta");
  size_t ai = 0, bi = 0;
  auto alpha = [&](double dflt) { return ai < alphas.size() ? static_cast<double>(alphas[ai++]) : dflt; };
  auto beta = [&](double dflt) { return bi < betas.size() ? static_cast<double>(betas[bi++]) : dflt; };
  std::vector<Activation> out;
  for (const std::string& raw : names) {
    std::string n;
    for (char c : raw) n.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    Activation a;
    if (n == "relu")
      a.kind = Activation::Relu;
    else if (n == "tanh")
      a.kind = Activation::Tanh;
    else if (n == "sigmoid")
      a.kind = Activation::Sigmoid;
    else if (n == "affine") {
      a.kind = Activation::Affine;
      a.alpha = alpha(1.0);
      a.beta = beta(0.0);
    } else if (n == "leakyrelu") {
      a.kind = Activation::LeakyRelu;
      a.alpha = alpha(0.01);
    } else if (n == "thresholdedrelu") {
      a.kind = Activation::ThresholdedRelu;
      a.alpha = alpha(1.0);
    } else if (n == "scaledtanh") {
      a.kind = Activation::ScaledTanh;
      a.alpha = alpha(1.0);
      a.beta = beta(1.0);
    } else if (n == "hardsigmoid") {
      a.kind = Activation::HardSigmoid;
      a.alpha = alpha(0.2);
      a.beta = beta(0.5);
    } else if (n == "elu") {
      a.kind = Activation::Elu;
      a.alpha = alpha(1.0);
    } else if (n == "softsign")
      a.kind = Activation::Softsign;
    else if (n == "softplus")
      a.kind = Activation::Softplus;
    else
      return Error("unknown activation function '" + raw + "'");
    out.push_back(a);
  }
  return out;
}

// ---- the shared driver -------------------------------------------------------------------------

// Inputs and attributes common to RNN, GRU and LSTM, read and checked. `gates` is 1, 3 or 4.
struct Recurrence {
  int64_t T = 0, B = 0, I = 0, H = 0, D = 1, gates = 1;
  bool layout1 = false;
  DType dtype = DType::Float;
  std::vector<double> X;         // [T][B][I] whatever the layout
  std::vector<double> W, R;      // [D][gates*H][I], [D][gates*H][H]
  std::vector<double> Wb, Rb;    // [D][gates*H] each (zeros without B)
  std::vector<int64_t> lens;     // [B]
  std::vector<double> h0, c0;    // [D][B][H] (zeros when absent)
  std::vector<bool> reverse;     // per direction
  std::vector<Activation> acts;  // [D][nf]
  size_t nf = 1;
  bool has_clip = false;
  double clip = 0;

  double clipped(double x) const { return has_clip ? std::max(-clip, std::min(clip, x)) : x; }
  const Activation& act(int64_t d, size_t k) const { return acts[static_cast<size_t>(d) * nf + k]; }

  // out[g*H + j] = x . W[d][g*H + j] + Wb[d][g*H + j]
  void inputProjection(int64_t d, const double* x, double* out) const {
    const int64_t G = gates * H;
    for (int64_t r = 0; r < G; ++r) {
      const double* w = W.data() + static_cast<size_t>((d * G + r) * I);
      double acc = Wb[static_cast<size_t>(d * G + r)];
      for (int64_t i = 0; i < I; ++i) acc += x[i] * w[i];
      out[r] = acc;
    }
  }
  // out[j] = h . R[d][gate*H + j] (+ Rb[d][gate*H + j] when `bias`)
  void recurrentProjection(int64_t d, int64_t gate, const double* h, double* out, bool bias = true) const {
    const int64_t G = gates * H;
    for (int64_t j = 0; j < H; ++j) {
      const int64_t r = gate * H + j;
      const double* w = R.data() + static_cast<size_t>((d * G + r) * H);
      double acc = bias ? Rb[static_cast<size_t>(d * G + r)] : 0.0;
      for (int64_t k = 0; k < H; ++k) acc += h[k] * w[k];
      out[j] = acc;
    }
  }
};

// Reads X, W, R, B, sequence_lens, initial_h (and initial_c at index 6 for LSTM).
Expected<Recurrence> readRecurrence(const ir::Node& node, const std::vector<const Tensor*>& in, int64_t gates,
                                    const std::vector<std::string>& default_acts, bool has_cell) {
  Recurrence r;
  r.gates = gates;
  r.nf = default_acts.size();
  POPRT_ASSIGN_OR_RETURN(const Tensor* xp, requireInput(in, 0, "X"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* wp, requireInput(in, 1, "W"));
  POPRT_ASSIGN_OR_RETURN(const Tensor* rp, requireInput(in, 2, "R"));
  const Tensor& x = *xp;
  const Tensor& w = *wp;
  const Tensor& rt = *rp;
  POPRT_TRY(requireFloat(x, "X"));
  r.dtype = x.dtype();
  const int64_t layout = node.attrInt("layout", 0);
  if (layout != 0 && layout != 1) return Error("attribute 'layout' must be 0 or 1, got " + std::to_string(layout));
  r.layout1 = layout == 1;
  const std::string direction = node.attrString("direction", "forward");
  if (direction == "forward")
    r.reverse = {false};
  else if (direction == "reverse")
    r.reverse = {true};
  else if (direction == "bidirectional")
    r.reverse = {false, true};
  else
    return Error("attribute 'direction' must be forward, reverse or bidirectional, got '" + direction + "'");
  r.D = static_cast<int64_t>(r.reverse.size());
  if (x.shape().size() != 3) return Error("X must be 3-D, got shape " + shapeToString(x.shape()));
  r.T = r.layout1 ? x.shape()[1] : x.shape()[0];
  r.B = r.layout1 ? x.shape()[0] : x.shape()[1];
  r.I = x.shape()[2];
  if (w.shape().size() != 3 || rt.shape().size() != 3)
    return Error("W and R must be 3-D, got " + shapeToString(w.shape()) + " and " + shapeToString(rt.shape()));
  r.H = rt.shape()[2];
  if (node.hasAttr("hidden_size") && node.attrInt("hidden_size", 0) != r.H)
    return Error("attribute 'hidden_size' is " + std::to_string(node.attrInt("hidden_size", 0)) + " but R has shape " +
                 shapeToString(rt.shape()));
  const int64_t G = gates * r.H;
  POPRT_TRY(expectShape(w, {r.D, G, r.I}, "W"));
  POPRT_TRY(expectShape(rt, {r.D, G, r.H}, "R"));
  // Sizes of everything read below are bounded by the inputs; outputs are checked here.
  POPRT_TRY(checkedElementCount({r.T, r.D, r.B, r.H}));

  POPRT_ASSIGN_OR_RETURN(std::vector<double> xv, toDoubles(x));
  if (r.layout1) {  // [B][T][I] -> [T][B][I]
    r.X.resize(xv.size());
    for (int64_t b = 0; b < r.B; ++b)
      for (int64_t t = 0; t < r.T; ++t)
        std::copy_n(xv.data() + static_cast<size_t>((b * r.T + t) * r.I), r.I,
                    r.X.data() + static_cast<size_t>((t * r.B + b) * r.I));
  } else {
    r.X = std::move(xv);
  }
  POPRT_TRY(requireFloat(w, "W"));
  POPRT_ASSIGN_OR_RETURN(r.W, toDoubles(w));
  POPRT_TRY(requireFloat(rt, "R"));
  POPRT_ASSIGN_OR_RETURN(r.R, toDoubles(rt));
  r.Wb.assign(static_cast<size_t>(r.D * G), 0.0);
  r.Rb.assign(static_cast<size_t>(r.D * G), 0.0);
  if (const Tensor* b = optionalInput(in, 3)) {
    POPRT_TRY(expectShape(*b, {r.D, 2 * G}, "B"));
    POPRT_TRY(requireFloat(*b, "B"));
    POPRT_ASSIGN_OR_RETURN(std::vector<double> bv, toDoubles(*b));
    for (int64_t d = 0; d < r.D; ++d)
      for (int64_t k = 0; k < G; ++k) {
        r.Wb[static_cast<size_t>(d * G + k)] = bv[static_cast<size_t>(d * 2 * G + k)];
        r.Rb[static_cast<size_t>(d * G + k)] = bv[static_cast<size_t>(d * 2 * G + G + k)];
      }
  }
  r.lens.assign(static_cast<size_t>(r.B), r.T);
  if (const Tensor* sl = optionalInput(in, 4)) {
    POPRT_TRY(expectShape(*sl, {r.B}, "sequence_lens"));
    if (sl->dtype() != DType::Int32 && sl->dtype() != DType::Int64)
      return Error("sequence_lens must be int32 or int64, got " + std::string(dtypeName(sl->dtype())));
    for (int64_t b = 0; b < r.B; ++b) {
      int64_t l =
          sl->dtype() == DType::Int32 ? sl->data<int32_t>()[static_cast<size_t>(b)] : sl->data<int64_t>()[static_cast<size_t>(b)];
      if (l < 0 || l > r.T) return Error("sequence length " + std::to_string(l) + " is outside 0.." + std::to_string(r.T));
      r.lens[static_cast<size_t>(b)] = l;
    }
  }
  // Initial states: [D][B][H], or [B][D][H] in layout 1.
  auto readState = [&](size_t idx, const std::string& what, std::vector<double>& out) -> Status {
    out.assign(static_cast<size_t>(r.D * r.B * r.H), 0.0);
    const Tensor* s = optionalInput(in, idx);
    if (!s) return okStatus();
    POPRT_TRY(expectShape(*s, r.layout1 ? Shape{r.B, r.D, r.H} : Shape{r.D, r.B, r.H}, what));
    POPRT_TRY(requireFloat(*s, what));
    POPRT_ASSIGN_OR_RETURN(std::vector<double> v, toDoubles(*s));
    for (int64_t d = 0; d < r.D; ++d)
      for (int64_t b = 0; b < r.B; ++b)
        for (int64_t j = 0; j < r.H; ++j)
          out[static_cast<size_t>((d * r.B + b) * r.H + j)] =
              v[static_cast<size_t>(r.layout1 ? (b * r.D + d) * r.H + j : (d * r.B + b) * r.H + j)];
    return okStatus();
  };
  POPRT_TRY(readState(5, "initial_h", r.h0));
  if (has_cell) POPRT_TRY(readState(6, "initial_c", r.c0));
  POPRT_ASSIGN_OR_RETURN(r.acts, parseActivations(node, r.D, default_acts));
  if (node.hasAttr("clip")) {
    r.has_clip = true;
    r.clip = node.attrFloat("clip", 0.0f);
    if (!(r.clip > 0)) return Error("attribute 'clip' must be positive");
  }
  return r;
}

// One time step of one batch item: updates h (and c) in place.
using StepFn = std::function<void(const Recurrence&, int64_t d, const double* x, double* h, double* c)>;

// Runs every direction and batch item; returns Y, Y_h, Y_c (the first `n_outputs` of them).
Expected<std::vector<Tensor>> runRecurrence(const Recurrence& r, const StepFn& step, size_t n_outputs) {
  const int64_t T = r.T, B = r.B, H = r.H, D = r.D;
  std::vector<double> Y(static_cast<size_t>(T * D * B * H), 0.0);  // [T][D][B][H]
  std::vector<double> Yh(static_cast<size_t>(D * B * H)), Yc(static_cast<size_t>(D * B * H));
  std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H));
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < B; ++b) {
      const size_t state = static_cast<size_t>((d * B + b) * H);
      std::copy_n(r.h0.data() + state, H, h.begin());
      if (!r.c0.empty()) std::copy_n(r.c0.data() + state, H, c.begin());
      const int64_t len = r.lens[static_cast<size_t>(b)];
      for (int64_t s = 0; s < len; ++s) {
        const int64_t t = r.reverse[static_cast<size_t>(d)] ? len - 1 - s : s;
        step(r, d, r.X.data() + static_cast<size_t>((t * B + b) * r.I), h.data(), c.data());
        std::copy_n(h.begin(), H, Y.data() + static_cast<size_t>(((t * D + d) * B + b) * H));
      }
      std::copy_n(h.begin(), H, Yh.data() + state);
      std::copy_n(c.begin(), H, Yc.data() + state);
    }
  std::vector<Tensor> outs;
  if (r.layout1) {  // Y [B][T][D][H], Y_h/Y_c [B][D][H]
    std::vector<double> y1(Y.size()), yh1(Yh.size()), yc1(Yc.size());
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b)
          std::copy_n(Y.data() + static_cast<size_t>(((t * D + d) * B + b) * H), H,
                      y1.data() + static_cast<size_t>(((b * T + t) * D + d) * H));
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < B; ++b) {
        std::copy_n(Yh.data() + static_cast<size_t>((d * B + b) * H), H, yh1.data() + static_cast<size_t>((b * D + d) * H));
        std::copy_n(Yc.data() + static_cast<size_t>((d * B + b) * H), H, yc1.data() + static_cast<size_t>((b * D + d) * H));
      }
    POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(r.dtype, {B, T, D, H}, y1));
    POPRT_ASSIGN_OR_RETURN(Tensor yh, fromDoubles(r.dtype, {B, D, H}, yh1));
    POPRT_ASSIGN_OR_RETURN(Tensor yc, fromDoubles(r.dtype, {B, D, H}, yc1));
    outs.push_back(std::move(y));
    outs.push_back(std::move(yh));
    outs.push_back(std::move(yc));
  } else {
    POPRT_ASSIGN_OR_RETURN(Tensor y, fromDoubles(r.dtype, {T, D, B, H}, Y));
    POPRT_ASSIGN_OR_RETURN(Tensor yh, fromDoubles(r.dtype, {D, B, H}, Yh));
    POPRT_ASSIGN_OR_RETURN(Tensor yc, fromDoubles(r.dtype, {D, B, H}, Yc));
    outs.push_back(std::move(y));
    outs.push_back(std::move(yh));
    outs.push_back(std::move(yc));
  }
  outs.resize(std::max<size_t>(1, std::min(n_outputs, outs.size())));
  return outs;
}

// ---- the three ops -----------------------------------------------------------------------------

// Ht = f(Xt*W^T + Ht-1*R^T + Wb + Rb)
Expected<std::vector<Tensor>> evalRnn(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(Recurrence r, readRecurrence(node, in, 1, {"Tanh"}, false));
  std::vector<double> xw(static_cast<size_t>(r.H)), hr(static_cast<size_t>(r.H));
  StepFn step = [&](const Recurrence& rc, int64_t d, const double* x, double* h, double*) {
    rc.inputProjection(d, x, xw.data());
    rc.recurrentProjection(d, 0, h, hr.data());
    for (int64_t j = 0; j < rc.H; ++j) h[j] = rc.act(d, 0)(rc.clipped(xw[j] + hr[j]));
  };
  return runRecurrence(r, step, std::min<size_t>(node.outputs().size(), 2));
}

// Gates z, r, h:  zt = f(..z), rt = f(..r),
//   ht = g(Xt*Wh^T + (rt (.) Ht-1)*Rh^T + Rbh + Wbh)        linear_before_reset = 0
//   ht = g(Xt*Wh^T + rt (.) (Ht-1*Rh^T + Rbh) + Wbh)        linear_before_reset != 0
//   Ht = (1 - zt) (.) ht + zt (.) Ht-1
Expected<std::vector<Tensor>> evalGru(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(Recurrence r, readRecurrence(node, in, 3, {"Sigmoid", "Tanh"}, false));
  const bool lbr = node.attrInt("linear_before_reset", 0) != 0;
  const size_t H = static_cast<size_t>(r.H);
  std::vector<double> xw(3 * H), hz(H), hrr(H), hh(H), rh(H), z(H), rg(H);
  StepFn step = [&](const Recurrence& rc, int64_t d, const double* x, double* h, double*) {
    rc.inputProjection(d, x, xw.data());
    rc.recurrentProjection(d, 0, h, hz.data());
    rc.recurrentProjection(d, 1, h, hrr.data());
    const Activation &f = rc.act(d, 0), &g = rc.act(d, 1);
    for (size_t j = 0; j < H; ++j) {
      z[j] = f(rc.clipped(xw[j] + hz[j]));
      rg[j] = f(rc.clipped(xw[H + j] + hrr[j]));
    }
    if (lbr) {
      rc.recurrentProjection(d, 2, h, hh.data());
      for (size_t j = 0; j < H; ++j) hh[j] = g(rc.clipped(xw[2 * H + j] + rg[j] * hh[j]));
    } else {
      for (size_t j = 0; j < H; ++j) rh[j] = rg[j] * h[j];
      rc.recurrentProjection(d, 2, rh.data(), hh.data());
      for (size_t j = 0; j < H; ++j) hh[j] = g(rc.clipped(xw[2 * H + j] + hh[j]));
    }
    for (size_t j = 0; j < H; ++j) h[j] = (1.0 - z[j]) * hh[j] + z[j] * h[j];
  };
  return runRecurrence(r, step, std::min<size_t>(node.outputs().size(), 2));
}

// Gates i, o, f, c; peepholes P = [Pi, Po, Pf]:
//   it = f(..i + Pi (.) Ct-1), ft = f(..f + Pf (.) Ct-1) (or 1 - it with input_forget),
//   ct = g(..c), Ct = ft (.) Ct-1 + it (.) ct, ot = f(..o + Po (.) Ct), Ht = ot (.) h(Ct)
Expected<std::vector<Tensor>> evalLstm(const ir::Node& node, const std::vector<const Tensor*>& in, EvalContext&) {
  POPRT_ASSIGN_OR_RETURN(Recurrence r, readRecurrence(node, in, 4, {"Sigmoid", "Tanh", "Tanh"}, true));
  const size_t H = static_cast<size_t>(r.H);
  std::vector<double> P(static_cast<size_t>(r.D) * 3 * H, 0.0);
  if (const Tensor* p = optionalInput(in, 7)) {
    POPRT_TRY(expectShape(*p, {r.D, 3 * r.H}, "P"));
    POPRT_TRY(requireFloat(*p, "P"));
    POPRT_ASSIGN_OR_RETURN(P, toDoubles(*p));
  }
  const bool input_forget = node.attrInt("input_forget", 0) != 0;
  std::vector<double> xw(4 * H), hi(H), ho(H), hf(H), hc(H);
  StepFn step = [&](const Recurrence& rc, int64_t d, const double* x, double* h, double* c) {
    rc.inputProjection(d, x, xw.data());
    rc.recurrentProjection(d, 0, h, hi.data());
    rc.recurrentProjection(d, 1, h, ho.data());
    rc.recurrentProjection(d, 2, h, hf.data());
    rc.recurrentProjection(d, 3, h, hc.data());
    const double* pi = P.data() + static_cast<size_t>(d) * 3 * H;
    const double* po = pi + H;
    const double* pf = pi + 2 * H;
    const Activation &f = rc.act(d, 0), &g = rc.act(d, 1), &hact = rc.act(d, 2);
    for (size_t j = 0; j < H; ++j) {
      const double it = f(rc.clipped(xw[j] + hi[j] + pi[j] * c[j]));
      const double ft = input_forget ? 1.0 - it : f(rc.clipped(xw[2 * H + j] + hf[j] + pf[j] * c[j]));
      const double ct = g(rc.clipped(xw[3 * H + j] + hc[j]));
      const double cnew = ft * c[j] + it * ct;
      const double ot = f(rc.clipped(xw[H + j] + ho[j] + po[j] * cnew));
      c[j] = cnew;
      h[j] = ot * hact(cnew);
    }
  };
  return runRecurrence(r, step, node.outputs().size());
}

}  // namespace

void registerRnnOps(std::vector<OpDef>& ops) {
  ops.push_back({"RNN", Fp16Policy::AccumulateFp32, LoweringFamily::None, evalRnn});
  ops.push_back({"GRU", Fp16Policy::AccumulateFp32, LoweringFamily::None, evalGru});
  ops.push_back({"LSTM", Fp16Policy::AccumulateFp32, LoweringFamily::None, evalLstm});
}

}  // namespace poprt::ops
