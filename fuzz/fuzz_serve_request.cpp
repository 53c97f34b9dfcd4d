// libFuzzer target: popef-serve's KServe v2 infer requests (serve/http_protocol.h parseInfer), the
// JSON and binary-tensor bodies a client POSTs, checked against one of three model layouts. Then
// the properties the server relies on: an accepted request carries 1..batch rows (the batch when
// the model does not batch), each input exactly the bytes its anchor takes for those rows, each
// output asked for once; and the reply to it is well formed (a JSON header of header_length bytes,
// then exactly the binary outputs).
//
// Input: byte 0 picks the layout; up to the first '\n' after it, the Inference-Header-Content-Length
// header's value ("" when absent); the rest is the body.
#include <algorithm>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_util.h"
#include "serve/http_protocol.h"

using namespace poprt;
using namespace poprt::serve;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::quiet();
  return 0;
}

namespace {

runtime::DataDesc desc(const std::string& name, const std::string& dtype, std::vector<int64_t> shape, size_t itemsize) {
  runtime::DataDesc d;
  d.name = name;
  d.dtype = dtype;
  size_t n = itemsize;
  for (int64_t s : shape) n *= static_cast<size_t>(s);
  d.shape = std::move(shape);
  d.size_in_bytes = n;
  return d;
}

const std::vector<ModelLayout>& layouts() {
  static const std::vector<ModelLayout> all = [] {
    auto plan = [](std::vector<runtime::DataDesc> in, std::vector<runtime::DataDesc> out, int axis) {
      auto l = planLayout(in, out, axis);
      if (!l.ok()) fuzz::fail("a fuzz layout is refused: " + l.error().message());
      return *l;
    };
    std::vector<ModelLayout> v;
    // Batches 4 rows along axis 0 (the serve tests' model).
    v.push_back(plan({desc("a", "float32", {4, 2}, 4), desc("b", "int32", {4}, 4)}, {desc("y", "float32", {4, 2}, 4)}, 0));
    // Does not batch (different leading dims): every request gives the compiled shapes.
    v.push_back(plan({desc("m", "bool", {2}, 1), desc("h", "float16", {3, 1}, 2)},
                     {desc("l", "int64", {1}, 8), desc("u", "uint8", {2, 2}, 1)}, 0));
    // Batches 3 rows along axis 1, an empty dim, wide dtypes.
    v.push_back(plan({desc("x", "uint16", {2, 3, 4}, 2), desc("e", "float64", {0, 3}, 8)},
                     {desc("o", "int8", {5, 3}, 1), desc("d", "uint64", {1, 3, 2}, 8)}, 1));
    return v;
  }();
  return all;
}

void checkAccepted(const InferCall& call, const ModelLayout& l) {
  const int64_t rows = call.request.rows;
  fuzz::require(l.batchable ? rows >= 1 && rows <= l.batch : rows == 1,
                "accepted a request of " + std::to_string(rows) + " rows");
  fuzz::require(call.request.inputs.size() == l.inputs.size(), "accepted a request without every input");
  for (size_t i = 0; i < l.inputs.size(); ++i)
    fuzz::require(call.request.inputs[i].size() == l.bytesFor(l.inputs[i], rows),
                  "input " + l.inputs[i].desc.name + " has the wrong number of bytes");
  std::set<size_t> seen;
  size_t binary_bytes = 0;
  ServeResult result;
  for (const auto& a : l.outputs) result.outputs.push_back({l.shapeFor(a, rows), std::vector<uint8_t>(l.bytesFor(a, rows), 1)});
  for (const OutputChoice& o : call.outputs) {
    fuzz::require(o.index < l.outputs.size() && seen.insert(o.index).second, "an output asked for twice or unknown");
    if (o.binary) binary_bytes += result.outputs[o.index].bytes.size();
  }
  HttpReply r = inferReply({"m"}, call, l, result);
  fuzz::require(r.status == 200, "the reply to an accepted request is not 200: " + r.body);
  const size_t header = r.header_length ? r.header_length : r.body.size();
  fuzz::require(header <= r.body.size() && r.body.size() - header == binary_bytes, "the reply's binary part has the wrong size");
  auto j = nlohmann::json::parse(r.body.substr(0, header), nullptr, false);
  fuzz::require(!j.is_discarded() && j.contains("outputs") && j["outputs"].size() == call.outputs.size(),
                "the reply's JSON header is malformed");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const ModelLayout& l = layouts()[data[0] % layouts().size()];
  std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  const size_t nl = rest.find('\n');
  if (nl == std::string_view::npos) return 0;
  const std::string header_length(rest.substr(0, nl));
  auto call = parseInfer(rest.substr(nl + 1), header_length, l);
  if (!call.ok()) {
    fuzz::require(!call.error().message().empty(), "an empty error message");
    return 0;
  }
  checkAccepted(*call, l);
  return 0;
}
