// Shared by the codelet tests: guarded tile memories (guard bytes around every field), random
// data, and the reference evaluator (a separate implementation) as the oracle.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "lib/exec/executable.h"
#include "lib/ops/registry.h"
#include "lib/support/half.h"

namespace poprt::sim::codelet_test {

// A vertex's params are immutable once built (exec::SharedList): tests edit them through a copy.
template <class F>
void editParams(exec::Vertex& v, F edit) {
  std::vector<int64_t> p = v.params.vec();
  edit(p);
  v.params = std::move(p);
}
inline void setParam(exec::Vertex& v, size_t i, int64_t value) {
  editParams(v, [&](std::vector<int64_t>& p) { p[i] = value; });
}

inline constexpr uint8_t kGuard = 0xA5;
inline constexpr uint64_t kGuardBytes = 32;

// A tile memory where each field gets its own guarded slot.
struct TileMemory {
  std::vector<uint8_t> bytes;
  exec::Field add(const std::vector<float>& data) {
    uint64_t offset = bytes.size() + kGuardBytes;
    bytes.resize(offset + data.size() * 4 + kGuardBytes, kGuard);
    if (!data.empty()) std::memcpy(bytes.data() + offset, data.data(), data.size() * 4);
    return {offset, data.size() * 4};
  }
  // Raw bytes (any dtype), e.g. binary16 patterns such as NaN payloads.
  exec::Field addBytes(const std::vector<uint8_t>& data) {
    uint64_t offset = bytes.size() + kGuardBytes;
    bytes.resize(offset + data.size() + kGuardBytes, kGuard);
    if (!data.empty()) std::memcpy(bytes.data() + offset, data.data(), data.size());
    return {offset, data.size()};
  }
  // The values rounded to float16, stored as binary16.
  exec::Field addHalf(const std::vector<float>& data) {
    uint64_t offset = bytes.size() + kGuardBytes;
    bytes.resize(offset + data.size() * 2 + kGuardBytes, kGuard);
    for (size_t i = 0; i < data.size(); ++i) {
      const uint16_t h = floatToHalfBits(data[i]);
      std::memcpy(bytes.data() + offset + i * 2, &h, 2);
    }
    return {offset, data.size() * 2};
  }
  std::vector<float> readHalf(const exec::Field& f) const {
    std::vector<float> out(f.bytes / 2);
    for (size_t i = 0; i < out.size(); ++i) {
      uint16_t h;
      std::memcpy(&h, bytes.data() + f.offset + i * 2, 2);
      out[i] = halfBitsToFloat(h);
    }
    return out;
  }
  std::vector<float> read(const exec::Field& f) const {
    std::vector<float> out(f.bytes / 4);
    if (!out.empty()) std::memcpy(out.data(), bytes.data() + f.offset, f.bytes);
    return out;
  }
  void expectGuardsIntact(const exec::Field& f) const {
    for (uint64_t i = 1; i <= kGuardBytes; ++i) ASSERT_EQ(bytes[f.offset - i], kGuard) << "guard before";
    for (uint64_t i = 0; i < kGuardBytes; ++i) ASSERT_EQ(bytes[f.offset + f.bytes + i], kGuard) << "guard after";
  }
};

inline std::vector<float> randomVector(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline Tensor tensorOf(const std::vector<float>& v, Shape shape) {
  Tensor t(DType::Float, std::move(shape));
  if (!v.empty()) std::memcpy(t.bytes().data(), v.data(), v.size() * 4);
  return t;
}

// Runs one node of the reference evaluator.
inline std::vector<float> reference(const std::string& op, const std::vector<const Tensor*>& inputs,
                                    std::map<std::string, ir::AttributeValue> attrs = {}, const std::string& domain = "") {
  ir::Graph g;
  std::vector<ir::Value*> ins;
  for (size_t i = 0; i < inputs.size(); ++i) ins.push_back(g.addInput("i" + std::to_string(i), {}));
  ir::Node* n = g.addNode(op, ins, {g.addValue("y")}, "", domain);
  for (auto& [k, v] : attrs) n->attributes[k].value = v;
  auto r = ops::evaluateNode(*n, inputs);
  EXPECT_TRUE(r.ok()) << r.error().message();
  auto d = (*r)[0].data<float>();
  return {d.begin(), d.end()};
}

inline void expectClose(const std::vector<float>& got, const std::vector<float>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::fabs(want[i])) << "at " << i;
}

inline const std::vector<int64_t> kSizes = {0, 1, 2, 3, 4, 7, 64, 65};  // vector width is 2

}  // namespace poprt::sim::codelet_test
