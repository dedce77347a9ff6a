// Cooperative cancellation: Ctrl-C sets a token; long operations check it and stop, so callers can
// save what finished (see cancel.hpp).
#include "upskill/core/cancel.hpp"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <thread>
#include <vector>

namespace upskill {

namespace {
// A signal handler can only reach a global; this is the front end's one cancellation token.
std::atomic<CancelToken*> g_interrupt_token{nullptr};
std::atomic<int> g_interrupts{0};

extern "C" void on_interrupt(int) {
  if (g_interrupts.fetch_add(1) >= 1) _exit(130);
  if (CancelToken* token = g_interrupt_token.load()) token->cancel();
}
}  // namespace

void install_interrupt_handler(CancelToken& token) {
  g_interrupt_token.store(&token);
  struct sigaction action {};
  action.sa_handler = on_interrupt;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

void parallel_for(std::size_t count, int workers, const std::function<void(std::size_t)>& body,
                  const CancelToken* cancel) {
  if (count == 0) return;
  const std::size_t n =
      std::min<std::size_t>(count, static_cast<std::size_t>(std::max(1, workers)));
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    while (true) {
      if (cancel && cancel->cancelled()) return;
      const std::size_t i = next.fetch_add(1);
      if (i >= count) return;
      body(i);
    }
  };
  if (n == 1) {
    work();
    return;
  }
  std::vector<std::jthread> threads;
  threads.reserve(n);
  for (std::size_t t = 0; t < n; ++t) threads.emplace_back(work);
}

bool sleep_unless_cancelled(std::chrono::milliseconds interval, const CancelToken* cancel) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + interval;
  for (auto now = Clock::now(); now < until; now = Clock::now()) {
    if (cancel && cancel->cancelled()) return false;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(50), until - now));
  }
  return !(cancel && cancel->cancelled());
}

}  // namespace upskill
