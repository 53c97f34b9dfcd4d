#include "sim/load_popef.h"

#include "lib/exec/memory_profile.h"

namespace poprt::sim {

Expected<PopefModel> readPopefModel(const std::filesystem::path& path) {
  const std::string source = path.string();
  POPRT_ASSIGN_OR_RETURN(popef::PopefFile file, popef::readPopef(path));
  const popef::Blob* blob = file.find(popef::BlobType::Executable, file.metadata.executable_name);
  if (!blob) return Error(source + ": no executable blob named '" + file.metadata.executable_name + "'");
  POPRT_ASSIGN_OR_RETURN(exec::Executable exe, exec::deserialize(blob->payload, source + ": executable"));
  std::map<std::string, Tensor> weights;
  for (const auto& b : file.blobs) {
    if (b.type != popef::BlobType::TensorData) continue;
    auto t = popef::tensorFromBlob(b);
    if (!t.ok()) return t.error().withContext(source);
    weights.emplace(b.name, std::move(t).value());
  }
  // The anchors and the executable's streams must agree, or inputs would land in the wrong place.
  for (const auto& a : file.metadata.anchors) {
    bool found = false;
    for (const auto& s : exe.streams) {
      bool same_role = (a.kind == popef::Anchor::Kind::Input) == (s.role == exec::HostStream::Role::Input);
      if (s.name == a.name && same_role && s.role != exec::HostStream::Role::Weight) {
        found = s.dtype == a.dtype && s.shape == a.shape && s.kind == a.value;
        if (!found) return Error(source + ": anchor '" + a.name + "' does not match the executable's stream");
      }
    }
    if (!found) return Error(source + ": anchor '" + a.name + "' has no stream in the executable");
  }
  std::vector<uint8_t> profile;
  if (const popef::Blob* b = file.find(popef::BlobType::Opaque, exec::kMemoryProfileBlobName)) profile = b->payload;
  return PopefModel{std::move(file.metadata), std::move(exe), std::move(weights), std::move(profile)};
}

Expected<LoadedModel> loadPopef(const std::filesystem::path& path) {
  POPRT_ASSIGN_OR_RETURN(PopefModel model, readPopefModel(path));
  auto engine = Engine::create(std::move(model.executable), model.weights);
  if (!engine.ok()) return engine.error().withContext(path.string());
  return LoadedModel{std::move(model.metadata), std::move(engine).value()};
}

}  // namespace poprt::sim
