#pragma once
// The command-line front end: flag parsing and printing only; behaviour lives in libupskill.
#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "upskill/config/config.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/core/error.hpp"
#include "upskill/eval/session.hpp"
#include "upskill/gen/pipeline.hpp"
#include "upskill/llm/cassette.hpp"
#include "upskill/llm/client.hpp"

namespace upskill::cli {

struct GlobalOptions {
  std::optional<std::string> config_file;
  bool verbose = false;
  bool quiet = false;
  std::optional<std::string> log_file;
  bool no_color = false;
  // Model access (commands that call models).
  std::optional<std::string> base_url;     // --base-url
  std::optional<std::string> api_key_env;  // --api-key-env
  std::optional<std::string> record;       // --record FILE
  std::optional<std::string> replay;       // --replay FILE
};

// Terminal styling; plain text when color is off (not a TTY, --no-color or NO_COLOR).
struct Style {
  bool color = false;
  std::string bold(const std::string& s) const;
  std::string dim(const std::string& s) const;
  std::string red(const std::string& s) const;
  std::string green(const std::string& s) const;
  std::string yellow(const std::string& s) const;
  std::string cyan(const std::string& s) const;
};

// What a command that calls models holds while it runs: the transport, the client (with the
// cassette of --record / --replay) and the Ctrl-C token.
struct ModelSession {
  std::unique_ptr<llm::Cassette> cassette;
  llm::CurlTransport transport;
  std::unique_ptr<llm::ChatClient> client;
  CancelToken cancel;
};

// What a subcommand needs at run time.
struct Context {
  const GlobalOptions& globals;
  Style out;  // for stdout
  Style err;  // for stderr
  // Loads the configuration once, on first use (only commands that need it pay for it).
  Result<config::Config> load_config() const;
  // Opens --record / --replay, builds the client and routes Ctrl-C to the session's token.
  // The client for this command's model calls, retrying as `config` says (retries, retry_delay_s).
  Result<std::unique_ptr<ModelSession>> open_model_session(const config::Config& config) const;
};

using Runner = std::function<int(const Context&)>;

// Each registers its subcommand and sets `selected` when it is the one invoked.
void add_list_command(CLI::App& app, Runner& selected);
void add_validate_command(CLI::App& app, Runner& selected);
void add_install_command(CLI::App& app, Runner& selected);
void add_models_command(CLI::App& app, Runner& selected);
void add_check_command(CLI::App& app, Runner& selected);
void add_eval_command(CLI::App& app, Runner& selected);
void add_benchmark_command(CLI::App& app, Runner& selected);
void add_runs_command(CLI::App& app, Runner& selected);
void add_trace_command(CLI::App& app, Runner& selected);
void add_generate_command(CLI::App& app, Runner& selected);
void add_ci_command(CLI::App& app, Runner& selected);

// --json, --junit, --summary-md (else $GITHUB_STEP_SUMMARY): the result files of an evaluation,
// rendered by report/.
std::vector<eval::ResultFile> result_files(const std::optional<std::string>& json,
                                           const std::optional<std::string>& junit,
                                           const std::optional<std::string>& summary_md);
// --shard K/N.
Result<eval::Shard> parse_shard(const std::string& text);

// generate --executor slurm|jobs: its evaluations run here (they alternate with refinement).
Error remote_generate_unsupported(const std::string& executor);

int exit_with(const Context& ctx, const Error& error);

// The shards of one evaluation merged (eval::merge_shards) and reported as eval reports a run:
// result files, the terminal report, the recommendation, gates; exit as eval does.
struct MergeReport {
  std::vector<std::filesystem::path> shards;
  std::filesystem::path runs_dir;
  bool log_runs = true;
  std::optional<std::string> json, junit, summary_md;
  eval::Gates gates;
  bool require_gpu = false;
  bool verbose = false;  // one line per case, as eval -v
};
int merge_and_report(const Context& ctx, const MergeReport& report);
// --executor slurm | jobs (src/cli/remote.cpp): the flags, and the run of every shard there.
struct RemoteArgs {
  CLI::App* command = nullptr;  // eval or benchmark: the options the tasks get are read from it
  std::optional<std::string> executor;
  std::optional<int> shards;
  bool wait = true;
  std::optional<std::string> slurm_partition, slurm_time, slurm_account, slurm_gpu_partition,
      slurm_gpu_gres;
  std::vector<std::string> slurm_options;
  std::optional<std::string> artifact_repo, jobs_timeout, jobs_flavor, jobs_namespace, jobs_image;
  std::vector<std::string> jobs_secrets;
};
void add_remote_options(CLI::App& cmd, RemoteArgs& args);
struct RemoteRun {
  eval::SessionRequest request;  // skill, tests, runs_dir, gates, require_gpu, judge criteria
  std::optional<int> gpu_shards;
  MergeReport report;  // its result files and -v; the rest is set from the run
};
// `executor` is slurm or jobs.
int run_remote(const Context& ctx, const config::Config& cfg, const std::string& executor,
               const RemoteArgs& args, const RemoteRun& run);

// upskill's verdict line per model with a lift: "Recommendation: keep skill" or "… may not be
// beneficial".
void print_recommendations(const Context& ctx, const eval::EvalSummary& summary);
// The model access of a command: the configuration, the process environment, --base-url /
// --api-key-env, and a connect step that opens the model session into `session` (with --record /
// --replay and Ctrl-C) when the pipeline has checked its inputs.
llm::ModelAccess model_access(const Context& ctx, const config::Config& config,
                              std::unique_ptr<ModelSession>& session);
// Progress of the pipelines on stderr (src/cli/progress.cpp).
std::unique_ptr<eval::SessionObserver> eval_progress(bool tty);
std::unique_ptr<gen::GenerateObserver> generate_progress(const Style& err);
void print_gate(const eval::GateResult& gate);
// Kernel checks whose CUDA stages could not run here: one line on stdout (nothing when `count` is
// 0); with --require-gpu also "error: …" on stderr, and the exit code 3 to return (else 0).
int report_gpu_not_run(const Context& ctx, int count, bool require_gpu,
                       std::string_view indent);  // prints "error: ..." and returns the code

}  // namespace upskill::cli
