// HTTP over libcurl: one blocking request per call, safe to use from many threads at once (see
// http.hpp). libcurl is opened on the first request rather than linked: a command that makes none
// (trace, validate, list, runs, …) does not load it and the 27 libraries it needs, about 15 ms of
// every start (docs/PERFORMANCE.md, "starting without libcurl").
#include "upskill/llm/http.hpp"

#include <curl/curl.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <cctype>
#include <memory>
#include <type_traits>

namespace upskill::llm {

namespace {

constexpr const char* kLibcurl = "libcurl.so.4";

// The libcurl functions the transport calls, from the library opened once.
struct Curl {
  decltype(&curl_global_init) global_init = nullptr;
  decltype(&curl_easy_init) easy_init = nullptr;
  decltype(&curl_easy_setopt) easy_setopt = nullptr;
  decltype(&curl_easy_perform) easy_perform = nullptr;
  decltype(&curl_easy_cleanup) easy_cleanup = nullptr;
  decltype(&curl_easy_getinfo) easy_getinfo = nullptr;
  decltype(&curl_easy_strerror) easy_strerror = nullptr;
  decltype(&curl_slist_append) slist_append = nullptr;
  decltype(&curl_slist_free_all) slist_free_all = nullptr;
  std::string file;   // the library opened
  std::string error;  // why it could not be: nothing else is set then
};

Curl open_curl() {
  Curl c;
  void* handle = dlopen(kLibcurl, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    c.error = fmt::format("cannot load {} (install libcurl4): {}", kLibcurl, why ? why : "");
    return c;
  }
  auto bind = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    if (fn == nullptr && c.error.empty()) c.error = fmt::format("{} has no {}", kLibcurl, name);
  };
  bind(c.global_init, "curl_global_init");
  bind(c.easy_init, "curl_easy_init");
  bind(c.easy_setopt, "curl_easy_setopt");
  bind(c.easy_perform, "curl_easy_perform");
  bind(c.easy_cleanup, "curl_easy_cleanup");
  bind(c.easy_getinfo, "curl_easy_getinfo");
  bind(c.easy_strerror, "curl_easy_strerror");
  bind(c.slist_append, "curl_slist_append");
  bind(c.slist_free_all, "curl_slist_free_all");
  if (!c.error.empty()) return c;
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr)
    c.file = map->l_name;
  c.global_init(CURL_GLOBAL_DEFAULT);
  return c;
}

// Opened on first use, once for every thread (curl_global_init is not thread-safe).
const Curl& curl() {
  static const Curl api = open_curl();
  return api;
}

struct Transfer {
  const HttpRequest* request;
  HttpResponse* response;
  const CancelToken* cancel;
  CURL* curl;
  bool status_known = false;
  bool headers_told = false;
};

// on_headers, once, with the final status and headers.
void tell_headers(Transfer* t) {
  if (!t->request->on_headers || t->headers_told) return;
  t->headers_told = true;
  t->request->on_headers(t->response->status, t->response->headers);
}

bool is_success(Transfer* t) {
  if (!t->status_known) {
    long code = 0;
    curl().easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    t->response->status = static_cast<int>(code);
    t->status_known = true;
  }
  return t->response->status >= 200 && t->response->status < 300;
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  const bool success = is_success(t);
  tell_headers(t);
  if (t->request->on_body && (success || t->request->on_headers)) {
    if (!t->request->on_body(std::string_view(data, n))) {
      t->response->stopped = true;
      return 0;  // aborts the transfer
    }
    return n;
  }
  t->response->body.append(data, n);
  return n;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  std::string_view line(data, n);
  if (line.starts_with("HTTP/")) {
    t->response->headers.clear();  // a new response (after 100 Continue or a redirect)
    t->status_known = false;
    return n;
  }
  const std::size_t colon = line.find(':');
  if (colon != std::string_view::npos) {
    std::string name(line.substr(0, colon));
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n' || value.back() == ' '))
      value.remove_suffix(1);
    t->response->headers[name] = std::string(value);
  }
  return n;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  if (t->cancel && t->cancel->cancelled()) {
    t->response->cancelled = true;
    return 1;
  }
  return 0;
}

}  // namespace

Result<std::filesystem::path> http_library_file() {
  const Curl& api = curl();
  if (!api.error.empty()) return fail(Error::infrastructure(api.error));
  if (api.file.empty())
    return fail(
        Error::infrastructure(fmt::format("{}: where it was loaded from is unknown", kLibcurl)));
  return std::filesystem::path(api.file);
}

CurlTransport::CurlTransport() = default;

HttpResponse CurlTransport::perform(const HttpRequest& request, const CancelToken* cancel) {
  HttpResponse response;
  const auto start = std::chrono::steady_clock::now();
  if (cancel && cancel->cancelled()) {
    response.cancelled = true;
    response.transport_error = "cancelled";
    return response;
  }
  const Curl& api = llm::curl();
  if (!api.error.empty()) {
    // No attempt can do better: as final as an endpoint that refuses every connection.
    response.transport_error = api.error;
    response.unreachable = true;
    return response;
  }
  std::unique_ptr<CURL, decltype(api.easy_cleanup)> curl(api.easy_init(), api.easy_cleanup);
  if (!curl) {
    response.transport_error = "cannot initialise libcurl";
    return response;
  }
  Transfer transfer{&request, &response, cancel, curl.get()};
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers)
    headers = api.slist_append(headers, (name + ": " + value).c_str());
  std::unique_ptr<curl_slist, decltype(api.slist_free_all)> header_list(headers,
                                                                        api.slist_free_all);
  CURL* c = curl.get();
  api.easy_setopt(c, CURLOPT_URL, request.url.c_str());
  api.easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  api.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout.count()));
  api.easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  api.easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  api.easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  api.easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  api.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  api.easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
  api.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  api.easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  if (request.method == "GET") {
    api.easy_setopt(c, CURLOPT_HTTPGET, 1L);
  } else {
    api.easy_setopt(c, CURLOPT_POST, 1L);
    api.easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    api.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    if (request.method != "POST") api.easy_setopt(c, CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  const CURLcode code = api.easy_perform(c);
  long status = 0;
  api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  if (status > 0) tell_headers(&transfer);
  if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && response.stopped)) {
    response.timed_out = code == CURLE_OPERATION_TIMEDOUT;
    response.transport_error = response.cancelled ? "cancelled" : api.easy_strerror(code);
    response.unreachable = code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
                           code == CURLE_COULDNT_RESOLVE_PROXY;
  }
  response.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return response;
}

}  // namespace upskill::llm
