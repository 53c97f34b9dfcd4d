#include "poprt/runtime/device_manager.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <map>
#include <mutex>

#include "poprt/runtime/errors.h"

namespace poprt::runtime {

namespace {

constexpr const char* kDefaultSystem = "ipu2:64,ipu21:64,ipu1:64";
constexpr unsigned kMaxIpusPerVersion = 1024;

// "ipu2:64,ipu21:16" -> {{"ipu2", 64}, {"ipu21", 16}}; errors name `source`.
std::vector<std::pair<std::string, unsigned>> parseSystem(const std::string& text, const std::string& source) {
  std::vector<std::pair<std::string, unsigned>> system;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t colon = item.find(':');
    std::string version = item.substr(0, colon);
    char* end = nullptr;
    unsigned long count = colon == std::string::npos ? 0 : std::strtoul(item.c_str() + colon + 1, &end, 10);
    if (version.empty() || colon == std::string::npos || end == item.c_str() + colon + 1 || *end != '\0' || count == 0 ||
        count > kMaxIpusPerVersion)
      throw ApplicationError(source + ": expected VERSION:COUNT,... with COUNT in 1.." + std::to_string(kMaxIpusPerVersion) +
                             ", got '" + text + "'");
    system.emplace_back(version, static_cast<unsigned>(count));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return system;
}

std::vector<std::pair<std::string, unsigned>> defaultSystem() {
  const char* env = std::getenv("POPRT_SIM_SYSTEM");
  return env && *env ? parseSystem(env, "POPRT_SIM_SYSTEM") : parseSystem(kDefaultSystem, "the default system");
}

}  // namespace

// The system's devices and which IPUs are attached, shared by the manager and its devices (a
// device may outlive its manager).
struct Device::Pool {
  std::vector<DeviceInfo> devices;
  std::map<std::string, std::vector<bool>> busy;  // per version, per IPU
  std::mutex mutex;
  std::condition_variable freed;

  bool isFree(const DeviceInfo& d) const {
    const auto& b = busy.at(d.ipu_version);
    return std::none_of(b.begin() + d.first_ipu, b.begin() + d.first_ipu + d.num_ipus, [](bool x) { return x; });
  }
  void mark(const DeviceInfo& d, bool value) {
    auto& b = busy.at(d.ipu_version);
    std::fill(b.begin() + d.first_ipu, b.begin() + d.first_ipu + d.num_ipus, value);
  }
};

Device::Device(std::shared_ptr<Pool> pool, DeviceInfo info) : pool_(std::move(pool)), info_(std::move(info)) {}

Device::~Device() {
  std::lock_guard<std::mutex> lock(pool_->mutex);
  pool_->mark(info_, false);
  pool_->freed.notify_all();
}

DeviceManager::DeviceManager() : DeviceManager(defaultSystem()) {}

DeviceManager::DeviceManager(const std::vector<std::pair<std::string, unsigned>>& system)
    : pool_(std::make_shared<Device::Pool>()) {
  for (const auto& [version, count] : system) {
    if (count == 0 || count > kMaxIpusPerVersion || pool_->busy.count(version))
      throw ApplicationError("simulated system: '" + version + "' must be listed once with 1.." +
                             std::to_string(kMaxIpusPerVersion) + " IPUs");
    pool_->busy[version].assign(count, false);
    // Aligned groups of 1, 2, 4, ... IPUs, as IPU partitions are.
    for (unsigned size = 1; size <= count; size *= 2)
      for (unsigned first = 0; first + size <= count; first += size)
        pool_->devices.push_back({static_cast<unsigned>(pool_->devices.size()), version, first, size});
  }
}

DeviceManager::~DeviceManager() = default;

std::vector<DeviceInfo> DeviceManager::devices() const {
  std::lock_guard<std::mutex> lock(pool_->mutex);
  return pool_->devices;
}

std::shared_ptr<Device> DeviceManager::getDevice(const DeviceRequirements& req, std::chrono::nanoseconds wait) {
  const unsigned needed = req.totalIpus();
  const std::string what = std::to_string(needed) + " " + req.ipu_version + " IPU(s) (num_ipus " + std::to_string(req.num_ipus) +
                           " x replication_factor " + std::to_string(req.replication_factor) + ")";
  std::unique_lock<std::mutex> lock(pool_->mutex);
  // Devices are listed smallest first, so the first fit is the smallest.
  std::vector<const DeviceInfo*> fits;
  for (const auto& d : pool_->devices)
    if (d.ipu_version == req.ipu_version && d.num_ipus >= needed) fits.push_back(&d);
  if (fits.empty() || req.num_ipus == 0 || req.replication_factor == 0) {
    std::string have;
    for (const auto& [version, b] : pool_->busy) have += (have.empty() ? "" : ", ") + std::to_string(b.size()) + " " + version;
    throw ApplicationError("no simulated device has " + what + "; the system has " + have +
                           " IPUs (set POPRT_SIM_SYSTEM to simulate a larger one)");
  }
  const DeviceInfo* chosen = nullptr;
  auto pick = [&] {
    for (const DeviceInfo* d : fits)
      if (pool_->isFree(*d)) {
        chosen = d;
        return true;
      }
    return false;
  };
  if (!pick() && wait > std::chrono::nanoseconds::zero()) {
    if (wait == std::chrono::nanoseconds::max())
      pool_->freed.wait(lock, pick);
    else
      pool_->freed.wait_for(lock, wait, pick);
  }
  if (!chosen)
    throw RecoverableRuntimeError("every simulated device with " + what + " is attached to another session",
                                  RecoveryAction::Retry);
  pool_->mark(*chosen, true);
  return std::shared_ptr<Device>(new Device(pool_, *chosen));
}

std::shared_ptr<DeviceManager> DeviceManager::processDefault() {
  static std::mutex mutex;
  static std::shared_ptr<DeviceManager> manager;
  std::lock_guard<std::mutex> lock(mutex);
  if (!manager) manager = std::make_shared<DeviceManager>();
  return manager;
}

}  // namespace poprt::runtime
