// conv_transpose_to_conv: a ConvTranspose whose kernel equals its strides (UNet's 2x2 up-conv at
// stride 2), no pads, dilations, output padding or groups, writes each input pixel's products to
// its own block of outputs: it is a 1x1 Conv to M x k1 x ... x kr channels, then those channels
// moved into the blocks (Reshape, Transpose, Reshape: depth to space), all ops the device runs.
// Each output is the same one product plus bias as before. A constant weight and bias, static
// spatial dims.
#include <algorithm>
#include <cstring>
#include <numeric>

#include "lib/ops/op_util.h"
#include "passes/fusion_util.h"
#include "passes/pass_list.h"

namespace poprt::passes {
namespace {

bool allEqual(const std::vector<int64_t>& v, int64_t value) {
  return std::all_of(v.begin(), v.end(), [&](int64_t x) { return x == value; });
}

// Why the node is not such a ConvTranspose ("" when it is).
std::string blocker(const ir::Node& n) {
  const Tensor* w = n.inputs().size() > 1 ? constantOf(n.input(1)) : nullptr;
  if (!w || w->shape().size() < 3) return "its weight is not a constant of rank 3 or more";
  if (n.inputs().size() > 2 && n.input(2) && !constantOf(n.input(2))) return "its bias is not a constant";
  const size_t rank = w->shape().size() - 2;
  const std::vector<int64_t> kernel(w->shape().begin() + 2, w->shape().end());
  if (n.attrInt("group", 1) != 1) return "it has groups";
  if (n.attrInts("strides", std::vector<int64_t>(rank, 1)) != kernel) return "its kernel is not its strides";
  if (!allEqual(n.attrInts("pads", std::vector<int64_t>(2 * rank, 0)), 0) || n.attrString("auto_pad", "NOTSET") != "NOTSET")
    return "it pads";
  if (!allEqual(n.attrInts("dilations", std::vector<int64_t>(rank, 1)), 1)) return "it dilates";
  if (!allEqual(n.attrInts("output_padding", std::vector<int64_t>(rank, 0)), 0) || n.hasAttr("output_shape"))
    return "it has output padding or an output shape";
  auto in = fusion::dimsOf(n.input(0));
  if (!in || in->size() != rank + 2) return "its input's rank is unknown";
  for (size_t d = 2; d < in->size(); ++d)
    if (!(*in)[d].isStatic()) return "its spatial dims are not static";
  return "";
}

Tensor shapeTensor(const std::vector<int64_t>& dims) { return ops::int64Tensor(dims, {static_cast<int64_t>(dims.size())}); }

Shape shapeOf(std::initializer_list<std::vector<int64_t>> parts) {
  Shape s;
  for (const auto& p : parts) s.insert(s.end(), p.begin(), p.end());
  return s;
}

class ConvTransposeToConv : public Pass {
 public:
  Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
    std::vector<ir::Node*> candidates;
    for (const auto& node : graph.nodes())
      if (node->opType() == "ConvTranspose" && node->domain().empty()) candidates.push_back(node.get());
    bool changed = false;
    for (ir::Node* n : candidates) {
      if (std::string why = blocker(*n); !why.empty()) {
        ctx.nearMiss(*n, why);
        continue;
      }
      rewrite(graph, *n);
      ctx.count("conv_transposes_to_convs");
      changed = true;
    }
    if (changed) POPRT_TRY(graph.topoSort());
    return changed;
  }

 private:
  static void rewrite(ir::Graph& graph, ir::Node& n) {
    const Tensor& w = *constantOf(n.input(1));
    const Shape& ws = w.shape();
    const int64_t C = ws[0], M = ws[1], rank = static_cast<int64_t>(ws.size()) - 2;
    const std::vector<int64_t> kernel(ws.begin() + 2, ws.end());
    const int64_t K = std::accumulate(kernel.begin(), kernel.end(), int64_t{1}, std::multiplies<>());
    const std::vector<ir::Dim> in = *fusion::dimsOf(n.input(0));
    std::vector<int64_t> spatial;
    for (int64_t d = 0; d < rank; ++d) spatial.push_back(in[static_cast<size_t>(d + 2)].value);
    // The 1x1 weight [M K, C, 1...]: channel m K + j is tap j of output channel m.
    Tensor w1(w.dtype(), shapeOf({{M * K, C}, std::vector<int64_t>(static_cast<size_t>(rank), 1)}));
    const size_t es = dtypeSize(w.dtype());
    for (int64_t c = 0; c < C; ++c)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t j = 0; j < K; ++j)
          std::memcpy(w1.bytes().data() + static_cast<size_t>((m * K + j) * C + c) * es,
                      w.bytes().data() + static_cast<size_t>((c * M + m) * K + j) * es, es);
    std::vector<ir::Value*> inputs = {n.input(0), fusion::addConstant(graph, n.input(1)->name() + "/1x1", std::move(w1))};
    if (n.inputs().size() > 2 && n.input(2)) {
      const Tensor& b = *constantOf(n.input(2));
      Tensor b1(b.dtype(), {M * K});
      for (int64_t m = 0; m < M; ++m)
        for (int64_t j = 0; j < K; ++j)
          std::memcpy(b1.bytes().data() + static_cast<size_t>(m * K + j) * es, b.bytes().data() + static_cast<size_t>(m) * es,
                      es);
      inputs.push_back(fusion::addConstant(graph, n.input(2)->name() + "/1x1", std::move(b1)));
    }
    ir::Value* y = n.output(0);
    const DType dtype = w.dtype();
    const ir::Dim batch = in[0];
    auto typed = [&](const std::string& suffix, const std::vector<int64_t>& dims) {
      ir::TensorType t;
      t.dtype = dtype;
      t.dims = std::vector<ir::Dim>{batch};
      for (int64_t d : dims) t.dims->push_back(ir::Dim::fixed(d));
      return graph.addValue(graph.uniqueName(y->name() + suffix), t);
    };
    const std::string name = n.name();
    ir::Value* tmp = fusion::detach(graph, y, {&n});
    ir::Value* conv_out = typed("/1x1", shapeOf({{M * K}, spatial}));
    ir::Node* conv = graph.addNode("Conv", inputs, {conv_out}, graph.uniqueName(name + "/1x1"));
    conv->attributes["kernel_shape"].value = std::vector<int64_t>(static_cast<size_t>(rank), 1);
    // [N, M, k..., H...] -> [N, M, H1, k1, H2, k2, ...] -> [N, M, H1 k1, ...]
    ir::Value* split = typed("/blocks", shapeOf({{M}, kernel, spatial}));
    graph.addNode("Reshape",
                  {conv_out, fusion::addConstant(graph, name + "/blocks_shape", shapeTensor(shapeOf({{0, M}, kernel, spatial})))},
                  {split}, graph.uniqueName(name + "/blocks"));
    std::vector<int64_t> perm = {0, 1}, interleaved;
    for (int64_t d = 0; d < rank; ++d) {
      perm.push_back(2 + rank + d);
      perm.push_back(2 + d);
      interleaved.push_back(spatial[static_cast<size_t>(d)]);
      interleaved.push_back(kernel[static_cast<size_t>(d)]);
    }
    ir::Value* moved = typed("/moved", shapeOf({{M}, interleaved}));
    graph.addNode("Transpose", {split}, {moved}, graph.uniqueName(name + "/moved"))->attributes["perm"].value = perm;
    std::vector<int64_t> out_shape = {0, M};
    for (int64_t d = 0; d < rank; ++d) out_shape.push_back(spatial[static_cast<size_t>(d)] * kernel[static_cast<size_t>(d)]);
    graph.addNode("Reshape", {moved, fusion::addConstant(graph, name + "/out_shape", shapeTensor(out_shape))}, {y},
                  graph.uniqueName(name + "/space"));
    fusion::reattach(graph, tmp, y);
  }
};

}  // namespace

std::unique_ptr<Pass> makeConvTransposeToConv() { return std::make_unique<ConvTransposeToConv>(); }

}  // namespace poprt::passes
