// DeviceManager: devices as aligned groups of IPUs, the smallest free fit, exclusive attachment,
// and the error category of each way of not getting a device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "poprt/runtime/device_manager.h"
#include "poprt/runtime/errors.h"

namespace poprt::runtime {
namespace {

using namespace std::chrono_literals;

TEST(DeviceManager, ListsAlignedPowerOfTwoGroups) {
  DeviceManager dm({{"ipu2", 4}, {"ipu21", 1}});
  std::vector<std::tuple<std::string, unsigned, unsigned>> got;
  for (const auto& d : dm.devices()) got.emplace_back(d.ipu_version, d.first_ipu, d.num_ipus);
  std::vector<std::tuple<std::string, unsigned, unsigned>> want = {{"ipu2", 0, 1}, {"ipu2", 1, 1}, {"ipu2", 2, 1},
                                                                   {"ipu2", 3, 1}, {"ipu2", 0, 2}, {"ipu2", 2, 2},
                                                                   {"ipu2", 0, 4}, {"ipu21", 0, 1}};
  EXPECT_EQ(got, want);
}

TEST(DeviceManager, PicksTheSmallestFreeFitAndIsExclusive) {
  DeviceManager dm({{"ipu2", 4}});
  auto a = dm.getDevice({"ipu2", 1, 2});  // 2 IPUs: one replica of 1 IPU x 2
  EXPECT_EQ(a->info().num_ipus, 2u);
  EXPECT_EQ(a->info().first_ipu, 0u);
  auto b = dm.getDevice({"ipu2", 1, 1});
  EXPECT_EQ(b->info().num_ipus, 1u);
  EXPECT_EQ(b->info().first_ipu, 2u);  // IPUs 0-1 are attached
  // Four IPUs are not free together any more.
  try {
    dm.getDevice({"ipu2", 4, 1});
    FAIL() << "expected a RecoverableRuntimeError";
  } catch (const RecoverableRuntimeError& e) {
    EXPECT_EQ(e.recoveryAction(), RecoveryAction::Retry);
    EXPECT_EQ(e.category(), ErrorCategory::RecoverableRuntime);
  }
  a.reset();
  b.reset();
  auto c = dm.getDevice({"ipu2", 4, 1});  // freed on release
  EXPECT_EQ(c->info().num_ipus, 4u);
}

TEST(DeviceManager, UnsatisfiableRequirementsAreApplicationErrors) {
  DeviceManager dm({{"ipu2", 4}});
  for (const DeviceRequirements& req : {DeviceRequirements{"ipu2", 2, 4}, DeviceRequirements{"ipu1", 1, 1}}) {
    try {
      dm.getDevice(req);
      FAIL() << "expected an ApplicationError";
    } catch (const ApplicationError& e) {
      EXPECT_NE(std::string(e.what()).find(req.ipu_version), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("4 ipu2"), std::string::npos) << e.what();  // what the system has
    }
  }
}

TEST(DeviceManager, WaitsForADeviceToBeFreed) {
  DeviceManager dm({{"ipu2", 1}});
  auto held = dm.getDevice({"ipu2", 1, 1});
  std::thread releaser([&] {
    std::this_thread::sleep_for(30ms);
    held.reset();
  });
  auto got = dm.getDevice({"ipu2", 1, 1}, 5s);
  EXPECT_EQ(got->info().num_ipus, 1u);
  releaser.join();
}

TEST(DeviceManager, ADeviceMayOutliveItsManager) {
  std::shared_ptr<Device> d;
  {
    DeviceManager dm({{"ipu2", 1}});
    d = dm.getDevice({"ipu2", 1, 1});
  }
  EXPECT_EQ(d->info().ipu_version, "ipu2");
}

TEST(DeviceManager, SystemFromTheEnvironment) {
  ::setenv("POPRT_SIM_SYSTEM", "ipu21:2", 1);
  DeviceManager dm;
  ::setenv("POPRT_SIM_SYSTEM", "ipu21:two", 1);
  EXPECT_THROW(DeviceManager(), ApplicationError);
  ::unsetenv("POPRT_SIM_SYSTEM");
  EXPECT_EQ(dm.devices().size(), 3u);  // 2 x 1 IPU, 1 x 2 IPUs
  EXPECT_EQ(dm.devices()[0].ipu_version, "ipu21");
}

}  // namespace
}  // namespace poprt::runtime
