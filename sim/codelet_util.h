// Helpers every codelet file shares: field access, size arithmetic that cannot overflow, and the
// common field checks. Vertices are untrusted (they come from a PopEF): checks run before any
// vertex executes, so the run functions may assume consistent fields.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/ops/graphcore_ops.h"
#include "sim/vertex_view.h"

namespace poprt::sim {

inline constexpr int64_t kProductCap = int64_t{1} << 50;  // no field is that large; products beyond it are refused

// Hot loops are compiled for several x86 levels and the best one is picked at load time (GCC's
// target_clones), so one portable binary uses AVX2/AVX-512 where the CPU has them. The sim layer
// is built with -ffp-contract=off (no fused multiply-add), so every clone computes the same bits.
// (sim/gemm.cpp picks its own versions, with explicit fused multiply-adds: exact in every one.)
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define POPRT_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define POPRT_VECTOR_CLONES
#endif

inline float* f32(uint8_t* mem, const exec::Field& f) { return reinterpret_cast<float*>(mem + f.offset); }

// The n float rows at arena offsets rows[0, n) (VertexView::input_rows), as pointers for the
// kernels that read rows through a table (gemmRows, sumRows); valid until this thread's next call.
inline const float* const* rowPointers(const uint8_t* mem, const uint64_t* rows, int64_t n) {
  thread_local std::vector<const float*> pointers;
  pointers.resize(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) pointers[static_cast<size_t>(r)] = reinterpret_cast<const float*>(mem + rows[r]);
  return pointers.data();
}

// An activation kind read from a PopEF is one of the list.
inline bool isActivationKind(ops::graphcore::ActivationKind kind) {
  return kind >= ops::graphcore::ActivationKind::Relu && kind <= ops::graphcore::kLastActivationKind;
}

// a * b for sizes, or -1 when either is negative or the product exceeds kProductCap.
inline int64_t capMul(int64_t a, int64_t b) {
  int64_t product = 0;  // no division: codelets check sizes per vertex run
  if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &product) || product > kProductCap) return -1;
  return product;
}

// `n` float32 fields, each 4-byte aligned.
inline Status expectFloatFields(const VertexView& v, size_t n, const char* what) {
  if (v.fields.size() != n) return Error(std::string(what) + " vertex expects " + std::to_string(n) + " fields");
  for (const auto& f : v.fields)
    if (f.offset % 4 != 0) return Error(std::string(what) + " vertex has a misaligned field");
  if (v.dtype != DType::Float) return Error(std::string(what) + " vertex supports float32 only");
  return okStatus();
}

// The field holds exactly `elements` floats (false for a negative count).
inline bool fieldHolds(const exec::Field& f, int64_t elements) {
  // Divided, not multiplied: a count of 2^62 + k times 4 wraps to the 4k bytes of a small field.
  return elements >= 0 && f.bytes % 4 == 0 && f.bytes / 4 == static_cast<uint64_t>(elements);
}

}  // namespace poprt::sim
