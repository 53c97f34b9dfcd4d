// float_to_half (--precision fp16): float32 weights and activations become float16, op by op as
// the registry's fp16 policy says (lib/ops/registry.h):
//   Convert, AccumulateFp32  the op runs on float16 data (AccumulateFp32 ops — matmul, conv,
//                            reductions, pooling averages — have the device accumulate in fp32)
//   TypeAgnostic             the op follows its data: float16 when a data input already is
//   KeepFp32                 the op stays float32, with Casts around it
// Which inputs and outputs are data comes from the op's ONNX schema (lib/onnx/type_roles.h):
// Resize's scales, Pow's exponent, index and shape inputs keep their dtype; Clip's bounds follow
// the data. Also kept in float32: the nodes of --fp16_skip_op_types / --fp16_skip_node_names,
// ops without an ONNX schema or whose schema at the model's opset has no float16, nodes with a
// float32 output their schema does not type as their data, and, with
// --enable_avoid_overflow_patterns, the overflow-prone paths of fp16_overflow.h and the nodes the
// range check of fp16_ranges.h finds handling values beyond the float16 range on the calibration
// inputs; with --fp16_keep_vector_regions, regions of vector ops only between float32 values. Control-flow nodes (If/Loop/Scan)
// keep their float32 results; their bodies convert like the main graph, each casting its results back (not under a node a skip
// list names).
//
// Float32 constants that an fp16 op reads are converted (values beyond ±65504 clamped, with a
// warning naming the constant); a constant only fp16 ops read is converted in place (it keeps its
// name). Model inputs and outputs keep float32 (Casts at the boundary) unless --fp16_io.
// The Casts are memoised per value: an fp16 value read by several fp32 ops is cast once, and no
// fp16 op ever reads an fp16 value through a round trip. fold_casts then folds what chains remain
// and moves Casts through layout ops.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

#include "lib/onnx/type_roles.h"
#include "lib/ops/graphcore_ops.h"
#include "passes/fp16_constants.h"
#include "passes/fp16_overflow.h"
#include "passes/fp16_ranges.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

using onnxio::TypeRole;

bool isTensorOf(const ir::Value* v, DType dtype) {
  return v && v->type.isTensor() && v->type.kind == ValueKind::Tensor && v->type.dtype == dtype;
}

// The tensor of a constant value: an initializer that is not a graph input, or the `value` of a
// Constant node (subgraph bodies keep theirs: constant folding runs on the main graph only).
const Tensor* constantTensor(const ir::Value* v) {
  if (v->isInitializer()) return ir::constantOf(v);
  const ir::Node* p = v->producer();
  if (!fusion::isOp(p, "Constant")) return nullptr;
  auto it = p->attributes.find("value");
  if (it == p->attributes.end()) return nullptr;
  const Tensor* t = std::get_if<Tensor>(&it->second.value);
  return t && t->dtype() == DType::Float ? t : nullptr;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// How one node is converted.
enum class Mode {
  Untouched,  // no float32 data (or data of another float type): left as it is
  Fp16,       // runs on float16 data
  Fp32,       // kept float32 on purpose (the reason is counted and reported)
};

struct Decision {
  Mode mode = Mode::Untouched;
  std::string counter;  // why it stays fp32: "kept_policy", "kept_skip_op_type"...
  std::string reason;
  std::optional<onnxio::NodeTypeRoles> roles;
};

class FloatToHalf : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    g_ = &graph;
    ctx_ = &ctx;
    const Fp16Options& o = ctx.fp16;
    opset_ = ctx.model.opsetVersion();
    skip_types_.insert(o.skip_op_types.begin(), o.skip_op_types.end());
    skip_names_.insert(o.skip_node_names.begin(), o.skip_node_names.end());
    if (o.avoid_overflow_patterns) {
      overflow_ = overflowProneNodes(graph);
      if (!o.calibration_inputs.empty()) {
        auto r = outOfRangeNodes(ctx.model, o.calibration_inputs);
        if (r.ok())
          out_of_range_ = std::move(r).value();
        else
          ctx.warn("range check skipped: the float32 model does not run on the calibration inputs: " + r.error().message());
      }
    }
    reportUnmatchedSkips(graph);

    // The inputs first: with --fp16_io a float32 model input becomes a float16 one.
    if (o.io)
      for (ir::Value* in : graph.inputs())
        if (!in->isInitializer() && isTensorOf(in, DType::Float)) {
          in->type.dtype = DType::Float16;
          markHalf(in);
          will_be_half_.insert(in);
          ctx.count("io_converted");
        }

    // Decide every node (subgraph bodies included) before changing any, so a constant's readers
    // are all known when it converts; then rewrite, graph by graph.
    decideGraph(graph, /*forced_fp32=*/"");
    if (o.keep_vector_regions) keepVectorOnlyRegions(graph);
    halveConstantLayoutOps(graph);
    for (ir::Graph* body : bodies_) halveConstantLayoutOps(*body);
    applyGraph(graph);
    if (o.io) convertOutputs();
    ctx.count("weight_bytes_fp32", weight_bytes_fp32_);
    ctx.count("weight_bytes_fp16", weight_bytes_fp16_);
    ctx.count("constants_clamped", clamped_constants_);
    const bool changed = ctx.stats.counters["nodes_fp16"] > 0 || ctx.stats.counters["io_converted"] > 0 ||
                         ctx.stats.counters["casts_inserted"] > 0;
    for (ir::Graph* body : bodies_) {
      POPRT_TRY(body->topoSort());
      body->removeUnusedValues(/*initializers_too=*/true);
    }
    POPRT_TRY(fusion::finishRewrites(graph));
    graph.removeUnusedValues(/*initializers_too=*/true);
    return changed;
  }

 private:
  // Decides the nodes of `g` and, depth first, of the bodies of its control-flow nodes (a body
  // reads the values decided before its node). `forced_fp32`: why every node of `g` stays float32
  // (the body of a node the skip lists name), or "".
  void decideGraph(ir::Graph& g, const std::string& forced_fp32) {
    if (ctx_->fp16.avoid_overflow_patterns && &g != g_) overflow_.merge(overflowProneNodes(g));
    for (const auto& node : g.nodes()) {
      ir::Node* n = node.get();
      Decision d = decide(*n);
      if (!forced_fp32.empty() && d.mode == Mode::Fp16) {
        d.mode = Mode::Fp32;
        d.counter = "kept_skip_body";
        d.reason = forced_fp32;
      }
      if (d.mode == Mode::Fp16)
        for (size_t i = 0; i < n->outputs().size(); ++i)
          if (d.roles->outputs[i] == TypeRole::Data && isTensorOf(n->output(i), DType::Float)) will_be_half_.insert(n->output(i));
      std::string body_forced = forced_fp32;
      if (body_forced.empty() && skipped(*n)) body_forced = "in the body of " + n->describe() + ", which a skip list names";
      decisions_[n] = std::move(d);
      for (ir::Graph* body : n->subgraphs()) {
        bodies_.push_back(body);
        decideGraph(*body, body_forced);
      }
    }
  }

  // A connected region of float16 nodes of `g` with no matrix op (MatMul, Gemm, Conv, attention,
  // recurrent cells: the ops whose float16 rate doubles) that reads or feeds a float32 activation stays float32:
  // each of its Casts takes a superstep of its own on the device while its vector ops save
  // little (a small vector op costs about one sync whatever its dtype). The weights it reads are
  // still stored as float16 in the PopEF.
  static bool isMatrixOp(const ir::Node& n) {
    static const std::set<std::string> host_matrix_ops = {"ConvTranspose", "Einsum", "RNN", "GRU", "LSTM"};
    const ops::OpDef* def = ops::findOp(n.domain(), n.opType());
    return (n.domain().empty() && host_matrix_ops.count(n.opType())) ||
           (def && (def->lowering == ops::LoweringFamily::MatMul || def->lowering == ops::LoweringFamily::Conv ||
                    def->lowering == ops::LoweringFamily::Attention));
  }

  void keepVectorOnlyRegions(ir::Graph& g) {
    std::vector<ir::Node*> half;
    std::map<const ir::Node*, size_t> index;
    for (const auto& n : g.nodes())
      if (decisions_[n.get()].mode == Mode::Fp16) {
        index[n.get()] = half.size();
        half.push_back(n.get());
      }
    std::vector<size_t> root(half.size());
    for (size_t i = 0; i < half.size(); ++i) root[i] = i;
    std::function<size_t(size_t)> find = [&](size_t i) { return root[i] == i ? i : root[i] = find(root[i]); };
    for (size_t i = 0; i < half.size(); ++i)
      for (const ir::Value* v : half[i]->inputs())
        if (v && v->producer())
          if (auto it = index.find(v->producer()); it != index.end()) root[find(i)] = find(it->second);
    std::vector<bool> matrix(half.size(), false), cast_bounded(half.size(), false);
    for (size_t i = 0; i < half.size(); ++i) {
      const ir::Node& n = *half[i];
      const size_t r = find(i);
      matrix[r] = matrix[r] || isMatrixOp(n);
      const auto& roles = *decisions_[&n].roles;
      for (size_t k = 0; k < n.inputs().size(); ++k) {
        const ir::Value* v = n.input(k);
        if (v && roles.inputs[k] == TypeRole::Data && isTensorOf(v, DType::Float) && !constantTensor(v) &&
            !will_be_half_.count(v))
          cast_bounded[r] = true;
      }
      for (const ir::Value* v : n.outputs()) {
        if (!v || !will_be_half_.count(v)) continue;
        if (v->isGraphOutput() && !ctx_->fp16.io) cast_bounded[r] = true;
        for (const ir::Use& use : v->uses())
          if (!index.count(use.node)) cast_bounded[r] = true;
      }
    }
    for (size_t i = 0; i < half.size(); ++i) {
      const size_t r = find(i);
      if (matrix[r] || !cast_bounded[r]) continue;
      Decision& d = decisions_[half[i]];
      d.mode = Mode::Fp32;
      d.counter = "kept_vector_region";
      d.reason = "float16 would only run vector ops between Casts from and to float32, which cost more than it saves";
      for (const ir::Value* v : half[i]->outputs()) will_be_half_.erase(v);
    }
  }

  // A layout op (TypeAgnostic: Slice, Concat, Unsqueeze...) of float32 constants alone (directly
  // or through other such ops), whose every reader converts, converts too, so the constant is
  // stored as float16 rather than kept float32 and cast at run time. Constant folding leaves such
  // ops in subgraph bodies (an LSTM in an If slicing and stacking its gate weights). Last
  // readers first, so chains convert whole.
  void halveConstantLayoutOps(ir::Graph& g) {
    for (auto it = g.nodes().rbegin(); it != g.nodes().rend(); ++it) {
      ir::Node& n = **it;
      if (!constantLayoutOp(n)) continue;
      Decision& d = decisions_[&n];
      bool half_readers = true;
      for (size_t i = 0; i < n.outputs().size(); ++i)
        if (d.roles->outputs[i] == TypeRole::Data && isTensorOf(n.output(i), DType::Float))
          half_readers = half_readers && !n.output(i)->uses().empty() && onlyHalfDataReaders(n.output(i));
      if (!half_readers) continue;
      d.mode = Mode::Fp16;
      for (size_t i = 0; i < n.outputs().size(); ++i)
        if (d.roles->outputs[i] == TypeRole::Data && isTensorOf(n.output(i), DType::Float)) will_be_half_.insert(n.output(i));
    }
  }

  // Is `n` an undecided layout op whose float data inputs are all constants or made by such ops?
  bool constantLayoutOp(const ir::Node& n) {
    if (auto it = constant_layout_.find(&n); it != constant_layout_.end()) return it->second;
    const Decision& d = decisions_[&n];
    const ops::OpDef* def = ops::findOp(n.domain(), n.opType());
    bool ok = d.mode == Mode::Untouched && d.roles && def && def->fp16 == ops::Fp16Policy::TypeAgnostic;
    bool float_data = false;
    for (size_t i = 0; ok && i < n.inputs().size(); ++i) {
      const ir::Value* v = n.input(i);
      if (!v || d.roles->inputs[i] != TypeRole::Data) continue;
      float_data = true;
      ok = isTensorOf(v, DType::Float) && (constantTensor(v) || (v->producer() && constantLayoutOp(*v->producer())));
    }
    return constant_layout_[&n] = ok && float_data;
  }

  // Rewrites the nodes of `g` as decided, then the bodies of its control-flow nodes.
  void applyGraph(ir::Graph& g) {
    std::vector<ir::Node*> order;
    for (const auto& n : g.nodes()) order.push_back(n.get());
    for (ir::Node* n : order) {
      Decision& d = decisions_[n];
      if (d.mode == Mode::Fp16) {
        convertNode(*n, d);
        ctx_->count("nodes_fp16");
      } else {
        if (d.mode == Mode::Fp32) {
          ctx_->count("nodes_kept_fp32");
          ctx_->count(d.counter);
          ctx_->nearMiss(*n, "stays float32: " + d.reason);
        }
        for (size_t i = 0; i < n->inputs().size(); ++i)
          if (ir::Value* v = n->input(i); v && half_values_.count(v)) n->setInput(i, asFloat(v));
      }
      for (ir::Graph* body : n->subgraphs()) applyGraph(*body);
    }
  }

  bool skipped(const ir::Node& n) const {
    if (skip_names_.count(n.name())) return true;
    for (const std::string& key : skipOpTypeKeys(n))
      if (skip_types_.count(key)) return true;
    return false;
  }

  void markHalf(ir::Value* v) { half_values_.insert(v); }

  // Names and op types of the skip lists that match no node: a warning, as a list written for
  // another model or a typo keeps nothing in fp32. (Op types no op has fail earlier, in
  // checkSkipOpTypes.)
  void reportUnmatchedSkips(const ir::Graph& graph) {
    std::set<std::string> types, names;
    std::function<void(const ir::Graph&)> collect = [&](const ir::Graph& g) {
      for (const auto& n : g.nodes()) {
        for (const std::string& key : skipOpTypeKeys(*n)) types.insert(key);
        names.insert(n->name());
        for (const ir::Graph* body : n->subgraphs()) collect(*body);
      }
    };
    collect(graph);
    // (The lists match the graph after the fusions: a MatMul + Add is a Gemm by then.)
    for (const auto& t : skip_types_)
      if (!types.count(t)) ctx_->warn("--fp16_skip_op_types: the optimised model has no " + t + " node");
    for (const auto& name : skip_names_)
      if (!names.count(name)) ctx_->warn("--fp16_skip_node_names: the optimised model has no node named '" + name + "'");
  }

  Decision decide(const ir::Node& n) {
    Decision d;
    d.roles = onnxio::typeRoles(n, opset_);
    // BatchNormalization from opset 15 lets its scale, bias and statistics keep their own type (T1,
    // T2); the device runs one dtype per node and would leave a float16 one with float32
    // parameters on the host. They follow X to float16, as they must before opset 15.
    if (d.roles && n.domain().empty() && n.opType() == "BatchNormalization")
      for (size_t i = 1; i < d.roles->inputs.size(); ++i) d.roles->inputs[i] = TypeRole::Data;
    // Does the node have float32 data at all, and data of another float type (left alone)?
    bool float_data = false, other_float = false;
    auto look = [&](const ir::Value* v, TypeRole role) {
      if (!v || role != TypeRole::Data || !v->type.isTensor()) return;
      if (v->type.dtype == DType::Float)
        float_data = true;
      else if (isFloatingPoint(v->type.dtype) && v->type.dtype != DType::Float16)
        other_float = true;
    };
    if (d.roles) {
      for (size_t i = 0; i < n.inputs().size(); ++i) look(n.input(i), d.roles->inputs[i]);
      for (size_t i = 0; i < n.outputs().size(); ++i) look(n.output(i), d.roles->outputs[i]);
    } else {
      for (const ir::Value* v : n.inputs()) float_data |= isTensorOf(v, DType::Float);
      for (const ir::Value* v : n.outputs()) float_data |= isTensorOf(v, DType::Float);
    }
    if (!float_data || other_float) return d;

    auto keep = [&](const char* counter, std::string reason) {
      d.mode = Mode::Fp32;
      d.counter = counter;
      d.reason = std::move(reason);
      return d;
    };
    const ops::OpDef* def = ops::findOp(n.domain(), n.opType());
    if (!def) return keep("kept_unknown_op", "the op registry does not know it");
    // Control flow: the node's own outputs stay float32 (each body casts its results back); the
    // bodies' nodes are decided on their own.
    if (!n.subgraphs().empty())
      return keep("control_flow", "a control-flow node (its bodies convert; their results are cast back)");
    if (!d.roles) return keep("kept_no_schema", "ONNX has no schema for it");
    for (const std::string& key : skipOpTypeKeys(n))
      if (skip_types_.count(key)) return keep("kept_skip_op_type", "--fp16_skip_op_types " + key);
    if (skip_names_.count(n.name())) return keep("kept_skip_node_name", "--fp16_skip_node_names " + n.name());
    if (isIntegerArithmetic(n)) return keep("kept_integer_arithmetic", "a quantized op's integers, exact in float32 only");
    if (auto it = overflow_.find(&n); it != overflow_.end()) return keep("kept_overflow_pattern", it->second);
    if (auto it = out_of_range_.find(&n); it != out_of_range_.end()) return keep("kept_out_of_range", it->second);
    if (def->fp16 == ops::Fp16Policy::KeepFp32) return keep("kept_policy", "its fp16 policy is KeepFp32");
    if (!d.roles->float16_allowed)
      return keep("kept_no_float16_schema", "its ONNX schema at opset " + std::to_string(opset_) + " has no float16");
    // A float32 output the schema ties to no input: an attribute may set its dtype (Bernoulli's,
    // EyeLike's dtype) or, without it, the input's does — and some schemas say less than their
    // inference does (GridSample-16's Y). Converting the input could change the output's type.
    for (size_t i = 0; i < n.outputs().size() && !fusion::isOp(&n, "Cast"); ++i)  // (Cast's `to` alone sets it)
      if (d.roles->outputs[i] == TypeRole::Fixed && isTensorOf(n.output(i), DType::Float))
        return keep("kept_output_type",
                    "its float32 output '" + n.output(i)->name() + "' is not typed by its schema as its data");
    if (def->fp16 == ops::Fp16Policy::TypeAgnostic) {
      bool half_input = false;
      for (size_t i = 0; i < n.inputs().size(); ++i)
        half_input |= d.roles->inputs[i] == TypeRole::Data && will_be_half_.count(n.input(i));
      if (!half_input) return d;  // moves float32 data: stays float32, nothing to say
    }
    if (def->fp16 == ops::Fp16Policy::Convert && finishesFloat32Output(n, *d.roles))
      return keep("kept_for_output_precision",
                  "it makes a float32 output from one value: cast before it, not after, so the output is not rounded to "
                  "float16 (tiny sigmoid scores would lose their digits)");
    d.mode = Mode::Fp16;
    return d;
  }

  // Does `n` compute a float32 result (a model output without --fp16_io, or a body's result),
  // possibly through layout ops only, from one non-constant value (any other data input being a
  // one-element constant)? Then running it in float32 costs the same single Cast — before it
  // instead of after — and keeps the float16 rounding off the output.
  bool finishesFloat32Output(const ir::Node& n, const onnxio::NodeTypeRoles& roles) const {
    size_t activations = 0;
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      const ir::Value* v = n.input(i);
      if (!v || roles.inputs[i] != TypeRole::Data) continue;
      if (const Tensor* c = constantTensor(v)) {
        if (c->numElements() > 1) return false;  // weights: they would stay float32
      } else if (++activations > 1) {
        return false;
      }
    }
    if (activations != 1 || n.outputs().size() != 1 || roles.outputs[0] != TypeRole::Data) return false;
    for (const ir::Value* v = n.output(0);;) {
      if (!isTensorOf(v, DType::Float)) return false;
      if (v->isGraphOutput()) return !(ctx_->fp16.io && v->graph() == g_) && v->uses().empty();
      const ir::Node* next = fusion::singleUser(v);
      if (!next || next->outputs().size() != 1 || next->input(0) != v) return false;
      const ops::OpDef* def = ops::findOp(next->domain(), next->opType());
      if (!def || def->fp16 != ops::Fp16Policy::TypeAgnostic ||
          (def->lowering != ops::LoweringFamily::View && def->lowering != ops::LoweringFamily::Rearrange))
        return false;
      v = next->output(0);
    }
  }

  void convertNode(ir::Node& n, const Decision& d) {
    for (size_t i = 0; i < n.inputs().size(); ++i) {
      ir::Value* v = n.input(i);
      if (!v) continue;
      if (d.roles->inputs[i] == TypeRole::Data && isTensorOf(v, DType::Float))
        n.setInput(i, asHalf(v, &n));
      else if (d.roles->inputs[i] == TypeRole::Fixed && half_values_.count(v))
        n.setInput(i, asFloat(v));  // a parameter input fed by a converted value stays float32
    }
    for (size_t i = 0; i < n.outputs().size(); ++i) {
      ir::Value* out = n.output(i);
      if (d.roles->outputs[i] != TypeRole::Data || !isTensorOf(out, DType::Float)) continue;
      if (out->isGraphOutput() && !(ctx_->fp16.io && out->graph() == g_)) {
        // The model output (or a body's result) keeps its Value, name and float32: the node makes
        // an fp16 value and a Cast makes the output from it (fp16 readers read the fp16 value).
        ir::TensorType t = out->type;
        t.dtype = DType::Float16;
        ir::Graph& g = *n.graph();
        ir::Value* h = g.addValue(g.uniqueName(out->name() + "_fp16"), t);
        g.setNodeOutput(&n, i, h);
        addCast(h, out, DType::Float);
        markHalf(h);
        half_of_[out] = h;
        continue;
      }
      if (out->isGraphOutput()) ctx_->count("io_converted");
      out->type.dtype = DType::Float16;
      markHalf(out);
    }
  }

  // `v` (float32) as float16 for `reader` (named in warnings): a converted constant or a
  // memoised Cast.
  ir::Value* asHalf(ir::Value* v, const ir::Node* reader) {
    if (auto it = half_of_.find(v); it != half_of_.end()) return it->second;
    ir::Value* h = nullptr;
    if (const Tensor* c = constantTensor(v)) {
      Tensor t = toHalf(*c, v->name(), *reader);
      weight_bytes_fp32_ += static_cast<int64_t>(c->byteSize());
      weight_bytes_fp16_ += static_cast<int64_t>(t.byteSize());
      ctx_->count("constants_converted");
      if (onlyHalfDataReaders(v)) {  // converted in place: it keeps its name
        if (v->isInitializer()) {
          v->graph()->setInitializer(v, std::make_shared<const Tensor>(std::move(t)));
        } else {
          v->producer()->attributes["value"].value = std::move(t);
          v->type.dtype = DType::Float16;
        }
        markHalf(v);
        return v;
      }
      h = v->graph()->addInitializer(v->graph()->uniqueName(v->name() + "_fp16"), std::move(t));
    } else {
      ir::TensorType t = v->type;
      t.dtype = DType::Float16;
      h = v->graph()->addValue(v->graph()->uniqueName(v->name() + "_fp16"), t);
      addCast(v, h, DType::Float16);
    }
    markHalf(h);
    half_of_[v] = h;
    return h;
  }

  // A float16 value (converted by this pass) as float32: a memoised Cast.
  ir::Value* asFloat(ir::Value* h) {
    if (auto it = float_of_.find(h); it != float_of_.end()) return it->second;
    ir::TensorType t = h->type;
    t.dtype = DType::Float;
    std::string base = h->name();
    if (base.size() > 5 && base.ends_with("_fp16")) base.resize(base.size() - 5);
    ir::Value* f = h->graph()->addValue(h->graph()->uniqueName(base + "_fp32"), t);
    addCast(h, f, DType::Float);
    float_of_[h] = f;
    return f;
  }

  // Adds the Cast to `to`'s graph (the one of the value cast: visible to all its readers, in nested
  // bodies too).
  void addCast(ir::Value* from, ir::Value* to, DType dtype) {
    ir::Graph& g = *to->graph();
    ir::Node* cast = g.addNode("Cast", {from}, {to}, g.uniqueName(to->name() + "_cast"));
    cast->attributes["to"].value = static_cast<int64_t>(dtype);
    ctx_->count("casts_inserted");
  }

  // Is every reader of constant `v` a converted node reading it as data?
  bool onlyHalfDataReaders(const ir::Value* v) {
    if (v->isGraphOutput()) return false;
    for (const ir::Use& u : v->uses()) {
      auto it = decisions_.find(u.node);
      if (it == decisions_.end() || it->second.mode != Mode::Fp16 || it->second.roles->inputs[u.input_index] != TypeRole::Data)
        return false;
    }
    return true;
  }

  // The float16 copy of a float32 constant, with a warning for what it lost: values clamped, or
  // every non-zero value flushed to zero (an epsilon: the op would compute something else).
  Tensor toHalf(const Tensor& t, const std::string& name, const ir::Node& reader) {
    HalfConstant h = toHalfConstant(t);
    if (h.clamped > 0) {
      ++clamped_constants_;
      ctx_->count("values_clamped", h.clamped);
      ctx_->warn("constant '" + name + "': " + std::to_string(h.clamped) + " of " + std::to_string(t.numElements()) +
                 " values beyond the float16 range (largest magnitude " + fmt(h.largest_clamped) + ") clamped to ±65504");
    }
    if (h.flushed > 0) {
      ctx_->count("values_flushed_to_zero", h.flushed);
      if (h.flushed == h.nonzero)
        ctx_->warn("constant '" + name +
                   "': every non-zero value is below the float16 range and became 0 (--fp16_skip_node_names " + reader.name() +
                   " keeps " + reader.describe() + " in float32)");
    }
    return std::move(h.tensor);
  }

  // --fp16_io: every float32 model output becomes float16 (a Cast after a node kept in fp32).
  void convertOutputs() {
    for (size_t i = 0; i < g_->outputs().size(); ++i) {
      ir::Value* out = g_->outputs()[i];
      if (!isTensorOf(out, DType::Float)) continue;
      ctx_->count("io_converted");
      ir::Node* producer = out->producer();
      if (!producer) {  // a model input or a constant returned as it is
        ir::TensorType t = out->type;
        t.dtype = DType::Float16;
        ir::Value* h = g_->addValue(g_->uniqueName(out->name() + "_fp16"), t);
        addCast(out, h, DType::Float16);
        g_->setOutput(i, h);
        continue;
      }
      size_t slot = 0;
      while (producer->output(slot) != out) ++slot;
      ir::Value* f = g_->addValue(g_->uniqueName(out->name() + "_fp32"), out->type);
      g_->setNodeOutput(producer, slot, f);
      std::vector<ir::Use> uses = out->uses();
      for (const ir::Use& u : uses) u.node->setInput(u.input_index, f);
      out->type.dtype = DType::Float16;
      addCast(f, out, DType::Float16);
    }
  }

  ir::Graph* g_ = nullptr;
  PassContext* ctx_ = nullptr;
  int64_t opset_ = 0;
  std::set<std::string> skip_types_, skip_names_;
  std::map<const ir::Node*, std::string> overflow_, out_of_range_;
  std::map<const ir::Node*, Decision> decisions_;
  std::set<const ir::Value*> will_be_half_;          // float32 values the decided nodes make float16
  std::map<const ir::Node*, bool> constant_layout_;  // constantLayoutOp, memoised
  std::vector<ir::Graph*> bodies_;                   // the subgraphs visited
  std::set<ir::Value*> half_values_;                 // float16 values this pass made
  std::map<const ir::Value*, ir::Value*> half_of_;   // float32 value -> its float16 version
  std::map<const ir::Value*, ir::Value*> float_of_;  // float16 value -> its float32 Cast
  int64_t weight_bytes_fp32_ = 0, weight_bytes_fp16_ = 0, clamped_constants_ = 0;
};

}  // namespace

namespace {
constexpr const char* kIntegerArithmetic = "poprt: a quantized op's integer arithmetic (exact in float32 only)";
}  // namespace

void markIntegerArithmetic(ir::Node& n) { n.doc_string = kIntegerArithmetic; }
bool isIntegerArithmetic(const ir::Node& n) { return n.doc_string == kIntegerArithmetic; }

std::vector<std::string> skipOpTypeKeys(const ir::Node& n) {
  std::vector<std::string> keys = {n.opType()};
  if (n.domain() == ops::graphcore::kDomain) {
    if (n.opType() == "ConvAct") keys.push_back("Conv");
    if (n.opType() == "GemmAct") keys.push_back("Gemm");
    if (n.opType() == ops::graphcore::kElementwiseChain && n.hasAttr("ops"))
      if (const auto* steps = std::get_if<std::vector<std::string>>(&n.attributes.at("ops").value))
        keys.insert(keys.end(), steps->begin(), steps->end());
  }
  return keys;
}

Status checkSkipOpTypes(const std::vector<std::string>& op_types) {
  for (const std::string& t : op_types) {
    bool known = false;
    for (const ops::OpDef* def : ops::allOps()) known |= def->op_type == t;
    if (!known) return Error("--fp16_skip_op_types: unknown op type '" + t + "' (op types are case-sensitive, e.g. Softmax)");
  }
  return okStatus();
}

std::unique_ptr<Pass> makeFloatToHalf() { return std::make_unique<FloatToHalf>(); }

}  // namespace poprt::passes
