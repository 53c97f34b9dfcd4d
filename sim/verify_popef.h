// The PopEF verifier: every check a PopEF passes before anything runs or is shown. popef-run
// (through loadPopef) and popef-dump both call it, so a file one refuses the other refuses too,
// with the same one-line reason.
//
// readPopef has already checked the container (headers, sizes, checksums, metadata schema,
// tensor payloads); exec::deserialize the executable's bounds. On top of those this checks what
// ties them together and what only the simulator knows:
//  - the executable named by the metadata exists; num_ipus and ipu_version agree with its target;
//  - every anchor matches a stream (name, direction, dtype, shape, kind) and every input and
//    output stream has an anchor;
//  - every weight stream has exactly one tensor data blob of its dtype and shape, and every
//    tensor data blob is a weight; feed data blobs name input anchors and match them;
//  - the whole device fits maxDeviceBytes() (POPRT_MAX_DEVICE_BYTES);
//  - verifyExecutable (below);
//  - each host program is an ONNX model that libonnx's checker accepts, with the inputs and
//    outputs its stream lists promise.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "lib/exec/executable.h"
#include "popef/popef.h"

namespace poprt::sim {

// What the engine needs beyond exec::validate's bounds, checked without running anything:
// each vertex agrees with its codelet; gathers repeat over distinct destination rows (so one
// entry cannot stand for unbounded work); the load program only streams weights in; the main
// program streams each buffer the right way, reads only host buffers that hold a value by then
// (inputs, or buffers an earlier step wrote), streams out only tensors of static shape, and
// leaves every output written; a pipelined program's stages touch their own IPU alone (they
// run at once). Engine::create runs it too. Errors have no file-name prefix.
Status verifyExecutable(const exec::Executable& exe);

struct VerifiedPopef {
  popef::Metadata metadata;
  exec::Executable executable;
  std::map<std::string, Tensor> weights;  // the data of each weight stream, by name
  // The compiler's memory profile (opaque blob "poprt.profile", lib/exec/memory_profile.h) as
  // stored; only the reports parse it (exec::deserializeMemoryProfile checks it against the
  // executable). Empty when the PopEF has none.
  std::vector<uint8_t> memory_profile;
};

// The checks above on a file readPopef returned; `source` starts every error. Given the file to
// keep, the weights take over its tensor data payloads instead of copying them.
Expected<VerifiedPopef> verifyPopef(popef::PopefFile&& file, const std::string& source);
Expected<VerifiedPopef> verifyPopef(const popef::PopefFile& file, const std::string& source);
// readPopef + verifyPopef.
Expected<VerifiedPopef> readVerifiedPopef(const std::filesystem::path& path);

}  // namespace poprt::sim
