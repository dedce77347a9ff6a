// YAML read as strictyaml reads it: every scalar a string, flow style, tags, anchors, aliases and
// duplicate keys errors (see strict_yaml.hpp).
#include "upskill/skill/strict_yaml.hpp"

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <sstream>

namespace upskill::skill {

const StrictYamlValue* StrictYamlValue::find(std::string_view key) const {
  for (const auto& [k, v] : map)
    if (k == key) return &v;
  return nullptr;
}

namespace {

struct StrictError {
  std::string message;
};

class Builder : public YAML::EventHandler {
 public:
  Builder(std::string_view text, int line_offset) : text_(text), line_offset_(line_offset) {}

  std::optional<StrictYamlValue> root;

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    check_anchor(mark, anchor);
    // yaml-cpp drops the text of null-like scalars; strictyaml keeps it as a string.
    StrictYamlValue v;
    v.text = null_text_at(mark.pos);
    add(mark, std::move(v));
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    throw StrictError{
        fmt::format("aliases are not allowed (line {}, column {})", line(mark), mark.column + 1)};
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    check_anchor(mark, anchor);
    check_tag(mark, tag);
    StrictYamlValue v;
    v.text = value;
    add(mark, std::move(v));
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    open(mark, tag, anchor, style, StrictYamlValue::Kind::sequence, "sequence");
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    open(mark, tag, anchor, style, StrictYamlValue::Kind::mapping, "mapping");
  }
  void OnMapEnd() override { close(); }

 private:
  struct Frame {
    StrictYamlValue value;
    YAML::Mark mark;
    std::optional<std::string> pending_key;  // mapping: key read, value not yet
  };
  std::string_view text_;
  int line_offset_;
  std::vector<Frame> stack_;

  int line(const YAML::Mark& mark) const { return mark.line + 1 + line_offset_; }

  std::string null_text_at(int pos) const {
    if (pos < 0 || static_cast<std::size_t>(pos) >= text_.size()) return {};
    const std::string_view rest = text_.substr(static_cast<std::size_t>(pos));
    for (std::string_view word : {"~", "null", "Null", "NULL"}) {
      if (rest.starts_with(word)) {
        const std::size_t n = word.size();
        if (n == rest.size() || rest[n] == ' ' || rest[n] == '\t' || rest[n] == '\n' ||
            rest[n] == '\r' || rest[n] == '#')
          return std::string(word);
      }
    }
    return {};
  }

  void check_anchor(const YAML::Mark& mark, YAML::anchor_t anchor) const {
    if (anchor != YAML::NullAnchor)
      throw StrictError{
          fmt::format("anchors are not allowed (line {}, column {})", line(mark), mark.column + 1)};
  }
  void check_tag(const YAML::Mark& mark, const std::string& tag) const {
    if (!tag.empty() && tag != "?" && tag != "!")
      throw StrictError{fmt::format("tagged values are not allowed (line {}, column {})",
                                    line(mark), mark.column + 1)};
  }

  void open(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
            YAML::EmitterStyle::value style, StrictYamlValue::Kind kind, const char* what) {
    check_anchor(mark, anchor);
    check_tag(mark, tag);
    if (style == YAML::EmitterStyle::Flow)
      throw StrictError{fmt::format("flow style {} is not allowed (line {}, column {})",
                                    kind == StrictYamlValue::Kind::mapping ? "{}" : "[]",
                                    line(mark), mark.column + 1)};
    if (!stack_.empty() && stack_.back().value.is_mapping() && !stack_.back().pending_key)
      throw StrictError{fmt::format("a {} cannot be a mapping key (line {}, column {})", what,
                                    line(mark), mark.column + 1)};
    Frame frame;
    frame.value.kind = kind;
    frame.mark = mark;
    stack_.push_back(std::move(frame));
  }

  void close() {
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    add(frame.mark, std::move(frame.value));
  }

  void add(const YAML::Mark& mark, StrictYamlValue v) {
    if (stack_.empty()) {
      root = std::move(v);
      return;
    }
    Frame& top = stack_.back();
    if (top.value.kind == StrictYamlValue::Kind::sequence) {
      top.value.list.push_back(std::move(v));
    } else if (!top.pending_key) {
      if (top.value.find(v.text) != nullptr)
        throw StrictError{fmt::format("duplicate key '{}' (line {}, column {})", v.text, line(mark),
                                      mark.column + 1)};
      top.pending_key = v.text;
    } else {
      top.value.map.emplace_back(*top.pending_key, std::move(v));
      top.pending_key.reset();
    }
  }
};

// The line of a quoted scalar that never closes (yaml-cpp lets one run to the end of the text;
// strictyaml, like every YAML 1.2 parser, rejects it). A quote opens a scalar at the start of a
// line's content (after indentation and "- ") or after ": ".
std::optional<int> unterminated_quote(std::string_view text) {
  std::size_t pos = 0;
  int line = 1;
  auto advance_to = [&](std::size_t to) {
    for (; pos < to && pos < text.size(); ++pos) line += text[pos] == '\n';
  };
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    // The candidate openings of this line, in order.
    std::size_t at = text.find_first_not_of(" \t", pos);
    if (at < end && text[at] == '-' && at + 1 < end && text[at + 1] == ' ')
      at = text.find_first_not_of(" \t", at + 1);
    std::optional<std::size_t> open;
    if (at < end && (text[at] == '"' || text[at] == '\'')) open = at;
    if (!open) {
      for (std::size_t c = pos; c + 2 < end; ++c)
        if (text[c] == '#')
          break;
        else if (text[c] == ':' && text[c + 1] == ' ') {
          const std::size_t v = text.find_first_not_of(" \t", c + 1);
          if (v < end && (text[v] == '"' || text[v] == '\'')) open = v;
          break;
        }
    }
    if (!open) {
      advance_to(end + 1);
      continue;
    }
    const char quote = text[*open];
    const int opened_at = line;
    std::size_t i = *open + 1;
    bool closed = false;
    while (i < text.size()) {
      if (quote == '"' && text[i] == '\\') {
        i += 2;
      } else if (text[i] == quote) {
        if (quote == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          i += 2;
        } else {
          closed = true;
          break;
        }
      } else {
        ++i;
      }
    }
    if (!closed) return opened_at;
    // Go on after the closing quote's line (a key after it on the same line is not scanned).
    advance_to(std::min(text.find('\n', i), text.size()) + 1);
  }
  return std::nullopt;
}

}  // namespace

Result<std::optional<StrictYamlValue>> parse_strict_yaml(std::string_view text, int line_offset) {
  if (auto line = unterminated_quote(text))
    return fail(Error::usage(
        fmt::format("found unexpected end of stream while scanning a quoted scalar (line {})",
                    *line + line_offset)));
  std::istringstream in{std::string(text)};
  Builder builder(text, line_offset);
  try {
    YAML::Parser parser(in);
    if (!parser.HandleNextDocument(builder)) return std::optional<StrictYamlValue>{};
    Builder rest(text, line_offset);
    if (parser.HandleNextDocument(rest)) return fail(Error::usage("more than one YAML document"));
  } catch (const StrictError& e) {
    return fail(Error::usage(e.message));
  } catch (const YAML::Exception& e) {
    return fail(Error::usage(fmt::format("{} (line {}, column {})", e.msg,
                                         e.mark.line + 1 + line_offset, e.mark.column + 1)));
  }
  return std::move(builder.root);
}

}  // namespace upskill::skill
