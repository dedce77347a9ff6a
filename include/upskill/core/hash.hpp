#pragma once
// SHA-256 in lower-case hex, of bytes or of a file read in chunks (OpenSSL).
#include <filesystem>
#include <string>
#include <string_view>

#include "upskill/core/error.hpp"

namespace upskill::hash {

// Lower-case hex SHA-256 of the bytes (OpenSSL).
std::string sha256_hex(std::string_view data);

// The same for a file, read in chunks (traces can be hundreds of MB).
Result<std::string> sha256_file(const std::filesystem::path& path);

}  // namespace upskill::hash
