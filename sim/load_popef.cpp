#include "sim/load_popef.h"

#include "sim/verify_popef.h"

namespace poprt::sim {

Expected<LoadedModel> loadPopef(const std::filesystem::path& path) {
  // Everything is checked before anything runs: the same verifier popef-dump uses.
  POPRT_ASSIGN_OR_RETURN(VerifiedPopef model, readVerifiedPopef(path));
  auto engine = Engine::create(std::make_shared<const exec::Executable>(std::move(model.executable)), model.weights);
  if (!engine.ok()) return engine.error().withContext(path.string());
  return LoadedModel{std::move(model.metadata), std::move(engine).value()};
}

}  // namespace poprt::sim
