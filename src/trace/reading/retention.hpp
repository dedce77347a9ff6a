#pragma once
// Internal to the trace module: the memory budget of a trace's texts (retention.cpp;
// docs/PERFORMANCE.md). Once the turns' text, thinking and tool results pass `budget` bytes, the
// excerpts of older turns are shortened, oldest first and in steps, down to three quarters of it
// (counted in stats.shortened, noted once). The last kKeepRecent turns, which a reader may still be
// completing, are left alone.
#include <cstddef>

#include "upskill/trace/trace.hpp"

namespace upskill::trace::detail {

inline constexpr std::size_t kRetainedText = 48 << 20;

class Retention {
 public:
  static constexpr std::size_t kCheckEvery = 256;  // turns between two measurements
  static constexpr std::size_t kKeepRecent = 64;
  explicit Retention(std::size_t budget = kRetainedText) : budget_(budget) {}
  // Called after each turn added: measures every kCheckEvery turns, shortens when over budget.
  void turn_added(Trace& trace);

 private:
  std::size_t budget_;
  std::size_t next_check_ = kCheckEvery;
  std::size_t step_ = 0;    // how short older excerpts are made (0: not yet)
  std::size_t cursor_ = 0;  // turns before this one are shortened to the current step
  bool noted_ = false;
};

// The bytes of text, thinking and tool results the turns hold.
std::size_t retained_text(const Trace& trace);

}  // namespace upskill::trace::detail
