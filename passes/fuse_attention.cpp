// fuse_attention: multi-head scaled dot-product attention, as PyTorch exports HF BertSelfAttention
// and Paddle2ONNX exports its packed-QKV attention, becomes one ai.graphcore MultiHeadAttention
// (see lib/ops/graphcore_ops.h) per layer:
//
//   Qh = Transpose(Reshape(Q, [B,Sq,H,D]), [0,2,1,3])        K and V likewise; Kᵀ is
//   Kt = Transpose(Reshape(K, [B,Sk,H,D]), [0,2,3,1])        (any chain of Transposes composing
//   S  = MatMul(Qh, Kt) · s (Mul or Div by constants,         to these perms)
//        on Q, on Kᵀ or on the scores) [+ mask]
//   Y  = Reshape(Transpose(MatMul(Softmax(S, last axis), Vh), [0,2,1,3]), [B,Sq,H·Dv])
//
// Packed QKV (Paddle2ONNX): Reshape(QKV, [B,S,n,H,D]) -> Transpose [2,0,3,1,4] -> part i taken by
// Slice+Squeeze, Gather or Split+Squeeze on axis 0; part i is columns [i·H·D, (i+1)·H·D) of QKV,
// which the pass feeds to the fused op through one Split of QKV's last axis.
//
// Q, K and V (the projections, typically MatMul+Add) stay as they are. The mask must be of the
// scores' dtype and broadcast to [B,H,Sq,Sk] without changing its shape; masks applied with Where,
// a scale applied after the mask, or scores not from a plain MatMul are near misses.
#include <algorithm>
#include <map>
#include <numeric>

#include "lib/ops/graphcore_ops.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"
#include "passes/rewrite_rule.h"

namespace poprt::passes {
namespace {

using namespace fusion;
using Perm = std::vector<int64_t>;

Perm transposePerm(const ir::Node& t, size_t rank) {
  Perm perm = t.attrInts("perm");
  if (perm.empty()) {
    perm.resize(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  return perm;
}

// One of Q, K, V traced back to its [B, S, H·D] source.
struct Head {
  ir::Value* source = nullptr;  // [B, S, H·D], or the packed [B, S, n·H·D]
  int64_t part = -1;            // packed: which of the n parts; -1: not packed
  int64_t parts = 0;
  ir::Node* packed_transpose = nullptr;  // the 5-D Transpose the parts are taken from
  std::vector<ir::Dim> dims;             // [B, S, H, D]
  double scale = 1;
};

struct Match {
  Head q, k, v;
  ir::Value* mask = nullptr;
  double scale = 1;
  ir::Node* last = nullptr;
  std::vector<ir::Node*> nodes;
  bool candidate = false;  // a rank-4 Softmax over the last axis: a miss is worth reporting
};

// Absorbs a Mul or Div by a one-element constant producing `v` (single use): returns its input.
ir::Value* throughScale(ir::Value* v, double& scale, std::vector<ir::Node*>& nodes) {
  for (;;) {
    ir::Node* p = v ? v->producer() : nullptr;
    if (!p || !singleUser(v)) return v;
    if (isOp(p, "Mul")) {
      ir::Value* in = nullptr;
      for (size_t i = 0; i < 2 && !in; ++i)
        if (auto c = scalarOperand(*p, p->input(i)); c && !constantOf(p->input(i))) {
          scale *= *c;
          in = p->input(i);
        }
      if (!in) return v;
      nodes.push_back(p);
      v = in;
    } else if (isOp(p, "Div")) {
      auto c = scalarOperand(*p, p->input(0));
      if (!c || *c == 0) return v;
      scale /= *c;
      nodes.push_back(p);
      v = p->input(0);
    } else {
      return v;
    }
  }
}

// The index of the part a Slice/Gather/Split(+Squeeze) takes from axis 0 of the packed tensor
// `t` (of `parts` parts), or -1.
int64_t partIndex(const ir::Node& take, size_t output, int64_t parts) {
  if (isOp(&take, "Gather")) {
    auto idx = scalarOf(take.input(1));
    const Tensor* t = constantOf(take.input(1));
    if (take.attrInt("axis", 0) != 0 || !idx || !t || !t->shape().empty()) return -1;
    auto i = static_cast<int64_t>(*idx);
    return i < 0 ? i + parts : i;
  }
  if (isOp(&take, "Slice")) {
    auto starts = intsFromInputOrAttr(take, 1, "starts"), ends = intsFromInputOrAttr(take, 2, "ends");
    auto axes = take.input(3) || take.hasAttr("axes") ? intsFromInputOrAttr(take, 3, "axes") : std::vector<int64_t>{0};
    auto steps = take.input(4) ? intsFromInputOrAttr(take, 4, "steps") : std::vector<int64_t>{1};
    if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 || axes->size() != 1 ||
        steps->size() != 1)
      return -1;
    if (((*axes)[0] != 0 && (*axes)[0] != -5) || (*steps)[0] != 1) return -1;
    int64_t s = (*starts)[0] < 0 ? (*starts)[0] + parts : (*starts)[0];
    int64_t e = (*ends)[0] < 0 ? (*ends)[0] + parts : std::min((*ends)[0], parts);
    return e - s == 1 && s >= 0 && s < parts ? s : -1;
  }
  if (isOp(&take, "Split")) {
    if (take.attrInt("axis", 0) != 0 || static_cast<int64_t>(take.outputs().size()) != parts) return -1;
    auto split = intsFromInputOrAttr(take, 1, "split");
    if (split)
      for (int64_t s : *split)
        if (s != 1) return -1;
    return static_cast<int64_t>(output);
  }
  return -1;
}

// Traces `v` (rank 4) back to its source; `want` is the perm of v over the [B,S,H,D] layout.
std::string traceHead(ir::Value* v, const Perm& want, Head& h, std::vector<ir::Node*>& nodes) {
  Perm acc = {0, 1, 2, 3};  // v = permute(current, acc)
  for (;;) {
    v = throughScale(v, h.scale, nodes);
    ir::Node* p = v ? v->producer() : nullptr;
    if (!p) return "a head operand has no producer";
    if (!singleUser(v)) return "a head-split value has other uses";
    if (isOp(p, "Transpose")) {
      Perm perm = transposePerm(*p, 4);
      if (perm.size() != 4) return "a head Transpose is not 4-D";
      for (int64_t& a : acc) a = perm[static_cast<size_t>(a)];
      nodes.push_back(p);
      v = p->input(0);
      continue;
    }
    if (isOp(p, "Reshape")) {
      auto out = reshapeResult(*p);
      auto in = dimsOf(p->input(0));
      if (!out || out->size() != 4 || !in || in->size() != 3) return "the head split is not a [B,S,E] -> [B,S,H,D] Reshape";
      const ir::Dim &hd = (*out)[2], &dd = (*out)[3], &e = (*in)[2];
      if (!sameDim((*in)[0], (*out)[0]) || !sameDim((*in)[1], (*out)[1]) || !hd.isStatic() || !dd.isStatic() || !e.isStatic() ||
          hd.value * dd.value != e.value)
        return "the head split is not a [B,S,E] -> [B,S,H,D] Reshape";
      if (acc != want) return "the heads are not transposed as attention needs";
      nodes.push_back(p);
      h.source = p->input(0);
      h.dims = *out;
      return "";
    }
    // Packed: part i of Transpose(Reshape(QKV, [B,S,n,H,D]), [2,0,3,1,4]).
    ir::Node* take = p;
    size_t take_output = 0;
    if (isOp(p, "Squeeze")) {
      auto axes = intsFromInputOrAttr(*p, 1, "axes");
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -5)) return "a head Squeeze is not of axis 0";
      nodes.push_back(p);
      ir::Value* u = p->input(0);
      take = u ? u->producer() : nullptr;
      if (!take || !singleUser(u)) return "a packed head part has other uses";
      for (size_t i = 0; i < take->outputs().size(); ++i)
        if (take->output(i) == u) take_output = i;
    } else if (!isOp(p, "Gather")) {
      return "a head operand comes from " + p->opType() + ", not a Reshape/Transpose head split";
    }
    ir::Value* t5 = take->input(0);
    ir::Node* tr = t5 ? t5->producer() : nullptr;
    if (!isOp(tr, "Transpose")) return "a packed head part is not taken from a Transpose";
    Perm p5 = transposePerm(*tr, 5);
    ir::Node* rs = tr->input(0) ? tr->input(0)->producer() : nullptr;
    if (p5.size() != 5 || p5[0] != 2 || !isOp(rs, "Reshape") || !singleUser(tr->input(0)))
      return "the packed heads are not Transpose(Reshape(QKV, [B,S,n,H,D]), [2,...])";
    auto out = reshapeResult(*rs);
    auto in = dimsOf(rs->input(0));
    if (!out || out->size() != 5 || !in || in->size() != 3 || !(*out)[2].isStatic() || !(*out)[3].isStatic() ||
        !(*out)[4].isStatic() || !(*in)[2].isStatic() || !sameDim((*in)[0], (*out)[0]) || !sameDim((*in)[1], (*out)[1]) ||
        (*out)[2].value * (*out)[3].value * (*out)[4].value != (*in)[2].value)
      return "the packed head split is not a [B,S,n·E] -> [B,S,n,H,D] Reshape";
    h.parts = (*out)[2].value;
    h.part = partIndex(*take, take_output, h.parts);
    if (h.part < 0) return "a packed head part is not one whole part of axis 0";
    // The part's layout over [B,S,H,D] (5-D axes 0,1,3,4), then the transposes after it.
    Perm part_perm;
    for (size_t i = 1; i < 5; ++i) part_perm.push_back(p5[i] < 2 ? p5[i] : p5[i] - 1);
    for (int64_t& a : acc) a = part_perm[static_cast<size_t>(a)];
    if (acc != want) return "the heads are not transposed as attention needs";
    nodes.push_back(take);
    nodes.push_back(tr);
    nodes.push_back(rs);
    h.source = rs->input(0);
    h.packed_transpose = tr;
    h.dims = {(*out)[0], (*out)[1], (*out)[3], (*out)[4]};
    return "";
  }
}

// Softmax over the last axis of a rank-4 input, at the model's opset.
std::string lastAxisSoftmax(const ir::Node& sm, int64_t opset) {
  auto dims = dimsOf(sm.input(0));
  if (!dims || dims->size() != 4) return "the scores are not rank 4";
  const int64_t axis = sm.attrInt("axis", opset >= 13 ? -1 : 1);
  // Before opset 13 Softmax flattens from `axis`; from the last axis that is the same thing.
  if (axis != -1 && axis != 3) return "Softmax is not over the last axis";
  return "";
}

std::string matchAttention(ir::Node& sm, int64_t opset, Match& m) {
  if (std::string why = lastAxisSoftmax(sm, opset); !why.empty()) return why;
  m.candidate = true;
  m.nodes = {&sm};
  // Backwards from the Softmax: [Add mask], scales, MatMul(Qh, Kt).
  ir::Value* s = sm.input(0);
  ir::Node* p = s->producer();
  ir::Node* qk = nullptr;
  if (isOp(p, "Add") && singleUser(s)) {
    for (size_t i = 0; i < 2 && !qk; ++i) {
      std::vector<ir::Node*> scale_nodes;
      double scale = 1;
      ir::Value* base = throughScale(p->input(i), scale, scale_nodes);
      ir::Node* mm = base ? base->producer() : nullptr;
      if (isOp(mm, "MatMul") && singleUser(base)) {
        qk = mm;
        m.mask = p->input(1 - i);
        m.scale = scale;
        m.nodes.push_back(p);
        m.nodes.insert(m.nodes.end(), scale_nodes.begin(), scale_nodes.end());
      }
    }
  } else {
    ir::Value* base = throughScale(s, m.scale, m.nodes);
    ir::Node* mm = base ? base->producer() : nullptr;
    if (isOp(mm, "MatMul") && singleUser(base)) qk = mm;
  }
  if (!qk) return "the Softmax input is not MatMul(Q, Kᵀ) [· scale] [+ mask] (from " + (p ? p->opType() : "an input") + ")";
  m.nodes.push_back(qk);
  ir::Node* pv = singleUser(sm.output(0));
  if (!isOp(pv, "MatMul") || pv->input(0) != sm.output(0)) return "the probabilities are not multiplied by V";
  m.nodes.push_back(pv);
  if (auto why = traceHead(qk->input(0), {0, 2, 1, 3}, m.q, m.nodes); !why.empty()) return "Q: " + why;
  if (auto why = traceHead(qk->input(1), {0, 2, 3, 1}, m.k, m.nodes); !why.empty()) return "K: " + why;
  if (auto why = traceHead(pv->input(1), {0, 2, 1, 3}, m.v, m.nodes); !why.empty()) return "V: " + why;
  if (m.v.scale != 1) return "V is scaled";
  m.scale *= m.q.scale * m.k.scale;
  // Heads back: Transpose [0,2,1,3], Reshape to [B, Sq, H·Dv].
  ir::Node* tr = singleUser(pv->output(0));
  if (!isOp(tr, "Transpose") || transposePerm(*tr, 4) != Perm{0, 2, 1, 3}) return "the context is not transposed back";
  ir::Node* rs = singleUser(tr->output(0));
  if (!isOp(rs, "Reshape")) return "the context heads are not merged by a Reshape";
  m.nodes.push_back(tr);
  m.nodes.push_back(rs);
  m.last = rs;
  // Shapes: one H and D for Q and K, one batch, one Sk for K and V.
  const auto &q = m.q.dims, &k = m.k.dims, &v = m.v.dims;
  if (q[2].value != k[2].value || q[2].value != v[2].value) return "Q, K and V have different head counts";
  if (q[3].value != k[3].value) return "Q and K have different head sizes";
  if (!sameDim(q[0], k[0]) || !sameDim(q[0], v[0]) || !sameDim(k[1], v[1])) return "Q, K and V do not share batch/sequence dims";
  auto out = reshapeResult(*rs);
  if (!out || out->size() != 3 || !sameDim((*out)[0], q[0]) || !sameDim((*out)[1], q[1]) || !(*out)[2].isStatic() ||
      (*out)[2].value != v[2].value * v[3].value)
    return "the heads are not merged back to [B, Sq, H·Dv]";
  // The mask: the scores' dtype, broadcasting to [B,H,Sq,Sk] without growing it.
  const DType dt = m.q.source->type.dtype;
  if (!isFloatingPoint(dt) || m.k.source->type.dtype != dt || m.v.source->type.dtype != dt)
    return "Q, K and V are not of one floating-point dtype";
  if (m.mask) {
    auto md = dimsOf(m.mask);
    const std::vector<ir::Dim> scores = {q[0], q[2], q[1], k[1]};
    if (m.mask->type.dtype != dt || !md || md->size() > 4) return "the mask is not of the scores' dtype and rank <= 4";
    for (size_t i = 0; i < md->size(); ++i) {
      const ir::Dim& d = (*md)[md->size() - 1 - i];
      if (!(d.isStatic() && d.value == 1) && !sameDim(d, scores[3 - i])) return "the mask does not broadcast to [B,H,Sq,Sk]";
    }
  }
  // A packed source must be consumed whole by this attention (its parts all go to Q, K or V).
  for (const Head* h : {&m.q, &m.k, &m.v}) {
    if (!h->packed_transpose) continue;
    for (const ir::Use& u : h->packed_transpose->output(0)->uses())
      if (std::find(m.nodes.begin(), m.nodes.end(), u.node) == m.nodes.end()) return "the packed QKV has other uses";
  }
  return "";
}

class FuseAttention : public RewriteRule<Match> {
 protected:
  std::vector<std::string> rootOpTypes() const override { return {"Softmax"}; }

  Found<Match> match(ir::Graph&, ir::Node& sm, PassContext&) override {
    Match m;
    std::string why = matchAttention(sm, opset(), m);
    if (why.empty()) return m;
    // Only Softmaxes over MatMul scores are attention candidates worth a report.
    return m.candidate ? Found<Match>::nearMiss(why) : Found<Match>::none();
  }

  Status rewrite(ir::Graph& graph, Match& m, PassContext& ctx) override {
    // Packed sources: one Split of the last axis into the n parts, shared by Q, K and V.
    std::map<ir::Value*, std::vector<ir::Value*>> splits;
    auto inputOf = [&](const Head& h) -> ir::Value* {
      if (h.part < 0) return h.source;
      auto& parts = splits[h.source];
      if (parts.empty()) {
        std::vector<ir::Dim> dims = *h.source->type.dims;
        dims.back() = ir::Dim::fixed(dims.back().value / h.parts);
        ir::TensorType type = h.source->type;
        type.dims = dims;
        for (int64_t i = 0; i < h.parts; ++i)
          parts.push_back(graph.addValue(graph.uniqueName(h.source->name() + "_part" + std::to_string(i)), type));
        ir::Node* split = graph.addNode("Split", {h.source}, parts, graph.uniqueName(h.source->name() + "_split"));
        split->attributes["axis"].value = int64_t{-1};
        if (opset() >= 18) split->attributes["num_outputs"].value = h.parts;
      }
      return parts[static_cast<size_t>(h.part)];
    };
    std::vector<ir::Value*> inputs = {inputOf(m.q), inputOf(m.k), inputOf(m.v)};
    if (m.mask) inputs.push_back(m.mask);
    ir::Node* mha = replaceWithNode(graph, m.last, "MultiHeadAttention", ops::graphcore::kDomain, inputs);
    mha->attributes["num_heads"].value = m.q.dims[2].value;
    mha->attributes["scale"].value = static_cast<float>(m.scale);
    refineType(mha->output(0), ir::TensorType{m.q.source->type.dtype,
                                              std::vector<ir::Dim>{m.q.dims[0], m.q.dims[1],
                                                                   ir::Dim::fixed(m.v.dims[2].value * m.v.dims[3].value)}});
    importGraphcoreDomain(ctx.model);
    ctx.count(m.q.part >= 0 ? "attention_packed_qkv" : "attention");
    return okStatus();
  }
};

}  // namespace

std::unique_ptr<Pass> makeFuseAttention() { return std::make_unique<FuseAttention>(); }

}  // namespace poprt::passes
