#pragma once
// SHA-256 in lower-case hex, of bytes, or of a file as it is read (OpenSSL).
#include <cstddef>
#include <filesystem>
#include <memory>
#include <streambuf>
#include <string>
#include <string_view>

#include "upskill/core/error.hpp"

namespace upskill::hash {

// Lower-case hex SHA-256 of the bytes (OpenSSL).
std::string sha256_hex(std::string_view data);

// A file read through a stream (std::istream in(&file)) whose SHA-256 is taken from the bytes as
// they are read — each byte once, in order, however often the reader seeks back to read again —
// so that a file parsed and hashed is read from the disk cache once (traces can be hundreds of
// MB; docs/PERFORMANCE.md, "Parsing large traces"). Large reads go straight into the reader's
// buffer.
class HashingFile : public std::streambuf {
 public:
  explicit HashingFile(const std::filesystem::path& path);
  ~HashingFile() override;
  HashingFile(const HashingFile&) = delete;
  HashingFile& operator=(const HashingFile&) = delete;
  bool is_open() const { return fd_ >= 0; }
  // The digest of the whole file: what the reader has not read is read for it (the reading ends
  // there; asked again, the same answer). An error names the file.
  Result<std::string> sha256();

 protected:
  int_type underflow() override;
  std::streamsize xsgetn(char* s, std::streamsize n) override;
  pos_type seekoff(off_type off, std::ios_base::seekdir dir, std::ios_base::openmode) override;
  pos_type seekpos(pos_type pos, std::ios_base::openmode) override;

 private:
  // Reads up to n bytes at offset_ into `to`, hashing those not hashed yet; 0 at the end or on
  // an error.
  std::size_t read_at(char* to, std::size_t n);

  std::filesystem::path path_;
  int fd_ = -1;
  int open_error_ = 0;      // errno of the open that failed
  std::size_t offset_ = 0;  // of the next byte read from the file
  std::size_t hashed_ = 0;  // bytes hashed, from the start
  bool failed_ = false;
  std::string digest_;  // once computed
  struct Context;
  std::unique_ptr<Context> ctx_;
  std::unique_ptr<char[]> buffer_;
};

}  // namespace upskill::hash
