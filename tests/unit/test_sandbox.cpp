#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "support/temp_dir.hpp"
#include "upskill/core/sandbox.hpp"

namespace upskill::sandbox {
namespace {

using namespace std::chrono_literals;

Limits quick(std::chrono::milliseconds wall = 10s) {
  Limits l;
  l.wall = wall;
  return l;
}

// Whether a process whose command line contains `marker` ("sleep 37.25") is alive. The pattern puts
// the first character in brackets so that it does not match the shell running pgrep itself.
bool process_running(const std::string& marker) {
  const std::string pattern = "[" + marker.substr(0, 1) + "]" + marker.substr(1);
  const std::string cmd = "pgrep -f '" + pattern + "' > /dev/null";
  return std::system(cmd.c_str()) == 0;
}

TEST(Sandbox, RunsInItsWorkdirWithAScrubbedEnvironment) {
  testing::TempDir dir;
  setenv("UPSKILL_TEST_SECRET_KEY", "sk-must-not-leak", 1);
  auto r = run_shell("pwd; echo HOME=$HOME; env; echo err >&2; exit 3", dir.path(), quick());
  unsetenv("UPSKILL_TEST_SECRET_KEY");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  EXPECT_NE(r->output.find(std::filesystem::canonical(dir.path()).string() + "\n"),
            std::string::npos)
      << r->output;
  EXPECT_NE(r->output.find("HOME=" + dir.path().string()), std::string::npos);
  EXPECT_EQ(r->output.find("sk-must-not-leak"), std::string::npos);
  EXPECT_NE(r->output.find("err"), std::string::npos);  // stderr is captured too
  EXPECT_TRUE(r->protections.scrubbed_environment);
  EXPECT_TRUE(r->protections.rlimits);
  EXPECT_TRUE(r->protections.own_process_group);
}

TEST(Sandbox, StdinAndExtraEnvironment) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"sh", "-c", "read line; echo \"$line/$EXTRA\""};
  o.env = {{"EXTRA", "yes"}};
  o.stdin_data = "hello\n";
  auto r = run(o);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->output, "hello/yes\n");
}

TEST(Sandbox, TimeoutKillsTheWholeGroup) {
  testing::TempDir dir;
  const auto start = std::chrono::steady_clock::now();
  auto r = run_shell("sleep 37.25 & sleep 36.5; echo never", dir.path(), quick(300ms));
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_FALSE(r->ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, 3s);
  EXPECT_EQ(r->output.find("never"), std::string::npos);
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(process_running("sleep 37.25"));
  EXPECT_FALSE(process_running("sleep 36.5"));
}

TEST(Sandbox, NoDescendantOutlivesTheRun) {
  testing::TempDir dir;
  // A background child that also leaves the process group.
  auto r = run_shell("setsid sleep 38.75 > /dev/null 2>&1 & echo started", dir.path(), quick(5s));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->exit_code, 0);
  std::this_thread::sleep_for(200ms);
  if (r->protections.pid_namespace) {
    EXPECT_FALSE(process_running("sleep 38.75"));
  } else {
    GTEST_SKIP() << "no PID namespace here: " << r->protections.summary();
  }
}

TEST(Sandbox, NoNetwork) {
  const int listener = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(listen(listener, 1), 0);
  socklen_t len = sizeof addr;
  getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"bash", "-c",
            "echo hi > /dev/tcp/127.0.0.1/" + std::to_string(port) + " && echo connected"};
  o.limits = quick();
  auto isolated = run(o);
  ASSERT_TRUE(isolated);
  o.isolate_network = false;
  auto open = run(o);
  ASSERT_TRUE(open);
  close(listener);
  EXPECT_NE(open->output.find("connected"), std::string::npos)
      << open->output;  // the test itself can fail
  if (!isolated->protections.network_namespace) GTEST_SKIP() << isolated->protections.summary();
  EXPECT_EQ(isolated->output.find("connected"), std::string::npos) << isolated->output;
  EXPECT_NE(isolated->exit_code, 0);
}

TEST(Sandbox, FileSizeAndOutputLimits) {
  testing::TempDir dir;
  Limits l = quick();
  l.file_size_mb = 1;
  auto big = run_shell("head -c 3000000 /dev/zero > big.bin", dir.path(), l);
  ASSERT_TRUE(big);
  EXPECT_FALSE(big->ok());
  EXPECT_LE(std::filesystem::file_size(dir / "big.bin"), 1u << 20);
  Limits o = quick();
  o.output_bytes = 1000;
  auto chatty = run_shell("head -c 300000 /dev/zero | tr '\\0' a", dir.path(), o);
  ASSERT_TRUE(chatty);
  EXPECT_EQ(chatty->output.size(), 1000u);
  EXPECT_EQ(chatty->output_total, 300000u);
}

TEST(Sandbox, StartFailuresAreErrors) {
  testing::TempDir dir;
  Options o;
  o.workdir = dir.path();
  o.argv = {"definitely-not-a-command-xyz"};
  auto r = run(o);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ExitCode::infrastructure);
  EXPECT_NE(r.error().message.find("cannot start definitely-not-a-command-xyz"), std::string::npos);
  o.workdir = dir / "missing";
  EXPECT_FALSE(run(o));
  o.argv.clear();
  EXPECT_FALSE(run(o));
}

TEST(Sandbox, ProtectionsSummaryNamesEachOne) {
  Protections p;
  p.network_namespace = true;
  const std::string s = p.summary();
  EXPECT_NE(s.find("no network: yes"), std::string::npos);
  EXPECT_NE(s.find("own PID namespace: no"), std::string::npos);
}

}  // namespace
}  // namespace upskill::sandbox
