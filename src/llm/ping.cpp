// `upskill models --ping`: is each endpoint up, which models does it serve, and does a tiny chat
// work (latency, tokens)? (see ping.hpp).
#include "upskill/llm/ping.hpp"

#include <fmt/format.h>

#include <thread>

#include "upskill/core/text.hpp"
#include "upskill/llm/wire.hpp"

namespace upskill::llm {

namespace {
constexpr int kHealthTransportTries = 3;

// llama.cpp serves /health at the server root, beside /v1.
std::string server_root(const std::string& base_url) {
  std::string root = base_url;
  if (root.ends_with("/v1")) root.resize(root.size() - 3);
  return root;
}
}  // namespace

PingReport ping_model(const ResolvedModel& model, HttpTransport& transport, ChatClient& client,
                      const PingOptions& options) {
  PingReport report;
  if (!options.endpoint_checks) {
    report.health = "not checked (replay)";
    report.models_error = "not checked (replay)";
  }
  const auto give_up = std::chrono::steady_clock::now() + options.health_wait;
  HttpRequest health;
  health.method = "GET";
  health.url = server_root(model.base_url) + "/health";
  health.timeout = std::chrono::seconds(10);
  int transport_failures = 0;
  while (options.endpoint_checks) {
    HttpResponse r = transport.perform(health, options.cancel);
    if (!r.transport_error.empty()) {
      // A dropped connection can be a blip; a server that is down stays down.
      if (++transport_failures < kHealthTransportTries && !r.cancelled) {
        std::this_thread::sleep_for(options.poll_interval);
        continue;
      }
      report.health = "unreachable: " + r.transport_error;
      report.health_ok = false;
      return report;
    }
    if (r.status == 200) {
      report.health = "ok";
      break;
    }
    const bool loading = r.status == 503 && r.body.find("Loading model") != std::string::npos;
    if (!loading) {
      report.health = r.status == 404 ? "no /health endpoint" : fmt::format("HTTP {}", r.status);
      break;
    }
    if (std::chrono::steady_clock::now() >= give_up ||
        (options.cancel && options.cancel->cancelled())) {
      report.health = fmt::format(
          "still loading the model after {} s",
          std::chrono::duration_cast<std::chrono::seconds>(options.health_wait).count());
      report.health_ok = false;
      return report;
    }
    std::this_thread::sleep_for(options.poll_interval);
  }

  HttpRequest list;
  list.method = "GET";
  list.url = model.base_url + "/models";
  list.timeout = std::chrono::seconds(15);
  for (const auto& [k, v] : request_headers(model))
    if (k != "Content-Type") list.headers.emplace_back(k, v);
  HttpResponse listed;
  if (options.endpoint_checks) listed = transport.perform(list, options.cancel);
  if (!options.endpoint_checks) {
    // nothing to list
  } else if (listed.ok()) {
    try {
      for (const auto& m : Json::parse(listed.body).value("data", Json::array()))
        if (m.contains("id") && m["id"].is_string())
          report.served.push_back(m["id"].get<std::string>());
    } catch (const nlohmann::json::exception&) {
      report.models_error = "unreadable /models response";
    }
    report.model_listed =
        std::find(report.served.begin(), report.served.end(), model.model) != report.served.end();
  } else {
    report.models_error = listed.transport_error.empty() ? fmt::format("HTTP {}", listed.status)
                                                         : listed.transport_error;
  }

  ChatRequest chat;
  chat.messages = {Message::user("Reply with the single word: pong")};
  chat.sampling.max_tokens = 16;
  CallOptions call;
  call.cancel = options.cancel;
  auto answer = client.complete(model, chat, call);
  if (answer)
    report.chat = *answer;
  else
    report.chat_error = answer.error().message;
  return report;
}

}  // namespace upskill::llm
