// Terminal styling of the command line: bold, dim and colours, plain when colour is off.
#include <fmt/format.h>

#include "cli.hpp"

namespace upskill::cli {

namespace {
std::string wrap(bool color, const char* code, const std::string& s) {
  return color ? fmt::format("\033[{}m{}\033[0m", code, s) : s;
}
}  // namespace

std::string Style::bold(const std::string& s) const {
  return wrap(color, "1", s);
}
std::string Style::dim(const std::string& s) const {
  return wrap(color, "2", s);
}
std::string Style::red(const std::string& s) const {
  return wrap(color, "31", s);
}
std::string Style::green(const std::string& s) const {
  return wrap(color, "32", s);
}
std::string Style::yellow(const std::string& s) const {
  return wrap(color, "33", s);
}
std::string Style::cyan(const std::string& s) const {
  return wrap(color, "36", s);
}

}  // namespace upskill::cli
