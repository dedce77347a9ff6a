// JSON lines decoded with simdjson (docs/PERFORMANCE.md, "Parsing large traces"): a line is
// parsed into simdjson's DOM, which validates all of it (UTF-8, strings, numbers, structure,
// nothing after the value), and then converted whole into the Json the readers use, or, for a
// reader that walks it (LineDecoder; the Claude session reader), left where it was parsed. A line
// simdjson rejects is judged again by nlohmann_json, so the lines that count as records are
// exactly those nlohmann accepts (a leading byte-order mark, integers beyond 64 bits, nesting
// deeper than 1024).
#include "json_lines.hpp"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

namespace upskill::trace::detail {

namespace {

namespace dom = simdjson::dom;

// Lines longer than this are parsed by nlohmann_json: simdjson's parser reserves about 14 bytes
// per byte of its largest document.
constexpr std::size_t kMaxSimdLine = 16 << 20;
// A parser grown past this for one long line is dropped after it.
constexpr std::size_t kKeepParserCapacity = 1 << 20;

// The members of an object element, the items of an array (the type checked by the caller).
dom::object members(dom::element e) {
  dom::object o;
  const simdjson::error_code error = e.get(o);
  (void)error;
  return o;
}

dom::array items(dom::element e) {
  dom::array a;
  const simdjson::error_code error = e.get(a);
  (void)error;
  return a;
}

Json whole(dom::element e) {
  switch (e.type()) {
    case dom::element_type::OBJECT: {
      Json out = Json::object();
      // operator[] keeps the last of duplicate keys, as nlohmann's parser does.
      for (dom::key_value_pair kv : members(e)) out[std::string(kv.key)] = whole(kv.value);
      return out;
    }
    case dom::element_type::ARRAY: {
      Json out = Json::array();
      for (dom::element v : items(e)) out.push_back(whole(v));
      return out;
    }
    case dom::element_type::STRING:
      return Json(std::string(e.get_string().value_unsafe()));
    case dom::element_type::INT64: {
      // nlohmann stores integers without a sign as unsigned.
      const std::int64_t v = e.get_int64().value_unsafe();
      return v >= 0 ? Json(static_cast<std::uint64_t>(v)) : Json(v);
    }
    case dom::element_type::UINT64:
      return Json(e.get_uint64().value_unsafe());
    case dom::element_type::DOUBLE:
      return Json(e.get_double().value_unsafe());
    case dom::element_type::BOOL:
      return Json(e.get_bool().value_unsafe());
    case dom::element_type::NULL_VALUE:
      break;
  }
  return Json(nullptr);
}

// One parser per thread, reused line after line, with a padded copy of the line.
struct Decoder {
  std::unique_ptr<dom::parser> parser = std::make_unique<dom::parser>();
  std::unique_ptr<char[]> padded;
  std::size_t padded_size = 0;

  // SUCCESS with `root` set, or simdjson's error.
  simdjson::error_code parse(std::string_view line, dom::element& root) {
    if (padded_size < line.size() + simdjson::SIMDJSON_PADDING) {
      padded_size = std::max<std::size_t>(line.size() + simdjson::SIMDJSON_PADDING, 1 << 16);
      padded = std::make_unique<char[]>(padded_size);
    }
    std::memcpy(padded.get(), line.data(), line.size());
    std::memset(padded.get() + line.size(), ' ', simdjson::SIMDJSON_PADDING);
    return parser->parse(padded.get(), line.size(), false).get(root);
  }

  // After a long line, the memory it needed is given back.
  void shrink() {
    if (parser->capacity() <= kKeepParserCapacity) return;
    parser = std::make_unique<dom::parser>();
    padded.reset();
    padded_size = 0;
  }
};

}  // namespace

Json to_json(dom::element e) {
  return whole(e);
}

struct LineDecoder::Parser {
  dom::parser parser;
};

LineDecoder::LineDecoder() : parser_(std::make_unique<Parser>()) {}
LineDecoder::~LineDecoder() = default;

bool LineDecoder::decode(std::string_view line) {
  static_assert(LineSource::kReadablePast >= simdjson::SIMDJSON_PADDING);
  // The memory a long line needed is given back before the next (its values end here anyway).
  if (parser_->parser.capacity() > kKeepParserCapacity) parser_->parser = dom::parser();
  in_json_ = false;
  repaired_ = 0;
  json_ = Json();
  // In place: the bytes past the line are readable (LineSource::kReadablePast), as simdjson needs;
  // their values do not matter.
  if (line.size() <= kMaxSimdLine &&
      parser_->parser.parse(line.data(), line.size(), false).get(root_) == simdjson::SUCCESS)
    return root_.is_object();
  json_ = parse_json_lenient(line, &repaired_);
  in_json_ = true;
  return !json_.is_discarded() && json_.is_object();
}

bool decode_record(std::string_view line, Json& record, std::size_t* repaired) {
  if (line.size() <= kMaxSimdLine) {
    thread_local Decoder decoder;
    dom::element root;
    const simdjson::error_code error = decoder.parse(line, root);
    if (error == simdjson::SUCCESS) {
      const bool is_object = root.is_object();
      if (is_object) record = whole(root);
      decoder.shrink();
      return is_object;
    }
    decoder.shrink();
  }
  record = parse_json_lenient(line, repaired);
  return !record.is_discarded() && record.is_object();
}

// The reading ahead: the caller reads and decodes lines itself until kReadAheadAfter bytes, then a
// producer thread fills batches of decoded lines (at most kBatchesAhead waiting) that next()
// hands out in order. A batch read is handed back and freed on the producer, where it was
// allocated. An exception on the producer reaches the caller after the lines before it.
struct RecordStream::Impl {
  static constexpr std::size_t kReadAheadAfter = 4 << 20;
  static constexpr std::size_t kBatchLines = 1024;
  static constexpr std::size_t kBatchBytes = 2 << 20;
  static constexpr std::size_t kBatchesAhead = 3;
  using Batch = std::vector<DecodedLine>;

  explicit Impl(LineSource& l) : lines(l) {}

  LineSource& lines;
  std::string text;          // the line being read
  std::size_t bytes = 0;     // read so far
  DecodedLine one;           // the line handed out while reading on this thread
  bool read_ahead = false;   // the producer owns `lines`
  bool synchronous = false;  // no thread could be started

  std::thread producer;
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<Batch> ready;   // decoded, not yet handed out
  std::vector<Batch> spent;  // handed out and read, to be freed by the producer
  bool done = false, stop = false;
  std::exception_ptr error;
  Batch current;
  std::size_t taken = 0;

  // Reads and decodes the next non-blank line; false at the end.
  bool read_one(DecodedLine& d) {
    while (lines.next(text)) {
      if (text.find_first_not_of(" \t\r\n") == std::string::npos) continue;
      bytes += text.size() + 1;
      d.line = lines.line_number();
      d.is_record = decode_record(text, d.record, &d.repaired);
      d.cut_off = !d.is_record && lines.at_end() && !lines.last_line_complete();
      return true;
    }
    return false;
  }

  // Fills a batch; false when the input ended in it.
  bool fill(Batch& batch) {
    const std::size_t start = bytes;
    while (batch.size() < kBatchLines && bytes - start < kBatchBytes) {
      DecodedLine d;
      if (!read_one(d)) return false;
      batch.push_back(std::move(d));
    }
    return true;
  }

  void produce() {
    try {
      for (bool more = true; more;) {
        Batch batch;
        more = fill(batch);
        std::vector<Batch> garbage;
        {
          std::unique_lock lock(mutex);
          changed.wait(lock, [&] { return stop || ready.size() < kBatchesAhead; });
          if (stop) return;
          if (!batch.empty()) ready.push_back(std::move(batch));
          done = !more;
          garbage.swap(spent);
        }
        changed.notify_all();
      }  // the spent batches are freed here
    } catch (...) {
      const std::lock_guard lock(mutex);
      error = std::current_exception();
      done = true;
      changed.notify_all();
    }
  }

  void start() {
    try {
      producer = std::thread([this] { produce(); });
      read_ahead = true;
    } catch (const std::system_error&) {
      synchronous = true;  // no thread: read on as before
    }
  }

  const DecodedLine* next() {
    if (!read_ahead) {
      if (synchronous || bytes < kReadAheadAfter) return read_one(one = {}) ? &one : nullptr;
      start();
      if (!read_ahead) return read_one(one = {}) ? &one : nullptr;
    }
    if (taken == current.size()) {
      std::unique_lock lock(mutex);
      if (!current.empty()) spent.push_back(std::move(current));
      current.clear();
      taken = 0;
      changed.wait(lock, [&] { return !ready.empty() || done; });
      if (ready.empty()) {
        if (error) std::rethrow_exception(error);
        return nullptr;
      }
      current = std::move(ready.front());
      ready.pop_front();
      taken = 0;
      lock.unlock();
      changed.notify_all();
    }
    return &current[taken++];
  }

  ~Impl() {
    {
      const std::lock_guard lock(mutex);
      stop = true;
    }
    changed.notify_all();
    if (producer.joinable()) producer.join();
  }
};

RecordStream::RecordStream(LineSource& lines) : impl_(std::make_unique<Impl>(lines)) {}

RecordStream::~RecordStream() = default;

const DecodedLine* RecordStream::next() {
  return impl_->next();
}

}  // namespace upskill::trace::detail
