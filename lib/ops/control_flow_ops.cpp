// Control-flow op family of the reference evaluator (see registry.h): If, Loop, Scan (opset 8
// and 9+) and SequenceMap run their body graphs through EvalContext::runSubgraph. Sequence and
// optional ops live in control_flow_sequence_ops.cpp.
#include <algorithm>

#include "lib/ops/control_flow_util.h"
#include "lib/ops/registry.h"

namespace poprt::ops {
namespace {

using cf::kindName;

// The empty scan output of a body output that never ran: [0] (at `axis`) + the declared dims,
// unknown dims taken as 0; float when the dtype is unknown.
Expected<Tensor> emptyScanOutput(const ir::Value* body_out, int64_t axis_or_minus1) {
  DType dtype =
      body_out && body_out->type.isTensor() && body_out->type.dtype != DType::Undefined ? body_out->type.dtype : DType::Float;
  Shape elem;
  if (body_out && body_out->type.isTensor() && body_out->type.dims)
    for (const ir::Dim& d : *body_out->type.dims) elem.push_back(d.isStatic() ? d.value : 0);
  int64_t axis = axis_or_minus1;
  if (axis < 0) axis += static_cast<int64_t>(elem.size()) + 1;
  axis = std::clamp<int64_t>(axis, 0, static_cast<int64_t>(elem.size()));
  elem.insert(elem.begin() + axis, 0);
  return makeOutput(dtype, elem);
}

Expected<Tensor> requireTensorValue(const RtValue* v, const std::string& what) {
  if (!v) return Error(what + " is required");
  if (!v->isTensor()) return Error(what + " must be a tensor, got a " + kindName(*v));
  return v->tensor;
}

// ---- If ----------------------------------------------------------------------------------------

Expected<std::vector<RtValue>> evalIf(const ir::Node& node, const std::vector<const RtValue*>& in, EvalContext& ctx) {
  if (in.empty() || !in[0]) return Error("input 'cond' is required");
  if (!in[0]->isTensor()) return Error("'cond' must be a tensor, got a " + kindName(*in[0]));
  POPRT_ASSIGN_OR_RETURN(bool cond, cf::scalarBool(in[0]->tensor, "'cond'"));
  POPRT_ASSIGN_OR_RETURN(const ir::Graph* branch, cf::graphAttr(node, cond ? "then_branch" : "else_branch"));
  if (!branch->inputs().empty()) return Error("branch '" + branch->name() + "' must take no inputs");
  POPRT_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runSubgraph(*branch, {}));
  if (outs.size() < node.outputs().size())
    return Error("branch '" + branch->name() + "' has " + std::to_string(outs.size()) + " outputs, the node has " +
                 std::to_string(node.outputs().size()));
  return outs;
}

// ---- Loop --------------------------------------------------------------------------------------

Expected<std::vector<RtValue>> evalLoop(const ir::Node& node, const std::vector<const RtValue*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const ir::Graph* body, cf::graphAttr(node, "body"));
  if (in.size() < 2) return Error("expects inputs M and cond (each may be empty)");
  const size_t n_carried = in.size() - 2;
  if (body->inputs().size() != n_carried + 2)
    return Error("body takes " + std::to_string(body->inputs().size()) + " inputs, expected " + std::to_string(n_carried + 2) +
                 " (iteration number, condition and the loop-carried values)");
  if (body->outputs().size() < n_carried + 1)
    return Error("body has " + std::to_string(body->outputs().size()) + " outputs, expected at least " +
                 std::to_string(n_carried + 1));
  const size_t n_scan = body->outputs().size() - 1 - n_carried;
  if (node.outputs().size() > n_carried + n_scan)
    return Error("node has " + std::to_string(node.outputs().size()) + " outputs, the body gives " +
                 std::to_string(n_carried + n_scan));

  bool has_max = in[0] != nullptr, has_cond = in[1] != nullptr;
  int64_t max_trips = 0;
  bool cond = true;
  if (has_max) {
    POPRT_ASSIGN_OR_RETURN(Tensor m, requireTensorValue(in[0], "'M'"));
    POPRT_ASSIGN_OR_RETURN(max_trips, scalarInt(m, "trip count 'M'"));
  }
  if (has_cond) {
    POPRT_ASSIGN_OR_RETURN(Tensor c, requireTensorValue(in[1], "'cond'"));
    POPRT_ASSIGN_OR_RETURN(cond, cf::scalarBool(c, "'cond'"));
  }

  std::vector<RtValue> args(n_carried + 2);
  for (size_t i = 0; i < n_carried; ++i) args[2 + i] = in[2 + i] ? *in[2 + i] : RtValue::none();
  std::vector<std::vector<Tensor>> scans(n_scan);
  int64_t scan_elements = 0;
  for (int64_t it = 0; (!has_max || it < max_trips) && (!has_cond || cond); ++it) {
    if (it >= cf::maxIterations())
      return Error("loop ran more than " + std::to_string(cf::maxIterations()) + " iterations; stopped");
    args[0] = RtValue::of(int64Tensor({it}, {}));
    args[1] = RtValue::of(cf::boolScalar(cond));
    POPRT_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runSubgraph(*body, args));
    if (outs.size() != 1 + n_carried + n_scan) return Error("body returned a wrong number of outputs");
    if (has_cond) {
      if (!outs[0].isTensor()) return Error("body condition output must be a tensor, got a " + kindName(outs[0]));
      POPRT_ASSIGN_OR_RETURN(cond, cf::scalarBool(outs[0].tensor, "body condition output"));
    }
    for (size_t i = 0; i < n_carried; ++i) args[2 + i] = std::move(outs[1 + i]);
    for (size_t k = 0; k < n_scan; ++k) {
      RtValue& v = outs[1 + n_carried + k];
      if (!v.isTensor()) return Error("scan output " + std::to_string(k) + " must be a tensor, got a " + kindName(v));
      if (!scans[k].empty() && (scans[k][0].shape() != v.tensor.shape() || scans[k][0].dtype() != v.tensor.dtype()))
        return Error("scan output " + std::to_string(k) + " changed from " + shapeToString(scans[k][0].shape()) + " to " +
                     shapeToString(v.tensor.shape()) + " between iterations");
      scan_elements += v.tensor.numElements() + 1;
      if (scan_elements > kMaxElements) return Error("scan outputs grew too large");
      scans[k].push_back(std::move(v.tensor));
    }
  }

  std::vector<RtValue> results;
  for (size_t i = 0; i < n_carried; ++i) results.push_back(std::move(args[2 + i]));
  for (size_t k = 0; k < n_scan; ++k) {
    if (scans[k].empty()) {
      POPRT_ASSIGN_OR_RETURN(Tensor e, emptyScanOutput(body->outputs()[1 + n_carried + k], 0));
      results.push_back(RtValue::of(std::move(e)));
    } else {
      POPRT_ASSIGN_OR_RETURN(Tensor s, cf::stackAxis(scans[k], 0));
      results.push_back(RtValue::of(std::move(s)));
    }
  }
  return results;
}

// ---- Scan --------------------------------------------------------------------------------------

// Runs the body over `T` steps for one (batch) item: states in/out, scan inputs sliced per step.
struct ScanRun {
  std::vector<RtValue> states;
  std::vector<std::vector<Tensor>> outputs;  // [k][step], in step order
};

Expected<ScanRun> runScanSteps(const ir::Graph& body, std::vector<RtValue> states, const std::vector<Tensor>& scan_inputs,
                               const std::vector<int64_t>& in_axes, const std::vector<int64_t>& in_dirs, int64_t steps,
                               size_t n_scan_out, EvalContext& ctx) {
  ScanRun run;
  run.outputs.resize(n_scan_out);
  const size_t n_state = states.size();
  std::vector<RtValue> args(n_state + scan_inputs.size());
  for (size_t i = 0; i < n_state; ++i) args[i] = std::move(states[i]);
  int64_t elements = 0;
  for (int64_t t = 0; t < steps; ++t) {
    for (size_t j = 0; j < scan_inputs.size(); ++j) {
      int64_t idx = in_dirs[j] ? steps - 1 - t : t;
      POPRT_ASSIGN_OR_RETURN(Tensor s, cf::sliceAxis(scan_inputs[j], in_axes[j], idx));
      args[n_state + j] = RtValue::of(std::move(s));
    }
    POPRT_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runSubgraph(body, args));
    if (outs.size() != n_state + n_scan_out) return Error("body returned a wrong number of outputs");
    for (size_t i = 0; i < n_state; ++i) args[i] = std::move(outs[i]);
    for (size_t k = 0; k < n_scan_out; ++k) {
      RtValue& v = outs[n_state + k];
      if (!v.isTensor()) return Error("scan output " + std::to_string(k) + " must be a tensor, got a " + kindName(v));
      if (!run.outputs[k].empty() &&
          (run.outputs[k][0].shape() != v.tensor.shape() || run.outputs[k][0].dtype() != v.tensor.dtype()))
        return Error("scan output " + std::to_string(k) + " changed from " + shapeToString(run.outputs[k][0].shape()) + " to " +
                     shapeToString(v.tensor.shape()) + " between iterations");
      elements += v.tensor.numElements() + 1;
      if (elements > kMaxElements) return Error("scan outputs grew too large");
      run.outputs[k].push_back(std::move(v.tensor));
    }
  }
  for (size_t i = 0; i < n_state; ++i) run.states.push_back(std::move(args[i]));
  return run;
}

// Opset 9+: no batch axis; scan_input_axes/directions and scan_output_axes/directions.
Expected<std::vector<RtValue>> evalScan9(const ir::Node& node, const std::vector<const RtValue*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const ir::Graph* body, cf::graphAttr(node, "body"));
  const int64_t m = node.attrInt("num_scan_inputs", -1);
  if (m < 1 || m > static_cast<int64_t>(in.size()))
    return Error("attribute 'num_scan_inputs' is " + std::to_string(m) + ", expected 1.." + std::to_string(in.size()));
  const size_t n_scan_in = static_cast<size_t>(m), n_state = in.size() - n_scan_in;
  if (body->inputs().size() != in.size())
    return Error("body takes " + std::to_string(body->inputs().size()) + " inputs, the node has " + std::to_string(in.size()));
  if (body->outputs().size() < n_state) return Error("body has fewer outputs than state variables");
  const size_t n_scan_out = body->outputs().size() - n_state;
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> in_axes, intsAttr(node, "scan_input_axes", n_scan_in, 0));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> in_dirs, intsAttr(node, "scan_input_directions", n_scan_in, 0));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> out_axes, intsAttr(node, "scan_output_axes", n_scan_out, 0));
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> out_dirs, intsAttr(node, "scan_output_directions", n_scan_out, 0));

  std::vector<RtValue> states;
  for (size_t i = 0; i < n_state; ++i) {
    if (!in[i]) return Error("state input " + std::to_string(i) + " is missing");
    states.push_back(*in[i]);
  }
  std::vector<Tensor> scan_inputs;
  int64_t steps = -1;
  for (size_t j = 0; j < n_scan_in; ++j) {
    POPRT_ASSIGN_OR_RETURN(Tensor x, requireTensorValue(in[n_state + j], "scan input " + std::to_string(j)));
    const int64_t rank = static_cast<int64_t>(x.shape().size());
    if (rank < 1) return Error("scan input " + std::to_string(j) + " must have rank >= 1");
    POPRT_ASSIGN_OR_RETURN(in_axes[j], normalizeAxis(in_axes[j], rank));
    const int64_t len = x.shape()[in_axes[j]];
    if (steps >= 0 && len != steps)
      return Error("scan inputs differ in sequence length: " + std::to_string(steps) + " and " + std::to_string(len));
    steps = len;
    scan_inputs.push_back(std::move(x));
  }
  if (steps > cf::maxIterations()) return Error("scan runs more than " + std::to_string(cf::maxIterations()) + " steps");
  POPRT_ASSIGN_OR_RETURN(ScanRun run,
                         runScanSteps(*body, std::move(states), scan_inputs, in_axes, in_dirs, steps, n_scan_out, ctx));

  std::vector<RtValue> results = std::move(run.states);
  for (size_t k = 0; k < n_scan_out; ++k) {
    std::vector<Tensor>& items = run.outputs[k];
    if (items.empty()) {
      POPRT_ASSIGN_OR_RETURN(Tensor e, emptyScanOutput(body->outputs()[n_state + k], out_axes[k]));
      results.push_back(RtValue::of(std::move(e)));
      continue;
    }
    POPRT_ASSIGN_OR_RETURN(int64_t axis, normalizeAxis(out_axes[k], static_cast<int64_t>(items[0].shape().size()) + 1));
    if (out_dirs[k]) std::reverse(items.begin(), items.end());
    POPRT_ASSIGN_OR_RETURN(Tensor s, cf::stackAxis(items, axis));
    results.push_back(RtValue::of(std::move(s)));
  }
  return results;
}

// Opset 8: input 0 is sequence_lens; every input has a batch axis 0, scan inputs a sequence axis 1.
// A Scan-8 scan output: each batch item's steps padded with zeros to max_len, then stacked over
// the batch ([batch][max_len][...]); `body_output` types it when no item ran a step.
Expected<Tensor> stackScan8Output(const ir::Value* body_output, std::vector<std::vector<Tensor>>& per_item, int64_t batch,
                                  int64_t max_len) {
  const Tensor* proto = nullptr;
  for (const auto& steps : per_item)
    if (!steps.empty()) proto = &steps[0];
  if (!proto) {
    POPRT_ASSIGN_OR_RETURN(Tensor e, emptyScanOutput(body_output, 0));
    Shape shape = e.shape();
    shape[0] = max_len;
    shape.insert(shape.begin(), batch);
    return makeOutput(e.dtype(), shape);
  }
  POPRT_ASSIGN_OR_RETURN(Tensor zero, makeOutput(proto->dtype(), proto->shape()));
  std::vector<Tensor> per_batch;
  for (auto& steps : per_item) {
    while (static_cast<int64_t>(steps.size()) < max_len) steps.push_back(zero);
    POPRT_ASSIGN_OR_RETURN(Tensor s, cf::stackAxis(steps, 0));
    per_batch.push_back(std::move(s));
  }
  return cf::stackAxis(per_batch, 0);
}

Expected<std::vector<RtValue>> evalScan8(const ir::Node& node, const std::vector<const RtValue*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const ir::Graph* body, cf::graphAttr(node, "body"));
  const int64_t m = node.attrInt("num_scan_inputs", -1);
  if (in.empty() || m < 1 || m > static_cast<int64_t>(in.size()) - 1)
    return Error("attribute 'num_scan_inputs' is " + std::to_string(m) + ", expected 1.." +
                 std::to_string(static_cast<int64_t>(in.size()) - 1));
  const size_t n_scan_in = static_cast<size_t>(m), n_state = in.size() - 1 - n_scan_in;
  if (body->inputs().size() != n_state + n_scan_in)
    return Error("body takes " + std::to_string(body->inputs().size()) + " inputs, expected " +
                 std::to_string(n_state + n_scan_in));
  if (body->outputs().size() < n_state) return Error("body has fewer outputs than state variables");
  const size_t n_scan_out = body->outputs().size() - n_state;
  POPRT_ASSIGN_OR_RETURN(std::vector<int64_t> dirs, intsAttr(node, "directions", n_scan_in, 0));

  std::vector<Tensor> states, scans;
  int64_t batch = -1, max_len = -1;
  auto checkBatch = [&](const Tensor& t, const std::string& what) -> Status {
    if (t.shape().empty()) return Error(what + " must have a batch axis");
    if (batch >= 0 && t.shape()[0] != batch)
      return Error(what + " has batch size " + std::to_string(t.shape()[0]) + ", expected " + std::to_string(batch));
    batch = t.shape()[0];
    return okStatus();
  };
  for (size_t i = 0; i < n_state; ++i) {
    POPRT_ASSIGN_OR_RETURN(Tensor s, requireTensorValue(in[1 + i], "state input " + std::to_string(i)));
    POPRT_TRY(checkBatch(s, "state input " + std::to_string(i)));
    states.push_back(std::move(s));
  }
  for (size_t j = 0; j < n_scan_in; ++j) {
    std::string what = "scan input " + std::to_string(j);
    POPRT_ASSIGN_OR_RETURN(Tensor x, requireTensorValue(in[1 + n_state + j], what));
    POPRT_TRY(checkBatch(x, what));
    if (x.shape().size() < 2) return Error(what + " must have batch and sequence axes");
    if (max_len >= 0 && x.shape()[1] != max_len) return Error("scan inputs differ in sequence length");
    max_len = x.shape()[1];
    scans.push_back(std::move(x));
  }
  if (max_len > cf::maxIterations()) return Error("scan runs more than " + std::to_string(cf::maxIterations()) + " steps");
  std::vector<int64_t> lens(static_cast<size_t>(batch), max_len);
  if (in[0]) {
    POPRT_ASSIGN_OR_RETURN(Tensor sl, requireTensorValue(in[0], "'sequence_lens'"));
    POPRT_ASSIGN_OR_RETURN(lens, toInt64s(sl));
    if (static_cast<int64_t>(lens.size()) != batch)
      return Error("'sequence_lens' has " + std::to_string(lens.size()) + " values for batch size " + std::to_string(batch));
    for (int64_t l : lens)
      if (l < 0 || l > max_len)
        return Error("sequence length " + std::to_string(l) + " is outside 0.." + std::to_string(max_len));
  }

  std::vector<std::vector<Tensor>> state_items(n_state);           // [i][b]
  std::vector<std::vector<std::vector<Tensor>>> outs(n_scan_out);  // [k][b][t]
  std::vector<int64_t> axes0(n_scan_in, 0);
  for (int64_t b = 0; b < batch; ++b) {
    std::vector<RtValue> st;
    for (const Tensor& s : states) {
      POPRT_ASSIGN_OR_RETURN(Tensor sb, cf::sliceAxis(s, 0, b));
      st.push_back(RtValue::of(std::move(sb)));
    }
    std::vector<Tensor> xs;
    for (const Tensor& x : scans) {
      POPRT_ASSIGN_OR_RETURN(Tensor xr, cf::sliceAxis(x, 0, b));
      POPRT_ASSIGN_OR_RETURN(Tensor xl, cf::rangeAxis(xr, 0, 0, lens[b]));
      xs.push_back(std::move(xl));
    }
    POPRT_ASSIGN_OR_RETURN(ScanRun run, runScanSteps(*body, std::move(st), xs, axes0, dirs, lens[b], n_scan_out, ctx));
    for (size_t i = 0; i < n_state; ++i) {
      if (!run.states[i].isTensor()) return Error("state outputs must be tensors");
      state_items[i].push_back(std::move(run.states[i].tensor));
    }
    for (size_t k = 0; k < n_scan_out; ++k) outs[k].push_back(std::move(run.outputs[k]));
  }

  std::vector<RtValue> results;
  for (size_t i = 0; i < n_state; ++i) {
    if (batch == 0) {
      results.push_back(RtValue::of(states[i]));
      continue;
    }
    POPRT_ASSIGN_OR_RETURN(Tensor s, cf::stackAxis(state_items[i], 0));
    results.push_back(RtValue::of(std::move(s)));
  }
  for (size_t k = 0; k < n_scan_out; ++k) {
    POPRT_ASSIGN_OR_RETURN(Tensor s, stackScan8Output(body->outputs()[n_state + k], outs[k], batch, max_len));
    results.push_back(RtValue::of(std::move(s)));
  }
  return results;
}

Expected<std::vector<RtValue>> evalScan(const ir::Node& node, const std::vector<const RtValue*>& in, EvalContext& ctx) {
  return ctx.opset() >= 9 ? evalScan9(node, in, ctx) : evalScan8(node, in, ctx);
}

// ---- SequenceMap (opset 17) --------------------------------------------------------------------

Expected<std::vector<RtValue>> evalSequenceMap(const ir::Node& node, const std::vector<const RtValue*>& in, EvalContext& ctx) {
  POPRT_ASSIGN_OR_RETURN(const ir::Graph* body, cf::graphAttr(node, "body"));
  if (in.empty() || !in[0]) return Error("input 'input_sequence' is required");
  if (in[0]->kind != RtValue::Kind::Sequence) return Error("input 0 must be a sequence, got a " + kindName(*in[0]));
  if (body->inputs().size() != in.size())
    return Error("body takes " + std::to_string(body->inputs().size()) + " inputs, the node has " + std::to_string(in.size()));
  const size_t len = in[0]->sequence.size();
  for (size_t i = 0; i < in.size(); ++i) {
    if (!in[i]) return Error("input " + std::to_string(i) + " is missing");
    if (in[i]->kind == RtValue::Kind::None) return Error("input " + std::to_string(i) + " is an empty optional");
    if (in[i]->kind == RtValue::Kind::Sequence && in[i]->sequence.size() != len)
      return Error("input sequences differ in length: " + std::to_string(len) + " and " + std::to_string(in[i]->sequence.size()));
  }
  const size_t n_out = body->outputs().size();
  std::vector<std::vector<Tensor>> items(n_out);
  std::vector<RtValue> args(in.size());
  for (size_t t = 0; t < len; ++t) {
    for (size_t i = 0; i < in.size(); ++i)
      args[i] = in[i]->kind == RtValue::Kind::Sequence ? RtValue::of(in[i]->sequence[t]) : *in[i];
    POPRT_ASSIGN_OR_RETURN(std::vector<RtValue> outs, ctx.runSubgraph(*body, args));
    if (outs.size() != n_out) return Error("body returned a wrong number of outputs");
    for (size_t k = 0; k < n_out; ++k) {
      if (!outs[k].isTensor()) return Error("body output " + std::to_string(k) + " must be a tensor, got a " + kindName(outs[k]));
      items[k].push_back(std::move(outs[k].tensor));
    }
  }
  std::vector<RtValue> results;
  for (size_t k = 0; k < n_out; ++k) {
    const ir::Value* bo = body->outputs()[k];
    DType elem = !items[k].empty() ? items[k][0].dtype() : (bo->type.isTensor() ? bo->type.dtype : DType::Undefined);
    results.push_back(RtValue::seq(std::move(items[k]), elem));
  }
  return results;
}

}  // namespace

void registerControlFlowOps(std::vector<OpDef>& ops) {
  ops.push_back({"If", Fp16Policy::TypeAgnostic, LoweringFamily::None, nullptr, evalIf});
  ops.push_back({"Loop", Fp16Policy::TypeAgnostic, LoweringFamily::None, nullptr, evalLoop});
  ops.push_back({"Scan", Fp16Policy::TypeAgnostic, LoweringFamily::None, nullptr, evalScan});
  ops.push_back({"SequenceMap", Fp16Policy::TypeAgnostic, LoweringFamily::None, nullptr, evalSequenceMap});
  cf::registerSequenceOps(ops);
}

}  // namespace poprt::ops
