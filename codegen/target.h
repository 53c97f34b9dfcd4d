// Target presets: the IPUs' published figures, and small test targets (--tiles_per_ipu).
#pragma once

#include "lib/exec/executable.h"

namespace poprt::codegen {

// ipu1 (GC2: 1216 tiles x 256 KiB, 1.6 GHz), ipu2 (GC200/M2000: 1472 tiles x 624 KiB, 1.33 GHz),
// ipu21 (C600: 1472 tiles x 624 KiB, 1.5 GHz). tiles_per_ipu = 0 keeps the preset's count.
Expected<exec::Target> makeTarget(const std::string& ipu_version, uint32_t num_ipus = 1, uint32_t tiles_per_ipu = 0);

}  // namespace poprt::codegen
