// Session and QueueManager, driven by hand (the test is the device thread): queue validation,
// FIFO completion order, inputs of request N+1 enqueued while the device runs request N, a full
// queue timing out, steps of several batches, the save program, simulated faults, closing.
#include <gtest/gtest.h>

#include <fstream>
#include <future>
#include <thread>

#include "runtime_test_util.h"

namespace poprt::runtime {
namespace {

using namespace std::chrono_literals;
using namespace testing;

struct Fixture {
  TempDir dir;
  ir::Model model = mlpModel();
  DeviceManager devices{{{"ipu2", 8}}};

  std::unique_ptr<Session> session(PopefSettings s = {}, SessionConfig c = {}, size_t ring = 4) {
    auto session = std::make_unique<Session>(writeModel(model, dir.path(), "m", s), devices, 0ns, c);
    session->runLoadPrograms();
    session->createQueueManager(ring);
    return session;
  }
};

// Completions that record the order they ran in and each request's error.
struct Recorder {
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::exception_ptr> errors;
  Completion at(int tag) {
    return [this, tag](std::exception_ptr e) {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(tag);
      errors.push_back(e);
    };
  }
};

TEST(QueueManager, ChecksNamesSizesAndReplicas) {
  Fixture f;
  auto s = f.session();
  QueueManager& qm = s->queueManager();
  EXPECT_EQ(qm.numInputs(), 1u);
  EXPECT_EQ(qm.numOutputs(), 1u);
  float buf[4 * 8] = {};
  try {
    qm.inputQueue("nope");
    FAIL();
  } catch (const ApplicationError& e) {
    EXPECT_NE(std::string(e.what()).find("'nope'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("inputs: x"), std::string::npos);
  }
  EXPECT_THROW(qm.inputQueue("x", 1), ApplicationError);  // one replica
  try {
    qm.inputQueue("x").enqueue(buf, 4);
    FAIL();
  } catch (const ApplicationError& e) {
    EXPECT_NE(std::string(e.what()).find("'x' takes 128 bytes, got 4"), std::string::npos) << e.what();
  }
  EXPECT_THROW(qm.outputQueue("y").enqueue(buf, sizeof buf), ApplicationError);  // y is 4x6 floats
  EXPECT_EQ(qm.inputQueue("x").size(), 0u);                                      // nothing was queued by the failures
}

TEST(Session, RunsRequestsInOrderWithTheReferenceResults) {
  Fixture f;
  auto s = f.session();
  QueueManager& qm = s->queueManager();
  EXPECT_EQ(s->runMainPrograms(0, 5ms).batches, 0u);  // empty: nothing within the wait
  Recorder rec;
  std::vector<Tensor> xs;
  std::vector<std::vector<float>> ys(3, std::vector<float>(24));
  for (int i = 0; i < 3; ++i) xs.push_back(randomTensor({4, 8}, 100 + i));
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(qm.inputQueue("x").enqueue(xs[i].bytes().data(), xs[i].byteSize(), rec.at(10 + i)));
    ASSERT_TRUE(qm.outputQueue("y").enqueue(ys[i].data(), ys[i].size() * 4, rec.at(20 + i)));
  }
  for (int i = 0; i < 3; ++i) EXPECT_EQ(s->runMainPrograms(0).batches, 1u);
  EXPECT_EQ(rec.order, (std::vector<int>{10, 20, 11, 21, 12, 22}));
  for (auto& e : rec.errors) EXPECT_EQ(e, nullptr);
  for (int i = 0; i < 3; ++i) expectNear(ys[i].data(), reference(f.model, "x", xs[i]), "request " + std::to_string(i));
  EXPECT_EQ(s->timings().batches, 3u);
}

TEST(Session, PreparesTheNextRequestWhileTheDeviceRunsOneAndTimesOutWhenFull) {
  Fixture f;
  auto s = f.session({}, {}, /*ring=*/1);
  QueueManager& qm = s->queueManager();
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> device_busy;
  Tensor x = randomTensor({4, 8}, 7);
  std::vector<std::vector<float>> ys(3, std::vector<float>(24));
  // Request 0's output completion holds the device until the test releases it.
  ASSERT_TRUE(qm.inputQueue("x").enqueue(x.bytes().data(), x.byteSize()));
  ASSERT_TRUE(qm.outputQueue("y").enqueue(ys[0].data(), 96, [&](std::exception_ptr) {
    device_busy.set_value();
    released.wait();
  }));
  std::thread device([&] {
    for (int i = 0; i < 3; ++i) s->runMainPrograms(0);
  });
  device_busy.get_future().wait();
  // The device is busy with request 0 and its slots are free: request 1 goes in at once...
  EXPECT_TRUE(qm.waitForRoom(0, 0ns));
  ASSERT_TRUE(qm.inputQueue("x").enqueue(x.bytes().data(), x.byteSize(), {}, 0ns));
  ASSERT_TRUE(qm.outputQueue("y").enqueue(ys[1].data(), 96, {}, 0ns));
  // ...and request 2 finds the one-slot queues full: the enqueue times out.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(qm.inputQueue("x").enqueue(x.bytes().data(), x.byteSize(), {}, 20ms));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 20ms);
  EXPECT_FALSE(qm.waitForRoom(0, 0ns));
  release.set_value();
  ASSERT_TRUE(qm.inputQueue("x").enqueue(x.bytes().data(), x.byteSize(), {}, 5s));
  ASSERT_TRUE(qm.outputQueue("y").enqueue(ys[2].data(), 96, {}, 5s));
  device.join();
  const Tensor want = reference(f.model, "x", x);
  for (int i = 0; i < 3; ++i) expectNear(ys[i].data(), want, "request " + std::to_string(i));
}

TEST(Session, AStepRunsUpToBatchesPerStepAndEndsOnTheFillTimeout) {
  Fixture f;
  SessionConfig c;
  c.step_fill_timeout = 30ms;
  auto s = f.session({1, 3}, c, /*ring=*/8);
  EXPECT_EQ(s->batchesPerStep(), 3u);
  QueueManager& qm = s->queueManager();
  Tensor x = randomTensor({4, 8}, 8);
  std::vector<std::vector<float>> ys(5, std::vector<float>(24));
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(qm.inputQueue("x").enqueue(x.bytes().data(), x.byteSize()));
    ASSERT_TRUE(qm.outputQueue("y").enqueue(ys[i].data(), 96));
  }
  EXPECT_EQ(s->runMainPrograms(0).batches, 3u);  // a full step
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(s->runMainPrograms(0).batches, 2u);  // two left: the step waits for a third, then ends
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 30ms);
  for (int i = 0; i < 5; ++i) expectNear(ys[i].data(), reference(f.model, "x", x), "batch " + std::to_string(i));
}

TEST(Session, TheSaveProgramReturnsTheWeightsTheDeviceHolds) {
  Fixture f;
  auto s = f.session();
  OutputMemory saved = s->runSavePrograms(0);
  ASSERT_EQ(saved.size(), 2u);
  for (const char* name : {"w", "b"}) {
    const Tensor& want = *f.model.graph->findLocalValue(name)->initializer();
    const TensorMemory& got = saved.at(name);
    EXPECT_EQ(got.desc.shape, want.shape());
    ASSERT_EQ(got.data.size(), want.byteSize());
    EXPECT_EQ(std::memcmp(got.data.data(), want.bytes().data(), want.byteSize()), 0) << name;
  }
}

TEST(Session, SimulatedFaultsFailOnlyTheRequestsTheyTouch) {
  Fixture f;
  auto s = f.session({2, 1});
  QueueManager& qm = s->queueManager();
  Tensor x = randomTensor({4, 8}, 9);
  const Tensor want = reference(f.model, "x", x);
  auto runOne = [&](unsigned r, std::vector<float>& y) {
    std::exception_ptr error;
    EXPECT_TRUE(qm.inputQueue("x", r).enqueue(x.bytes().data(), x.byteSize()));
    EXPECT_TRUE(qm.outputQueue("y", r).enqueue(y.data(), 96, [&](std::exception_ptr e) { error = e; }));
    EXPECT_EQ(s->runMainPrograms(r).batches, 1u);
    return error;
  };
  std::vector<float> y(24);
  // Recoverable: the request fails, the replica reloads its weights and serves on correctly.
  s->injectFault(0, FaultKind::Recoverable);
  std::exception_ptr e = runOne(0, y);
  ASSERT_NE(e, nullptr);
  try {
    std::rethrow_exception(e);
  } catch (const RecoverableRuntimeError& err) { EXPECT_EQ(err.recoveryAction(), RecoveryAction::ReplicaReset); }
  EXPECT_TRUE(s->replicaOnline(0));
  EXPECT_EQ(runOne(0, y), nullptr);
  expectNear(y.data(), want, "after the reset");
  // Unrecoverable: replica 1 goes out of service; replica 0 is untouched.
  s->injectFault(1, FaultKind::Unrecoverable);
  for (int i = 0; i < 2; ++i) {
    e = runOne(1, y);
    ASSERT_NE(e, nullptr);
    EXPECT_THROW(std::rethrow_exception(e), UnrecoverableRuntimeError);
  }
  EXPECT_FALSE(s->replicaOnline(1));
  std::fill(y.begin(), y.end(), 0.f);
  EXPECT_EQ(runOne(0, y), nullptr);
  expectNear(y.data(), want, "replica 0");
  EXPECT_EQ(s->timings().failed, 3u);
}

TEST(Session, ClosingFailsAHalfEnqueuedRequestAndStopsTheDevice) {
  Fixture f;
  auto s = f.session();
  QueueManager& qm = s->queueManager();
  Tensor x = randomTensor({4, 8}, 10);
  std::exception_ptr error;
  ASSERT_TRUE(qm.inputQueue("x").enqueue(x.bytes().data(), x.byteSize(), [&](std::exception_ptr e) { error = e; }));
  qm.close();
  EXPECT_FALSE(qm.inputQueue("x").enqueue(x.bytes().data(), x.byteSize()));  // closed
  StepResult r = s->runMainPrograms(0);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.batches, 0u);
  ASSERT_NE(error, nullptr);
  EXPECT_THROW(std::rethrow_exception(error), ApplicationError);
}

TEST(Session, RefusesWhatItCannotRun) {
  Fixture f;
  const std::string path = writeModel(f.model, f.dir.path(), "r2", {2, 1});
  auto one_ipu = f.devices.getDevice({"ipu2", 1, 1});
  try {
    Session s(path, one_ipu);
    FAIL();
  } catch (const ApplicationError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("needs 2 ipu2"), std::string::npos) << e.what();
  }
  SessionConfig tiny;
  tiny.memory_limit_bytes = 16;
  try {
    Session s(path, f.devices, 0ns, tiny);
    FAIL();
  } catch (const ApplicationError& e) {
    EXPECT_NE(std::string(e.what()).find("POPRT_SIM_MEMORY_LIMIT"), std::string::npos) << e.what();
  }
  const std::string junk = (f.dir.path() / "junk.popef").string();
  std::ofstream(junk) << "not a popef";
  try {
    Session s(junk, f.devices);
    FAIL();
  } catch (const ApplicationError& e) { EXPECT_NE(std::string(e.what()).find(junk), std::string::npos) << e.what(); }
}

}  // namespace
}  // namespace poprt::runtime
