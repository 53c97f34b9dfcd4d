// Scratch inputs (sim/scratch_inputs.h) and the liveness proof under them (sim/field_liveness.h),
// on hand-written programs over one tile of 8 KiB (arena offsets are tile offsets): each liveness
// case says what follows a compute set that read bytes [100, 200), and whether those bytes are dead
// after it; each scratch case, what becomes of a vertex's input [4000, 7000).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "sim/codelets.h"
#include "sim/field_liveness.h"
#include "sim/scratch_inputs.h"
#include "tests/unit/sim/codelet_test_util.h"

namespace poprt::sim {
namespace {

constexpr ByteRange kRead{100, 200};

// Programs written step by step: each set's vertices as their fields ([written, read...]).
class ProgramBuilder {
 public:
  explicit ProgramBuilder(uint64_t tile_bytes = 8192) { exe_.tile_bytes = {tile_bytes}; }
  // A compute set's step in the main program (or the load program); returns the step's index.
  uint32_t set(std::vector<std::vector<exec::Field>> vertices, bool load = false) {
    sets_.push_back(std::move(vertices));
    moves_.emplace_back();
    return add(exec::StepKind::Compute, static_cast<uint32_t>(sets_.size() - 1), load);
  }
  // The last set's vertices as one run of these params and dtype.
  void params(VertexParams params, DType dtype = DType::Float) {
    params_.resize(sets_.size());
    params_.back() = {std::move(params)};
    dtypes_.resize(sets_.size(), DType::Float);
    dtypes_.back() = dtype;
  }
  // The moves the last set's vertices make, by vertex.
  void vertexMoves(std::vector<std::vector<ExchangeMove>> by_vertex) {
    VertexMoves& vm = moves_.back();
    for (const auto& moves : by_vertex) {
      vm.moves.insert(vm.moves.end(), moves.begin(), moves.end());
      vm.ends.push_back(static_cast<uint32_t>(vm.moves.size()));
    }
  }
  uint32_t exchange(std::vector<ExchangeMove> moves, bool load = false) {
    ExchangePlan plan;
    plan.runs.push_back({0, moves.size()});
    plan.moves = std::move(moves);
    exchanges_.push_back(std::move(plan));
    return add(exec::StepKind::Exchange, static_cast<uint32_t>(exchanges_.size() - 1), load);
  }
  uint32_t stream(exec::HostStream::Role role, ByteRange bytes, exec::StepKind kind = exec::StepKind::StreamIn) {
    exec::HostStream s;
    s.role = role;
    s.copies.push_back({0, 0, bytes.begin, bytes.end - bytes.begin});
    exe_.streams.push_back(s);
    return add(kind, static_cast<uint32_t>(exe_.streams.size() - 1), false);
  }
  void pipelined() { exe_.strategy = exec::Strategy::Pipelined; }
  uint32_t hostCall() { return add(exec::StepKind::HostCall, 0, false); }

  const exec::Executable& exe() const { return exe_; }
  // The plan of the steps so far (its vertices view its own copy of the fields).
  ExecutionPlan plan() const {
    ExecutionPlan plan;
    plan.sets.resize(sets_.size());
    for (size_t s = 0; s < sets_.size(); ++s) {
      PlannedSet& set = plan.sets[s];
      size_t count = 0;
      for (const auto& v : sets_[s]) count += v.size();
      set.fields.reserve(count);
      for (const auto& v : sets_[s]) {
        const size_t first = set.fields.size();
        set.fields.insert(set.fields.end(), v.begin(), v.end());
        const bool conv = s < params_.size() && params_[s];
        set.vertices.emplace_back(0, conv ? exec::Codelet::ConvPartial : exec::Codelet::Unary, conv ? dtypes_[s] : DType::Float,
                                  std::span(set.fields).subspan(first, v.size()));
      }
      set.runs.push_back({sets_[s].size(), s < params_.size() && params_[s] ? *params_[s] : VertexParams(exec::UnaryParams{})});
    }
    plan.exchanges = exchanges_;
    plan.vertex_moves = moves_;
    plan.exe = &exe_;
    return plan;
  }
  bool deadAfterStep(uint32_t step, ByteRange range = kRead) const {
    const LivenessQuery q{step, range};
    return deadAfter(exe_, plan(), {0}, std::span(&q, 1))[0];
  }

 private:
  uint32_t add(exec::StepKind kind, uint32_t index, bool load) {
    auto& steps = (load ? exe_.load : exe_.main).steps;
    steps.push_back({kind, index});
    return static_cast<uint32_t>(steps.size() - 1);
  }
  exec::Executable exe_;
  std::vector<std::vector<std::vector<exec::Field>>> sets_;
  std::vector<VertexMoves> moves_;
  std::vector<ExchangePlan> exchanges_;
  std::vector<std::optional<VertexParams>> params_;
  std::vector<DType> dtypes_;
};

const exec::Field kOut{600, 16};
const exec::Field kIn{kRead.begin, kRead.end - kRead.begin};

TEST(FieldLiveness, WrittenWholeBeforeAnyReadIsDead) {
  ProgramBuilder p;
  const uint32_t s = p.set({{kOut, kIn}});
  p.exchange({{700, 100, 100}});  // rewrites [100, 200) from elsewhere
  p.set({{kOut, kIn}});
  EXPECT_TRUE(p.deadAfterStep(s));
}

TEST(FieldLiveness, AnOutputWrittenOverItIsAWrite) {
  ProgramBuilder p;
  const uint32_t s = p.set({{kOut, kIn}});
  p.set({{{100, 100}, {800, 16}}});  // a vertex's output over it
  p.set({{kOut, kIn}});
  EXPECT_TRUE(p.deadAfterStep(s));
}

TEST(FieldLiveness, StreamedOverIsDeadStreamedOutIsAlive) {
  ProgramBuilder in;
  const uint32_t s = in.set({{kOut, kIn}});
  in.stream(exec::HostStream::Role::Input, kRead);
  EXPECT_TRUE(in.deadAfterStep(s));
  ProgramBuilder out;
  const uint32_t t = out.set({{kOut, kIn}});
  out.stream(exec::HostStream::Role::Output, {150, 160}, exec::StepKind::StreamOut);
  EXPECT_FALSE(out.deadAfterStep(t));
}

// Every way a byte of [100, 200) can be read before it is written again.
TEST(FieldLiveness, ReadAgainIsAlive) {
  {
    ProgramBuilder p;  // a later set reads a byte
    const uint32_t s = p.set({{kOut, kIn}});
    p.set({{kOut, {199, 1}}});
    EXPECT_FALSE(p.deadAfterStep(s));
  }
  {
    ProgramBuilder p;  // a move reads it
    const uint32_t s = p.set({{kOut, kIn}});
    p.exchange({{150, 900, 8}});
    EXPECT_FALSE(p.deadAfterStep(s));
  }
  {
    ProgramBuilder p;  // half is rewritten, then the other half read
    const uint32_t s = p.set({{kOut, kIn}});
    p.exchange({{700, 100, 50}});
    p.set({{kOut, kIn}});
    EXPECT_FALSE(p.deadAfterStep(s));
  }
  {
    ProgramBuilder p;  // a vertex reads it and writes it: it read it first
    const uint32_t s = p.set({{kOut, kIn}});
    p.set({{kIn, kIn}});
    EXPECT_FALSE(p.deadAfterStep(s));
  }
  {
    ProgramBuilder p;  // the moves a later set's vertices make read it, and they come first
    const uint32_t s = p.set({{kOut, kIn}});
    p.set({{{100, 100}, {800, 16}}});
    p.vertexMoves({{{120, 900, 16}}});
    EXPECT_FALSE(p.deadAfterStep(s));
  }
  {
    ProgramBuilder p;  // nothing after it reads it, but the next run's first set does
    p.set({{kOut, {150, 4}}});
    const uint32_t s = p.set({{kOut, kIn}});
    EXPECT_FALSE(p.deadAfterStep(s));
  }
  {
    ProgramBuilder p;  // a reload's load program reads it before the next run
    p.exchange({{150, 900, 8}}, true);
    p.stream(exec::HostStream::Role::Input, kRead);  // main writes it first...
    const uint32_t s = p.set({{kOut, kIn}});
    EXPECT_FALSE(p.deadAfterStep(s));  // ...but the load program, between two runs, reads it first
  }
  {
    ProgramBuilder p;  // a weight lives there: readWeight reads it at any time
    const uint32_t s = p.set({{kOut, kIn}});
    p.exchange({{700, 100, 100}});
    p.stream(exec::HostStream::Role::Weight, {180, 190});
    EXPECT_FALSE(p.deadAfterStep(s));
  }
  {
    ProgramBuilder p;  // a pipelined program's order is not time order
    const uint32_t s = p.set({{kOut, kIn}});
    p.exchange({{700, 100, 100}});
    p.pipelined();
    EXPECT_FALSE(p.deadAfterStep(s));
  }
}

// A host program can fail: the run stops there, and the next one starts without the write after it.
TEST(FieldLiveness, ARunStoppingAtAHostProgramLeavesItForTheNextRun) {
  for (bool host : {false, true}) {
    ProgramBuilder p;
    p.set({{kOut, {150, 4}}});  // the next run reads it first
    const uint32_t s = p.set({{kOut, kIn}});
    if (host) p.hostCall();
    p.exchange({{700, 100, 100}});
    EXPECT_EQ(p.deadAfterStep(s), !host) << (host ? "a host program between" : "no host program");
  }
}

TEST(FieldLiveness, TheNextRunWritingItFirstIsDead) {
  ProgramBuilder p;
  p.exchange({{700, 100, 100}});
  p.set({{kOut, kIn}});
  const uint32_t s = p.set({{kOut, kIn}});
  EXPECT_FALSE(p.deadAfterStep(1));  // the set after reads it
  EXPECT_TRUE(p.deadAfterStep(s));   // the next run rewrites it before reading it
}

// A write that covers only part of a 4-byte granule keeps it alive: the proof errs that way.
TEST(FieldLiveness, PartlyWrittenGranulesStayAlive) {
  ProgramBuilder p;
  const uint32_t s = p.set({{kOut, kIn}});
  p.exchange({{700, 100, 2}, {702, 102, 98}});  // [100, 102) and [102, 200): granule [100, 104) not whole in either
  p.set({{kOut, {100, 4}}});
  EXPECT_FALSE(p.deadAfterStep(s));
}

// moveInputsToScratch: a set whose one vertex's moves fill its input [4000, 7000) whole, rewritten
// after the set; then the same with each condition broken.
const exec::Field kWindow{4000, 3000};

ProgramBuilder scratchCase(std::vector<std::vector<exec::Field>> vertices, std::vector<std::vector<ExchangeMove>> moves,
                           bool rewritten = true) {
  ProgramBuilder p;
  p.set(std::move(vertices));
  p.vertexMoves(std::move(moves));
  if (rewritten) p.exchange({{700, 4000, 3000}});
  p.set({{kOut, kWindow}});
  return p;
}

// The same for a field one float over kMaxScratchFieldBytes, or one under kMinScratchFieldBytes.
ProgramBuilder sizedScratchCase(uint64_t n) {
  ProgramBuilder p(3 * n + 64);
  p.set({{{2 * n, 16}, {0, n}}});
  p.vertexMoves({{{n, 0, static_cast<uint32_t>(n)}}});
  p.exchange({{n, 0, static_cast<uint32_t>(n)}});
  return p;
}

TEST(ScratchInputs, AFieldItsMovesFillWholeAndNothingReadsAgainIsAssembledInScratch) {
  const ProgramBuilder p = scratchCase({{kOut, {900, 16}, kWindow}}, {{{300, 4000, 1000}, {2000, 5000, 2000}, {500, 920, 4}}});
  ExecutionPlan plan = p.plan();
  moveInputsToScratch(p.exe(), plan, {0});
  const VertexMoves& vm = plan.vertex_moves[0];
  EXPECT_EQ(vm.scratch_field, std::vector<uint8_t>{2});
  EXPECT_EQ(vm.scratch_moves, (std::vector<ExchangeMove>{{300, 0, 1000}, {2000, 1000, 2000}}));  // offsets in the field
  EXPECT_EQ(vm.scratch_ends, std::vector<uint32_t>{2});
  EXPECT_EQ(vm.moves, (std::vector<ExchangeMove>{{500, 920, 4}}));  // into the other field: made in the tile
  EXPECT_EQ(vm.ends, std::vector<uint32_t>{1});
  EXPECT_EQ(plan.scratch_field_bytes, 3000u);
}

TEST(ScratchInputs, FieldsThatDoNotQualifyKeepTheirMoves) {
  struct Case {
    const char* what;
    ProgramBuilder program;
  };
  const std::vector<Case> cases = {
      {"its moves leave a gap", scratchCase({{kOut, kWindow}}, {{{300, 4000, 1000}, {2000, 5004, 1996}}})},
      {"a move straddles its edge", scratchCase({{kOut, kWindow}}, {{{300, 3996, 3004}}})},
      {"another vertex reads a byte of it", scratchCase({{kOut, kWindow}, {{620, 16}, {6996, 4}}}, {{{300, 4000, 3000}}, {}})},
      {"another field of its vertex reads it", scratchCase({{kOut, kWindow, {5000, 8}}}, {{{300, 4000, 3000}}})},
      {"it is read after the set", scratchCase({{kOut, kWindow}}, {{{300, 4000, 3000}}}, false)},
      {"it is larger than a scratch slot", sizedScratchCase(kMaxScratchFieldBytes + 4)},
      {"it is too small to gain", sizedScratchCase(kMinScratchFieldBytes - 4)},
  };
  for (const Case& c : cases) {
    ExecutionPlan plan = c.program.plan();
    const std::vector<ExchangeMove> before = plan.vertex_moves[0].moves;
    moveInputsToScratch(c.program.exe(), plan, {0});
    EXPECT_TRUE(plan.vertex_moves[0].scratch_moves.empty()) << c.what;
    EXPECT_EQ(plan.vertex_moves[0].moves, before) << c.what;
  }
  // The sized case qualifies at the bounds.
  for (uint64_t n : {kMinScratchFieldBytes, kMaxScratchFieldBytes}) {
    const ProgramBuilder p = sizedScratchCase(n);
    ExecutionPlan plan = p.plan();
    moveInputsToScratch(p.exe(), plan, {0});
    EXPECT_EQ(plan.vertex_moves[0].scratch_field, std::vector<uint8_t>{1}) << n << " bytes";
  }
}

// A 1x1 conv block over 2 channels of 25x30 (3,000 bytes a plane) reads its input as whole planes:
// each plane in one piece at the moves' sources becomes a plane table, and nothing is moved.
TEST(ScratchInputs, WholePlanesInOnePieceAreReadWhereTheSourcesHoldThem) {
  static const int64_t dims[] = {25, 30}, ones[] = {1, 1}, zeros[] = {0, 0};
  exec::ConvPartialParams conv;
  conv.rank = 2, conv.groups = 1, conv.in_channels = 2, conv.out_channels = 1;
  conv.in_dims = conv.out_dims = dims;
  conv.kernel = conv.strides = conv.dilations = ones;
  conv.starts = zeros;
  const exec::Field input{1000, 6000}, out{7000, 1000 * 3};
  struct Case {
    const char* what;
    std::vector<ExchangeMove> moves;
    DType dtype;
    std::vector<uint64_t> planes;  // empty: the field stays assembled in scratch
  };
  const std::vector<Case> cases = {
      {"one move a plane", {{20000, 1000, 3000}, {40000, 4000, 3000}}, DType::Float, {20000, 40000}},
      {"one move for both", {{20000, 1000, 6000}}, DType::Float, {20000, 23000}},
      {"a plane in two moves", {{20000, 1000, 2000}, {40000, 3000, 4000}}, DType::Float, {}},
      {"a float16 block (widened, not read in place)", {{20000, 1000, 6000}}, DType::Float16, {}},
      {"sources off a 4-byte boundary", {{20002, 1000, 6000}}, DType::Float, {}},
  };
  for (const Case& c : cases) {
    ProgramBuilder p(65536);
    p.set({{out, input}});
    p.params(VertexParams(conv), c.dtype);
    p.vertexMoves({c.moves});
    p.exchange({{50000, 1000, 6000}});  // rewritten after the set
    ExecutionPlan plan = p.plan();
    moveInputsToScratch(p.exe(), plan, {0});
    const VertexMoves& vm = plan.vertex_moves[0];
    EXPECT_EQ(vm.rows, c.planes) << c.what;
    if (c.planes.empty()) {
      EXPECT_EQ(vm.scratch_field, std::vector<uint8_t>{1}) << c.what;
      EXPECT_EQ(vm.scratch_moves.size(), c.moves.size()) << c.what;
    } else {
      EXPECT_EQ(vm.row_ends, std::vector<uint32_t>{2}) << c.what;
      EXPECT_TRUE(vm.scratch_field.empty()) << c.what;  // no field of the set assembled in scratch
      EXPECT_TRUE(vm.scratch_moves.empty() && vm.moves.empty()) << c.what;
    }
  }
}

// Two 3x3 conv blocks, padding 1 (2 input channels of 4x6, 3 outputs, a bias), whose inputs the
// exchange fills in pieces that cross the input's lines: the moves become moves straight into the
// blocks' padded copy, and running the two as one group from those moves, with their fields full
// of NaNs (which would show), gives the bits each gets from its field, which match the reference
// evaluator's Conv.
TEST(ScratchInputs, PaddedConvBlocksTakeTheExchangesMovesIntoTheirCopies) {
  using namespace codelet_test;
  const int64_t Cg = 2, Mb = 3, H = 4, W = 6, P = H * W;
  const std::vector<float> w = randomVector(static_cast<size_t>(Mb * Cg * 9), 21), b = randomVector(static_cast<size_t>(Mb), 22);
  const std::vector<std::vector<float>> x = {randomVector(static_cast<size_t>(Cg * P), 23),
                                             randomVector(static_cast<size_t>(Cg * P), 24)};
  const uint64_t in_bytes = static_cast<uint64_t>(Cg * P * 4);
  const exec::Field wts{2048, static_cast<uint64_t>(w.size() * 4)}, bias{3072, static_cast<uint64_t>(b.size() * 4)};
  const exec::Field out[] = {{0, static_cast<uint64_t>(Mb * P * 4)}, {512, static_cast<uint64_t>(Mb * P * 4)}};
  const exec::Field in[] = {{4096, in_bytes}, {5120, in_bytes}};
  const exec::Vertex conv{0,
                          exec::Codelet::ConvPartial,
                          DType::Float,
                          {out[0], in[0], wts, bias},
                          {2, 1, Cg, Mb, 1, H, W, H, W, 3, 3, 1, 1, 1, 1, -1, -1},
                          {}};
  ASSERT_TRUE(checkVertex(conv).ok()) << checkVertex(conv).error().message();
  const VertexParams params = verifiedParams(conv);
  ASSERT_TRUE(runsTogether(params) && inputCopyPlaces(params));
  // Each input in three moves of 28, 100 and 64 bytes from sources in reverse order.
  const uint32_t cuts[] = {0, 28, 128, 192};
  std::vector<std::vector<ExchangeMove>> moves(2);
  for (int v = 0; v < 2; ++v)
    for (int k = 0; k < 3; ++k)
      moves[v].push_back({static_cast<uint64_t>(20000 + 1000 * v + 200 * (2 - k)), static_cast<uint32_t>(in[v].offset + cuts[k]),
                          cuts[k + 1] - cuts[k]});
  ProgramBuilder p(65536);
  p.set({{out[0], in[0], wts, bias}, {out[1], in[1], wts, bias}});
  p.params(params);
  p.vertexMoves(moves);
  p.exchange({{50000, static_cast<uint32_t>(in[0].offset), 2 * 1024}});  // the inputs rewritten after the set: dead
  ExecutionPlan plan = p.plan();
  moveInputsToScratch(p.exe(), plan, {0});
  const VertexMoves& vm = plan.vertex_moves[0];
  ASSERT_TRUE(vm.moves.empty() && vm.scratch_moves.empty() && vm.rows.empty());
  ASSERT_EQ(vm.copy_ends.size(), 2u);
  EXPECT_EQ(vm.copy_ends[1], 2 * vm.copy_ends[0]);
  EXPECT_GE(vm.copy_ends[0], 8u);  // a move a line of the input at least: 2 channels of 4 lines

  // The inputs at the sources, the fields NaN; and the same inputs in the fields.
  std::vector<uint8_t> from_moves(65536), from_fields(65536);
  for (auto* mem : {&from_moves, &from_fields}) {
    std::memcpy(mem->data() + wts.offset, w.data(), wts.bytes);
    std::memcpy(mem->data() + bias.offset, b.data(), bias.bytes);
  }
  const std::vector<float> nans(static_cast<size_t>(Cg * P), std::numeric_limits<float>::quiet_NaN());
  for (int v = 0; v < 2; ++v) {
    for (const ExchangeMove& m : moves[v])
      std::memcpy(from_moves.data() + m.src, reinterpret_cast<const uint8_t*>(x[v].data()) + (m.dst - in[v].offset), m.bytes);
    std::memcpy(from_moves.data() + in[v].offset, nans.data(), in_bytes);
    std::memcpy(from_fields.data() + in[v].offset, x[v].data(), in_bytes);
  }
  const VertexView* group[] = {&plan.sets[0].vertices[0], &plan.sets[0].vertices[1]};
  const InputMoves copies[] = {{vm.copy_moves.data(), vm.copy_moves.data() + vm.copy_ends[0]},
                               {vm.copy_moves.data() + vm.copy_ends[0], vm.copy_moves.data() + vm.copy_ends[1]}};
  runVertices(group, 2, plan.sets[0].runs[0].params, from_moves.data(), copies);
  for (int v = 0; v < 2; ++v) runVertex(*group[v], params, from_fields.data());

  const Tensor tw = tensorOf(w, {Mb, Cg, 3, 3}), tb = tensorOf(b, {Mb});
  for (int v = 0; v < 2; ++v) {
    SCOPED_TRACE("block " + std::to_string(v));
    std::vector<float> got(static_cast<size_t>(Mb * P)), want(got.size());
    std::memcpy(got.data(), from_moves.data() + out[v].offset, out[v].bytes);
    std::memcpy(want.data(), from_fields.data() + out[v].offset, out[v].bytes);
    const Tensor tx = tensorOf(x[v], {1, Cg, H, W});
    expectClose(want, reference("Conv", {&tx, &tw, &tb}, {{"pads", std::vector<int64_t>{1, 1, 1, 1}}}));
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << "output " << i;
  }
}

// Vertices whose moves gather the same bytes the same way into fields of the same size (a vector
// broadcast to every vertex of a layer): the first one's moves go back to the exchange right before
// the set, made into its tile, and the others read its field and move nothing; a gather from other
// sources, or into a field of another size, keeps its moves. Only after an exchange.
TEST(ScratchInputs, VerticesGatheringTheSameBytesReadTheFirstOnesField) {
  const exec::Field in0{4000, 64}, in1{4100, 64}, in2{4200, 64}, in3{4300, 68};
  const std::vector<ExchangeMove> gather = {{300, 0, 16}, {340, 16, 16}, {700, 32, 32}};  // dst offsets in the field
  auto into = [](const exec::Field& field, std::vector<ExchangeMove> moves, uint64_t shift = 0) {
    for (ExchangeMove& m : moves) m.dst += static_cast<uint32_t>(field.offset), m.src += shift;
    return moves;
  };
  for (const bool after_exchange : {true, false}) {
    SCOPED_TRACE(after_exchange ? "after an exchange" : "after a set");
    ProgramBuilder p;
    if (after_exchange)
      p.exchange({{900, 1000, 8}});
    else
      p.set({{{1000, 8}}});
    p.set({{{0, 16}, in0}, {{16, 16}, in1}, {{32, 16}, in2}, {{48, 16}, in3}});
    std::vector<ExchangeMove> longer = into(in3, gather);
    longer.push_back({800, static_cast<uint32_t>(in3.offset + 64), 4});
    p.vertexMoves({into(in0, gather), into(in1, gather, 4), into(in2, gather), longer});
    p.exchange({{5000, 4000, 400}});  // rewritten after the set: dead
    ExecutionPlan plan = p.plan();
    moveInputsToScratch(p.exe(), plan, {0});
    const uint32_t set = after_exchange ? 0 : 1;
    const VertexMoves& vm = plan.vertex_moves[set];
    const auto& vertices = plan.sets[set].vertices;
    if (!after_exchange) {
      EXPECT_EQ(vm.moves.size(), 13u);
      EXPECT_EQ(vertices[2].fields[1].offset, in2.offset);
      continue;
    }
    EXPECT_EQ(vertices[2].fields[1].offset, in0.offset);  // reads vertex 0's
    EXPECT_EQ(vertices[0].fields[1].offset, in0.offset);
    EXPECT_EQ(vertices[1].fields[1].offset, in1.offset);  // other sources
    EXPECT_EQ(vertices[3].fields[1].offset, in3.offset);  // a field of another size
    std::vector<ExchangeMove> kept = into(in1, gather, 4);
    kept.insert(kept.end(), longer.begin(), longer.end());
    EXPECT_EQ(vm.moves, kept);
    EXPECT_EQ(vm.ends, (std::vector<uint32_t>{0, 3, 3, 7}));
    // Vertex 0's moves, made by the exchange before the set into tile 0.
    const ExchangePlan& before = plan.exchanges[0];
    std::vector<ExchangeMove> made = {{900, 1000, 8}};
    const std::vector<ExchangeMove> first = into(in0, gather);
    made.insert(made.end(), first.begin(), first.end());
    EXPECT_EQ(before.moves, made);
    EXPECT_EQ(before.runs, (std::vector<ExchangeRun>{{0, 1}, {0, 4}}));
  }
}

// Moves into a padded copy only where the copy is its codelet's: not for float16 blocks (widened
// one at a time), moves of parts of floats, or blocks whose product reads their input in place.
TEST(ScratchInputs, OnlyWholeFloatsOfPaddedFloatBlocksGoIntoACopy) {
  // Fields [out, in, weights] of these sizes; the input at 4096, rewritten after the set.
  auto planOf = [](std::vector<uint64_t> bytes, std::vector<int64_t> conv_params, DType dtype, std::vector<ExchangeMove> moves) {
    const exec::Field out{0, bytes[0]}, in{4096, bytes[1]}, wts{2048, bytes[2]};
    const exec::Vertex conv{0, exec::Codelet::ConvPartial, DType::Float, {out, in, wts}, std::move(conv_params), {}};
    EXPECT_TRUE(checkVertex(conv).ok()) << checkVertex(conv).error().message();
    ProgramBuilder p(65536);
    p.set({{out, in, wts}});
    p.params(verifiedParams(conv), dtype);
    p.vertexMoves({std::move(moves)});
    p.exchange({{50000, static_cast<uint32_t>(in.offset), static_cast<uint32_t>(in.bytes)}});
    ExecutionPlan plan = p.plan();
    moveInputsToScratch(p.exe(), plan, {0});
    return plan.vertex_moves[0];
  };
  // 2 channels of 4x6 padded by 1 into 3 of 4x6.
  const std::vector<uint64_t> sizes = {288, 192, 216};
  const std::vector<int64_t> padded = {2, 1, 2, 3, 0, 4, 6, 4, 6, 3, 3, 1, 1, 1, 1, -1, -1};
  EXPECT_FALSE(planOf(sizes, padded, DType::Float, {{20000, 4096, 192}}).copy_moves.empty());
  EXPECT_TRUE(planOf(sizes, padded, DType::Float16, {{20000, 4096, 192}}).copy_moves.empty());
  EXPECT_TRUE(planOf(sizes, padded, DType::Float, {{20000, 4096, 30}, {21000, 4126, 162}}).copy_moves.empty());
  // A valid 3x3 over 4x10 into 2x8 reads its input as its own copy.
  EXPECT_TRUE(planOf({192, 160, 108}, {2, 1, 1, 3, 0, 4, 10, 2, 8, 3, 3, 1, 1, 1, 1, 0, 0}, DType::Float, {{20000, 4096, 160}})
                  .copy_moves.empty());
}

}  // namespace
}  // namespace poprt::sim
