// verifyExecutable (sim/verify_popef.h) on a small hand-built executable: a control that passes,
// then one broken thing at a time. The PopEF-level checks are covered end to end by the
// malformed corpus (tests/malformed).
#include <gtest/gtest.h>

#include <string>

#include "lib/ops/scalar_math.h"
#include "sim/engine.h"
#include "sim/verify_popef.h"

namespace poprt::sim {
namespace {

using Role = exec::HostStream::Role;
using exec::StepKind;

// y = Relu(x) for float32[4]: x streams into tile 0, a Unary vertex writes the result after it,
// an exchange copies that to tile 1, and y streams out from there.
exec::Executable reluExecutable() {
  exec::Executable e;
  e.target = {"test-2t", "ipu2", 1, 2, 1024, 6, 1.0e9, 4, 10, 16, 64, 2};
  e.tile_bytes = {32, 16};
  e.streams.push_back({"x", Role::Input, DType::Float, {4}, {{0, 0, 0, 16}}});
  e.streams.push_back({"y", Role::Output, DType::Float, {4}, {{0, 1, 0, 16}}});
  exec::Vertex v;
  v.tile = 0;
  v.codelet = exec::Codelet::Unary;
  v.fields = {{16, 16}, {0, 16}};
  v.params = {static_cast<int64_t>(ops::UnaryFn::Relu), 4};
  e.compute_sets.push_back({"relu", {v}});
  e.exchanges.push_back({"to_tile_1", {{0, 16, 1, 0, 16}}, {}});
  e.main.steps = {{StepKind::StreamIn, 0}, {StepKind::Compute, 0}, {StepKind::Exchange, 0}, {StepKind::StreamOut, 1}};
  return e;
}

void expectRefused(const exec::Executable& e, const std::string& what) {
  Status st = verifyExecutable(e);
  ASSERT_FALSE(st.ok()) << "accepted; expected: " << what;
  EXPECT_NE(st.error().message().find(what), std::string::npos) << st.error().message();
  // Engine::create makes the same checks before it allocates or runs anything.
  auto engine = Engine::create(e, {}, 1);
  EXPECT_FALSE(engine.ok());
}

TEST(VerifyExecutable, ControlRunsAndComputesRelu) {
  exec::Executable e = reluExecutable();
  ASSERT_TRUE(verifyExecutable(e).ok()) << verifyExecutable(e).error().message();
  auto engine = Engine::create(e, {}, 1);
  ASSERT_TRUE(engine.ok()) << engine.error().message();
  Tensor x(DType::Float, {4});
  x.data<float>()[0] = -1.f;
  x.data<float>()[1] = 2.f;
  auto y = (*engine)->runTensors({&x});
  ASSERT_TRUE(y.ok()) << y.error().message();
  EXPECT_EQ((*y)[0].data<float>()[0], 0.f);
  EXPECT_EQ((*y)[0].data<float>()[1], 2.f);
}

TEST(VerifyExecutable, RefusesAnOutputNeverWritten) {
  exec::Executable e = reluExecutable();
  e.main.steps.pop_back();
  expectRefused(e, "output stream 'y' is never written by the main program");
}

TEST(VerifyExecutable, RefusesAHostBufferReadBeforeItIsWritten) {
  exec::Executable e = reluExecutable();
  e.streams.push_back({"h", Role::Host, DType::Float, {4}, {{0, 0, 0, 16}}});
  e.main.steps.insert(e.main.steps.begin(), {StepKind::StreamIn, 2});
  expectRefused(e, "main program step 0 streams host stream 'h' in before anything wrote it");
}

TEST(VerifyExecutable, RefusesStreamingOutARunTimeShape) {
  exec::Executable e = reluExecutable();
  e.streams[1].shape = {-1};
  e.streams[1].copies.clear();
  expectRefused(e, "streams output stream 'y' out, but it is not a tensor of fixed size");
}

TEST(VerifyExecutable, RefusesTwoInputsOfOneName) {
  exec::Executable e = reluExecutable();
  e.streams.push_back({"x", Role::Input, DType::Float, {4}, {}});
  expectRefused(e, "two input stream 'x's");
}

TEST(VerifyExecutable, RefusesGathersThatRepeatOntoOneRow) {
  exec::Executable e = reluExecutable();
  e.layouts.push_back({4, {{0, 4, 0, 0}}});
  // 2^40 repeats of one element onto the same destination: one entry, unbounded work.
  e.exchanges[0].gathers.push_back({0, 0, 1, int64_t{1} << 40, 0, 1, 0, 0});
  expectRefused(e, "repeats of 4 bytes with a destination stride of 0 overlap or are empty");
  // Distinct rows are fine.
  e.exchanges[0].gathers.back() = {0, 0, 1, 4, 1, 1, 0, 4};
  EXPECT_TRUE(verifyExecutable(e).ok()) << verifyExecutable(e).error().message();
}

TEST(VerifyExecutable, RefusesADeviceAboveTheCap) {
  exec::Executable e = reluExecutable();
  ::setenv("POPRT_MAX_DEVICE_BYTES", "40", 1);
  Status st = verifyExecutable(e);
  ::unsetenv("POPRT_MAX_DEVICE_BYTES");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message().find("its tiles need 48 bytes of memory in all, above the limit of 40 (POPRT_MAX_DEVICE_BYTES)"),
            std::string::npos)
      << st.error().message();
}

// The exchange plan's moves count against the cap with the tiles: 48 bytes of tiles, and 5 moves
// (the copy, and the gather's 4 rows of one element) of 64 bytes each to plan (a move of 16
// bytes, held up to four times while planning) need 368.
TEST(VerifyExecutable, RefusesAnExchangePlanAboveTheCap) {
  exec::Executable e = reluExecutable();
  e.layouts.push_back({4, {{0, 4, 0, 0}}});
  e.exchanges[0].gathers.push_back({0, 0, 1, 4, 1, 1, 0, 4});
  ::setenv("POPRT_MAX_DEVICE_BYTES", "367", 1);
  Status refused = verifyExecutable(e);
  ::setenv("POPRT_MAX_DEVICE_BYTES", "368", 1);
  Status accepted = verifyExecutable(e);
  ::unsetenv("POPRT_MAX_DEVICE_BYTES");
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message().find("its exchanges make 5 moves (320 bytes to plan) besides 48 bytes of tiles, above the "
                                           "limit of 367 (POPRT_MAX_DEVICE_BYTES)"),
            std::string::npos)
      << refused.error().message();
  EXPECT_TRUE(accepted.ok()) << accepted.error().message();
}

}  // namespace
}  // namespace poprt::sim
