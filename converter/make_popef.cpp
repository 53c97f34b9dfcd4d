#include "converter/make_popef.h"

#include <set>

#include "lib/exec/memory_profile.h"
#include "lib/plugin/plugin.h"
#include "lib/support/exact_integers.h"
#include "lib/support/half.h"

namespace poprt::converter {

namespace {

// A float32 weight of integers that int8 or int16 holds is stored in that type (exact_integers.h),
// widened back exactly by the PopEF's reader (sim/verify_popef.cpp). Under --precision fp16
// another float32 weight (one float_to_half left in float32, e.g. by the range check) is stored as
// float16 when every value is finite and within +-65504, so the file holds half its bytes; its
// weight stream and the device keep float32 and the reader widens it back. Other weights are
// stored as they are, and so are those a node kept in float32 on request reads
// (--fp16_skip_op_types, --fp16_skip_node_names, --fp16_min_cosine): rounding them would undo what
// was asked; and those of a quantized op's integer arithmetic (its scales), which is exact only
// unrounded.
popef::Blob weightBlob(const std::string& name, const Tensor& w, bool fp16) {
  if (w.dtype() != DType::Float || w.numElements() == 0) return popef::makeTensorDataBlob(name, w);
  if (auto integers = exactIntegerStorage(w)) return popef::makeTensorDataBlob(name, narrowedTo(w, *integers));
  if (!fp16) return popef::makeTensorDataBlob(name, w);
  if (!fitsFloat16(w.data<float>())) return popef::makeTensorDataBlob(name, w);
  Tensor half(DType::Float16, w.shape());
  floatsToHalfBits(w.data<float>().data(), w.data<float>().size(), half.data<uint16_t>().data());
  return popef::makeTensorDataBlob(name, half);
}

// The weights nodes kept in float32 on request read.
std::set<const ir::Value*> requestedFp32Weights(const ir::Model& model, const ConvertOptions& o,
                                                const std::vector<std::string>& kept_fp32) {
  const passes::Fp16Options& f = o.pipeline.fp16;
  std::set<std::string> nodes(f.skip_node_names.begin(), f.skip_node_names.end());
  nodes.insert(kept_fp32.begin(), kept_fp32.end());
  const std::set<std::string> op_types(f.skip_op_types.begin(), f.skip_op_types.end());
  std::set<const ir::Value*> weights;
  for (const auto& n : model.graph->nodes()) {
    const std::vector<std::string> keys = passes::skipOpTypeKeys(*n);
    if (nodes.count(n->name()) || passes::isIntegerArithmetic(*n) ||
        std::any_of(keys.begin(), keys.end(), [&](const std::string& k) { return op_types.count(k); }))
      for (const ir::Value* v : n->inputs())
        if (v && v->isInitializer()) weights.insert(v);
  }
  return weights;
}

}  // namespace

popef::PopefFile makePopef(const codegen::CompileResult& compiled, const ir::Model& model, const ConvertOptions& o,
                           const std::vector<std::string>& kept_fp32) {
  const exec::Executable& exe = compiled.executable;
  popef::PopefFile file;
  auto& md = file.metadata;
  md.ipu_version = exe.target.ipu_version;
  md.num_ipus = static_cast<int>(exe.target.num_ipus);
  // Replicas run the same single-replica executable, each on its own inputs (see docs/RUNTIME.md).
  md.replication_factor = static_cast<int>(o.replication_factor);
  md.batches_per_step = static_cast<int>(o.batches_per_step);
  md.executable_name = "executable";
  md.program_flow = {{"load"}, {"main"}, {}};
  for (const auto& s : exe.streams) {
    if (s.role == exec::HostStream::Role::Weight) continue;
    popef::Anchor a;
    a.name = s.name;
    a.handle = (s.role == exec::HostStream::Role::Input ? "in:" : "out:") + s.name;
    a.dtype = s.dtype;
    a.shape = s.shape;
    a.value = s.kind;
    a.kind = s.role == exec::HostStream::Role::Input ? popef::Anchor::Kind::Input : popef::Anchor::Kind::Output;
    a.programs = {"main"};
    a.per_replica = o.replication_factor > 1;
    md.anchors.push_back(std::move(a));
  }
  md.compile_options = {{"precision", o.precision},
                        {"ipu_version", o.ipu_version},
                        {"num_ipus", std::to_string(o.num_ipus)},
                        {"replication_factor", std::to_string(o.replication_factor)},
                        {"batches_per_step", std::to_string(o.batches_per_step)},
                        {"tiles_per_ipu", std::to_string(exe.target.tiles_per_ipu)},
                        {"available_memory_proportion", std::to_string(o.available_memory_proportion)}};
  if (o.batch_size != 0) {  // popef-serve batches requests along this axis
    md.compile_options["batch_size"] = std::to_string(o.batch_size);
    md.compile_options["batch_axis"] = std::to_string(o.batch_axis);
  }
  md.extra = {{"device_nodes", compiled.device_nodes}, {"host_nodes", compiled.host_nodes}};
  // Readers refuse the PopEF by name when a plugin its ops come from is not loaded.
  if (auto plugins = plugin::pluginRecord(model); !plugins.is_null()) md.extra["plugins"] = std::move(plugins);
  file.blobs.push_back({popef::BlobType::Executable, "executable", exec::serialize(exe)});
  const std::set<const ir::Value*> exact = requestedFp32Weights(model, o, kept_fp32);
  for (const ir::Value* w : compiled.weights)
    file.blobs.push_back(weightBlob(w->name(), *w->initializer(), o.precision == "fp16" && !exact.count(w)));
  // The compiler's memory profile for the reports (docs/REPORT.md): a few numbers per tile and node.
  file.blobs.push_back(
      {popef::BlobType::Opaque, exec::kMemoryProfileBlobName, exec::serializeMemoryProfile(compiled.memory_profile)});
  return file;
}

}  // namespace poprt::converter
