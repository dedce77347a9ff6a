// Server-sent events, as OpenAI-compatible servers and Anthropic send them (see sse.hpp).
#include "upskill/llm/sse.hpp"

namespace upskill::llm {

void SseParser::dispatch(std::vector<SseEvent>& out) {
  if (has_data_ || !pending_.event.empty()) out.push_back(std::move(pending_));
  pending_ = {};
  has_data_ = false;
}

void SseParser::line(std::string_view l, std::vector<SseEvent>& out) {
  if (l.empty()) {
    dispatch(out);
    return;
  }
  if (l.front() == ':') return;  // comment / keep-alive
  const std::size_t colon = l.find(':');
  std::string_view field = l.substr(0, colon);
  std::string_view value =
      colon == std::string_view::npos ? std::string_view() : l.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) pending_.data += '\n';
    pending_.data += value;
    has_data_ = true;
  } else if (field == "event") {
    pending_.event = std::string(value);
  } else if (field == "error") {
    // Older llama.cpp: "error: {json}" on its own line.
    dispatch(out);
    out.push_back({"error", std::string(value)});
  }
  // id:, retry: and unknown fields are ignored, as the SSE spec says.
}

std::vector<SseEvent> SseParser::feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  buffer_ += bytes;
  std::size_t start = 0;
  while (true) {
    const std::size_t nl = buffer_.find('\n', start);
    if (nl == std::string::npos) break;
    std::size_t end = nl;
    if (end > start && buffer_[end - 1] == '\r') --end;
    line(std::string_view(buffer_).substr(start, end - start), out);
    start = nl + 1;
  }
  buffer_.erase(0, start);
  return out;
}

std::vector<SseEvent> SseParser::finish() {
  std::vector<SseEvent> out;
  if (!buffer_.empty()) {
    std::string rest = std::move(buffer_);
    buffer_.clear();
    if (!rest.empty() && rest.back() == '\r') rest.pop_back();
    line(rest, out);
  }
  dispatch(out);
  return out;
}

}  // namespace upskill::llm
