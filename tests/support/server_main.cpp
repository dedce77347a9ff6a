// upskill-scripted-server: the scripted OpenAI-compatible / Anthropic server as a program, for the
// offline demo and for trying upskill without a model. It answers from a script of rules; it is a
// stand-in, not a model.
#include <csignal>
#include <fstream>
#include <iostream>
#include <sstream>

#include "scripted_server.hpp"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help") {
    std::cerr
        << "usage: upskill-scripted-server SCRIPT.json [PORT] [--log FILE]\n"
           "Serves /v1/chat/completions, /v1/messages, /v1/responses, the Gemini API\n"
           "(/v1beta/models/M:generateContent, :streamGenerateContent), /health and /v1/models "
           "on\n127.0.0.1 from the rules in SCRIPT.json and prints the port it listens on. --log "
           "FILE writes every "
           "request\n"
           "received (path, rule, body) as JSON lines when it stops.\n";
    return argc < 2 ? 2 : 0;
  }
  std::ifstream in(argv[1]);
  if (!in) {
    std::cerr << argv[1] << ": cannot open\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  upskill::Json script;
  try {
    script = upskill::Json::parse(text.str());
  } catch (const std::exception& e) {
    std::cerr << argv[1] << ": invalid JSON: " << e.what() << "\n";
    return 2;
  }
  // Block the signals before the server's threads start, so only sigwait below receives them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int wanted_port = 0;
  std::string log_path;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--log" && i + 1 < argc)
      log_path = argv[++i];
    else if (!arg.empty() && arg.size() < 6 &&
             arg.find_first_not_of("0123456789") == std::string::npos)
      wanted_port = std::stoi(arg);
    else {
      std::cerr << "upskill-scripted-server: unknown argument '" << arg << "'\n";
      return 2;
    }
  }
  upskill::testing::ScriptedServer server(script);
  const int port = server.start(wanted_port);
  if (port <= 0) {
    std::cerr << "cannot listen on 127.0.0.1\n";
    return 3;
  }
  std::cout << port << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  server.stop();
  if (!log_path.empty()) {
    std::ofstream log(log_path);
    for (const auto& r : server.requests())
      log << upskill::Json{{"method", r.method},
                           {"path", r.path},
                           {"rule", r.rule},
                           {"body", r.json}}
                 .dump()
          << "\n";
  }
  return 0;
}
