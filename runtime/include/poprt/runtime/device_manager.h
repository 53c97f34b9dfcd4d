// Simulated IPU devices. A system has some IPUs of each version; a device is an aligned group of
// 1, 2, 4, ... of them (as IPU partitions are), and DeviceManager hands out the smallest free one
// that satisfies a model's requirements: its IPU version and num_ipus x replication_factor IPUs.
// A device is attached (exclusive) until the last shared_ptr to it goes.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "export.h"

namespace poprt::runtime {

struct DeviceRequirements {
  std::string ipu_version;  // ipu1, ipu2, ipu21
  unsigned num_ipus = 1;    // per replica
  unsigned replication_factor = 1;
  unsigned totalIpus() const { return num_ipus * replication_factor; }
};

struct DeviceInfo {
  unsigned id = 0;
  std::string ipu_version;
  unsigned first_ipu = 0;  // among the system's IPUs of that version
  unsigned num_ipus = 0;
};

class DeviceManager;

class POPRT_RUNTIME_API Device {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  const DeviceInfo& info() const { return info_; }

 private:
  friend class DeviceManager;
  struct Pool;
  Device(std::shared_ptr<Pool> pool, DeviceInfo info);
  std::shared_ptr<Pool> pool_;
  DeviceInfo info_;
};

class POPRT_RUNTIME_API DeviceManager {
 public:
  // The system described by POPRT_SIM_SYSTEM, "VERSION:COUNT,..." (default
  // "ipu2:64,ipu21:64,ipu1:64"). A malformed value is an ApplicationError naming the variable.
  DeviceManager();
  // A system with `count` IPUs of each listed version, e.g. {{"ipu2", 4}}.
  explicit DeviceManager(const std::vector<std::pair<std::string, unsigned>>& system);
  ~DeviceManager();

  // Every device of the system, attached or not.
  std::vector<DeviceInfo> devices() const;
  // Attaches the smallest free device that satisfies `requirements`, waiting up to `wait` for one
  // to be freed. ApplicationError when no device of the system could ever satisfy them;
  // RecoverableRuntimeError (Retry) when every device that could is still attached after `wait`.
  std::shared_ptr<Device> getDevice(const DeviceRequirements& requirements,
                                    std::chrono::nanoseconds wait = std::chrono::nanoseconds::zero());
  // The process-wide manager of the default system (shared by every ModelRunner that is not
  // given one), so two runners in one process contend for devices as on real hardware.
  static std::shared_ptr<DeviceManager> processDefault();

 private:
  std::shared_ptr<Device::Pool> pool_;
};

}  // namespace poprt::runtime
