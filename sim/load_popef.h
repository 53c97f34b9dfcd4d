// Opens a PopEF file and prepares an Engine for it: parse, verify, weights from tensor data blobs.
#pragma once

#include <filesystem>
#include <memory>

#include "popef/popef.h"
#include "sim/engine.h"

namespace poprt::sim {

struct LoadedModel {
  popef::Metadata metadata;
  std::unique_ptr<Engine> engine;
};

Expected<LoadedModel> loadPopef(const std::filesystem::path& path);

}  // namespace poprt::sim
