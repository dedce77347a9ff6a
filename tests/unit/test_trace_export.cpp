// Claude Code /export read as the user saw it: lines the terminal wrapped at the export's width
// joined back, Write previews and Update diffs replayed into final (or partly known) files, refused
// writes changing nothing; and the pieces on their own (width, joins, diffs, the sparse file).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <fstream>
#include <random>
#include <sstream>

#include "../../src/trace/formats/export_files.hpp"
#include "../../src/trace/formats/export_layout.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/text.hpp"
#include "upskill/trace/digest.hpp"
#include "upskill/trace/trace.hpp"

namespace upskill::trace {
namespace {

namespace fs = std::filesystem;
using detail::DiffHunk;
using detail::DiffLine;
using detail::ShownDiff;
using detail::SparseFile;

const fs::path kWrapped =
    fs::path(UPSKILL_SOURCE_DIR) / "tests/data/traces/claude-export-wrapped.txt";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const FileTouch* file_named(const Trace& t, const std::string& path) {
  for (const auto& f : t.files)
    if (f.path == path) return &f;
  return nullptr;
}

// An 80-column export of a kernel session (written for this test in the layout of Claude Code
// 2.0.x exports): a wrapped prompt with a URL cut mid-word, a wrapped table row, an elided Write
// preview, a complete one with a wrapped line, a refused Write, a failing build, and Update diffs
// (one of them in two hunks, with a wrapped diff line) before the build passes.
TEST(ClaudeExportWrapped, ReadsAsTheUserSawIt) {
  auto t = parse_trace_file(kWrapped);
  ASSERT_TRUE(t) << t.error().message;
  EXPECT_EQ(t->format, Format::claude_export);
  EXPECT_EQ(t->format_version, "Claude Code 2.0.59");
  ASSERT_GE(t->turns.size(), 2u);
  EXPECT_EQ(t->turns[0].text,
            "Build a kernel-builder project fused_silu with a CUDA kernel for H100 (sm_90) that "
            "computes silu(x) * y over the last dimension of a [tokens, 2*d] tensor, fp32 "
            "accumulation, float16 and bfloat16. Follow "
            "https://github.com/huggingface/kernel-builder/blob/main/docs/writing-kernels.md for "
            "the layout.");
  const std::string& said = t->turns[1].text;
  EXPECT_NE(said.find("https://github.com/huggingface/kernel-builder/blob/main/docs/"
                      "writing-kernels-with-a-long-anchor-name.md describes"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("| silu_and_mul | x: [tokens, 2*d] half or bfloat16 | [tokens, d] | float32 "
                      "everywhere |"),
            std::string::npos)
      << said;
  EXPECT_NE(said.find("|--------|--------|--------|--------------|\n| silu_and_mul"),
            std::string::npos)
      << "a table row that fitted stays its own line";
}

TEST(ClaudeExportWrapped, UpdateDiffsReplayIntoFinalFiles) {
  auto t = parse_trace_file(kWrapped);
  ASSERT_TRUE(t) << t.error().message;
  const FileTouch* kernel = file_named(*t, "silu/silu.cu");
  ASSERT_NE(kernel, nullptr);
  ASSERT_TRUE(kernel->content) << kernel->unknown_reason;
  EXPECT_EQ(*kernel->content,
            "#include <cuda_fp16.h>\n"
            "#include <cuda_bf16.h>\n"
            "\n"
            "// One block per row; the gate half is x[:, :d], the up half x[:, d:], accumulated in "
            "fp32 before the single rounding to T.\n"
            "template <typename T>\n"
            "__global__ void silu_and_mul_kernel(T* __restrict__ out, const T* __restrict__ x, int "
            "d) {\n"
            "  const int row = blockIdx.x;\n"
            "  for (int i = threadIdx.x; i < d; i += blockDim.x) {\n"
            "    const float a = static_cast<float>(x[row * 2 * d + i]);\n"
            "    const float b = static_cast<float>(x[row * 2 * d + d + i]);\n"
            "    const float silu = a / (1.0f + __expf(-a));\n"
            "    out[row * d + i] = static_cast<T>(silu * b);\n"
            "  }  // rows\n"
            "}\n");
  EXPECT_EQ(kernel->writes, 1);
  EXPECT_EQ(kernel->edits, 1);

  // build.toml: 8 of 14 lines shown when written, two diffs show more; line 9 was never shown.
  const FileTouch* toml = file_named(*t, "build.toml");
  ASSERT_NE(toml, nullptr);
  EXPECT_FALSE(toml->content);
  EXPECT_EQ(toml->missing, "line 9 of 16");
  EXPECT_EQ(toml->shown,
            "[general]\nname = \"fused_silu\"\nbackends = [\"cuda\"]\n\n[torch]\nsrc = [\n"
            "  \"torch-ext/torch_binding.cpp\",\n  \"torch-ext/torch_binding.h\",\n"
            "[… line 9 is not shown in the trace …]\n\n[kernel.silu]\nbackend = \"cuda\"\n"
            "depends = [\"torch\"]\ncuda-capabilities = [\"9.0\"]\nsrc = [\"silu/silu.cu\"]\n"
            "include = [\"silu\"]\n");
  EXPECT_NE(toml->unknown_reason.find("15 lines known"), std::string::npos) << toml->unknown_reason;

  // The refused Write changed nothing.
  EXPECT_EQ(file_named(*t, "README.md"), nullptr);
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_TRUE(t->commands[0].failed);
  EXPECT_FALSE(t->commands[1].failed);
  ASSERT_EQ(t->fixes.size(), 1u);
  EXPECT_EQ(t->fixes[0].files_changed, (std::vector<std::string>{"build.toml", "silu/silu.cu"}));
  const Json summary = summary_json(*t);
  EXPECT_EQ(summary["counts"]["tool_calls"], 8);
  EXPECT_EQ(summary["files"][0]["path"], "build.toml");
  EXPECT_EQ(summary["files"][0]["missing"], "line 9 of 16");
  EXPECT_FALSE(summary["files"][1].contains("missing"));
}

TEST(ExportLayout, WidthNeedsSeveralLinesNearIt) {
  std::vector<std::string> lines = {std::string(70, 'a'), "short"};
  EXPECT_FALSE(detail::export_width(lines));  // one long line is not a terminal's width
  lines = {std::string(78, 'a'), std::string(80, 'b'), std::string(75, 'c')};
  EXPECT_EQ(detail::export_width(lines), 80u);
  EXPECT_EQ(detail::display_width("✅ ok"), 5u);
  EXPECT_EQ(detail::display_width("⎿\u00a0 x"), 4u);
}

// Lines that would have fitted, numbered lines, list items after a short line and structural
// glyphs are never joined; a wrapped line is.
TEST(ExportLayout, JoinsOnlyWhatTheTerminalWrapped) {
  const std::string full = "⏺ " + std::string(70, 'x') + " word";  // 77 columns
  std::vector<std::string> lines = {
      full,
      "  next",  // "next" would not have fitted: a wrap
      full,
      "  a",  // "a" would have fitted after 77 columns: its own line
      "⏺ short line",
      "  - item",
      full,
      "  ⎿  result",
      "     12 " + std::string(70, 'y'),
      "     13 next numbered line",
  };
  EXPECT_EQ(detail::join_soft_wraps(lines, 80), 1u);
  ASSERT_EQ(lines.size(), 9u);
  EXPECT_EQ(lines[0], full + " next");
  EXPECT_EQ(lines[2], "  a");
  EXPECT_EQ(lines[4], "  - item");
  EXPECT_EQ(lines[8], "     13 next numbered line");
}

// Claude Code 2.1 wraps an assistant's paragraphs at 80 columns of a wider terminal: rows of a
// paragraph that reach about that width and whose next word would not have fitted are joined at
// it; a code line, a list item and a row after a statement's end stay as they are, and nothing
// is joined when the paragraphs show no narrower width. No terminal width known (`kMaxPatternLine`)
// still joins the paragraphs.
TEST(ExportLayout, ParagraphsWrappedNarrowerThanTheTerminalAreJoined) {
  const std::string row1 = "● Done: " + std::string(67, 'a') + " wraps";          // 79 columns
  const std::string row2 = "  that goes on " + std::string(56, 'b') + " in the";  // 78 columns
  const std::string row3 = "● Short: " + std::string(60, 'a') + " end";           // 73 columns
  const std::string code = "  pipe = Pipeline.from_pretrained(" + std::string(37, 'c') + ");";
  const std::string call = "  pipe.unet.set_attn_processor(Processor())";
  for (std::size_t width : {std::size_t{100}, detail::kMaxPatternLine}) {
    std::vector<std::string> lines = {
        row1,  row2, "  middle of it.", "",   row1, "  - item", "", row3,
        "  x", "",   "● Here:",         code, call};
    EXPECT_EQ(detail::join_soft_wraps(lines, width), 2u) << width;
    ASSERT_EQ(lines.size(), 11u);
    EXPECT_EQ(lines[0], row1 + " " + row2.substr(2) + " middle of it.");
    EXPECT_EQ(lines[3], "  - item");  // a list item
    EXPECT_EQ(lines[6], "  x");       // "x" would have fitted: its own line
    EXPECT_EQ(lines[10], call);       // a statement ended before it
  }
  // One wrapped row shows no width of its own: at 100 columns, nothing is joined.
  std::vector<std::string> alone = {row1, "  that"};
  EXPECT_EQ(detail::join_soft_wraps(alone, 100), 0u);
  // A row may fill the paragraph width, and the next may start with a file name, a
  // backticked name or an abbreviation: still a sentence going on.
  const std::string full = "● Full: " + std::string(72, 'f');  // 80 columns
  const std::string row4 = "● Then " + std::string(69, 'g');   // 76 columns
  for (const std::string next : {"  kernel.cu, next to it.", "  `torch.compile` runs it.",
                                 "  e.g. this one.", "  sm_80 first."}) {
    std::vector<std::string> wide = {full, "  and more.", "", row4, next};
    EXPECT_EQ(detail::join_soft_wraps(wide, 100), 2u) << next;
    EXPECT_EQ(wide.back(), row4 + " " + next.substr(2));
  }
  // Two long code lines under a paragraph do not make the paragraphs' width theirs.
  const std::string code1 = "  const float scale = rsqrtf(total / cols + eps);  // " +
                            std::string(40, 'c');  // 96 columns
  const std::string code2 =
      "  out[blockIdx.x * cols + c] = in[blockIdx.x * cols + c] * scale;  // " +
      std::string(24, 'd');
  std::vector<std::string> with_code = {
      row1, row2, "  middle of it.", "", "● Compare:", code1, code2};
  EXPECT_EQ(detail::join_soft_wraps(with_code, 100), 2u);
  EXPECT_EQ(with_code.size(), 5u);
}

// A change of `remove` lines at `at` (1-based, in the old file) replaced by `insert`.
struct Change {
  std::size_t at, remove;
  std::vector<std::string> insert;
  std::size_t context = 2;  // lines shown before and after
};

// The export's diff of `changes` (sorted, far apart) on `old`, with their lines of context, hunks
// separated by "...": context and added lines numbered in the new file, removed lines in the old.
std::string export_diff(const std::vector<std::string>& old, const std::vector<Change>& changes,
                        long additions, long removals) {
  std::string out =
      fmt::format("Updated f.txt with {} additions and {} removals\n", additions, removals);
  long delta = 0;
  bool first = true;
  for (const Change& c : changes) {
    if (!first) out += "  ...\n";
    first = false;
    const std::size_t from = c.at > c.context ? c.at - c.context : 1;
    for (std::size_t k = from; k < c.at; ++k)
      out += fmt::format("{:>6}    {}\n", k + delta, old[k - 1]);
    for (std::size_t k = 0; k < c.remove; ++k)
      out += fmt::format("{:>6} -  {}\n", c.at + k, old[c.at + k - 1]);
    for (std::size_t k = 0; k < c.insert.size(); ++k)
      out += fmt::format("{:>6} +  {}\n", c.at + delta + k, c.insert[k]);
    delta += static_cast<long>(c.insert.size()) - static_cast<long>(c.remove);
    const std::size_t after = c.at + c.remove;
    for (std::size_t k = after; k < after + c.context && k <= old.size(); ++k)
      out += fmt::format("{:>6}    {}\n", k + delta, old[k - 1]);
  }
  return out;
}

// Random files and random far-apart changes: the diff as an export shows it, replayed on the whole
// old file, gives exactly the new file; replayed on an unknown file, the lines it shows.
TEST(SparseFileProperty, DiffsReplayToTheNewFile) {
  std::mt19937 rng(20261203);
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> old;
    const std::size_t n = 20 + rng() % 60;
    for (std::size_t i = 0; i < n; ++i) old.push_back(fmt::format("line {} v{}", i + 1, rng() % 9));
    std::vector<Change> changes;
    long additions = 0, removals = 0;
    for (std::size_t at = 1 + rng() % 5; at + 4 < n; at += 10 + rng() % 10) {
      Change c{at, rng() % 3, {}, rng() % 4};  // no context: the hunk may start with a removal
      for (std::size_t k = rng() % 3; k > 0; --k)
        c.insert.push_back(fmt::format("new {} {}", at, k));
      if (c.remove == 0 && c.insert.empty()) c.insert.push_back("inserted");
      additions += static_cast<long>(c.insert.size());
      removals += static_cast<long>(c.remove);
      changes.push_back(std::move(c));
    }
    std::vector<std::string> expect;
    std::size_t next = 1;
    for (const Change& c : changes) {
      for (; next < c.at; ++next) expect.push_back(old[next - 1]);
      expect.insert(expect.end(), c.insert.begin(), c.insert.end());
      next = c.at + c.remove;
    }
    for (; next <= n; ++next) expect.push_back(old[next - 1]);

    const std::string result = export_diff(old, changes, additions, removals);
    const auto diff = detail::shown_diff(result);
    ASSERT_TRUE(diff) << result;
    ASSERT_EQ(diff->hunks.size(), changes.size()) << result;
    SparseFile f = SparseFile::whole(text::join(old, "\n") + "\n");
    f.apply(*diff, false);
    ASSERT_TRUE(f.complete()) << result;
    ASSERT_EQ(f.content(), text::join(expect, "\n") + "\n") << result;

    SparseFile unknown;
    unknown.apply(*diff, false);
    EXPECT_FALSE(unknown.complete());
    std::string missing;
    const std::string shown = unknown.render(missing);
    for (const Change& c : changes)
      for (const auto& line : c.insert) EXPECT_NE(shown.find(line + "\n"), std::string::npos);
  }
}

TEST(SparseFile, ElidedDiffForgetsWhatFollowsButKeepsTheLength) {
  SparseFile f = SparseFile::whole("a\nb\nc\nd\ne\n");
  const auto diff = detail::shown_diff(
      "Updated x with 2 additions and 1 removal\n  1    a\n"
      "  2 -  b\n  2 +  B\n  3 +  B2\n");
  ASSERT_TRUE(diff);
  f.apply(*diff, /*elided=*/true);
  EXPECT_FALSE(f.complete());
  std::string missing;
  EXPECT_EQ(f.render(missing), "a\nB\nB2\n[… lines 4–6 are not shown in the trace …]\n");
  EXPECT_EQ(missing, "lines 4–6 of 6");
  // Not a diff, not a preview: nothing is read from it.
  EXPECT_FALSE(detail::shown_diff("Error editing file"));
  EXPECT_FALSE(detail::shown_write("Updated x with 1 addition"));
  const auto w = detail::shown_write("Wrote 3 lines to x\n 1 a\n 2\n 3 c\n 9 z\n");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->lines.size(), 3u);  // numbering must run 1, 2, 3: "9 z" is not the file
}

// The wrapped export cut, duplicated and scrambled line by line: parsing never throws and always
// gives a trace.
TEST(ClaudeExportWrapped, DamagedExportsNeverThrow) {
  const std::vector<std::string> lines = text::split_lines(read(kWrapped));
  std::mt19937 rng(7);
  ParseOptions o;
  o.format = Format::claude_export;
  for (int round = 0; round < 1500; ++round) {
    std::vector<std::string> v = lines;
    for (int k = 0; k < 3; ++k) {
      const std::size_t i = rng() % v.size();
      switch (rng() % 5) {
        case 0:
          v.erase(v.begin() + static_cast<long>(i));
          break;
        case 1:
          v.insert(v.begin() + static_cast<long>(i), v[i]);
          break;
        case 2:
          v[i] = v[i].substr(0, rng() % (v[i].size() + 1));
          break;  // may cut UTF-8
        case 3:
          v[i] = fmt::format("{:>8} {}", rng() % 40, v[i]);
          break;
        default:
          std::swap(v[i], v[rng() % v.size()]);
      }
    }
    const std::string text = text::join(v, "\n") + "\n";
    try {
      auto t = parse_trace_text(text, "damaged.txt", o);
      EXPECT_TRUE(t) << t.error().message;
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << "\n" << text;
      return;
    }
  }
}

// The digest of that export, read as a teacher would receive it: the goal, each error with what
// followed, and the final files — the partly shown one with its gap marked.
TEST(DigestOfExport, GoalErrorsWithFixesAndFinalFiles) {
  auto t = parse_trace_file(kWrapped);
  ASSERT_TRUE(t) << t.error().message;
  const TraceDigest d = make_digest(*t);
  const auto at = [&](const std::string& s) { return d.text.find(s); };
  EXPECT_NE(at("Follow https://github.com/huggingface/kernel-builder/blob/main/docs/"
               "writing-kernels.md for the layout."),
            std::string::npos);
  EXPECT_NE(at("### ✗ Write(README.md) failed"), std::string::npos) << d.text;
  EXPECT_NE(at("Error writing file"), std::string::npos);
  EXPECT_NE(at("unknown field `universal`"), std::string::npos);
  EXPECT_NE(at("Fixed: `kernel-builder build --backend cuda 2>&1 | tail -20` succeeded"),
            std::string::npos);
  EXPECT_NE(at("### build.toml (partly shown in the trace — missing line 9 of 16;"),
            std::string::npos)
      << d.text;
  EXPECT_NE(at("[… line 9 is not shown in the trace …]\n\n[kernel.silu]"), std::string::npos);
  EXPECT_NE(at("    out[row * d + i] = static_cast<T>(silu * b);\n  }  // rows\n}\n```"),
            std::string::npos);
  EXPECT_LT(at("## Errors and their fixes"), at("## Final versions of the files"));
  EXPECT_LT(at("### build.toml"), at("### silu/silu.cu"));  // configuration before sources
}

// A Claude Code session of one prompt and tool calls, each with its result.
struct ToolStep {
  std::string name;
  Json input;
  std::string result;
  bool error = false;
};

std::string tool_session(const std::string& prompt, const std::vector<ToolStep>& steps) {
  std::string s;
  auto line = [&](const Json& j) { s += j.dump() + "\n"; };
  line({{"type", "user"}, {"uuid", "u0"}, {"message", {{"role", "user"}, {"content", prompt}}}});
  for (std::size_t n = 1; n <= steps.size(); ++n) {
    const ToolStep& step = steps[n - 1];
    const std::string id = fmt::format("t{}", n);
    line({{"type", "assistant"},
          {"uuid", fmt::format("a{}", n)},
          {"message",
           {{"id", fmt::format("m{}", n)},
            {"role", "assistant"},
            {"content", Json::array({{{"type", "tool_use"},
                                      {"id", id},
                                      {"name", step.name},
                                      {"input", step.input}}})}}}});
    line({{"type", "user"},
          {"uuid", fmt::format("u{}", n)},
          {"message",
           {{"role", "user"},
            {"content", Json::array({{{"type", "tool_result"},
                                      {"tool_use_id", id},
                                      {"content", step.result},
                                      {"is_error", step.error}}})}}}});
  }
  return s;
}

// A JSONL session that wrote one big source file and failed once with a long log.
std::string big_file_session(const std::vector<std::string>& source, const std::string& log) {
  return tool_session(
      "Write it.",
      {{"Write", {{"file_path", "src/big.cu"}, {"content", text::join(source, "\n") + "\n"}}, "ok"},
       {"Bash", {{"command", "make"}}, log, true},
       {"Bash", {{"command", "make"}}, "built"}});
}

// An error's output is excerpted within its share of the budget: with room, many more of its error
// lines than the 12 of a tight budget, and never past the budget.
TEST(DigestBudget, AnErrorKeepsMoreOfItsLinesWhenThereIsRoom) {
  std::string log = "Exit code 2\n";
  for (int i = 0; i < 300; ++i)
    log += fmt::format("src/big.cu({}): error: identifier \"v{}\" is undefined\n", i, i);
  auto t = parse_trace_text(big_file_session({"int x;"}, log), "log.jsonl", {});
  ASSERT_TRUE(t) << t.error().message;
  auto shown = [](const std::string& digest) {
    std::size_t n = 0;
    for (std::size_t at = digest.find("error: identifier"); at != std::string::npos;
         at = digest.find("error: identifier", at + 1))
      ++n;
    return n;
  };
  const TraceDigest roomy = make_digest(*t, {48000});
  const TraceDigest tight = make_digest(*t, {2500});
  EXPECT_GE(shown(roomy.text), 100u) << roomy.text;
  EXPECT_LT(shown(tight.text) * 3, shown(roomy.text));
  EXPECT_LE(tight.tokens, 2500u);
  EXPECT_NE(roomy.text.find("identifier \"v299\""), std::string::npos);  // the tail
}

// Files share the final-files budget: a large source ranked first (the latest written) does not
// take it all and leave the others out. Each file gets its head and a part of its contents; small
// ones come whole.
TEST(DigestBudget, EveryFileGetsItsShareBeforeAnyIsLeftOut) {
  std::vector<std::pair<std::string, std::string>> files;
  std::string big;
  for (int i = 0; i < 4000; ++i) big += fmt::format("  float v{0} = x[{0}] * w[{0}];\n", i);
  files.emplace_back("build.toml", "[general]\nname = \"k\"\n");
  for (int k = 0; k < 6; ++k)
    files.emplace_back(
        fmt::format("src/part{}.cu", k),
        fmt::format("// part {0}\n__device__ float part{0}(float x) {{ return x; }}\n", k));
  files.emplace_back("src/big.cu", big);  // written last: the first source the digest gives
  std::vector<ToolStep> writes;
  for (const auto& [path, content] : files)
    writes.push_back({"Write", {{"file_path", path}, {"content", content}}, "ok"});
  const std::string s = tool_session("Go.", writes);
  auto t = parse_trace_text(s, "files.jsonl", {});
  ASSERT_TRUE(t) << t.error().message;
  const TraceDigest d = make_digest(*t, {3000});
  EXPECT_EQ(d.text.find("omitted for the budget"), std::string::npos) << d.text;
  for (const auto& [path, content] : files) {
    EXPECT_NE(d.text.find("### " + path), std::string::npos) << path;
    if (content.size() < 200) {
      EXPECT_NE(d.text.find(content), std::string::npos) << path;
    }
  }
  EXPECT_NE(d.text.find("float v0 = x[0]"), std::string::npos);  // the big one, shortened
  EXPECT_LE(d.tokens, 3000u);
}

// The words quoted with a failure are the agent's right after it — not words said many silent tool
// calls later, nor after the fix.
TEST(DigestOfFailure, QuotesOnlyTheWordsThatBelongToIt) {
  const auto session = [](bool speaks_at_once) {
    std::string s;
    int n = 0;
    auto line = [&](const Json& j) { s += j.dump() + "\n"; };
    auto say = [&](const std::string& words) {
      ++n;
      line({{"type", "assistant"},
            {"uuid", fmt::format("s{}", n)},
            {"message",
             {{"id", fmt::format("ms{}", n)},
              {"role", "assistant"},
              {"content", Json::array({{{"type", "text"}, {"text", words}}})}}}});
    };
    auto call = [&](const std::string& command, const std::string& out, bool error) {
      ++n;
      const std::string id = fmt::format("t{}", n);
      line({{"type", "assistant"},
            {"uuid", fmt::format("a{}", n)},
            {"message",
             {{"id", fmt::format("m{}", n)},
              {"role", "assistant"},
              {"content", Json::array({{{"type", "tool_use"},
                                        {"id", id},
                                        {"name", "Bash"},
                                        {"input", {{"command", command}}}}})}}}});
      line({{"type", "user"},
            {"uuid", fmt::format("u{}", n)},
            {"message",
             {{"role", "user"},
              {"content", Json::array({{{"type", "tool_result"},
                                        {"tool_use_id", id},
                                        {"content", out},
                                        {"is_error", error}}})}}}});
    };
    line({{"type", "user"},
          {"uuid", "u0"},
          {"message", {{"role", "user"}, {"content", "Build it."}}}});
    call("make", "error: missing header", true);
    if (speaks_at_once) say("The header path is wrong; adding -Iinclude.");
    for (int i = 0; i < 6; ++i) call(fmt::format("ls dir{}", i), "a b", false);
    call("make", "built", false);
    say("Everything is built, and here is an unrelated summary.");
    return s;
  };
  auto quiet = parse_trace_text(session(false), "s.jsonl");
  ASSERT_TRUE(quiet) << quiet.error().message;
  ASSERT_EQ(quiet->fixes.size(), 1u);
  EXPECT_EQ(quiet->fixes[0].explanation, "");
  const std::string digest = make_digest(*quiet).text;
  const std::string last = "Everything is built, and here is an unrelated summary.";
  const std::size_t said = digest.find(last);
  ASSERT_NE(said, std::string::npos) << digest;  // the agent's last words are in the digest
  EXPECT_EQ(digest.find("unrelated summary", said + last.size()), std::string::npos)  // once
      << digest;
  EXPECT_EQ(digest.find("Agent: Everything is built"), std::string::npos) << digest;
  auto speaks = parse_trace_text(session(true), "s.jsonl");
  ASSERT_TRUE(speaks) << speaks.error().message;
  ASSERT_EQ(speaks->fixes.size(), 1u);
  EXPECT_EQ(speaks->fixes[0].explanation, "The header path is wrong; adding -Iinclude.");
}

// Over budget, the digest still uses its budget before cutting, and cuts fall between lines.
TEST(DigestBudget, UsedBeforeCuttingAndCutBetweenLines) {
  std::vector<std::string> source;
  for (int i = 0; i < 3000; ++i)
    source.push_back(fmt::format("  float v{0} = x[{0}] * w[{0}];  // line {0} of the kernel", i));
  std::string log = "Exit code 2\n";
  for (int i = 0; i < 400; ++i)
    log +=
        fmt::format("src/big.cu({}): error: identifier \"v{}\" is undefined in this scope\n", i, i);
  ParseOptions o;
  auto t = parse_trace_text(big_file_session(source, log), "big.jsonl", o);
  ASSERT_TRUE(t) << t.error().message;
  for (std::size_t budget : {6000u, 20000u}) {
    const TraceDigest d = make_digest(*t, {budget});
    EXPECT_LE(d.tokens, budget);
    EXPECT_GE(d.tokens, budget * 85 / 100) << "the budget is used before anything is cut";
    // Every line of the file's block is a whole line of the file, or the mark of what was left out.
    const std::size_t open = d.text.find("```cuda\n");
    ASSERT_NE(open, std::string::npos) << d.text.substr(0, 3000);
    const std::size_t close = d.text.find("\n```", open + 8);
    const std::vector<std::string> shown =
        text::split_lines(d.text.substr(open + 8, close - open - 8));
    ASSERT_GT(shown.size(), 20u);
    std::size_t marks = 0;
    for (const std::string& l : shown) {
      if (l.starts_with("[… ") && l.find("omitted …]") != std::string::npos) {
        ++marks;
        continue;
      }
      EXPECT_NE(std::find(source.begin(), source.end(), l), source.end()) << "cut inside: " << l;
    }
    EXPECT_EQ(marks, 1u);
    EXPECT_NE(d.text.find(source.back()), std::string::npos) << "the end of the file is kept";
  }
}

// The agent's earlier messages are kept whole while the budget holds them all (not cut at a fixed
// size while most of the budget is unused); under a tight budget each gets a share, cut between
// its lines.
TEST(DigestBudget, TheAgentsEarlierWordsWholeWhileTheyFit) {
  std::string text = R"({"type":"user","uuid":"p","message":{"role":"user","content":"Plan it."}})"
                     "\n";
  std::vector<std::string> said;
  for (int m = 0; m < 6; ++m) {
    std::string words;
    for (int i = 0; i < 30; ++i)
      words +=
          fmt::format("Step {} of message {}: the reason this matters for the kernel.\n", i, m);
    said.push_back(words);
    text += Json{{"type", "assistant"},
                 {"uuid", fmt::format("a{}", m)},
                 {"message",
                  {{"id", fmt::format("m{}", m)},
                   {"role", "assistant"},
                   {"content", Json::array({{{"type", "text"}, {"text", words}}})}}}}
                .dump() +
            "\n";
  }
  auto t = parse_trace_text(text, "talk.jsonl");
  ASSERT_TRUE(t) << t.error().message;
  const TraceDigest roomy = make_digest(*t, {48000});
  for (const std::string& words : said)
    EXPECT_NE(roomy.text.find(text::trim(words)), std::string::npos) << words.substr(0, 40);
  const TraceDigest tight = make_digest(*t, {2500});
  EXPECT_LE(tight.tokens, 2500u);
  // Every line of the agent's words shown is a whole line it wrote (or a mark).
  std::size_t shown = 0;
  for (const std::string& line : text::split_lines(tight.text)) {
    const std::size_t at = line.find("Step ");
    if (at == std::string::npos) continue;
    ++shown;
    const std::string rest = line.substr(at);
    bool whole = false;
    for (const std::string& words : said)
      for (const std::string& l : text::split_lines(words)) whole = whole || l == rest;
    EXPECT_TRUE(whole) << "cut inside: " << line;
  }
  EXPECT_GT(shown, 6u);
}

// What a review of the replay found: an Update whose diff cannot be read leaves the file unknown
// (never its contents from before the edit); hunks not separated by "..." are still told apart by
// a jump in either numbering; numbers too large for a count and lines too long for a pattern are
// read as text, never an exception or a crash; an argument's trailing spaces do not keep its ")".
TEST(ClaudeExportReview, UnreadableDiffJumpsHugeNumbersAndLongLines) {
  ParseOptions o;
  o.format = Format::claude_export;
  const std::string text =
      "> go\n\n"
      "⏺ Write(a.txt)\n  ⎿  Wrote 2 lines to a.txt\n       1 one\n       2 two\n\n"
      "⏺ Update(a.txt)\n  ⎿  Updated a.txt in a way this reader does not know\n\n"
      "⏺ Write(b.txt  )  \n  ⎿  Wrote 99999999999999999999999 lines to b.txt\n"
      "       1 99999999999999999999999999\n\n"
      "⏺ Bash(echo " +
      std::string(100000, 'x') + ")\n  ⎿  " + std::string(100000, 'y') + "\n";
  auto t = parse_trace_text(text, "review.txt", o);
  ASSERT_TRUE(t) << t.error().message;
  const FileTouch* a = file_named(*t, "a.txt");
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->content) << *a->content;
  EXPECT_NE(file_named(*t, "b.txt"), nullptr) << "the path lost its \")\"";

  // Two hunks with no "..." between them; the second starts with a removal.
  const auto diff = detail::shown_diff(
      "Updated f with 1 addition and 2 removals\n  2    b\n  3 -  c\n  3 +  C\n  7 -  g\n");
  ASSERT_TRUE(diff);
  ASSERT_EQ(diff->hunks.size(), 2u);
  SparseFile f = SparseFile::whole("a\nb\nc\nd\ne\nf\ng\nh\n");
  f.apply(*diff, false);
  ASSERT_TRUE(f.complete());
  EXPECT_EQ(f.content(), "a\nb\nC\nd\ne\nf\nh\n");
}

// The width is the widest that three lines reach: one line the terminal did not wrap (2.1's
// "※ recap:" line) wider than all the rest does not hide it, and the lines are still joined.
TEST(ExportLayout, ALineWiderThanAllTheRestIsNoWidth) {
  std::vector<std::string> lines = {
      "⏺ The kernel now reads its rows four floats at a time and the build config names the",
      "  right source file; the tests pass on both architectures and the benchmark runs.",
      "⏺ Next the binding: torch-ext/torch_binding.cpp registers the op and the python",
      "  package re-exports it.", "※ recap: " + std::string(200, 'x')};
  EXPECT_EQ(detail::export_width(lines), detail::display_width(lines[0]));
  EXPECT_EQ(detail::join_soft_wraps(lines, *detail::export_width(lines)), 2u);
  EXPECT_EQ(
      lines[1],
      "⏺ Next the binding: torch-ext/torch_binding.cpp registers the op and the python package "
      "re-exports it.");
}

// A table drawn with box characters, its cells wrapped inside their columns, is the markdown
// table the agent wrote; one that never closes, or whose rows do not match its columns, stays.
TEST(ExportLayout, BoxTablesAreReadBackAsMarkdown) {
  std::vector<std::string> lines = {"  ┌──────┬──────────┬────────────────┐",
                                    "  │ Step │ Command  │     Result     │",
                                    "  ├──────┼──────────┼────────────────┤",
                                    "  │      │ make     │ error: a | b   │",
                                    "  │ 1    │ -j8      │ not declared   │",
                                    "  │      │          │ here           │",
                                    "  ├──────┼──────────┼────────────────┤",
                                    "  │ 2    │ make     │ ok             │",
                                    "  └──────┴──────────┴────────────────┘",
                                    "",
                                    "  ┌──────┬──────┐",
                                    "  │ open │ no   │"};
  EXPECT_EQ(detail::rebuild_box_tables(lines), 1u);
  const std::vector<std::string> want = {"  | Step | Command | Result |",
                                         "  |---|---|---|",
                                         "  | 1 | make -j8 | error: a \\| b not declared here |",
                                         "  | 2 | make | ok |",
                                         "",
                                         "  ┌──────┬──────┐",
                                         "  │ open │ no   │"};
  EXPECT_EQ(lines, want);
  std::vector<std::string> mismatched = {"┌───┬───┐", "│ a │ b │ c │", "└───┴───┘"};
  EXPECT_EQ(detail::rebuild_box_tables(mismatched), 0u);
  EXPECT_EQ(mismatched.size(), 3u);
}

// A word longer than a line (a URL) is joined without spaces across the rows it was cut over; the
// row after the one it filled exactly starts a word of its own when the URL, continuing, could not
// have started where it did (wrap-ansi starts it on the next row when that saves a break).
TEST(ExportLayout, ALongWordEndsWhereTheWrapRuleSaysItDoes) {
  const std::string url = "https://docs.example.org/" + std::string(100, 'a') + "/page";  // 130
  // Started 16 columns into a 78-column text area, 62 on its first row, 68 on the second.
  std::vector<std::string> ended = {"⏺ " + std::string(15, 'w') + " " + url.substr(0, 62),
                                    "  " + url.substr(62) + std::string(10, 'b'),
                                    "  and the rest of the sentence."};
  // The second row filled exactly (78): "and" cannot continue the URL (143 columns would have
  // started on a row of its own), so it is a word of its own.
  ended[1] = "  " + url.substr(62) + std::string(78 - (url.size() - 62), 'b');
  detail::join_soft_wraps(ended, 80);
  ASSERT_EQ(ended.size(), 1u);
  EXPECT_NE(ended[0].find("bbbbbbbbbb and the rest"), std::string::npos) << ended[0];
  // Starting at the row's beginning, a URL can continue over any number of rows.
  std::vector<std::string> going_on = {"⏺ " + url.substr(0, 78), "  " + url.substr(78) + " ok."};
  detail::join_soft_wraps(going_on, 80);
  ASSERT_EQ(going_on.size(), 1u);
  EXPECT_EQ(going_on[0], "⏺ " + url + " ok.");
}

// Claude Code draws a call's result on the header's row when there is room ("● Write(a.sh)  ⎿
// Wrote 2 lines to a.sh", seen in real 2.1 exports; also on the last row of a wrapped header):
// the header is the call, the rest its result — not one long path swallowing the next call.
TEST(ClaudeExportRows, AResultOnTheHeadersRowIsTheCallsResult) {
  const std::string text =
      "> Write the scripts\n\n"
      "● Write(tests/echo.sh)  ⎿  Wrote 2 lines to tests/echo.sh\n"
      "      1 #!/bin/sh\n      2 echo hi\n\n"
      "● Write(src/a.py)\n  ⎿  Error writing file\n\n"
      "● Write(src/b.py)  ⎿  Wrote 1 lines to src/b.py\n      1 print(1)\n\n"
      "● Done: wrote them.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 2u);
  EXPECT_EQ(t->files[0].path, "tests/echo.sh");
  EXPECT_EQ(t->files[0].content, std::optional<std::string>("#!/bin/sh\necho hi\n"));
  EXPECT_EQ(t->files[1].path, "src/b.py");
  EXPECT_EQ(t->tool_counts["Write"], 3);
}

// Claude Code 2.1 (as real 2.1.126 exports show): a Write result's path too long for its row goes
// on at the result's text column, broken after a separator; a diff row wrapped inside the result's
// box repeats its marker on each row it goes on over. Both are one line again: the path whole,
// the code without a marker inside a word.
TEST(ClaudeExportRows, AWrappedPathAndAWrappedDiffRowAreOneLine) {
  const std::string bar(72, ' ');
  std::string text =
      "> Add the response class\n\n"
      "● Write(service-backend/src/main/java/org/example/service/dto/response/VehicleRecord.java)\n"
      "  ⎿  Wrote 3 lines to service-backend/src/main/java/org/example/service/dto/\n"
      "     response/VehicleRecord.java\n"
      "       1 package org.example.service.dto.response;\n"
      "       2 \n"
      "       3 public record VehicleRecord(long id) {}\n\n"
      "● Update(Api.java)\n"
      "  ⎿  Added 2 lines\n";
  // Each line's rows as the export draws them inside the result's box of 73 columns: the number
  // and marker, then the text, cut by characters, each further row at the marker's column.
  auto rows = [](int number, const std::string& code) {
    std::string out = fmt::format("{:>8} +", number);
    std::size_t at = 0;
    for (bool first = true; first || at < code.size(); first = false) {
      if (!first) out += "\n         +";
      const std::size_t take = std::min<std::size_t>(63, code.size() - at);
      out += code.substr(at, take);
      if (take < 63) out += std::string(63 - take, ' ');
      at += take;
    }
    return out + "\n";
  };
  const std::string forbidden =
      "  Object forbidden() { return Response.status(org.example.http.Status.FORBIDDEN).build(); }";
  const std::string gone =
      "  Object gone() { return Response.status(org.example.http.Status.GONE).entity(\"no longer "
      "here, as the client was told, and told again\").build(); }";
  text += rows(1, "class Api {") + rows(2, forbidden) + rows(3, gone);
  text += "\n● Done.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 2u);
  EXPECT_EQ(t->files[0].path,
            "service-backend/src/main/java/org/example/service/dto/response/VehicleRecord.java");
  EXPECT_EQ(t->files[0].content,
            std::optional<std::string>("package org.example.service.dto.response;\n\npublic "
                                       "record VehicleRecord(long id) {}\n"));
  EXPECT_NE(t->files[1].shown.find("class Api {\n" + forbidden + "\n" + gone + "\n"),
            std::string::npos)
      << t->files[1].shown;
}

// Forms of other releases, seen in real exports: early releases name the argument and end the
// header with "…" (`⏺ Update(file_path: notes.md)…`); some 2.1 releases draw collapsed calls
// with the message glyph (`● Read 1 file (ctrl+o to expand)`), which are calls, not the agent
// speaking.
TEST(ClaudeExportRows, EarlyHeadersAndGlyphCollapsedCallsAreCalls) {
  const std::string text =
      "> Track the plan\n\n"
      "⏺ Write(file_path: notes.md)…\n"
      "  ⎿  Wrote 2 lines to notes.md\n"
      "      1 # Plan\n      2 - parse\n\n"
      "⏺ Read(file_path: \"notes.md\")…\n"
      "  ⎿  # Plan\n\n"
      "● Read 1 file (ctrl+o to expand)\n\n"
      "⏺ Update(file_path: notes.md)…\n"
      "  ⎿  Updated notes.md with 1 addition and 1 removal\n"
      "      1  # Plan\n      2 -- parse\n      2 +- parse the rows\n\n"
      "⏺ Done: the plan is tracked.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 1u);
  EXPECT_EQ(t->files[0].path, "notes.md");
  EXPECT_EQ(t->files[0].writes, 1);
  EXPECT_EQ(t->files[0].edits, 1);
  EXPECT_EQ(t->tool_counts["Read"], 2);
  for (const Turn& turn : t->turns)
    EXPECT_EQ(turn.text.find("ctrl+o"), std::string::npos) << turn.text;
}

// Claude Code 2.0 wraps an Update's diff rows by words inside the result, narrower than the
// terminal (as a real 2.0 export shows): the row ends with the space it broke at and the words go
// on at its text column, an added row's marker repeated. The rows are one line again, not a
// dangling half and a lost rest.
TEST(ClaudeExportRows, ADiffRowWrappedByWordsIsOneLine) {
  const std::string text =
      "> Log the devices\n\n"
      "● Update(src/list.ts)\n"
      "  ⎿  Updated src/list.ts with 1 addition\n"
      "       10    const groups = load();\n"
      "       11 +  console.log('  sensors.length:', \n"
      "          + sensors?.length, 'groups', groups);\n"
      "       12    const expanded = \n"
      "            Object.values(groups).some((g) => g.open);\n"
      "       13    return expanded;\n\n"
      "● Done: logged.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 1u);
  EXPECT_NE(t->files[0].shown.find(
                "console.log('  sensors.length:', sensors?.length, 'groups', groups);\n"),
            std::string::npos)
      << t->files[0].shown;
  EXPECT_NE(t->files[0].shown.find("const expanded = Object.values(groups).some((g) => g.open);\n"),
            std::string::npos)
      << t->files[0].shown;
}

// A slash command Claude Code answered itself ("❯ /usage" with its output under the prompt, as a
// real 2.1 export shows) is no prompt; one the model answered (a prompt command) is.
TEST(ClaudeExportRows, ALocalSlashCommandIsNoPrompt) {
  const std::string text =
      "❯ /usage\n"
      "  ⎿  Current session: 12% used\n\n"
      "❯ /review the parser\n\n"
      "● The parser reads every line twice.\n\n"
      "❯ Make it read once\n\n"
      "● Done: it reads once.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  std::vector<std::string> prompts;
  for (const Turn& turn : t->turns)
    if (turn.role == Role::user && !turn.meta) prompts.push_back(turn.text);
  EXPECT_EQ(prompts, (std::vector<std::string>{"/review the parser", "Make it read once"}));
}

// A call the user stopped ("Interrupted · What should Claude do instead?" under it in an export,
// `interrupted: true` in a session record) ran to no result: neither a failure with a fix (a real
// export's interrupted `which rustup` read as failed, then "fixed") nor a success.
TEST(ClaudeExportRows, ACallTheUserStoppedIsNoFailure) {
  const std::string text =
      "> Set up the toolchain\n\n"
      "● Bash(which rustup)\n"
      "  ⎿  Interrupted · What should Claude do instead?\n\n"
      "> use the installed cargo\n\n"
      "● Bash(which cargo)\n"
      "  ⎿  /usr/bin/cargo\n\n"
      "● Done: cargo is there.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->commands.size(), 2u);
  EXPECT_FALSE(t->commands[0].failed);
  EXPECT_FALSE(t->commands[0].answered);
  EXPECT_TRUE(t->fixes.empty());
  // The same in a session record: the real session's `ls kernel.cu && rm notes.txt`, stopped.
  const std::string session =
      *files::read_text(std::filesystem::path(UPSKILL_SOURCE_DIR) /
                        "tests/data/traces/claude-code-2.1.328-session.jsonl");
  const std::string from =
      "\"toolUseResult\":{\"stdout\":\"kernel.cu\",\"stderr\":\"\",\"interrupted\":false";
  ASSERT_NE(session.find(from), std::string::npos);
  std::string stopped = session;
  stopped.replace(
      stopped.find(from), from.size(),
      "\"toolUseResult\":{\"stdout\":\"kernel.cu\",\"stderr\":\"\",\"interrupted\":true");
  auto s = parse_trace_text(stopped, "session.jsonl");
  ASSERT_TRUE(s) << s.error().message;
  ASSERT_EQ(s->commands.size(), 2u);
  EXPECT_FALSE(s->commands[1].failed);
  EXPECT_FALSE(s->commands[1].answered);
}

// A compacted session's /export (a real 2.1.34 export): "● Compact summary" and its text under
// "⎿" are the summary Claude Code wrote, not words of the agent's — in the goals, as the record
// of the task that came before.
TEST(ClaudeExportRows, ACompactSummaryIsTheRecordOfTheTaskBefore) {
  const std::string text =
      "✻ Conversation compacted (ctrl+o for history)\n\n"
      "● Compact summary\n"
      "  ⎿  This session is being continued from a previous conversation.\n\n"
      "     Summary:\n"
      "     1. Primary Request: put the logo on the landing page\n\n"
      "> make it smaller\n\n"
      "● Done: the logo is 48 px high.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  for (const Turn& turn : t->turns)
    if (turn.role == Role::assistant) {
      EXPECT_EQ(turn.text.find("Compact summary"), std::string::npos);
    }
  const std::string digest = make_digest(*t).text;
  const auto summary = digest.find("**Summary of the conversation before it was compacted");
  const auto task = digest.find("**Task (");
  ASSERT_NE(summary, std::string::npos) << digest;
  ASSERT_NE(task, std::string::npos) << digest;
  EXPECT_LT(summary, task);
  EXPECT_NE(digest.find("1. Primary Request: put the logo on the landing page"), std::string::npos)
      << digest;
}

// The box a result's preview is wrapped in is measured on the result's rows only: a code line of
// a message that starts with a number and is wider than the box (a real 2.1.138 export's
// "7 => options.push(…)") does not hide it, and the preview's wrapped rows are joined.
TEST(ClaudeExportRows, TheBoxIsMeasuredOnResultsOnly) {
  const std::string long_line =
      "grpcurl -plaintext -protoset proto/helloworld.protoset -d @ localhost:50051 "
      "helloworld.Greeter/SayHello";
  auto row = [](const std::string& s) { return s + std::string(73 - s.size(), ' ') + "\n"; };
  const std::string text =
      "> Write the scripts\n\n"
      "● The parser matches on the field number:\n"
      "          7 => options.push(fr.message(wt, \"options\", MessageOption::parse)?),\n\n"
      "● Write(tests/hello.sh)\n"
      "  ⎿  Wrote 3 lines to tests/hello.sh\n" +
      row("      1 #!/usr/bin/env bash") + row("      2 cd \"$(dirname \"$0\")/..\"") + "      3 " +
      long_line.substr(0, 65) + "\n" + "        " + long_line.substr(65) + "\n" + "      4 # " +
      std::string(63, '=') + "\n" +  // a row that fills the box exactly
      "\n● Done: written.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 1u);
  EXPECT_NE(t->files[0].shown.find("\n" + long_line + "\n"), std::string::npos)
      << t->files[0].shown << (t->files[0].content ? *t->files[0].content : "");
}

// Some releases (2.1.34, a real export) end a message's last row with its time and model,
// right-aligned: they are not words of the message.
TEST(ClaudeExportRows, AMessagesTimeAndModelAreNotItsWords) {
  const std::string text =
      "> Put the logo in\n\n● Bash(ls)\n  ⎿  index.html\n\n"
      "● Done: the logo is in index.html." +
      std::string(40, ' ') + "09:32 PM  glm-5\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_FALSE(t->turns.empty());
  EXPECT_EQ(t->turns.back().text, "Done: the logo is in index.html.");
}

// A diff row's marker is the character after its number, whatever follows it ("+/// doc", as a
// real 2.1.138 export shows, not only "+  code"): repeated on the rows it wraps over, it is not
// text. A Write's preview has no markers: its wrapped "- item" line keeps its dash.
TEST(ClaudeExportRows, AMarkerBeforeTextIsAMarkerOnlyInADiff) {
  auto rows = [](const std::string& head, const std::string& code, const std::string& mark) {
    std::string out = head + code.substr(0, 73 - head.size());
    for (std::size_t at = 73 - head.size(); at < code.size(); at += 63)
      out += "\n         " + mark + code.substr(at, 63);
    return out + "\n";
  };
  const std::string doc =
      "/// At this stage the only thing the binary does is load a `.protoset` file and list it";
  const std::string item =
      "- the loader reads the protoset once, then answers every request from the cache it built";
  const std::string text = "> Document the loader\n\n● Update(src/main.rs)\n  ⎿  Added 1 line\n" +
                           rows("      11 +", doc, "+") + rows("      12 +", doc, "+") +
                           "\n● Write(NOTES.md)\n  ⎿  Wrote 1 lines to NOTES.md\n" +
                           rows("      1 ", item, "") + "\n● Done.\n";
  auto t = parse_trace_text(text, "export.txt");
  ASSERT_TRUE(t) << t.error().message;
  ASSERT_EQ(t->files.size(), 2u);
  EXPECT_NE(t->files[0].shown.find(doc + "\n"), std::string::npos) << t->files[0].shown;
  const std::string notes = t->files[1].content ? *t->files[1].content : t->files[1].shown;
  EXPECT_NE(notes.find(item), std::string::npos) << notes;
}

}  // namespace
}  // namespace upskill::trace
