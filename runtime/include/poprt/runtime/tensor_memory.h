// How model inputs and outputs are described and handed over: descriptions of the anchors, views
// of memory the caller owns (the runtime reads and writes it in place, without copies of its
// own), and memory the runtime allocates for outputs when the caller does not give any.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace poprt::runtime {

// What an anchor holds (ONNX's value types).
enum class AnchorKind { Tensor, Sequence, Optional, OptionalSequence };

// How an anchor's data is laid out in memory.
enum class DataFormat {
  Raw,        // the elements, row-major, little-endian (bool: 1 byte)
  OnnxProto,  // the bytes of an ONNX TensorProto / SequenceProto / OptionalProto (what a .pb file
              // holds): string tensors, sequences and optionals, which have no fixed layout
};

struct DataDesc {
  std::string name;
  std::string dtype;           // numpy-style: float32, float16, int64, bool, string, ...
  std::vector<int64_t> shape;  // -1 for a dim known only at run time (outputs of some host ops)
  AnchorKind kind = AnchorKind::Tensor;
  DataFormat format = DataFormat::Raw;
  size_t size_in_bytes = 0;  // of a Raw anchor of static shape; 0 otherwise

  // True when the size is known in advance, so the caller may provide the memory.
  bool fixedSize() const {
    if (format != DataFormat::Raw) return false;
    for (int64_t d : shape)
      if (d < 0) return false;
    return true;
  }
};

struct ConstTensorView {
  const void* data = nullptr;
  size_t size = 0;  // bytes
};

struct TensorView {
  void* data = nullptr;
  size_t size = 0;  // bytes
};

// An output in memory the runtime allocated; `desc.shape` is the actual shape.
struct TensorMemory {
  DataDesc desc;
  std::vector<uint8_t> data;
};

using InputMemoryView = std::unordered_map<std::string, ConstTensorView>;
using OutputMemoryView = std::unordered_map<std::string, TensorView>;
using OutputMemory = std::unordered_map<std::string, TensorMemory>;

}  // namespace poprt::runtime
