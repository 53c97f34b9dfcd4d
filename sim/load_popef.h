// Opens a PopEF file and prepares an Engine for it: read, verify (sim/verify_popef.h), one engine.
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

// readVerifiedPopef and one Engine for it. The runtime calls readVerifiedPopef itself and makes
// one engine per replica.
Expected<LoadedModel> loadPopef(const std::filesystem::path& path);

}  // namespace poprt::sim
