// ModelRunner end to end on small compiled models, every result compared with the reference
// evaluator: both output flavours, async ordering, replication, batching_dim, batches_per_step,
// host values (sequences, run-time shapes), and each error category.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "lib/onnx/type_map.h"
#include "runtime/host_value.h"
#include "runtime_test_util.h"

namespace poprt::runtime {
namespace {

using namespace std::chrono_literals;
using namespace testing;

TEST(ModelRunner, RunsWithCallerAndRunnerMemory) {
  TempDir dir;
  ir::Model m = mlpModel();
  ModelRunner runner(writeModel(m, dir.path(), "mlp"), privateSystem());
  ASSERT_EQ(runner.getExecuteInputs().size(), 1u);
  const DataDesc& in = runner.getExecuteInputs()[0];
  EXPECT_EQ(in.name, "x");
  EXPECT_EQ(in.dtype, "float32");
  EXPECT_EQ(in.shape, (std::vector<int64_t>{4, 8}));
  EXPECT_EQ(in.size_in_bytes, 128u);
  EXPECT_EQ(in.format, DataFormat::Raw);
  Tensor x = randomTensor({4, 8}, 3);
  const Tensor want = reference(m, "x", x);
  std::vector<float> y(24);
  runner.execute({{"x", view(x)}}, {{"y", {y.data(), 96}}});
  expectNear(y.data(), want, "caller memory");
  OutputMemory out = runner.execute({{"x", view(x)}});
  ASSERT_EQ(out.at("y").data.size(), 96u);
  EXPECT_EQ(out.at("y").desc.shape, (std::vector<int64_t>{4, 6}));
  expectNear(reinterpret_cast<const float*>(out.at("y").data.data()), want, "runner memory");
  EXPECT_GT(runner.estimate().cycles, 0u);
  EXPECT_EQ(runner.timings().batches, 2u);
}

TEST(ModelRunner, AsyncRequestsCompleteInOrderWithTheirOwnResults) {
  TempDir dir;
  ir::Model m = mlpModel();
  ModelRunnerConfig c = privateSystem();
  c.ring_buffer_size = 3;  // fewer slots than requests: submission waits for room as it goes
  ModelRunner runner(writeModel(m, dir.path(), "mlp"), c);
  constexpr int kRequests = 12;
  std::vector<Tensor> xs;
  for (int i = 0; i < kRequests; ++i) xs.push_back(randomTensor({4, 8}, 200 + i));
  std::vector<std::vector<float>> ys(kRequests, std::vector<float>(24));
  std::vector<std::future<void>> futures;
  for (int i = 0; i < kRequests; ++i) futures.push_back(runner.executeAsync({{"x", view(xs[i])}}, {{"y", {ys[i].data(), 96}}}));
  // One replica serves its queue in FIFO order: when request i is ready, every earlier one is.
  for (int i = kRequests - 1; i >= 0; --i) {
    futures[i].get();
    for (int j = 0; j < i; ++j) EXPECT_EQ(futures[j].wait_for(0s), std::future_status::ready) << j << " before " << i;
  }
  for (int i = 0; i < kRequests; ++i) expectNear(ys[i].data(), reference(m, "x", xs[i]), "request " + std::to_string(i));
}

TEST(ModelRunner, ReplicasGiveTheSameAnswersAsASingleReplica) {
  TempDir dir;
  ir::Model m = mlpModel();
  ModelRunner one(writeModel(m, dir.path(), "r1"), privateSystem());
  ModelRunner two(writeModel(m, dir.path(), "r2", {2, 1}), privateSystem());
  EXPECT_EQ(two.replicationFactor(), 2u);
  for (int i = 0; i < 6; ++i) {
    Tensor x = randomTensor({4, 8}, 300 + i);
    const Tensor want = reference(m, "x", x);
    OutputMemory single = one.execute({{"x", view(x)}});
    OutputMemory replica = two.execute({{"x", view(x)}}, i % 2);  // each replica in turn
    expectNear(reinterpret_cast<const float*>(replica.at("y").data.data()), want, "replica " + std::to_string(i % 2));
    EXPECT_EQ(single.at("y").data, replica.at("y").data) << "request " << i;
  }
  // Round robin spreads requests over both replicas, each with its own inputs.
  two.resetTimings();
  std::vector<Tensor> xs;
  std::vector<std::future<OutputMemory>> fs;
  for (int i = 0; i < 8; ++i) xs.push_back(randomTensor({4, 8}, 400 + i));
  for (int i = 0; i < 8; ++i) fs.push_back(two.executeAsync({{"x", view(xs[i])}}));
  for (int i = 0; i < 8; ++i)
    expectNear(reinterpret_cast<const float*>(fs[i].get().at("y").data.data()), reference(m, "x", xs[i]), "async");
  EXPECT_EQ(two.timings().batches, 8u);
}

TEST(ModelRunner, BatchingDimSplitsAndPadsRequests) {
  TempDir dir;
  ir::Model m = mlpModel(/*rows=*/2);
  ModelRunnerConfig c = privateSystem();
  c.batching_dim = 0;
  ModelRunner runner(writeModel(m, dir.path(), "b", {2, 1}), c);
  // 5 rows: batches of 2, 2 and 1 (padded), spread over the two replicas.
  Tensor x = randomTensor({5, 8}, 5);
  ir::Model m5 = mlpModel(5);  // the same weights (seeded) for the whole request at once
  const Tensor want = reference(m5, "x", x);
  std::vector<float> y(5 * 6, -7.f);
  runner.execute({{"x", view(x)}}, {{"y", {y.data(), y.size() * 4}}});
  expectNear(y.data(), want, "caller memory");
  OutputMemory out = runner.execute({{"x", view(x)}});
  EXPECT_EQ(out.at("y").desc.shape, (std::vector<int64_t>{5, 6}));
  expectNear(reinterpret_cast<const float*>(out.at("y").data.data()), want, "runner memory");
  EXPECT_EQ(runner.timings().batches, 6u);
  std::vector<float> odd(7 * 8 / 2);
  EXPECT_THROW(runner.execute({{"x", {odd.data(), 12}}}), ApplicationError);  // not whole rows
}

TEST(ModelRunner, BatchesPerStepRunsEveryRequest) {
  TempDir dir;
  ir::Model m = mlpModel();
  ModelRunnerConfig c = privateSystem();
  c.timeout_ns = 2'000'000;
  ModelRunner runner(writeModel(m, dir.path(), "bps", {1, 4}), c);
  EXPECT_EQ(runner.batchesPerStep(), 4u);
  std::vector<Tensor> xs;
  std::vector<std::future<OutputMemory>> fs;
  for (int i = 0; i < 7; ++i) xs.push_back(randomTensor({4, 8}, 500 + i));  // a full step and a short one
  for (int i = 0; i < 7; ++i) fs.push_back(runner.executeAsync({{"x", view(xs[i])}}));
  for (int i = 0; i < 7; ++i)
    expectNear(reinterpret_cast<const float*>(fs[i].get().at("y").data.data()), reference(m, "x", xs[i]), "step");
}

// y = Gather(data, i) with run-time indices (host), s = SplitToSequence(data) (host, a sequence),
// n = NonZero(i) (host, a shape known only at run time).
ir::Model hostModel() {
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  ir::Value* data = g.addInput("data", f32({3, 2}));
  ir::Value* i = g.addInput("i", ir::TensorType::of(DType::Int64, {2}));
  ir::Value* y = g.addValue("y", f32({2, 2}));
  onnx::TypeProto seq;  // the way the importer keeps a sequence's type
  seq.mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  ir::Value* s = g.addValue("s");
  s->type = onnxio::typeFromProto(seq);
  ir::Value* n = g.addValue("n");
  n->type.dtype = DType::Int64;
  n->type.dims = std::vector<ir::Dim>{ir::Dim::fixed(1), ir::Dim::symbolic("k")};
  g.addNode("Gather", {data, i}, {y}, "gather");
  g.addNode("SplitToSequence", {data}, {s}, "split");
  g.addNode("NonZero", {i}, {n}, "nonzero");
  g.addOutput(y);
  g.addOutput(s);
  g.addOutput(n);
  return m;
}

TEST(ModelRunner, HostValuesTravelAsOnnxProtosOrWithTheirRunTimeShape) {
  TempDir dir;
  ir::Model m = hostModel();
  ModelRunner runner(writeModel(m, dir.path(), "host"), privateSystem());
  auto outs = runner.getExecuteOutputs();
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_EQ(outs[1].format, DataFormat::OnnxProto);
  EXPECT_FALSE(outs[2].fixedSize());
  Tensor data = randomTensor({3, 2}, 6);
  Tensor idx(DType::Int64, {2});
  idx.data<int64_t>()[0] = 2;
  idx.data<int64_t>()[1] = 0;
  OutputMemory got = runner.execute({{"data", view(data)}, {"i", view(idx)}});
  ops::EvalContext ctx({{"", 17}});
  auto want_values = ops::runGraph(*m.graph, {{"data", ops::RtValue::of(data)}, {"i", ops::RtValue::of(idx)}}, ctx);
  ASSERT_TRUE(want_values.ok()) << want_values.error().message();
  for (size_t o = 0; o < outs.size(); ++o) {
    const TensorMemory& t = got.at(outs[o].name);
    auto v = decodeValue(t.desc, t.data, outs[o].name);
    ASSERT_TRUE(v.ok()) << v.error().message();
    const ops::RtValue& w = (*want_values)[o];
    ASSERT_EQ(v->kind, w.kind) << outs[o].name;
    if (w.isTensor()) {
      EXPECT_EQ(v->tensor, w.tensor) << outs[o].name;
    } else {
      ASSERT_EQ(v->sequence.size(), w.sequence.size());
      for (size_t k = 0; k < w.sequence.size(); ++k) EXPECT_EQ(v->sequence[k], w.sequence[k]);
    }
  }
  EXPECT_EQ(got.at("n").desc.shape, (std::vector<int64_t>{1, 1}));  // one non-zero index
  // Outputs of no fixed size cannot go to caller memory.
  std::vector<uint8_t> buf(64);
  EXPECT_THROW(runner.execute({{"data", view(data)}, {"i", view(idx)}},
                              {{"y", {buf.data(), 16}}, {"s", {buf.data(), 8}}, {"n", {buf.data(), 8}}}),
               ApplicationError);
}

TEST(ModelRunner, ApplicationErrorsNameWhatIsWrong) {
  TempDir dir;
  ir::Model m = hostModel();
  ModelRunner runner(writeModel(m, dir.path(), "host"), privateSystem());
  Tensor data = randomTensor({3, 2}, 7);
  Tensor idx(DType::Int64, {2});
  auto expectError = [&](auto call, const std::string& mention) {
    try {
      call();
      FAIL() << "expected an ApplicationError naming " << mention;
    } catch (const ApplicationError& e) { EXPECT_NE(std::string(e.what()).find(mention), std::string::npos) << e.what(); }
  };
  expectError([&] { runner.execute({{"data", view(data)}}); }, "input 'i'");
  expectError([&] { runner.execute({{"data", view(data)}, {"i", view(idx)}, {"j", view(idx)}}); }, "'j'");
  expectError([&] { runner.execute({{"data", view(idx)}, {"i", view(idx)}}); }, "'data'");
  expectError([&] { runner.execute({{"data", view(data)}, {"i", view(idx)}}, 3); }, "replica 3");
  // Data a host op refuses: the request fails through its future; the next one runs.
  idx.data<int64_t>()[0] = 7;
  auto bad = runner.executeAsync({{"data", view(data)}, {"i", view(idx)}});
  expectError([&] { bad.get(); }, "gather");
  idx.data<int64_t>()[0] = 1;
  OutputMemory good = runner.execute({{"data", view(data)}, {"i", view(idx)}});
  EXPECT_EQ(good.at("y").data.size(), 16u);
}

TEST(ModelRunner, RuntimeErrorsFailOnlyTheRequestsTheyTouch) {
  TempDir dir;
  ir::Model m = mlpModel();
  ModelRunner runner(writeModel(m, dir.path(), "r2", {2, 1}), privateSystem());
  Tensor x = randomTensor({4, 8}, 8);
  const Tensor want = reference(m, "x", x);
  runner.session().injectFault(0, FaultKind::Recoverable);
  try {
    runner.execute({{"x", view(x)}}, 0);
    FAIL();
  } catch (const RecoverableRuntimeError& e) { EXPECT_EQ(e.recoveryAction(), RecoveryAction::ReplicaReset); }
  expectNear(reinterpret_cast<const float*>(runner.execute({{"x", view(x)}}, 0).at("y").data.data()), want, "reset");
  runner.session().injectFault(1, FaultKind::Unrecoverable);
  EXPECT_THROW(runner.execute({{"x", view(x)}}, 1), UnrecoverableRuntimeError);
  EXPECT_FALSE(runner.replicaOnline(1));
  EXPECT_THROW(runner.execute({{"x", view(x)}}, 1), UnrecoverableRuntimeError);
  // Requests for any replica go to the one still in service.
  for (int i = 0; i < 4; ++i)
    expectNear(reinterpret_cast<const float*>(runner.execute({{"x", view(x)}}).at("y").data.data()), want, "survivor");
}

TEST(ModelRunner, ABusyDeviceIsARecoverableError) {
  TempDir dir;
  const std::string path = writeModel(mlpModel(), dir.path(), "mlp");
  ModelRunnerConfig c;
  c.device_manager = std::make_shared<DeviceManager>(std::vector<std::pair<std::string, unsigned>>{{"ipu2", 1}});
  ModelRunner first(path, c);
  try {
    ModelRunner second(path, c);
    FAIL();
  } catch (const RecoverableRuntimeError& e) { EXPECT_EQ(e.recoveryAction(), RecoveryAction::Retry); }
}

// A request that finds its replica's queues full for longer than request_timeout_ns fails with
// RecoveryAction::Retry; the others run. The model is big enough that the device is still busy
// with the first request while the rest are submitted.
TEST(ModelRunner, ARequestTimesOutOnFullQueues) {
  TempDir dir;
  ir::Model m;
  m.opset_imports = {{"", 17}};
  ir::Graph& g = *m.graph;
  // Requests long enough (milliseconds: three 512^3 products) that the next ones find the queue full.
  ir::Value* x = g.addInput("x", f32({512, 512}));
  ir::Value* w = g.addInitializer("w", randomTensor({512, 512}, 1));
  ir::Value* cur = x;
  for (int i = 0; i < 3; ++i) {
    ir::Value* y = g.addValue("y" + std::to_string(i), f32({512, 512}));
    g.addNode("MatMul", {cur, w}, {y}, "matmul" + std::to_string(i));
    cur = y;
  }
  g.addOutput(cur);
  ModelRunnerConfig c = privateSystem();
  c.ring_buffer_size = 1;
  c.request_timeout_ns = 1;
  ModelRunner runner(writeModel(m, dir.path(), "big", {1, 1, 64}), c);
  Tensor xt = randomTensor({512, 512}, 9);
  std::vector<std::future<OutputMemory>> fs;
  for (int i = 0; i < 4; ++i) fs.push_back(runner.executeAsync({{"x", view(xt)}}));
  int retries = 0, ok = 0;
  for (auto& f : fs) {
    try {
      f.get();
      ++ok;
    } catch (const RecoverableRuntimeError& e) {
      EXPECT_EQ(e.recoveryAction(), RecoveryAction::Retry);
      ++retries;
    }
  }
  EXPECT_GE(ok, 1);
  EXPECT_GE(retries, 1);
}

}  // namespace
}  // namespace poprt::runtime
