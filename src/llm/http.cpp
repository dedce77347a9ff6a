// HTTP over libcurl: one blocking request per call, safe to use from many threads at once (see
// http.hpp).
#include "upskill/llm/http.hpp"

#include <curl/curl.h>

#include <cctype>
#include <memory>
#include <mutex>

namespace upskill::llm {

namespace {

struct Transfer {
  const HttpRequest* request;
  HttpResponse* response;
  const CancelToken* cancel;
  CURL* curl;
  bool status_known = false;
};

bool is_success(Transfer* t) {
  if (!t->status_known) {
    long code = 0;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &code);
    t->response->status = static_cast<int>(code);
    t->status_known = true;
  }
  return t->response->status >= 200 && t->response->status < 300;
}

size_t on_write(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const std::size_t n = size * count;
  if (t->request->on_body && is_success(t)) {
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

CurlTransport::CurlTransport() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpResponse CurlTransport::perform(const HttpRequest& request, const CancelToken* cancel) {
  HttpResponse response;
  const auto start = std::chrono::steady_clock::now();
  if (cancel && cancel->cancelled()) {
    response.cancelled = true;
    response.transport_error = "cancelled";
    return response;
  }
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) {
    response.transport_error = "cannot initialise libcurl";
    return response;
  }
  Transfer transfer{&request, &response, cancel, curl.get()};
  curl_slist* headers = nullptr;
  for (const auto& [name, value] : request.headers)
    headers = curl_slist_append(headers, (name + ": " + value).c_str());
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          curl_slist_free_all);
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(request.connect_timeout.count()));
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  if (request.method == "POST") {
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  } else {
    curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
  }
  const CURLcode code = curl_easy_perform(c);
  long status = 0;
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  response.status = static_cast<int>(status);
  if (code != CURLE_OK && !(code == CURLE_WRITE_ERROR && response.stopped)) {
    response.timed_out = code == CURLE_OPERATION_TIMEDOUT;
    response.transport_error = response.cancelled ? "cancelled" : curl_easy_strerror(code);
    response.unreachable = code == CURLE_COULDNT_CONNECT || code == CURLE_COULDNT_RESOLVE_HOST ||
                           code == CURLE_COULDNT_RESOLVE_PROXY;
  }
  response.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - start);
  return response;
}

}  // namespace upskill::llm
