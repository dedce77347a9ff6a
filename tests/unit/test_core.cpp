// core/: hashing, text, Unicode, JSON with positions, files (atomic writes, appends, locks,
// temporaries), parallel_for and cancellation, temporary folders, timestamps.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <random>
#include <thread>
#include <vector>

#include "support/temp_dir.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/core/file_lock.hpp"
#include "upskill/core/files.hpp"
#include "upskill/core/hash.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/temp_dir.hpp"
#include "upskill/core/text.hpp"
#include "upskill/core/timefmt.hpp"
#include "upskill/core/unicode.hpp"

namespace upskill {
namespace {

TEST(Hash, Sha256KnownVectors) {
  EXPECT_EQ(hash::sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hash::sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// A file hashed as it is read: whatever the reader does (reads of any size, seeks back to read
// again, peeks, stops early), the digest is the file's; a file that cannot be opened names itself.
TEST(Hash, AFileHashedAsItIsReadWhateverTheReaderDoes) {
  testing::TempDir dir;
  std::string bytes;
  for (int i = 0; bytes.size() < 700'000; ++i)
    bytes += std::to_string(i * 7919) + (i % 13 ? " " : "\n");
  const std::filesystem::path path = dir.path() / "trace.jsonl";
  std::ofstream(path, std::ios::binary) << bytes;
  const std::string expected = hash::sha256_hex(bytes);

  const auto digest_after = [&](const std::function<void(std::istream&)>& reader) {
    hash::HashingFile file(path);
    std::istream in(&file);
    reader(in);
    auto d = file.sha256();
    return d ? *d : d.error().message;
  };
  // Nothing read; one small read; a head read, a seek back to the start, then everything in
  // blocks larger and smaller than the file's own buffer.
  EXPECT_EQ(digest_after([](std::istream&) {}), expected);
  {
    hash::HashingFile twice(path);
    ASSERT_TRUE(twice.sha256());
    EXPECT_EQ(*twice.sha256(), expected);  // asked again: the same digest
  }
  EXPECT_EQ(digest_after([](std::istream& in) { in.get(); }), expected);
  std::string seen;
  EXPECT_EQ(
      digest_after([&](std::istream& in) {
        std::string head(65536, '\0');
        in.read(head.data(), 65536);
        in.clear();
        in.seekg(0);
        in.peek();
        std::vector<char> block(300'000);
        while (in.read(block.data(), static_cast<std::streamsize>(block.size())) || in.gcount() > 0)
          seen.append(block.data(), static_cast<std::size_t>(in.gcount()));
      }),
      expected);
  EXPECT_EQ(seen, bytes);  // and the reader read the file as it is
  // Character by character, with a look back a few bytes once in a while.
  seen.clear();
  EXPECT_EQ(digest_after([&](std::istream& in) {
              std::size_t looked_back = 0;
              for (int c; (c = in.get()) != EOF;) {
                seen.push_back(static_cast<char>(c));
                if (seen.size() / 100'000 > looked_back) {
                  looked_back = seen.size() / 100'000;
                  in.seekg(-5, std::ios::cur);
                  seen.resize(seen.size() - 5);
                }
              }
            }),
            expected);
  EXPECT_EQ(seen, bytes);
  // The whole file through a stream iterator, as a JSON document is read.
  EXPECT_EQ(digest_after([&](std::istream& in) {
              seen.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
            }),
            expected);
  EXPECT_EQ(seen, bytes);

  hash::HashingFile missing(dir.path() / "gone.jsonl");
  EXPECT_FALSE(missing.is_open());
  auto none = missing.sha256();
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().message.find("gone.jsonl: cannot read (No such file or directory)"),
            std::string::npos)
      << none.error().message;
}

TEST(Text, TrimSplitJoin) {
  EXPECT_EQ(text::trim("  a b \n"), "a b");
  EXPECT_EQ(text::split_lines("a\r\nb\nc"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(text::split_lines("a\n"), (std::vector<std::string>{"a"}));
  EXPECT_EQ(text::join({"x", "y"}, ", "), "x, y");
}

TEST(Text, ListsAndWords) {
  EXPECT_EQ(text::split_list(" HF_TOKEN, OPENAI_API_KEY,,x "),
            (std::vector<std::string>{"HF_TOKEN", "OPENAI_API_KEY", "x"}));
  EXPECT_TRUE(text::split_list("").empty());
  EXPECT_TRUE(text::split_list(" , ,").empty());
  EXPECT_EQ(text::split_list("a:b", ':'), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(text::words("  12_3 \tRUNNING\n"), (std::vector<std::string>{"12_3", "RUNNING"}));
  EXPECT_TRUE(text::words(" \t ").empty());
}

TEST(Text, TokenEstimateTakesTheLargerOfWordsAndBytes) {
  EXPECT_EQ(text::estimate_tokens(""), 0u);
  EXPECT_EQ(text::estimate_tokens("one two three four five six seven eight nine ten"),
            13u);                                                 // words * 1.3
  EXPECT_EQ(text::estimate_tokens(std::string(400, 'x')), 100u);  // bytes / 4
}

// The vectorised word count agrees with a plain walk over words on random texts of every length
// (spaces of each kind, other control bytes that are no space, bytes above 0x7f), so that a wrong
// lane or a missed last byte shows.
TEST(Text, TokenEstimateCountsWordsAsAPlainWalkDoes) {
  const std::string alphabet = std::string(
      " \t\n\v\f\r\x08\x0e\x1f"
      "ab."
      "\xc3\xa9\xff",
      15);
  std::mt19937 rng(7);
  for (std::size_t n = 0; n < 600; ++n) {
    std::string s(n, ' ');
    for (char& c : s) c = alphabet[rng() % alphabet.size()];
    std::size_t words = 0;
    bool in_word = false;
    for (char c : s) {
      const bool space = c == ' ' || (c >= '\t' && c <= '\r');
      words += !space && !in_word ? 1 : 0;
      in_word = !space;
    }
    const auto by_words = static_cast<std::size_t>(std::ceil(static_cast<double>(words) * 1.3));
    EXPECT_EQ(text::estimate_tokens(s), std::max(by_words, (n + 3) / 4)) << n;
  }
}

TEST(Text, SlugifyAndExcerpt) {
  EXPECT_EQ(text::slugify("Write a CUDA kernel for RMSNorm!"), "write-a-cuda-kernel-for-rmsnorm");
  EXPECT_EQ(text::slugify("a b c d e f g h", 3), "a-b-c");
  EXPECT_EQ(text::slugify("!!!"), "");
  EXPECT_EQ(text::excerpt("a\n  b", 10), "a b");
  EXPECT_EQ(text::excerpt("abcdefghij", 4), "abcd…");
  EXPECT_EQ(text::excerpt("ééé", 3), "é…");  // never cuts inside a UTF-8 sequence
}

TEST(Text, LineColumn) {
  const auto lc = text::line_column_at("ab\ncd", 4);
  EXPECT_EQ(lc.line, 2);
  EXPECT_EQ(lc.column, 2);
}

TEST(Unicode, PythonSemantics) {
  EXPECT_TRUE(unicode::is_valid_utf8("héllo"));
  EXPECT_FALSE(unicode::is_valid_utf8("\xff\xfe"));
  EXPECT_EQ(unicode::codepoint_count("héllo"), 5u);
  EXPECT_EQ(unicode::nfkc("ｆｕｌｌ"), "full");  // fullwidth letters fold
  EXPECT_EQ(unicode::lower("ÀB"), "àb");
  EXPECT_EQ(unicode::strip("\u00a0 x \t"), "x");
  EXPECT_TRUE(unicode::is_alnum_or_hyphen("技能-2"));
  EXPECT_FALSE(unicode::is_alnum_or_hyphen("a_b"));
  EXPECT_FALSE(unicode::is_alnum_or_hyphen("a b"));
}

// What is printed of a name or a line of bytes: valid UTF-8 as it is, each byte of an ill-formed
// sequence as \xNN; random byte strings always come out valid and keep every valid character.
TEST(Unicode, PrintableEscapesOnlyTheBytesThatAreNotText) {
  EXPECT_EQ(unicode::printable("héllo"), "héllo");
  EXPECT_EQ(unicode::printable("n\xff"
                               "ame.jsonl"),
            "n\\xffame.jsonl");
  EXPECT_EQ(unicode::printable("\xc3\x28 x \xe2\x82"), "\\xc3( x \\xe2\\x82");
  std::mt19937 rng(47);
  for (int trial = 0; trial < 2000; ++trial) {
    std::string s;
    for (int i = 0, n = static_cast<int>(rng() % 24); i < n; ++i)
      s += rng() % 3 ? std::string("é") : std::string(1, static_cast<char>(rng() % 256));
    const std::string p = unicode::printable(s);
    ASSERT_TRUE(unicode::is_valid_utf8(p)) << s;
    if (unicode::is_valid_utf8(s)) {
      EXPECT_EQ(p, s);
    } else {
      EXPECT_NE(p.find("\\x"), std::string::npos) << s;
    }
  }
}

TEST(Json, SyntaxErrorsNameFileLineAndColumn) {
  auto doc = parse_json_document("[\n  {\"a\": 1,}\n]", "cases.json");
  ASSERT_FALSE(doc);
  EXPECT_NE(doc.error().message.find("cases.json:2:"), std::string::npos) << doc.error().message;
  EXPECT_NE(doc.error().message.find("invalid JSON"), std::string::npos);
  EXPECT_EQ(doc.error().code, ExitCode::usage);
}

TEST(Json, SourceMapFindsValuesAndKeys) {
  const std::string text = "{\n  \"cases\": [\n    {\"input\": \"x\",\n     \"a/b\": 2}\n  ]\n}";
  auto doc = parse_json_document(text, "f.json");
  ASSERT_TRUE(doc);
  EXPECT_EQ(doc->at("/cases/0/input").to_string(), "f.json:3:15");
  EXPECT_EQ(doc->at_key("/cases/0/a~1b").to_string(), "f.json:4:6");
  EXPECT_EQ(doc->at("/cases/0/missing").to_string(), "f.json:3:5");  // nearest ancestor
  auto bom = parse_json_document("\xEF\xBB\xBF[1]", "b.json");
  ASSERT_TRUE(bom);
  EXPECT_EQ(bom->at("/0").to_string(), "b.json:1:2");
}

TEST(Files, AtomicWriteReplacesAndLeavesNoTemporaries) {
  testing::TempDir dir;
  const auto target = dir / "sub/out.txt";
  ASSERT_TRUE(files::write_atomic(target, "one"));
  ASSERT_TRUE(files::write_atomic(target, "two"));
  EXPECT_EQ(*files::read_text(target), "two");
  EXPECT_EQ(files::list_files(dir.path()).size(), 1u);
}

// What a writer killed mid-write leaves is removed; nothing else is.
TEST(Files, RemoveTemporariesTakesOnlyWriteAtomicsLeftovers) {
  testing::TempDir dir;
  dir.write("b/run_1/.run_result.json.tmp-0123456789abcdef", "{");
  dir.write("b/.plan.json.tmp-fedcba9876543210", "");
  dir.write("b/.hidden", "keep");
  dir.write("b/.x.tmp-short", "keep");
  dir.write("b/run_1/run_result.json", "{}");
  EXPECT_EQ(files::remove_temporaries(dir / "b"), 2u);
  EXPECT_EQ(files::list_files(dir / "b"), (std::vector<std::filesystem::path>{
                                              ".hidden", ".x.tmp-short", "run_1/run_result.json"}));
  EXPECT_EQ(files::remove_temporaries(dir / "missing"), 0u);
}

TEST(Files, AppendLineAddsWholeLinesAndNamesThePathOnError) {
  testing::TempDir dir;
  const auto log = dir / "new/trials.jsonl";
  ASSERT_TRUE(files::append_line(log, "{\"a\":1}\n"));
  ASSERT_TRUE(files::append_line(log, "{\"b\":2}\n"));
  EXPECT_EQ(*files::read_text(log), "{\"a\":1}\n{\"b\":2}\n");
  // A last line cut off (a power loss) is ended first: the next line stays whole.
  std::ofstream(log, std::ios::app) << "{\"cut";
  ASSERT_TRUE(files::append_line(log, "{\"c\":3}\n"));
  EXPECT_EQ(*files::read_text(log), "{\"a\":1}\n{\"b\":2}\n{\"cut\n{\"c\":3}\n");
  auto into_directory = files::append_line(dir.path(), "x\n");
  ASSERT_FALSE(into_directory);
  EXPECT_NE(into_directory.error().message.find(dir.path().string()), std::string::npos)
      << into_directory.error().message;
}

TEST(Files, LineAppenderKeepsTheFileOpenWithAppendLinesGuarantees) {
  testing::TempDir dir;
  const auto log = dir / "batch/trials.jsonl";
  ASSERT_TRUE(files::append_line(log, "{\"a\":1}\n"));
  std::ofstream(log, std::ios::app) << "{\"cut";
  auto opened = files::LineAppender::open(log);
  ASSERT_TRUE(opened) << opened.error().message;
  files::LineAppender file = std::move(*opened);
  ASSERT_TRUE(file.append("{\"b\":2}\n"));
  ASSERT_TRUE(file.append("{\"c\":3}\n"));
  // Another writer's line between two appends is kept: the file is appended to, never overwritten.
  ASSERT_TRUE(files::append_line(log, "{\"d\":4}\n"));
  ASSERT_TRUE(file.append("{\"e\":5}\n"));
  EXPECT_EQ(*files::read_text(log),
            "{\"a\":1}\n{\"cut\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n{\"e\":5}\n");
  // A failed write (a full disk) is an error naming the file, and so is the next one.
  if (std::filesystem::exists("/dev/full")) {
    auto full = files::LineAppender::open("/dev/full");
    ASSERT_TRUE(full);
    auto first = full->append("{\"f\":6}\n");
    ASSERT_FALSE(first);
    EXPECT_NE(first.error().message.find("/dev/full"), std::string::npos) << first.error().message;
    EXPECT_FALSE(full->append("{\"g\":7}\n"));
  }
  auto into_directory = files::LineAppender::open(dir.path());
  ASSERT_FALSE(into_directory);
  EXPECT_NE(into_directory.error().message.find(dir.path().string()), std::string::npos);
}

// A write a file-size limit stops part-way is taken back: the file keeps only whole lines, and the
// appender goes on (in a child, so that the limit binds nothing else).
TEST(Files, LineAppenderTakesBackALineTheDiskCouldNotHold) {
  testing::TempDir dir;
  const auto log = dir / "trials.jsonl";
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{100, 100};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    auto file = files::LineAppender::open(log);
    if (!file) ::_exit(10);
    if (!file->append(std::string(60, 'a') + "\n")) ::_exit(11);
    if (file->append(std::string(60, 'b') + "\n")) ::_exit(12);   // 121 bytes: over the limit
    if (!file->append(std::string(20, 'c') + "\n")) ::_exit(13);  // fits again
    ::_exit(0);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(*files::read_text(log), std::string(60, 'a') + "\n" + std::string(20, 'c') + "\n");
}

// One holder at a time; the refusal names the holder; a release, or the holder's death by kill -9,
// frees it.
TEST(FileLock, OneHolderNamedInTheRefusalAndFreedWhenItDies) {
  testing::TempDir dir;
  const auto path = dir / "batch.lock";
  auto first = files::FileLock::try_acquire(path, "batch B");
  ASSERT_TRUE(first) << first.error().message;
  auto second = files::FileLock::try_acquire(path, "batch B");
  ASSERT_FALSE(second);
  EXPECT_EQ(second.error().code, ExitCode::usage);
  const std::string& message = second.error().message;
  EXPECT_NE(message.find("batch B is in use by another upskill process (pid " +
                         std::to_string(::getpid()) + " on host "),
            std::string::npos)
      << message;
  first->release();
  EXPECT_TRUE(files::FileLock::try_acquire(path, "batch B"));

  // A child takes it and is killed: the kernel drops the lock with the process.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto held = files::FileLock::try_acquire(path, "batch B");
    const char c = held ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ASSERT_EQ(c, 'y');
  EXPECT_FALSE(files::FileLock::try_acquire(path, "batch B"));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  EXPECT_TRUE(files::FileLock::try_acquire(path, "batch B"));
  ::close(ready[0]);
  ::close(ready[1]);
  // A lock that cannot even be opened names its file.
  auto nowhere = files::FileLock::try_acquire(dir / "missing/dir/batch.lock", "batch B");
  ASSERT_FALSE(nowhere);
  EXPECT_NE(nowhere.error().message.find("missing/dir/batch.lock"), std::string::npos);
}

TEST(Files, ReadErrorsNameThePath) {
  testing::TempDir dir;
  auto missing = files::read_text(dir / "nope.txt");
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nope.txt: no such file"), std::string::npos);
  auto directory = files::read_text(dir.path());
  ASSERT_FALSE(directory);
  EXPECT_NE(directory.error().message.find("is a directory"), std::string::npos);
}

TEST(Files, ListFilesNeverFollowsALinkOutOfTheFolder) {
  testing::TempDir dir;
  dir.write("a.txt", "a");
  std::filesystem::create_symlink("/etc/hostname", dir / "link.txt");
  for (const auto& p : files::list_files(dir.path()))
    EXPECT_EQ(p.string().find(".."), std::string::npos) << p;
}

TEST(Files, ResolveInside) {
  testing::TempDir dir;
  dir.write("k/a.cu", "x");
  std::filesystem::create_symlink("/etc", dir / "etc-link");
  EXPECT_TRUE(files::resolve_inside(dir.path(), "k/a.cu"));
  EXPECT_TRUE(files::resolve_inside(dir.path(), "new/file.txt"));  // need not exist yet
  EXPECT_FALSE(files::resolve_inside(dir.path(), "../x"));
  EXPECT_FALSE(files::resolve_inside(dir.path(), "/etc/passwd"));
  EXPECT_FALSE(files::resolve_inside(dir.path(), "etc-link/passwd"));
  EXPECT_FALSE(files::resolve_inside(dir.path(), ""));
}

TEST(Files, CopyTreeSkipsAndRefusesExisting) {
  testing::TempDir dir;
  dir.write("src/a.txt", "a");
  dir.write("src/skip/b.txt", "b");
  std::filesystem::create_symlink("/etc/passwd", dir / "src/link");
  auto report =
      files::copy_tree(dir / "src", dir / "dst",
                       {.skip = [](const std::filesystem::path& p) { return p == "skip"; }});
  ASSERT_TRUE(report);
  EXPECT_EQ(report->files, 1u);
  ASSERT_EQ(report->skipped_symlinks.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(dir / "dst/skip"));
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::symlink_status(dir / "dst/link")));
  EXPECT_FALSE(files::copy_tree(dir / "src", dir / "dst", {}));
}

}  // namespace
}  // namespace upskill

namespace upskill {
namespace {

TEST(Parallel, RunsEveryIndexOnceAcrossWorkers) {
  std::vector<std::atomic<int>> hits(100);
  std::atomic<int> peak{0}, running{0};
  parallel_for(100, 4, [&](std::size_t i) {
    const int now = ++running;
    int seen = peak.load();
    while (now > seen && !peak.compare_exchange_weak(seen, now)) {
    }
    hits[i]++;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --running;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  EXPECT_LE(peak.load(), 4);
  EXPECT_GE(peak.load(), 2);
}

TEST(Parallel, StopsHandingOutWorkWhenCancelled) {
  CancelToken cancel;
  std::atomic<int> done{0};
  parallel_for(
      1000, 2,
      [&](std::size_t i) {
        if (i == 10) cancel.cancel();
        ++done;
      },
      &cancel);
  EXPECT_LT(done.load(), 20);  // what started finishes; nothing new starts
  EXPECT_GE(done.load(), 11);
}

// The wait every poll and retry uses: the whole interval, or until cancelled (checked in steps).
TEST(Parallel, SleepUnlessCancelled) {
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  EXPECT_TRUE(sleep_unless_cancelled(std::chrono::milliseconds(120), nullptr));
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(120));
  CancelToken cancel;
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    cancel.cancel();
  });
  start = Clock::now();
  EXPECT_FALSE(sleep_unless_cancelled(std::chrono::seconds(30), &cancel));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  canceller.join();
  EXPECT_FALSE(sleep_unless_cancelled(std::chrono::milliseconds(0), &cancel));  // already set
}

TEST(TempDirectory, PrivateRemovedMovedAndReleased) {
  std::filesystem::path kept;
  {
    auto made = TempDir::create("upskill-unit");
    ASSERT_TRUE(made) << made.error().message;
    const std::filesystem::path p = made->path();
    EXPECT_TRUE(std::filesystem::is_directory(p));
    EXPECT_NE(p.filename().string().find("upskill-unit-"), std::string::npos);
    EXPECT_EQ(std::filesystem::status(p).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
    std::ofstream(p / "file") << "x";
    TempDir moved = std::move(*made);
    EXPECT_TRUE(made->empty());
    EXPECT_EQ(moved.path(), p);
    TempDir other = *TempDir::create("upskill-unit");
    kept = other.path();
    other = std::move(moved);  // the folder `other` held is removed as it takes the new one
    EXPECT_FALSE(std::filesystem::exists(kept));
    kept = other.release();
    EXPECT_TRUE(other.empty());
  }
  EXPECT_TRUE(std::filesystem::exists(kept / "file"));  // released: not removed
  std::filesystem::remove_all(kept);
  {
    TempDir scoped = *TempDir::create("upskill-unit");
    kept = scoped.path();
  }
  EXPECT_FALSE(std::filesystem::exists(kept));
  EXPECT_FALSE(TempDir::create("no/such/parent"));
}

TEST(TimeFormat, UtcAndPatterns) {
  const auto when = std::chrono::system_clock::from_time_t(1796305566);  // 2026-12-03 13:46:06 UTC
  EXPECT_EQ(timefmt::iso8601(when, timefmt::Zone::utc), "2026-12-03T13:46:06Z");
  EXPECT_EQ(timefmt::format(when, timefmt::Zone::utc, "%Y_%m_%d_%H_%M_%S"), "2026_12_03_13_46_06");
  const std::string local = timefmt::iso8601(when, timefmt::Zone::local);
  EXPECT_EQ(local.size(), 19u);  // no zone suffix
  EXPECT_EQ(local.substr(16), ":06");
}

}  // namespace
}  // namespace upskill
