// Custom-op plugins in the runtime: a PopEF compiled with a plugin's ops (poprt-convert
// --custom_library_so_paths) runs once the same plugin is loaded, before the PopEF is.
#pragma once

#include <string>

#include "export.h"

namespace poprt::runtime {

// Loads a plugin library (the C ABI of poprt/custom_op.h) and registers its ops for the life of
// the process; loading the same file again does nothing. Throws ApplicationError naming the file
// when it is not a loadable plugin or defines an op that is already defined.
POPRT_RUNTIME_API void loadCustomOpLibrary(const std::string& path);

}  // namespace poprt::runtime
