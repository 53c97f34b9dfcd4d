#include "codegen/target.h"

namespace poprt::codegen {

Expected<exec::Target> makeTarget(const std::string& ipu_version, uint32_t num_ipus, uint32_t tiles_per_ipu) {
  exec::Target t;
  t.ipu_version = ipu_version;
  if (ipu_version == "ipu1") {
    t.tiles_per_ipu = 1216;
    t.bytes_per_tile = 256 * 1024;
    t.clock_hz = 1.6e9;
    t.fp32_macs_per_cycle = 8;
    t.fp16_macs_per_cycle = 32;
    t.sync_cycles = 150;
  } else if (ipu_version == "ipu2" || ipu_version == "ipu21") {
    t.tiles_per_ipu = 1472;
    t.bytes_per_tile = 624 * 1024;
    t.clock_hz = ipu_version == "ipu2" ? 1.33e9 : 1.5e9;
    t.fp32_macs_per_cycle = 16;
    t.fp16_macs_per_cycle = 64;
    t.sync_cycles = 200;
  } else {
    return Error("--ipu_version: unknown IPU version '" + ipu_version + "' (expected ipu1, ipu2 or ipu21)");
  }
  t.workers_per_tile = 6;
  t.exchange_bytes_per_cycle = 4;
  t.vector_width_fp32 = 2;
  // IPU-Links: 64 GB/s each direction between neighbouring IPUs (two of the ten 32 GB/s links),
  // and about a microsecond for the cross-IPU sync and link latency of each copy.
  t.link_bytes_per_cycle = static_cast<uint32_t>(64e9 / t.clock_hz);
  t.link_latency_cycles = static_cast<uint32_t>(1e-6 * t.clock_hz);
  if (num_ipus < 1 || num_ipus > 64) return Error("--num_ipus must be between 1 and 64, got " + std::to_string(num_ipus));
  t.num_ipus = num_ipus;
  if (tiles_per_ipu != 0) {
    if (tiles_per_ipu > t.tiles_per_ipu)
      return Error("--tiles_per_ipu " + std::to_string(tiles_per_ipu) + " is more than " + ipu_version + " has (" +
                   std::to_string(t.tiles_per_ipu) + ")");
    t.tiles_per_ipu = tiles_per_ipu;
  }
  t.name = ipu_version + (tiles_per_ipu ? "-" + std::to_string(tiles_per_ipu) + "t" : "");
  return t;
}

}  // namespace poprt::codegen
