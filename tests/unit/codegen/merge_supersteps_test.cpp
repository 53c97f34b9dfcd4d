// Merging independent supersteps: what may share one, what may move ahead, and the step counts
// handed back for the memory profile. Vertices here are only their fields (fields[0] written,
// the others read); the simulator's results on merged programs are checked end to end against
// the reference evaluator by the model tests.
#include <gtest/gtest.h>

#include "codegen/merge_supersteps.h"

namespace poprt::codegen {
namespace {

// A compute set named `name` on tile 0 writing [out, out+16) and reading [in, in+16).
exec::ComputeSet computeSet(const std::string& name, uint64_t out, uint64_t in) {
  exec::Vertex v;
  v.codelet = exec::Codelet::Unary;
  v.fields = {{out, 16}, {in, 16}};
  return {name, {v}};
}

exec::Executable program(std::vector<exec::ComputeSet> sets) {
  exec::Executable exe;
  for (auto& cs : sets) {
    exe.main.steps.push_back({exec::StepKind::Compute, static_cast<uint32_t>(exe.compute_sets.size())});
    exe.compute_sets.push_back(std::move(cs));
  }
  return exe;
}

std::vector<std::string> computeNames(const exec::Executable& exe) {
  std::vector<std::string> names;
  for (const auto& step : exe.main.steps)
    names.push_back(step.kind == exec::StepKind::Compute ? exe.compute_sets[step.index].name : "(other)");
  return names;
}

TEST(MergeSupersteps, IndependentNeighboursShareOneAndDependentOnesDoNot) {
  // a: [0) <- [16); b: [32) <- [48), independent of a; c reads a's output.
  exec::Executable exe = program({computeSet("a", 0, 16), computeSet("b", 32, 48), computeSet("c", 64, 0)});
  const auto remap = mergeSupersteps(exe);
  EXPECT_EQ(computeNames(exe), (std::vector<std::string>{"a + b", "c"}));
  EXPECT_EQ(exe.compute_sets[0].vertices.size(), 2u);
  EXPECT_EQ(remap, (std::vector<uint32_t>{0, 1, 1, 2}));
}

TEST(MergeSupersteps, AWriteOverWhatTheOtherReadsOrWritesKeepsThemApart) {
  // b overwrites a's input (a buffer reused after a); c writes where b writes.
  exec::Executable exe = program({computeSet("a", 0, 16), computeSet("b", 16, 48), computeSet("c", 16, 80)});
  mergeSupersteps(exe);
  EXPECT_EQ(computeNames(exe), (std::vector<std::string>{"a", "b", "c"}));
}

TEST(MergeSupersteps, ALaterIndependentStepMovesAheadOnlyPastStepsItCommutesWith) {
  // b reads a's output; c is independent of both: it joins a. d reads c's output: it cannot join
  // a (c runs in that compute set too); e writes what b reads: it cannot move ahead of b.
  exec::Executable exe = program({computeSet("a", 0, 16), computeSet("b", 32, 0), computeSet("c", 64, 80),
                                  computeSet("d", 96, 64), computeSet("e", 0, 112)});
  const auto remap = mergeSupersteps(exe);
  EXPECT_EQ(computeNames(exe), (std::vector<std::string>{"a + c", "b + d", "e"}));
  EXPECT_EQ(remap, (std::vector<uint32_t>{0, 1, 2, 2, 2, 3}));
}

TEST(MergeSupersteps, AnExchangeJoinsUnlessItReadsWhatTheComputeSetWrites) {
  exec::Executable exe;
  exe.layouts.push_back({4, {{0, 4, 0, 0}}});   // 4 floats at tile 0, bytes [0, 16)
  exe.layouts.push_back({4, {{0, 4, 0, 32}}});  // bytes [32, 48): a's output
  auto exchange = [&](const std::string& name, uint32_t layout, uint64_t dst) {
    exe.main.steps.push_back({exec::StepKind::Exchange, static_cast<uint32_t>(exe.exchanges.size())});
    exe.exchanges.push_back({name, {}, {exec::Gather{layout, 0, 4, 1, 0, 0, dst, 0}}});
  };
  auto compute = [&](exec::ComputeSet cs) {
    exe.main.steps.push_back({exec::StepKind::Compute, static_cast<uint32_t>(exe.compute_sets.size())});
    exe.compute_sets.push_back(std::move(cs));
  };
  compute(computeSet("a", 32, 48));  // writes [32, 48)
  exchange("b", 0, 64);              // gathers [0, 16) to [64, 80): independent of a
  compute(computeSet("b", 80, 64));  // and computes on it: joins a
  exchange("c", 1, 96);              // gathers a's output: runs after a's compute set
  compute(computeSet("c", 112, 96));
  mergeSupersteps(exe);
  ASSERT_EQ(exe.main.steps.size(), 4u);
  EXPECT_EQ(exe.main.steps[0].kind, exec::StepKind::Exchange);
  EXPECT_EQ(exe.exchanges[exe.main.steps[0].index].name, "a + b");
  EXPECT_EQ(exe.compute_sets[exe.main.steps[1].index].name, "a + b");
  EXPECT_EQ(exe.exchanges[exe.main.steps[2].index].name, "c");
  EXPECT_EQ(exe.compute_sets[exe.main.steps[3].index].name, "c");
}

TEST(MergeSupersteps, StreamAndHostStepsAreNeverCrossed) {
  exec::Executable exe = program({computeSet("a", 0, 16)});
  exe.main.steps.push_back({exec::StepKind::StreamOut, 0});
  exe.main.steps.push_back({exec::StepKind::Compute, 1});
  exe.compute_sets.push_back(computeSet("b", 32, 48));
  mergeSupersteps(exe);
  EXPECT_EQ(computeNames(exe), (std::vector<std::string>{"a", "(other)", "b"}));
}

}  // namespace
}  // namespace poprt::codegen
