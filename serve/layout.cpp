#include "serve/layout.h"

#include <cstring>

#include "lib/support/copy_bytes.h"
#include "serve/tensors.h"

namespace poprt::serve {
namespace {

// Why `d` cannot be batched along `axis` with `batch` rows ("" when it can).
std::string notBatchable(const runtime::DataDesc& d, int axis, int64_t batch) {
  if (!d.fixedSize()) return "'" + d.name + "' has a shape known only at run time";
  if (static_cast<int>(d.shape.size()) <= axis)
    return "'" + d.name + "' " + shapeToString(d.shape) + " has no axis " + std::to_string(axis);
  if (d.shape[static_cast<size_t>(axis)] != batch)
    return "'" + d.name + "' " + shapeToString(d.shape) + " has " + std::to_string(d.shape[static_cast<size_t>(axis)]) +
           " rows along axis " + std::to_string(axis) + ", the first input " + std::to_string(batch);
  return "";
}

Expected<AnchorLayout> describe(const runtime::DataDesc& d, const char* role) {
  const std::string what = std::string(role) + " '" + d.name + "'";
  if (d.kind != runtime::AnchorKind::Tensor) return Error(what + " is not a tensor: popef-serve serves tensors only");
  auto dtype = dtypeFromName(d.dtype);
  if (d.format != runtime::DataFormat::Raw || !dtype || !kserveDatatype(*dtype))
    return Error(what + " is " + d.dtype + ", which the KServe v2 protocol has no fixed-size datatype for");
  AnchorLayout a;
  a.desc = d;
  a.dtype = *dtype;
  a.row_bytes = d.size_in_bytes;
  return a;
}

}  // namespace

Shape ModelLayout::shapeFor(const AnchorLayout& a, int64_t rows) const {
  Shape s = a.desc.shape;
  if (batchable) s[static_cast<size_t>(axis)] = rows;
  return s;
}

size_t ModelLayout::bytesFor(const AnchorLayout& a, int64_t rows) const {
  if (!batchable) return a.desc.size_in_bytes;
  return static_cast<size_t>(a.outer) * static_cast<size_t>(rows) * a.row_bytes;
}

Expected<ModelLayout> planLayout(const std::vector<runtime::DataDesc>& inputs, const std::vector<runtime::DataDesc>& outputs,
                                 int axis) {
  ModelLayout m;
  m.axis = axis;
  for (const auto& d : inputs) {
    POPRT_ASSIGN_OR_RETURN(AnchorLayout a, describe(d, "input"));
    if (!d.fixedSize()) return Error("input '" + d.name + "' has a shape known only at run time");
    m.inputs.push_back(std::move(a));
  }
  for (const auto& d : outputs) {
    POPRT_ASSIGN_OR_RETURN(AnchorLayout a, describe(d, "output"));
    m.outputs.push_back(std::move(a));
  }

  if (inputs.empty()) {
    m.why_not_batchable = "the model has no inputs";
    return m;
  }
  const auto& first = inputs[0];
  m.batch = static_cast<int>(first.shape.size()) > axis ? first.shape[static_cast<size_t>(axis)] : 0;
  if (m.batch < 1) {
    m.batch = 1;
    m.why_not_batchable =
        "input '" + first.name + "' " + shapeToString(first.shape) + " has no rows along axis " + std::to_string(axis);
    return m;
  }
  for (const auto* list : {&inputs, &outputs})
    for (const auto& d : *list)
      if (std::string why = notBatchable(d, axis, m.batch); !why.empty() && m.why_not_batchable.empty())
        m.why_not_batchable = why;
  if (!m.why_not_batchable.empty()) {
    m.batch = 1;
    return m;
  }
  m.batchable = true;
  for (auto* list : {&m.inputs, &m.outputs})
    for (AnchorLayout& a : *list) {
      a.outer = 1;
      for (int i = 0; i < axis; ++i) a.outer *= a.desc.shape[static_cast<size_t>(i)];
      a.row_bytes = a.outer == 0 ? 0 : a.desc.size_in_bytes / static_cast<size_t>(a.outer) / static_cast<size_t>(m.batch);
    }
  return m;
}

void copyRowsIn(const AnchorLayout& a, int64_t batch, std::span<const uint8_t> src, int64_t rows, int64_t at,
                std::span<uint8_t> dst) {
  const size_t n = static_cast<size_t>(rows) * a.row_bytes;
  POPRT_CHECK(at >= 0 && at + rows <= batch, "copyRowsIn: rows beyond the batch");
  POPRT_CHECK(src.size() == static_cast<size_t>(a.outer) * n, "copyRowsIn: source size");
  POPRT_CHECK(dst.size() == static_cast<size_t>(a.outer) * static_cast<size_t>(batch) * a.row_bytes, "copyRowsIn: batch size");
  for (int64_t o = 0; o < a.outer; ++o)
    copyBytes(dst.data() + (static_cast<size_t>(o * batch + at)) * a.row_bytes, src.data() + static_cast<size_t>(o) * n, n);
}

void copyRowsOut(const AnchorLayout& a, int64_t batch, std::span<const uint8_t> src, int64_t at, int64_t rows,
                 std::span<uint8_t> dst) {
  const size_t n = static_cast<size_t>(rows) * a.row_bytes;
  POPRT_CHECK(at >= 0 && at + rows <= batch, "copyRowsOut: rows beyond the batch");
  POPRT_CHECK(dst.size() == static_cast<size_t>(a.outer) * n, "copyRowsOut: destination size");
  POPRT_CHECK(src.size() == static_cast<size_t>(a.outer) * static_cast<size_t>(batch) * a.row_bytes, "copyRowsOut: batch size");
  for (int64_t o = 0; o < a.outer; ++o)
    copyBytes(dst.data() + static_cast<size_t>(o) * n, src.data() + (static_cast<size_t>(o * batch + at)) * a.row_bytes, n);
}

}  // namespace poprt::serve
