#pragma once
// HTTP over libcurl: one blocking request per call, safe to use from many threads at once.
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "upskill/core/cancel.hpp"
#include "upskill/core/error.hpp"

namespace upskill::llm {

struct HttpRequest {
  std::string method = "POST";  // POST, GET, or another method (with the body, when it has one)
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // whole request
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(10)};
  // Called with body bytes of a 2xx response as they arrive (streaming); return false to stop.
  // Without it the body is collected in HttpResponse::body.
  std::function<bool(std::string_view)> on_body;
  // Called once with the final status and headers (names in lower case) before the first body
  // byte, or at the end when there is none. With it, on_body gets the body of every status (a
  // proxy passes an error on as it came).
  std::function<void(int, const std::map<std::string, std::string>&)> on_headers;
};

struct HttpResponse {
  int status = 0;                              // 0 when no response arrived
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;                            // non-streamed body, or an error response's body
  std::string transport_error;                 // set when the transfer failed
  bool timed_out = false;
  bool unreachable = false;  // no connection could be made (refused, host not found)
  bool cancelled = false;
  bool stopped = false;  // on_body returned false
  std::chrono::milliseconds elapsed{0};

  bool ok() const { return transport_error.empty() && status >= 200 && status < 300; }
};

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  virtual HttpResponse perform(const HttpRequest& request, const CancelToken* cancel) = 0;
};

// The libcurl transport. libcurl.so.4 is opened (and curl_global_init run) on the first request,
// not when the program starts; a request made without it fails with the reason in
// transport_error.
class CurlTransport : public HttpTransport {
 public:
  CurlTransport();
  HttpResponse perform(const HttpRequest& request, const CancelToken* cancel) override;
};

// The libcurl file the transport opens (opening it if no request has): the program does not link
// it, so a bundle of the program's libraries adds it and what it needs (scale's Jobs bundle).
Result<std::filesystem::path> http_library_file();

}  // namespace upskill::llm
