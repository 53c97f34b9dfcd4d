#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <onnx/version_converter/convert.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>

#include "lib/onnx/import_checks.h"
#include "lib/onnx/onnx_io.h"
#include "lib/onnx/type_map.h"
#include "lib/ops/registry.h"
#include "lib/support/file_io.h"
#include "lib/support/tensor_proto.h"

namespace poprt::onnxio {
namespace {

class Importer {
 public:
  Importer(const std::filesystem::path& model_dir, std::string source) : model_dir_(model_dir), source_(std::move(source)) {}

  Status importGraph(const onnx::GraphProto& gp, ir::Graph& g) {
    g.setName(gp.name().empty() ? g.name() : gp.name());
    g.doc_string = gp.doc_string();
    std::set<std::string> input_names;
    for (const auto& vi : gp.input()) {
      if (g.findLocalValue(vi.name())) return Error(where(g) + ": graph input '" + vi.name() + "' is declared twice");
      ir::Value* v = g.addInput(vi.name(), typeFromProto(vi.type()));
      v->doc_string = vi.doc_string();
      input_names.insert(vi.name());
    }
    for (const auto& tp : gp.initializer()) {
      auto tensor = tensorFromProto(tp, model_dir_);
      if (!tensor.ok()) return tensor.error().withContext(where(g) + ": initializer '" + tp.name() + "'");
      ir::Value* existing = g.findLocalValue(tp.name());
      if (existing && !input_names.count(tp.name()))
        return Error(where(g) + ": initializer '" + tp.name() + "' is declared twice");
      g.addInitializer(tp.name(), std::move(tensor).value());
    }
    if (gp.sparse_initializer_size() > 0) return Error(where(g) + ": sparse initializers are not supported");
    // Outputs of all nodes first, so nodes listed out of order still connect; topoSort fixes order.
    for (const auto& np : gp.node()) {
      for (const auto& out : np.output()) {
        if (out.empty()) continue;
        if (g.findLocalValue(out))
          return Error(where(g) + ": node '" + np.name() + "' (" + np.op_type() + ") redefines value '" + out + "'");
        g.addValue(out);
      }
    }
    for (const auto& vi : gp.value_info())
      if (ir::Value* v = g.findLocalValue(vi.name()); v && !v->isInitializer()) v->type = typeFromProto(vi.type());
    for (const auto& vi : gp.output())
      if (ir::Value* v = g.findLocalValue(vi.name()); v && !v->isInitializer() && !v->isGraphInput())
        v->type = typeFromProto(vi.type());
    for (const auto& np : gp.node()) POPRT_TRY(importNode(np, g));
    for (const auto& vi : gp.output()) {
      ir::Value* v = g.findValue(vi.name());
      if (!v) return Error(where(g) + ": graph output '" + vi.name() + "' is never produced");
      if (!v->type.dims && vi.type().has_tensor_type()) v->type = typeFromProto(vi.type());
      g.addOutput(v);
    }
    if (auto st = g.topoSort(); !st.ok()) return st.error().withContext(source_);
    return okStatus();
  }

 private:
  std::string where(const ir::Graph& g) const { return source_ + ": graph '" + g.name() + "'"; }

  Status importNode(const onnx::NodeProto& np, ir::Graph& g) {
    auto describe = [&] { return source_ + ": node '" + np.name() + "' (" + np.op_type() + ")"; };
    std::vector<ir::Value*> inputs, outputs;
    for (const auto& in : np.input()) {
      if (in.empty()) {
        inputs.push_back(nullptr);
        continue;
      }
      ir::Value* v = g.findValue(in);
      if (!v) return Error(describe() + ": input '" + in + "' is not defined anywhere in the model");
      inputs.push_back(v);
    }
    for (const auto& out : np.output()) outputs.push_back(out.empty() ? nullptr : g.findLocalValue(out));
    ir::Node* node = g.addNode(np.op_type(), inputs, outputs, np.name(), np.domain());
    node->doc_string = np.doc_string();
    for (const auto& ap : np.attribute()) {
      auto attr = importAttribute(ap, g);
      if (!attr.ok()) return attr.error().withContext(describe() + ": attribute '" + ap.name() + "'");
      node->attributes[ap.name()] = std::move(attr).value();
    }
    return okStatus();
  }

  Expected<ir::GraphPtr> importSubgraph(const onnx::GraphProto& gp, ir::Graph& parent) {
    auto sub = std::make_shared<ir::Graph>(gp.name(), &parent);
    POPRT_TRY(importGraph(gp, *sub));
    return sub;
  }

  Expected<ir::Attribute> importAttribute(const onnx::AttributeProto& ap, ir::Graph& g) {
    ir::Attribute attr;
    attr.doc_string = ap.doc_string();
    if (!ap.ref_attr_name().empty()) return Error("attribute references (ref_attr_name) are only valid in functions");
    switch (ap.type()) {
      case onnx::AttributeProto::FLOAT: attr.value = ap.f(); break;
      case onnx::AttributeProto::INT: attr.value = static_cast<int64_t>(ap.i()); break;
      case onnx::AttributeProto::STRING: attr.value = ap.s(); break;
      case onnx::AttributeProto::TENSOR: {
        POPRT_ASSIGN_OR_RETURN(Tensor t, tensorFromProto(ap.t(), model_dir_));
        attr.value = std::move(t);
        break;
      }
      case onnx::AttributeProto::GRAPH: {
        POPRT_ASSIGN_OR_RETURN(ir::GraphPtr sub, importSubgraph(ap.g(), g));
        attr.value = std::move(sub);
        break;
      }
      case onnx::AttributeProto::FLOATS: attr.value = std::vector<float>(ap.floats().begin(), ap.floats().end()); break;
      case onnx::AttributeProto::INTS: attr.value = std::vector<int64_t>(ap.ints().begin(), ap.ints().end()); break;
      case onnx::AttributeProto::STRINGS: attr.value = std::vector<std::string>(ap.strings().begin(), ap.strings().end()); break;
      case onnx::AttributeProto::TENSORS: {
        std::vector<Tensor> ts;
        for (const auto& tp : ap.tensors()) {
          POPRT_ASSIGN_OR_RETURN(Tensor t, tensorFromProto(tp, model_dir_));
          ts.push_back(std::move(t));
        }
        attr.value = std::move(ts);
        break;
      }
      case onnx::AttributeProto::GRAPHS: {
        std::vector<ir::GraphPtr> gs;
        for (const auto& gp : ap.graphs()) {
          POPRT_ASSIGN_OR_RETURN(ir::GraphPtr sub, importSubgraph(gp, g));
          gs.push_back(std::move(sub));
        }
        attr.value = std::move(gs);
        break;
      }
      case onnx::AttributeProto::TYPE_PROTO: attr.value = typeFromProto(ap.tp()); break;
      case onnx::AttributeProto::TYPE_PROTOS: {
        std::vector<ir::TensorType> types;
        for (const auto& tp : ap.type_protos()) types.push_back(typeFromProto(tp));
        attr.value = std::move(types);
        break;
      }
      default: return Error("attribute kind " + onnx::AttributeProto::AttributeType_Name(ap.type()) + " is not supported");
    }
    return attr;
  }

  std::filesystem::path model_dir_;
  std::string source_;
};

// Every node whose op has no ONNX schema at the model's opset (or is in a domain the model does
// not import), reported together. Ops of other domains the registry knows (ai.graphcore's fused
// ops) are accepted when the model imports their domain.
void collectUnknownOps(const onnx::GraphProto& gp, const std::unordered_map<std::string, int>& opsets,
                       const std::set<std::pair<std::string, std::string>>& functions, std::vector<std::string>& unknown) {
  for (const auto& np : gp.node()) {
    std::string domain = ir::canonicalDomain(np.domain());
    auto it = opsets.find(domain);
    bool known = functions.count({np.domain(), np.op_type()}) != 0;
    if (!known && it != opsets.end()) known = onnx::OpSchemaRegistry::Schema(np.op_type(), it->second, domain) != nullptr;
    if (!known && it != opsets.end() && !domain.empty() && domain != "ai.onnx.ml")
      known = ops::findOp(domain, np.op_type()) != nullptr;
    if (!known) unknown.push_back("node '" + np.name() + "' (" + (domain.empty() ? "" : domain + ".") + np.op_type() + ")");
    for (const auto& ap : np.attribute()) {
      if (ap.has_g()) collectUnknownOps(ap.g(), opsets, functions, unknown);
      for (const auto& sub : ap.graphs()) collectUnknownOps(sub, opsets, functions, unknown);
    }
  }
}

// Every node whose op has a registry check (ai.graphcore's fused ops: ONNX has no schema for
// their attributes' values), in every graph: a bad one is refused here, naming it.
Status checkRegisteredOps(const ir::Graph& graph, const std::string& where) {
  for (const auto& n : graph.nodes()) {
    if (const ops::OpDef* def = ops::findOp(n->domain(), n->opType()); def && def->check)
      if (Status st = def->check(*n); !st.ok())
        return st.error().withContext(where + ": node '" + n->name() + "' (" + n->domain() + "." + n->opType() + ")");
    for (const ir::Graph* sub : n->subgraphs()) POPRT_TRY(checkRegisteredOps(*sub, where + ": graph '" + sub->name() + "'"));
  }
  return okStatus();
}

bool hasExternalData(const onnx::GraphProto& gp) {
  for (const auto& t : gp.initializer())
    if (t.data_location() == onnx::TensorProto::EXTERNAL) return true;
  for (const auto& np : gp.node())
    for (const auto& ap : np.attribute()) {
      if (ap.has_t() && ap.t().data_location() == onnx::TensorProto::EXTERNAL) return true;
      if (ap.has_g() && hasExternalData(ap.g())) return true;
      for (const auto& sub : ap.graphs())
        if (hasExternalData(sub)) return true;
    }
  return false;
}

Status runChecker(const onnx::ModelProto& proto, const std::string& source, const ImportOptions& options) {
  if (!options.run_checker) return okStatus();
  try {
    if (hasExternalData(proto.graph()))
      onnx::checker::check_model(source);
    else
      onnx::checker::check_model(proto);
  } catch (const std::exception& e) { return Error(source + ": ONNX checker: " + oneLine(e.what())); }
  return okStatus();
}

}  // namespace

Expected<ir::Model> importModel(const std::filesystem::path& path, const ImportOptions& options) {
  // Protobuf parses at most 2 GiB; larger models must use external data.
  POPRT_ASSIGN_OR_RETURN(const uint64_t size, boundedFileSize(path, (uint64_t{2} << 30) - 1));
  // Parsed from the file through 1 MiB reads, with no copy of the whole file besides the one the
  // message holds: a ViT-B/16 is 344 MB, and its import took a third of the compile so.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error(path.string() + ": cannot open: " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};  // on every way out, an allocation failure's exception included
  onnx::ModelProto proto;
  google::protobuf::io::FileInputStream in(fd, 1 << 20);
  const bool parsed = size > 0 && proto.ParseFromZeroCopyStream(&in) && in.GetErrno() == 0;
  if (!parsed) return Error(path.string() + ": not a valid ONNX model (protobuf parse failed)");
  std::filesystem::path dir = path.parent_path();
  if (dir.empty()) dir = ".";
  return importModelProto(proto, dir, path.string(), options);
}

Expected<ir::Model> importModelProto(onnx::ModelProto& proto, const std::filesystem::path& model_dir, const std::string& source,
                                     const ImportOptions& options) {
  if (!proto.has_graph()) return Error(source + ": not an ONNX model (no graph)");
  POPRT_TRY(checkTextFields(proto, source));
  std::unordered_map<std::string, int> opsets;
  for (const auto& op : proto.opset_import()) opsets[ir::canonicalDomain(op.domain())] = static_cast<int>(op.version());
  // Models of other domains only (e.g. ai.onnx.preview.training) need no default-domain opset.
  const bool default_domain = opsets.count("") != 0;
  int64_t opset = default_domain ? opsets[""] : kMinOpset;
  // Ours first: libonnx's version converter and checker open the files external data names and
  // trust the graph's names to connect (the converter crashes on a graph output nothing produces).
  POPRT_TRY(checkExternalLocations(proto.graph(), model_dir, source));
  POPRT_TRY(checkDeclaredShapes(proto.graph(), source));
  POPRT_TRY(checkWindowAttributes(proto.graph(), source));
  if (options.run_checker) POPRT_TRY(checkGraphStructure(proto.graph(), source));
  bool upgraded = false;
  if (default_domain && opset < kMinOpset && opset >= 1) {
    if (!options.run_checker) POPRT_TRY(checkGraphStructure(proto.graph(), source));
    POPRT_TRY(runChecker(proto, source, options));  // the converter assumes a valid model
    POPRT_TRY(checkForVersionConverter(proto.graph(), source));
    upgraded = true;
    // Older models are upgraded with libonnx's version converter, as onnx.version_converter would.
    try {
      proto = onnx::version_conversion::ConvertVersion(proto, static_cast<int>(kMinOpset));
      for (const auto& op : proto.opset_import())
        if (ir::canonicalDomain(op.domain()).empty()) opset = op.version();
      opsets[""] = static_cast<int>(opset);
    } catch (const std::exception& e) {
      return Error(source + ": default-domain opset " + std::to_string(opset) + " is below " + std::to_string(kMinOpset) +
                   " and the ONNX version converter could not upgrade it: " + libraryFailure(e));
    }
  }
  if (opset < kMinOpset || opset > kMaxOpset)
    return Error(source + ": default-domain opset " + std::to_string(opset) + " is outside the supported range " +
                 std::to_string(kMinOpset) + "-" + std::to_string(kMaxOpset) + " (hint: convert it with onnx.version_converter)");

  std::set<std::pair<std::string, std::string>> functions;
  for (const auto& f : proto.functions()) functions.insert({f.domain(), f.name()});
  std::vector<std::string> unknown;
  collectUnknownOps(proto.graph(), opsets, functions, unknown);
  if (!unknown.empty()) {
    std::string msg =
        source + ": " + std::to_string(unknown.size()) + " node(s) use ops unknown at opset " + std::to_string(opset) + ": ";
    for (size_t i = 0; i < unknown.size() && i < 20; ++i) msg += (i ? ", " : "") + unknown[i];
    if (unknown.size() > 20) msg += ", ... (" + std::to_string(unknown.size() - 20) + " more)";
    return Error(msg);
  }
  POPRT_TRY(checkCustomOps(proto.graph(), opset, source));  // the checker knows no custom domain
  POPRT_TRY(runChecker(proto, source, options));
  if (options.infer_shapes) {
    // Strict: an input that does not fit its node (a weight of the wrong shape, a dtype the op
    // does not take) is refused here, naming the node, instead of being compiled into nonsense.
    // Models the version converter upgraded keep old-opset constructs the newer type rules reject
    // (int64 Constants below opset 9), so their dtypes are not checked.
    if (auto st = runOnnxShapeInference(proto, {/*strict=*/true, /*check_types=*/!upgraded}); !st.ok())
      return st.error().withContext(source);
  }

  ir::Model model;
  model.ir_version = proto.ir_version();
  for (const auto& op : proto.opset_import()) model.opset_imports.push_back({ir::canonicalDomain(op.domain()), op.version()});
  model.producer_name = proto.producer_name();
  model.producer_version = proto.producer_version();
  model.domain = proto.domain();
  model.doc_string = proto.doc_string();
  model.model_version = proto.model_version();
  for (const auto& p : proto.metadata_props()) model.metadata_props.emplace_back(p.key(), p.value());
  for (const auto& f : proto.functions()) model.functions.push_back(f.SerializeAsString());
  Importer importer(model_dir, source);
  POPRT_TRY(importer.importGraph(proto.graph(), *model.graph));
  POPRT_TRY(checkRegisteredOps(*model.graph, source + ": graph '" + model.graph->name() + "'"));
  // IR version 3 required every initializer to be listed as a graph input too; those are the
  // model's constants, not inputs a caller feeds. From IR 4 on, a listed one is an overridable default.
  if (model.ir_version < 4) {
    std::vector<ir::Value*> listed;
    for (ir::Value* v : model.graph->inputs())
      if (v->isInitializer()) listed.push_back(v);
    for (ir::Value* v : listed) model.graph->removeInput(v);
    model.ir_version = 4;
  }
  return model;
}

}  // namespace poprt::onnxio
