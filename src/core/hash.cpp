// SHA-256 in lower-case hex, of bytes or of a file as it is read (OpenSSL) (see hash.hpp).
#include "upskill/core/hash.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
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

struct HashingFile::Context {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> md{EVP_MD_CTX_new(), EVP_MD_CTX_free};
};

namespace {
constexpr std::size_t kBlock = 256 << 10;
}  // namespace

HashingFile::HashingFile(const std::filesystem::path& path)
    : path_(path),
      fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)),
      ctx_(std::make_unique<Context>()) {
  if (fd_ < 0) open_error_ = errno;
  EVP_DigestInit_ex(ctx_->md.get(), EVP_sha256(), nullptr);
}

HashingFile::~HashingFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::size_t HashingFile::read_at(char* to, std::size_t n) {
  if (fd_ < 0 || failed_) return 0;
  ssize_t got;
  do {
    got = ::pread(fd_, to, n, static_cast<off_t>(offset_));
  } while (got < 0 && errno == EINTR);
  if (got < 0) {
    failed_ = true;
    return 0;
  }
  const auto size = static_cast<std::size_t>(got);
  // Only bytes that continue the hashed prefix are hashed; a reader never skips ahead here (a
  // gap is read at the end, by sha256()).
  if (offset_ <= hashed_ && offset_ + size > hashed_) {
    EVP_DigestUpdate(ctx_->md.get(), to + (hashed_ - offset_), offset_ + size - hashed_);
    hashed_ = offset_ + size;
  }
  offset_ += size;
  return size;
}

HashingFile::int_type HashingFile::underflow() {
  if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
  if (!buffer_) buffer_ = std::make_unique<char[]>(kBlock);
  const std::size_t got = read_at(buffer_.get(), kBlock);
  if (got == 0) return traits_type::eof();
  setg(buffer_.get(), buffer_.get(), buffer_.get() + got);
  return traits_type::to_int_type(*gptr());
}

std::streamsize HashingFile::xsgetn(char* s, std::streamsize n) {
  std::streamsize done = 0;
  // What the get area holds first, then large reads straight into the caller's buffer.
  if (const std::streamsize held = egptr() - gptr(); held > 0) {
    done = std::min(held, n);
    std::memcpy(s, gptr(), static_cast<std::size_t>(done));
    gbump(static_cast<int>(done));
  }
  while (done < n) {
    const std::size_t got = read_at(s + done, static_cast<std::size_t>(n - done));
    if (got == 0) break;
    done += static_cast<std::streamsize>(got);
  }
  return done;
}

HashingFile::pos_type HashingFile::seekoff(off_type off, std::ios_base::seekdir dir,
                                           std::ios_base::openmode mode) {
  // The reader's position: the file's offset less what the get area still holds.
  const auto here = static_cast<off_type>(offset_) - (egptr() - gptr());
  if (dir == std::ios_base::cur) return seekpos(pos_type(here + off), mode);
  if (dir == std::ios_base::beg) return seekpos(pos_type(off), mode);
  struct stat st {};
  if (fd_ < 0 || ::fstat(fd_, &st) != 0) return pos_type(off_type(-1));
  return seekpos(pos_type(static_cast<off_type>(st.st_size) + off), mode);
}

HashingFile::pos_type HashingFile::seekpos(pos_type pos, std::ios_base::openmode) {
  if (fd_ < 0 || off_type(pos) < 0) return pos_type(off_type(-1));
  setg(nullptr, nullptr, nullptr);
  offset_ = static_cast<std::size_t>(off_type(pos));
  return pos;
}

Result<std::string> HashingFile::sha256() {
  if (fd_ < 0)
    return fail(Error::usage(
        fmt::format("{}: cannot read ({})", path_.string(), std::strerror(open_error_))));
  if (!digest_.empty()) return digest_;
  // The rest of the file, after what the reader read.
  setg(nullptr, nullptr, nullptr);
  offset_ = hashed_;
  if (!buffer_) buffer_ = std::make_unique<char[]>(kBlock);
  while (read_at(buffer_.get(), kBlock) > 0) {
  }
  if (failed_) return fail(Error::usage(fmt::format("{}: read error", path_.string())));
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx_->md.get(), digest.data(), &length);
  digest_ = hex(digest.data(), length);
  return digest_;
}

}  // namespace upskill::hash
