// Numbered lines of a stream, and the cutting of a line too long to hold whole (see
// line_source.hpp).
#include "line_source.hpp"

#include <cstring>
#include <optional>

namespace upskill::trace::detail {

bool LineSource::fill() {
  if (eof_) return false;
  if (!buffer_) buffer_ = std::make_unique<char[]>(kBufferBytes + kReadablePast);
  in_.read(buffer_.get(), static_cast<std::streamsize>(kBufferBytes));
  pos_ = 0;
  end_ = static_cast<std::size_t>(in_.gcount());
  if (end_ == 0) eof_ = true;
  return end_ > 0;
}

bool LineSource::at_end() const {
  if (pos_ < end_) return false;
  return eof_ || in_.peek() == std::char_traits<char>::eof();
}

bool LineSource::next(std::string& line) {
  // A line is held whole up to kLongLine; a longer one is cut as it is read.
  line.clear();
  std::optional<LongLineCutter> cutter;
  bool any = false, newline = false;
  while (pos_ < end_ || fill()) {
    const char* start = buffer_.get() + pos_;
    const std::size_t available = end_ - pos_;
    const auto* found = static_cast<const char*>(std::memchr(start, '\n', available));
    const std::size_t n = found ? static_cast<std::size_t>(found - start) : available;
    if (n > 0) {
      any = true;
      if (cutter)
        cutter->feed(std::string_view(start, n));
      else
        line.append(start, n);
    }
    pos_ += n;
    if (found) {
      ++pos_;
      newline = true;
      break;
    }
    if (!cutter && line.size() > kLongLine) {
      const std::size_t first = line.find_first_not_of(" \t");
      cutter.emplace(first != std::string::npos && line[first] == '{');
      cutter->feed(line);
      std::string().swap(line);  // give the memory back
    }
  }
  if (!any && !newline) return false;
  if (cutter) line = cutter->finish();
  ++line_;
  complete_ = newline;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

bool LineSource::next(std::string_view& line) {
  if (pos_ < end_) {
    const char* start = buffer_.get() + pos_;
    if (const auto* found = static_cast<const char*>(std::memchr(start, '\n', end_ - pos_))) {
      std::size_t n = static_cast<std::size_t>(found - start);
      pos_ += n + 1;
      ++line_;
      complete_ = true;
      if (n > 0 && start[n - 1] == '\r') --n;
      line = std::string_view(start, n);
      return true;
    }
  }
  if (!next(spill_)) return false;
  // Padding that is read as the line's own bytes would be: initialised, then out of the line.
  const std::size_t size = spill_.size();
  spill_.append(kReadablePast, ' ');
  spill_.resize(size);
  line = spill_;
  return true;
}

// ---- Long lines ----

void LongLineCutter::feed(std::string_view bytes) {
  for (const char c : bytes) byte(c);
}

void LongLineCutter::keep(char c, bool unit_start) {
  if (!cutting_) {
    out_ += c;
    return;
  }
  tail_ += c;
  tail_starts_.push_back(unit_start ? 1 : 0);
  ++omitted_;
  // Keep at most twice the tail: drop the front, at a character boundary.
  if (tail_.size() > 2 * kKeepTail) {
    std::size_t cut = tail_.size() - kKeepTail;
    while (cut < tail_.size() && !tail_starts_[cut]) ++cut;
    tail_.erase(0, cut);
    tail_starts_.erase(tail_starts_.begin(),
                       tail_starts_.begin() + static_cast<std::ptrdiff_t>(cut));
  }
}

void LongLineCutter::byte(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (!in_string_) {
    out_ += c;
    if (c == '"') {
      in_string_ = true;
      length_ = 0;
      pending_ = 0;
      after_backslash_ = false;
    }
    return;
  }
  // Inside a string: where each character (an escape, a UTF-8 sequence) starts.
  bool unit_start = false;
  if (!json_) {
    unit_start = (u & 0xC0) != 0x80;
  } else if (after_backslash_) {
    after_backslash_ = false;
    pending_ = c == 'u' ? 4 : 0;
  } else if (pending_ > 0) {
    --pending_;
  } else if ((u & 0xC0) == 0x80) {
    // a continuation byte of a UTF-8 sequence (or a stray one: kept as it is)
  } else {
    unit_start = true;
    if (c == '"') {  // the end of the string
      end_cut();
      out_ += c;
      in_string_ = false;
      return;
    }
    if (c == '\\') after_backslash_ = true;
  }
  ++length_;
  // Past the head, at a character boundary, the rest goes to the tail.
  if (unit_start && !cutting_ && length_ > kKeepHead) cutting_ = true;
  keep(c, unit_start);
}

// The mark, then the kept tail from its first character boundary.
void LongLineCutter::end_cut() {
  if (!cutting_) return;
  std::size_t from = 0;
  while (from < tail_.size() && !tail_starts_[from]) ++from;
  const std::size_t omitted = omitted_ - (tail_.size() - from);
  out_ += json_ ? fmt::format("\\n[… {} bytes omitted …]\\n", omitted)
                : fmt::format(" [… {} bytes omitted …] ", omitted);
  out_.append(tail_, from);
  tail_.clear();
  tail_starts_.clear();
  cutting_ = false;
  omitted_ = 0;
}

std::string LongLineCutter::finish() {
  // A text line ends its cut here; so does an unterminated JSON string (the parser rejects it).
  end_cut();
  return std::move(out_);
}

}  // namespace upskill::trace::detail
