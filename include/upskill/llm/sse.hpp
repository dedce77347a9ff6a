#pragma once
// Server-sent events, as OpenAI-compatible servers and Anthropic send them. One parser for every
// dialect: LF or CRLF line ends, ':' comment lines (OpenRouter's keep-alives), 'event:' names,
// multi-line 'data:', and the non-standard 'error:' line of older llama.cpp builds.
#include <string>
#include <string_view>
#include <vector>

namespace upskill::llm {

struct SseEvent {
  std::string event;  // the 'event:' name; "error" for a legacy 'error:' line
  std::string data;   // 'data:' lines joined with '\n'
};

class SseParser {
 public:
  // Feeds raw bytes (any split); returns the events completed by them.
  std::vector<SseEvent> feed(std::string_view bytes);
  // At end of stream: an event still pending (no blank line after it), if any.
  std::vector<SseEvent> finish();

 private:
  std::string buffer_;
  SseEvent pending_;
  bool has_data_ = false;
  void line(std::string_view l, std::vector<SseEvent>& out);
  void dispatch(std::vector<SseEvent>& out);
};

}  // namespace upskill::llm
