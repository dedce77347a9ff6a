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
    std::cerr << "usage: upskill-scripted-server SCRIPT.json [PORT]\n"
                 "Serves /v1/chat/completions, /v1/messages, /health and /v1/models on 127.0.0.1 "
                 "from the\n"
                 "rules in SCRIPT.json and prints the port it listens on.\n";
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
  upskill::testing::ScriptedServer server(script);
  const int port = server.start(argc > 2 ? std::stoi(argv[2]) : 0);
  if (port <= 0) {
    std::cerr << "cannot listen on 127.0.0.1\n";
    return 3;
  }
  std::cout << port << std::endl;
  int sig = 0;
  sigwait(&set, &sig);
  server.stop();
  return 0;
}
