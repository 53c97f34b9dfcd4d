#include "poprt/runtime/custom_ops.h"

#include "lib/plugin/plugin.h"
#include "poprt/runtime/errors.h"

namespace poprt::runtime {

void loadCustomOpLibrary(const std::string& path) {
  auto plugin = plugin::loadPlugin(path);
  if (!plugin.ok()) throw ApplicationError(plugin.error().message());
}

}  // namespace poprt::runtime
