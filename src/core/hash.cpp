// SHA-256 in lower-case hex, of bytes or of a file read in chunks (OpenSSL) (see hash.hpp).
#include "upskill/core/hash.hpp"

#include <fmt/format.h>
#include <openssl/evp.h>

#include <array>
#include <cstring>
#include <fstream>
#include <memory>

namespace upskill::hash {

namespace {

std::string hex(const unsigned char* digest, unsigned int length) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(length * 2);
  for (unsigned int i = 0; i < length; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xF]);
  }
  return out;
}

}  // namespace

std::string sha256_hex(std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_Digest(data.data(), data.size(), digest.data(), &length, EVP_sha256(), nullptr);
  return hex(digest.data(), length);
}

Result<std::string> sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return fail(
        Error::usage(fmt::format("{}: cannot read ({})", path.string(), std::strerror(errno))));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr);
  std::array<char, 1 << 16> buffer{};
  while (in) {
    in.read(buffer.data(), buffer.size());
    if (in.gcount() > 0) EVP_DigestUpdate(ctx.get(), buffer.data(), in.gcount());
  }
  if (in.bad()) return fail(Error::usage(fmt::format("{}: read error", path.string())));
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest.data(), &length);
  return hex(digest.data(), length);
}

}  // namespace upskill::hash
