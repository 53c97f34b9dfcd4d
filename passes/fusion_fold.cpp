#include "passes/fusion_util.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "lib/ops/op_util.h"

namespace poprt::passes::fusion {

std::string notConstant(const ir::Value* v, const std::string& what) {
  if (v && v->isInitializer() && v->isGraphInput())
    return what + " is a graph input with a default (an initializer the caller may override), not a constant";
  if (v && v->producer()) return what + " is computed by " + v->producer()->describe() + ", not a constant";
  return what + " is not a constant";
}

std::vector<double> doubles(const Tensor& t) {
  auto v = ops::toDoubles(t);
  POPRT_CHECK(v.ok(), "fusion: reading a constant checked to be floating-point");
  return std::move(v).value();
}

Tensor tensorOf(DType dtype, Shape shape, const std::vector<double>& values) {
  auto t = ops::fromDoubles(dtype, std::move(shape), values);
  POPRT_CHECK(t.ok(), "fusion: writing a folded constant");
  return std::move(t).value();
}

namespace {

// The value's single use is `v` feeding one node, and it is not returned.
std::string singleUseProblem(const ir::Value* v, const ir::Node& producer) {
  if (v->isGraphOutput()) return "the output of " + producer.describe() + " is a graph output";
  if (v->uses().size() != 1) return "the output of " + producer.describe() + " has " + std::to_string(v->uses().size()) + " uses";
  return "";
}

// Fills the op-specific fields of `c` (rank, axis, channels, dtype); returns why not otherwise.
// Weights that are all integers of 8-bit range: a quantized model's, as quantized_to_float leaves
// them (q - zero point).
bool quantizedIntegers(const Tensor& w) {
  // float32 only (what the pass makes), read in place and stopped at the first other value: every
  // fold candidate's weight comes here, and a float model's first value already says no.
  if (w.dtype() != DType::Float || w.numElements() == 0) return false;
  return std::all_of(w.data<float>().begin(), w.data<float>().end(),
                     [](float v) { return v == std::nearbyint(v) && std::fabs(v) <= 255; });
}

std::string describeOp(const ir::Node& op, LinearChain& c) {
  const std::string& type = op.opType();
  const Tensor* w = constantOf(op.input(1));
  if (!op.input(0)) return "it has no data input";
  if (!w) return notConstant(op.input(1), "its weight (input 1)");
  if (!isFloatingPoint(w->dtype())) return "its weight is not floating-point";
  if (quantizedIntegers(*w))
    return "its weights are a quantized model's integers: their sums are exact, folded scales would round them";
  const Shape& ws = w->shape();
  c.dtype = w->dtype();
  if (type == "Conv" || type == "ConvTranspose") {
    if (ws.size() < 3) return "its weight has rank " + std::to_string(ws.size()) + " (< 3)";
    const int64_t group = op.attrInt("group", 1);
    if (group < 1) return "its group is not positive";
    if (type == "Conv") {
      c.channels = ws[0];
    } else {
      if (ws[0] % group != 0) return "its input channels do not divide by group";
      c.channels = ws[1] * group;
    }
    c.rank = static_cast<int64_t>(ws.size());
    c.axis = 1;
    if (const ir::Value* b = op.input(2)) {
      const Tensor* bt = constantOf(b);
      if (!bt) return notConstant(b, "its bias");
      if (bt->dtype() != c.dtype || bt->numElements() != c.channels) return "its bias does not match its weights";
    }
    return "";
  }
  if (ws.size() != 2) return "its weight is not 2-D";
  c.rank = 2;
  if (type == "Gemm") {
    c.channels = op.attrInt("transB", 0) != 0 ? ws[0] : ws[1];
    c.axis = 1;
    if (const ir::Value* cv = op.input(2)) {
      const Tensor* ct = constantOf(cv);
      if (!ct) return notConstant(cv, "its C");
      if (ct->dtype() != c.dtype) return "its C and B differ in dtype";
      if (ct->shape().size() > 2) return "its C has rank > 2";
    }
    return "";
  }
  // MatMul: the output is X's shape with the last dim replaced by N (a 1-D X drops its dim).
  const ir::Value* x = op.input(0);
  if (!x->type.isTensor() || !x->type.hasRank()) {
    c.rank = -1;  // unknown; the channels are still the last axis
    c.axis = -1;
  } else {
    if (x->type.dims->empty()) return "its input is a scalar";
    c.rank = static_cast<int64_t>(x->type.dims->size());
    c.axis = c.rank - 1;
  }
  c.channels = ws[1];
  return "";
}

}  // namespace

bool isLinearOp(const ir::Node& n) {
  const std::string& t = n.opType();
  return n.domain().empty() && (t == "Conv" || t == "ConvTranspose" || t == "Gemm" || t == "MatMul");
}

ChainMatch matchLinearChain(const ir::Graph& g, ir::Value* v) {
  ChainMatch m;
  ir::Node* p = v ? v->producer() : nullptr;
  if (!p || p->graph() != &g || !p->domain().empty()) return m;
  LinearChain c;
  c.out = v;
  c.op = p;
  const ir::Value* bias = nullptr;
  if (p->opType() == "Add" && p->inputs().size() == 2) {
    // Add(linear op, constant): a bias after the op (commuted or not).
    c.op = nullptr;
    for (size_t i = 0; i < 2 && !c.op; ++i) {
      ir::Value* a = p->input(i);
      ir::Node* q = a ? a->producer() : nullptr;
      if (q && q->graph() == &g && isLinearOp(*q) && constantOf(p->input(1 - i))) {
        c.op = q;
        c.bias_add = p;
        bias = p->input(1 - i);
      }
    }
    if (!c.op) return m;
  }
  if (!isLinearOp(*c.op)) return m;
  if (std::string why = singleUseProblem(v, *p); !why.empty()) return {std::nullopt, why};
  if (c.bias_add)
    if (std::string why = singleUseProblem(c.op->output(0), *c.op); !why.empty()) return {std::nullopt, why};
  if (std::string why = describeOp(*c.op, c); !why.empty()) return {std::nullopt, c.op->describe() + ": " + why};
  if (bias) {
    const Tensor* bt = constantOf(bias);
    std::string why;
    if (bt->dtype() != c.dtype) return {std::nullopt, c.bias_add->describe() + " adds a constant of another dtype"};
    auto values = perChannel(*bt, c, why);
    if (!values)
      return {std::nullopt, c.bias_add->describe() + " after " + c.op->describe() + " is not a per-channel bias: " + why};
    c.add_bias = std::move(*values);
  }
  m.chain = std::move(c);
  return m;
}

std::optional<std::vector<double>> perChannel(const Tensor& t, const LinearChain& chain, std::string& why) {
  const Shape& s = t.shape();
  const auto k = static_cast<int64_t>(s.size());
  if (!isFloatingPoint(t.dtype())) {
    why = "the constant is not floating-point";
    return std::nullopt;
  }
  if (chain.rank < 0 && k > 1) {  // a MatMul output of unknown rank: only [N], [1] or a scalar is surely per column
    why = "the output's rank is unknown, so a constant of shape " + shapeToString(s) + " may broadcast it";
    return std::nullopt;
  }
  if (chain.rank >= 0 && k > chain.rank) {
    why = "the constant of shape " + shapeToString(s) + " has a higher rank than the rank-" + std::to_string(chain.rank) +
          " output";
    return std::nullopt;
  }
  for (int64_t i = 0; i < k; ++i) {
    const int64_t j = chain.rank < 0 ? chain.axis : chain.rank - k + i;
    if (s[i] == 1 || (j == chain.axis && s[i] == chain.channels)) continue;
    why = "the constant of shape " + shapeToString(s) + " varies along axis " + std::to_string(j) + " of the rank-" +
          std::to_string(chain.rank) + " output, not only along its channel axis " + std::to_string(chain.axis) + " (" +
          std::to_string(chain.channels) + " channels)";
    return std::nullopt;
  }
  std::vector<double> v = doubles(t);
  if (v.size() == 1) v.assign(static_cast<size_t>(chain.channels), v[0]);
  if (static_cast<int64_t>(v.size()) != chain.channels) {
    why = "the constant of shape " + shapeToString(s) + " is empty";
    return std::nullopt;
  }
  return v;
}

bool allFinite(const std::vector<double>& values, const std::string& what, std::string& why) {
  for (double x : values)
    if (!std::isfinite(x)) {
      why = what + " is not finite";
      return false;
    }
  return true;
}

ir::Value* addConstant(ir::Graph& g, const std::string& base, Tensor t) {
  return g.addInitializer(g.uniqueName(base), std::move(t));
}

ir::Value* detach(ir::Graph& g, ir::Value* y, const std::vector<ir::Node*>& remove) {
  ir::Value* tmp = g.addValue(g.uniqueName(y->name() + "__fusing"), y->type);
  g.replaceAllUses(y, tmp);
  for (ir::Node* n : remove) g.removeNode(n);
  return tmp;
}

void reattach(ir::Graph& g, ir::Value* tmp, ir::Value* y) { g.replaceAllUses(tmp, y); }

std::string counterName(const std::string& op_type) {
  if (op_type == "ConvTranspose") return "conv_transpose";
  std::string out;
  for (char ch : op_type) out += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;  // conv, gemm, matmul, mul, add, sub, div
}

Status foldAffine(ir::Graph& g, const LinearChain& c, const std::vector<double>& scale, const std::vector<double>& shift,
                  ir::Node* last) {
  ir::Node& op = *c.op;
  const std::string type = op.opType();  // a copy: `op` is removed below
  const size_t C = static_cast<size_t>(c.channels);
  POPRT_CHECK(scale.size() == C && shift.size() == C, "fusion: per-channel vectors of the wrong size");
  ir::Value* y = last->output(0);
  ir::Value* x = op.input(0);
  const ir::Value* w_value = op.input(1);
  const Tensor& w = *constantOf(w_value);
  const Shape& ws = w.shape();
  std::vector<double> wv = doubles(w);
  std::vector<double> add_bias = c.add_bias.empty() ? std::vector<double>(C, 0.0) : c.add_bias;
  std::vector<ir::Node*> remove = {last};
  if (c.bias_add) remove.push_back(c.bias_add);
  remove.push_back(&op);
  const std::string name = op.name();
  const std::string domain = op.domain();
  const auto attributes = op.attributes;

  if (type == "Conv" || type == "ConvTranspose") {
    if (type == "Conv") {  // W: [C_out, C_in/group, k...]
      const size_t per = wv.size() / C;
      for (size_t oc = 0; oc < C; ++oc)
        for (size_t i = 0; i < per; ++i) wv[oc * per + i] *= scale[oc];
    } else {  // W: [C_in, C_out/group, k...]; input channel ci belongs to group ci / (C_in/group)
      const auto cin = static_cast<size_t>(ws[0]), cog = static_cast<size_t>(ws[1]);
      const size_t group = C / cog, cig = cin / group, per = wv.size() / (cin * cog);
      for (size_t ci = 0; ci < cin; ++ci)
        for (size_t j = 0; j < cog; ++j) {
          const size_t oc = (ci / cig) * cog + j;
          for (size_t i = 0; i < per; ++i) wv[(ci * cog + j) * per + i] *= scale[oc];
        }
    }
    std::vector<double> bias(C, 0.0);
    if (const Tensor* b = constantOf(op.input(2))) bias = doubles(*b);
    for (size_t i = 0; i < C; ++i) bias[i] = (bias[i] + add_bias[i]) * scale[i] + shift[i];
    ir::Value* w2 = addConstant(g, w_value->name() + "_folded", tensorOf(c.dtype, ws, wv));
    ir::Value* b2 =
        addConstant(g, (name.empty() ? w_value->name() : name) + "_bias_folded", tensorOf(c.dtype, {c.channels}, bias));
    ir::Value* tmp = detach(g, y, remove);
    ir::Node* n = g.addNode(type, {x, w2, b2}, {y}, name, domain);
    n->attributes = attributes;
    reattach(g, tmp, y);
    return okStatus();
  }

  // Gemm and MatMul: the channels are the output columns n; scale column n of B.
  const bool trans_b = type == "Gemm" && op.attrInt("transB", 0) != 0;
  const size_t K = static_cast<size_t>(trans_b ? ws[1] : ws[0]);
  for (size_t k = 0; k < K; ++k)
    for (size_t n = 0; n < C; ++n) wv[trans_b ? n * K + k : k * C + n] *= scale[n];
  ir::Value* w2 = addConstant(g, w_value->name() + "_folded", tensorOf(c.dtype, ws, wv));
  const std::string bias_name = (name.empty() ? w_value->name() : name) + "_bias_folded";

  if (type == "Gemm") {
    // Y*s + t = alpha*A'B's + (beta*C*s + t): the new C has beta 1 folded in.
    const double beta = op.attrFloat("beta", 1.0f);
    const Tensor* ct = constantOf(op.input(2));
    Shape cs = ct ? ct->shape() : Shape{};
    while (cs.size() < 2) cs.insert(cs.begin(), 1);
    const auto M = static_cast<size_t>(cs[0]);  // 1 when C is per column (or absent): the new C is [N]
    std::vector<double> cv = ct ? doubles(*ct) : std::vector<double>{0.0};
    std::vector<double> c2(M * C);
    for (size_t m = 0; m < M; ++m)
      for (size_t n = 0; n < C; ++n) {
        const double old = cv[(cs[0] == 1 ? 0 : m) * static_cast<size_t>(cs[1]) + (cs[1] == 1 ? 0 : n)];
        c2[m * C + n] = (beta * old + add_bias[n]) * scale[n] + shift[n];
      }
    Shape c2_shape = M == 1 ? Shape{c.channels} : Shape{static_cast<int64_t>(M), c.channels};
    ir::Value* b2 = addConstant(g, bias_name, tensorOf(c.dtype, c2_shape, c2));
    ir::Value* tmp = detach(g, y, remove);
    ir::Node* n = g.addNode("Gemm", {x, w2, b2}, {y}, name, domain);
    n->attributes = attributes;
    n->attributes["beta"].value = 1.0f;
    reattach(g, tmp, y);
    return okStatus();
  }

  // MatMul: a bias is needed when the chain had one or the shift is not zero.
  std::vector<double> bias(C);
  bool need_bias = c.bias_add != nullptr;
  for (size_t n = 0; n < C; ++n) {
    bias[n] = add_bias[n] * scale[n] + shift[n];
    need_bias |= shift[n] != 0;
  }
  ir::Value* b2 = need_bias ? addConstant(g, bias_name, tensorOf(c.dtype, {c.channels}, bias)) : nullptr;
  const ir::TensorType mm_type = op.output(0)->type;
  const std::string add_name = c.bias_add ? c.bias_add->name() : name + "_bias";
  ir::Value* tmp = detach(g, y, remove);
  if (!need_bias) {
    g.addNode("MatMul", {x, w2}, {y}, name, domain);
  } else if (c.rank == 2) {
    g.addNode("Gemm", {x, w2, b2}, {y}, name, domain);
  } else {
    ir::Value* mm = g.addValue(g.uniqueName(y->name() + "_matmul"), mm_type);
    g.addNode("MatMul", {x, w2}, {mm}, name, domain);
    g.addNode("Add", {mm, b2}, {y}, add_name, domain);
  }
  reattach(g, tmp, y);
  return okStatus();
}

}  // namespace poprt::passes::fusion
