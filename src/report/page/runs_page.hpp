// The files of the page `upskill runs --html` writes (this folder), built into the library.
#pragma once

#include <string_view>

// src/CMakeLists.txt reads each file at configure time into a string constant of the generated
// runs_page.cpp (from runs_page.cpp.in), without the file's first line, its purpose comment;
// editing a file reconfigures and rebuilds.
namespace upskill::report::page {

// runs.html: the page around its stylesheet and body, which go where it says "{{style}}" and
// "{{body}}".
std::string_view runs_html();
// runs.css: the page's stylesheet.
std::string_view runs_css();
// runs.js: the page's script.
std::string_view runs_js();

}  // namespace upskill::report::page
