#pragma once
// Cooperative cancellation: Ctrl-C sets a token; long operations check it and stop, so callers
// can save what finished.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>

namespace upskill {

class CancelToken {
 public:
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  std::atomic<bool> cancelled_{false};
};

// Routes SIGINT and SIGTERM to `token` (the first signal cancels; a second one exits at once with
// status 130). The token must outlive the program's use of it.
void install_interrupt_handler(CancelToken& token);

// Waits `interval` in steps of at most 50 ms; false when `cancel` (may be null) is set first.
bool sleep_unless_cancelled(std::chrono::milliseconds interval, const CancelToken* cancel);

// Runs body(0..count-1) on up to `workers` threads; stops handing out work once `cancel` is set.
// Each index runs at most once; results should be written by index, so output order is fixed.
void parallel_for(std::size_t count, int workers, const std::function<void(std::size_t)>& body,
                  const CancelToken* cancel = nullptr);

}  // namespace upskill
