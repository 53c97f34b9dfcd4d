#include "tools/convert_popef.h"

#include "lib/exec/memory_profile.h"

namespace poprt::tools {

popef::PopefFile makePopef(const codegen::CompileResult& compiled, const ConvertOptions& o, const std::string& onnx_bytes) {
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
  file.blobs.push_back({popef::BlobType::Executable, "executable", exec::serialize(exe)});
  for (const auto& [name, tensor] : compiled.weights) file.blobs.push_back(popef::makeTensorDataBlob(name, tensor));
  file.blobs.push_back({popef::BlobType::Opaque, "poprt.onnx", std::vector<uint8_t>(onnx_bytes.begin(), onnx_bytes.end())});
  // The compiler's memory profile for the reports (docs/REPORT.md): a few numbers per tile and node.
  file.blobs.push_back({popef::BlobType::Opaque, exec::kMemoryProfileBlobName, exec::serializeMemoryProfile(compiled.memory_profile)});
  return file;
}

}  // namespace poprt::tools
