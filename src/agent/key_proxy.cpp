// The loopback proxy that keeps a coding agent's key with upskill (see key_proxy.hpp).
#include "upskill/agent/key_proxy.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/rand.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "upskill/core/cancel.hpp"
#include "upskill/core/json.hpp"
#include "upskill/core/text.hpp"
#include "upskill/llm/http.hpp"

namespace upskill::agent {

namespace {

// "scheme://host[:port]" and the path after it, of a base URL.
std::pair<std::string, std::string> origin_and_path(const std::string& url) {
  const auto scheme = url.find("://");
  const auto slash = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (slash == std::string::npos) return {url, ""};
  return {url.substr(0, slash), url.substr(slash)};
}

std::string random_token() {
  unsigned char bytes[24];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return {};
  std::string out = "upskill-trial-";
  for (unsigned char b : bytes) out += fmt::format("{:02x}", b);
  return out;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What an answer streams through: the endpoint's status and headers, then its body in pieces.
struct Relay {
  std::mutex mutex;
  std::condition_variable changed;
  bool headers_known = false, done = false, client_gone = false;
  int status = 502;
  std::map<std::string, std::string> headers;
  std::deque<std::string> pieces;
  std::string error;
};

// Headers that belong to one connection, or that the relay rewrites (the body is decoded and sent
// chunked): never passed on.
bool hop_by_hop(const std::string& name) {
  static const std::set<std::string> kHop{
      "host",    "content-length",     "connection",      "keep-alive", "proxy-connection",
      "te",      "transfer-encoding",  "accept-encoding", "upgrade",    "content-encoding",
      "trailer", "proxy-authorization"};
  return kHop.contains(name);
}

}  // namespace

struct KeyProxy::State {
  llm::ResolvedModel upstream;
  llm::ResolvedModel through;
  std::string origin;  // the endpoint's scheme://host:port
  std::string token;
  httplib::Server server;
  std::thread listener;
  std::atomic<int> forwarded{0};
  CancelToken ended;  // the trial ended: requests still in flight are stopped
  std::mutex workers_mutex;
  std::vector<std::thread> workers;

  // The credential the agent sent, checked and swapped for the real key in the same place: a
  // bearer token, x-api-key, x-goog-api-key or api-key header, or the key= query parameter.
  // False when none of them carries this trial's token.
  bool swap_credentials(const httplib::Request& req, llm::HttpRequest& out, std::string& query) {
    const std::string& key = upstream.api_key.reveal();
    bool carried = false;
    for (const auto& [name, value] : req.headers) {
      const std::string n = lower(name);
      if (hop_by_hop(n)) continue;
      if (n == "authorization" && value == "Bearer " + token) {
        carried = true;
        if (!key.empty()) out.headers.emplace_back("Authorization", "Bearer " + key);
      } else if ((n == "x-api-key" || n == "x-goog-api-key" || n == "api-key") && value == token) {
        carried = true;
        if (!key.empty()) out.headers.emplace_back(name, key);
      } else if (n == "authorization" || n == "x-api-key" || n == "x-goog-api-key" ||
                 n == "api-key") {
        continue;  // another credential: never passed on
      } else {
        out.headers.emplace_back(name, value);
      }
    }
    std::vector<std::string> params;
    for (const auto& [name, value] : req.params) {
      if (name == "key") {
        if (value != token) continue;
        carried = true;
        if (!key.empty()) params.push_back("key=" + httplib::detail::encode_query_param(key));
        continue;
      }
      params.push_back(httplib::detail::encode_query_param(name) + "=" +
                       httplib::detail::encode_query_param(value));
    }
    query = params.empty() ? "" : "?" + text::join(params, "&");
    return carried;
  }

  void handle(const httplib::Request& req, httplib::Response& res) {
    // Only a path below the endpoint's origin: a target that does not start with '/', or holds
    // '@', '\\' or a control character once decoded, could name another host ("@evil.com/…")
    // for the key to be sent to. Header names and values with CR, LF or NUL would add headers.
    const auto bad_char = [](unsigned char c) { return c < 0x20 || c == 0x7f; };
    bool refused = !req.path.starts_with('/') || !req.target.starts_with('/') ||
                   req.path.find_first_of("@\\") != std::string::npos ||
                   std::any_of(req.path.begin(), req.path.end(), bad_char);
    for (const auto& [name, value] : req.headers)
      refused = refused || std::any_of(name.begin(), name.end(), bad_char) ||
                std::any_of(value.begin(), value.end(),
                            [](unsigned char c) { return c == '\r' || c == '\n' || c == '\0'; });
    if (refused) {
      res.status = 400;
      res.set_content(R"({"error":{"message":"upskill's key proxy: not a request it forwards"}})",
                      "application/json");
      return;
    }
    llm::HttpRequest out;
    std::string query;
    if (!swap_credentials(req, out, query)) {
      res.status = 401;
      res.set_content(
          R"({"error":{"type":"authentication_error","message":"upskill's key proxy: this is not the token of a running trial"}})",
          "application/json");
      return;
    }
    ++forwarded;
    out.method = req.method;
    out.url = origin + req.path + query;
    out.body = req.body;
    out.timeout = std::chrono::hours(1);  // the agent's own limit governs; upskill's stops it
    auto relay = std::make_shared<Relay>();
    out.on_headers = [relay](int status, const std::map<std::string, std::string>& headers) {
      std::lock_guard lock(relay->mutex);
      relay->status = status;
      relay->headers = headers;
      relay->headers_known = true;
      relay->changed.notify_all();
    };
    out.on_body = [relay](std::string_view piece) {
      std::lock_guard lock(relay->mutex);
      if (relay->client_gone) return false;
      relay->pieces.emplace_back(piece);
      relay->changed.notify_all();
      return true;
    };
    {
      std::lock_guard lock(workers_mutex);
      workers.emplace_back([this, relay, out = std::move(out)] {
        llm::CurlTransport transport;
        const llm::HttpResponse r = transport.perform(out, &ended);
        std::lock_guard lock(relay->mutex);
        if (!r.transport_error.empty() && !relay->headers_known)
          relay->error = "upskill's key proxy: the endpoint: " + r.transport_error;
        relay->done = true;
        relay->changed.notify_all();
      });
    }
    std::unique_lock lock(relay->mutex);
    relay->changed.wait(lock, [&] { return relay->headers_known || relay->done; });
    if (!relay->headers_known) {
      res.status = 502;
      res.set_content(fmt::format(R"({{"error":{{"message":{}}}}})",
                                  Json(relay->error.empty() ? "no answer" : relay->error).dump()),
                      "application/json");
      return;
    }
    res.status = relay->status;
    std::string content_type = "application/octet-stream";
    for (const auto& [name, value] : relay->headers) {
      if (hop_by_hop(name)) continue;
      if (name == "content-type")
        content_type = value;
      else
        res.set_header(name, value);
    }
    lock.unlock();
    res.set_chunked_content_provider(
        content_type,
        [relay](std::size_t, httplib::DataSink& sink) {
          std::unique_lock lock(relay->mutex);
          relay->changed.wait(lock, [&] { return !relay->pieces.empty() || relay->done; });
          while (!relay->pieces.empty()) {
            std::string piece = std::move(relay->pieces.front());
            relay->pieces.pop_front();
            lock.unlock();
            const bool written = sink.write(piece.data(), piece.size());
            lock.lock();
            if (!written) {
              relay->client_gone = true;
              return false;
            }
          }
          if (relay->done) sink.done();
          return true;
        },
        [relay](bool) {
          std::lock_guard lock(relay->mutex);
          relay->client_gone = true;
        });
  }
};

KeyProxy::KeyProxy(std::unique_ptr<State> state) : state_(std::move(state)) {}

Result<std::unique_ptr<KeyProxy>> KeyProxy::start(const llm::ResolvedModel& model) {
  auto state = std::make_unique<State>();
  state->upstream = model;
  state->token = random_token();
  if (state->token.empty())
    return fail(Error::infrastructure("the key proxy: no random bytes for the trial's token"));
  const auto [origin, path] = origin_and_path(model.base_url);
  state->origin = origin;
  State* s = state.get();
  const auto handler = [s](const httplib::Request& req, httplib::Response& res) {
    s->handle(req, res);
  };
  s->server.Post(".*", handler);
  s->server.Get(".*", handler);
  s->server.Put(".*", handler);
  s->server.Delete(".*", handler);
  s->server.Patch(".*", handler);
  // A thread a connection: agents keep several open, and a stream holds its thread to the end.
  s->server.new_task_queue = [] { return new httplib::ThreadPool(64); };
  s->server.set_keep_alive_max_count(1000);
  s->server.set_keep_alive_timeout(30);
  s->server.set_read_timeout(std::chrono::minutes(10));
  s->server.set_write_timeout(std::chrono::minutes(10));
  // Bodies past 64 MiB are refused before they are held (no agent sends one).
  s->server.set_payload_max_length(64u << 20);
  const int port = s->server.bind_to_any_port("127.0.0.1");
  if (port <= 0) return fail(Error::infrastructure("the key proxy: no port on 127.0.0.1"));
  s->listener = std::thread([s] { s->server.listen_after_bind(); });
  // Until it runs, stop() would be lost and the destructor would wait on accept() for ever.
  while (!s->server.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  s->through = model;
  s->through.base_url = fmt::format("http://127.0.0.1:{}{}", port, path);
  s->through.api_key = llm::Secret(s->token);
  return std::unique_ptr<KeyProxy>(new KeyProxy(std::move(state)));
}

KeyProxy::~KeyProxy() {
  state_->ended.cancel();
  state_->server.stop();
  if (state_->listener.joinable()) state_->listener.join();
  std::lock_guard lock(state_->workers_mutex);
  for (auto& w : state_->workers)
    if (w.joinable()) w.join();
}

const llm::ResolvedModel& KeyProxy::through() const {
  return state_->through;
}

int KeyProxy::forwarded() const {
  return state_->forwarded.load();
}

}  // namespace upskill::agent
