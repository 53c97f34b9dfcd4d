// Opens a PopEF file and prepares an Engine for it: parse, verify, weights from tensor data blobs.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "popef/popef.h"
#include "sim/engine.h"

namespace poprt::sim {

// A PopEF read and checked (its anchors agree with the executable's streams), ready to make
// engines from: the runtime makes one per replica.
struct PopefModel {
  popef::Metadata metadata;
  exec::Executable executable;
  std::map<std::string, Tensor> weights;  // the data of each Weight stream, by name
  // The compiler's memory profile (opaque blob "poprt.profile", lib/exec/memory_profile.h) as
  // stored, parsed only by the reports that read it; empty when the PopEF has none.
  std::vector<uint8_t> memory_profile;
};

Expected<PopefModel> readPopefModel(const std::filesystem::path& path);

struct LoadedModel {
  popef::Metadata metadata;
  std::unique_ptr<Engine> engine;
};

// readPopefModel and one Engine for it.
Expected<LoadedModel> loadPopef(const std::filesystem::path& path);

}  // namespace poprt::sim
