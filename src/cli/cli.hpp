#pragma once
// The command-line front end: flag parsing and printing only; behaviour lives in libupskill.
#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "upskill/config/config.hpp"
#include "upskill/core/cancel.hpp"
#include "upskill/core/error.hpp"
#include "upskill/eval/merge.hpp"
#include "upskill/eval/session.hpp"
#include "upskill/gen/pipeline.hpp"
#include "upskill/llm/cassette.hpp"
#include "upskill/llm/client.hpp"
#include "upskill/scale/remote.hpp"

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

// Whole-number flags (--runs, --jobs, …): "--runs: 0 is not a whole number of at least 1" in place
// of CLI11's PositiveNumber, whose message prints the largest double as its upper bound.
const CLI::Validator& positive_count();
const CLI::Validator& non_negative_count();

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
// rendered by report/ (src/cli/result_files.cpp).
std::vector<eval::ResultFile> result_files(const std::optional<std::string>& json,
                                           const std::optional<std::string>& junit,
                                           const std::optional<std::string>& summary_md);

int exit_with(const Context& ctx, const Error& error);

// --executor slurm | jobs (src/cli/remote.cpp): the flags, and the run of every shard there.
void add_remote_options(CLI::App& cmd, scale::ExecutorSettings& settings);
// What one shard's task would run (--dry-run): its command line and the request its task.json
// would hold, or why the run would be refused.
Result<Json> task_plan(const Context& ctx, const config::Config& cfg,
                       const scale::ExecutorSettings& settings,
                       const eval::SessionRequest& request);
// generate --executor slurm|jobs: each attempt's evaluation as a remote run (scale::
// evaluate_remotely) into runs_dir, the attempt's skill saved beside its batch. The settings are
// checked now, before any teacher call; Ctrl-C stops the wait through the model session's token.
Result<gen::EvaluateElsewhere> remote_evaluator(const Context& ctx, const config::Config& cfg,
                                                const scale::ExecutorSettings& settings,
                                                const std::filesystem::path& runs_dir,
                                                bool log_runs,
                                                std::unique_ptr<ModelSession>& session);
int run_on_executor(const Context& ctx, const config::Config& cfg,
                    const scale::ExecutorSettings& settings, const eval::SessionRequest& request,
                    bool verbose);

// What a finished evaluation prints (src/cli/print_outcome.cpp), for a session, a merge and a
// remote run alike.
struct EvaluationView {
  const eval::EvalSummary& summary;
  const eval::Evaluation& evaluation;
  const std::vector<Error>& write_errors;
  const std::vector<eval::GateResult>& gates;
  int needing_gpu = 0;
  bool gpu_required_missing = false;
  std::optional<std::filesystem::path> run_logs;  // where the batch was written
};
void print_evaluation(const Context& ctx, const EvaluationView& view, bool verbose);
// A merge of shards: the shards merged, print_evaluation, the trials in no shard's logs; returns
// the merge's exit status.
int print_merged(const Context& ctx, const eval::MergeOutcome& merged, bool verbose);
// upskill's verdict line per model with a lift ("Recommendation: keep skill" or "… may not be
// beneficial"), or why there is none.
void print_recommendations(const Context& ctx, const eval::EvalSummary& summary);
void print_gate(const eval::GateResult& gate);
// Kernel checks whose CUDA stages could not run here: one line on stdout (nothing when `count` is
// 0); with --require-gpu also "error: …" on stderr, and the exit code 3 to return (else 0).
int report_gpu_not_run(const Context& ctx, int count, bool require_gpu, std::string_view indent);

// The model access of a command: the configuration, the process environment, --base-url /
// --api-key-env, and a connect step that opens the model session into `session` (with --record /
// --replay and Ctrl-C) when the pipeline has checked its inputs.
llm::ModelAccess model_access(const Context& ctx, const config::Config& config,
                              std::unique_ptr<ModelSession>& session);
// Progress of the pipelines on stderr (src/cli/progress.cpp).
std::unique_ptr<eval::SessionObserver> eval_progress(bool tty);
std::unique_ptr<gen::GenerateObserver> generate_progress(const Style& err);

}  // namespace upskill::cli
