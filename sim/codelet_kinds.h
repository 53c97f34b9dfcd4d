// What the simulator knows of each vertex kind, side by side in the kind's sim/ file: its check
// (fields and params agree, params in range: run before anything executes), its run on the tile's
// memory, its cycle estimate on a target and its floating-point operations. The declarations and
// the table are generated from the one list of kinds (POPRT_CODELETS, lib/exec/executable.h):
//
//   elementwise_codelets.cpp  Unary, Binary, Activation, Fill, Cast
//   matmul_codelet.cpp        MatMul
//   window_codelets.cpp       ConvPartial, Pool
//   row_codelets.cpp          Reduce, Softmax, Norm, BatchNorm, Attention
//
// A float16 vertex runs its kind's float32 functions on widened fields (sim/codelets.cpp).
#pragma once

#include <cstdint>

#include "lib/exec/executable.h"

namespace poprt::sim {

#define POPRT_DECLARE_CODELET(name, id)                                \
  Status check##name(const exec::Vertex& v);                           \
  void run##name(const exec::Vertex& v, uint8_t* mem);                 \
  uint64_t cycles##name(const exec::Vertex& v, const exec::Target& t); \
  uint64_t flops##name(const exec::Vertex& v);
POPRT_CODELETS(POPRT_DECLARE_CODELET)
#undef POPRT_DECLARE_CODELET

struct CodeletKind {
  Status (*check)(const exec::Vertex&);
  void (*run)(const exec::Vertex&, uint8_t*);
  uint64_t (*cycles)(const exec::Vertex&, const exec::Target&);
  uint64_t (*flops)(const exec::Vertex&);
};

// The kind of id `codelet`, or nullptr for an id outside the list (a file may hold any number).
const CodeletKind* codeletKind(exec::Codelet codelet);

}  // namespace poprt::sim
