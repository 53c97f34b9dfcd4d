// How popef-serve sees a compiled model's anchors for dynamic batching. A PopEF is compiled for a
// fixed batch of B rows along a batch axis; a request may carry k <= B rows, and the batcher
// places the rows of several requests side by side in one batch and takes each request's rows
// back out of the outputs. An anchor of shape [d0 .. d(a-1), B, d(a+1) ..] is seen as
// [outer][B][row]: `outer` blocks of B rows of `row_bytes` each.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lib/support/dtype.h"
#include "lib/support/status.h"
#include "lib/support/tensor.h"
#include "poprt/runtime/tensor_memory.h"

namespace poprt::serve {

struct AnchorLayout {
  runtime::DataDesc desc;  // as the runtime describes it (compiled shape)
  DType dtype = DType::Undefined;
  int64_t outer = 1;     // product of the dims before the batch axis
  size_t row_bytes = 0;  // bytes of one row: product of the dims after the batch axis x element size
};

struct ModelLayout {
  int axis = 0;       // the batch axis
  int64_t batch = 1;  // rows of a compiled batch
  // Every input and output has `batch` rows along `axis`, so a request may carry 1..batch rows.
  // Otherwise a request must give the compiled shapes exactly and runs alone; `why_not_batchable`
  // says why (for the start-up log).
  bool batchable = false;
  std::string why_not_batchable;
  std::vector<AnchorLayout> inputs, outputs;

  // The shape of anchor `a` for a request of `rows` rows (the compiled shape when not batchable).
  Shape shapeFor(const AnchorLayout& a, int64_t rows) const;
  // Bytes of anchor `a` for `rows` rows (its compiled size when not batchable).
  size_t bytesFor(const AnchorLayout& a, int64_t rows) const;
};

// The layout of a model with these anchors, batched along `axis`. Errors (naming the anchor) for
// anchors popef-serve cannot serve: sequences, optionals, strings and dtypes without a KServe
// datatype; inputs whose shape is known only at run time.
Expected<ModelLayout> planLayout(const std::vector<runtime::DataDesc>& inputs, const std::vector<runtime::DataDesc>& outputs,
                                 int axis);

// Copies the `rows` rows of `src` (laid out [outer][rows][row]) to rows [at, at + rows) of `dst`
// (laid out [outer][batch][row]).
void copyRowsIn(const AnchorLayout& a, int64_t batch, std::span<const uint8_t> src, int64_t rows, int64_t at,
                std::span<uint8_t> dst);
// Copies rows [at, at + rows) of `src` (laid out [outer][batch][row]) to `dst` ([outer][rows][row]).
void copyRowsOut(const AnchorLayout& a, int64_t batch, std::span<const uint8_t> src, int64_t at, int64_t rows,
                 std::span<uint8_t> dst);

}  // namespace poprt::serve
