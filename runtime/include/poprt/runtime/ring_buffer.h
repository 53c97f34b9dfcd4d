// A fixed-capacity single-producer single-consumer ring buffer: one thread pushes, another pops,
// in FIFO order. Pushing and popping are lock-free while the buffer is neither full nor empty;
// a side that has to wait (for room, or for an item) sleeps on a condition variable with a
// timeout, and the other side wakes it only when someone is waiting. close() wakes both sides:
// pushes fail from then on and pops drain what is left.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <utility>
#include <vector>

namespace poprt::runtime {

inline constexpr std::chrono::nanoseconds kWaitForever = std::chrono::nanoseconds::max();

template <class T>
class RingBuffer {
 public:
  explicit RingBuffer(size_t capacity) : slots_(capacity) {
    if (capacity == 0) throw std::invalid_argument("a ring buffer needs at least one slot");
  }
  RingBuffer(const RingBuffer&) = delete;
  RingBuffer& operator=(const RingBuffer&) = delete;

  size_t capacity() const { return slots_.size(); }
  // Exact on the producer's and the consumer's own thread for "is there room" / "is there an item".
  // The head is read first: the tail read after it is at least as far, so the difference is sound.
  size_t size() const {
    const size_t head = head_.load();
    return tail_.load() - head;
  }
  bool empty() const { return size() == 0; }
  bool full() const { return size() == capacity(); }
  bool closed() const { return closed_.load(); }

  // ---- producer side
  // Adds `item` unless the buffer is full or closed; `item` is left untouched on failure.
  bool tryPush(T& item) {
    if (closed() || full()) return false;
    const size_t tail = tail_.load();
    slots_[tail % capacity()] = std::move(item);
    tail_.store(tail + 1);
    wakeWaiters();
    return true;
  }
  // Waits up to `timeout` for room. True when there is room; false on timeout or when closed.
  bool waitForRoom(std::chrono::nanoseconds timeout) {
    return waitUntil([this] { return !full(); }, timeout) && !closed();
  }
  bool push(T& item, std::chrono::nanoseconds timeout) { return waitForRoom(timeout) && tryPush(item); }

  // ---- consumer side
  std::optional<T> tryPop() {
    if (empty()) return std::nullopt;
    const size_t head = head_.load();
    std::optional<T> item = std::move(slots_[head % capacity()]);
    slots_[head % capacity()].reset();  // the slot must not keep the item's resources alive
    head_.store(head + 1);
    wakeWaiters();
    return item;
  }
  // Waits up to `timeout` for an item; nullopt on timeout, or when the buffer is closed and empty.
  std::optional<T> pop(std::chrono::nanoseconds timeout) {
    waitUntil([this] { return !empty(); }, timeout);
    return tryPop();
  }

  // Wakes every waiter; later pushes fail, pops drain the items left.
  void close() {
    closed_.store(true);
    std::lock_guard<std::mutex> lock(mutex_);
    cv_.notify_all();
  }

 private:
  // Sleeps until `ready()` or closed or `timeout`; returns ready(). The waiter count is raised
  // before `ready` is checked under the lock, and the other side reads it after publishing its
  // index (both sequentially consistent), so a wake-up cannot fall between the two.
  template <class Ready>
  bool waitUntil(Ready ready, std::chrono::nanoseconds timeout) {
    if (ready()) return true;
    if (timeout <= std::chrono::nanoseconds::zero()) return false;
    std::unique_lock<std::mutex> lock(mutex_);
    waiters_.fetch_add(1);
    auto done = [&] { return ready() || closed(); };
    if (timeout == kWaitForever)
      cv_.wait(lock, done);
    else
      cv_.wait_for(lock, timeout, done);
    waiters_.fetch_sub(1);
    return ready();
  }
  void wakeWaiters() {
    if (waiters_.load() == 0) return;
    std::lock_guard<std::mutex> lock(mutex_);
    cv_.notify_all();
  }

  std::vector<std::optional<T>> slots_;
  std::atomic<size_t> head_{0};  // next slot to pop; only the consumer writes it
  std::atomic<size_t> tail_{0};  // next slot to push; only the producer writes it
  std::atomic<bool> closed_{false};
  std::atomic<int> waiters_{0};
  std::mutex mutex_;
  std::condition_variable cv_;
};

}  // namespace poprt::runtime
