// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file file.hpp
/// `read_model_file`: the whole contents of a model file, with the errors every reader gives
/// for what is not a model file (a missing file, a directory, an unreadable or empty file).

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <gpass/core/error.hpp>

namespace gpass::detail {

/// Reads `path` whole. `what` names the kind of file in errors ("ONNX model"). Throws a
/// `gpass::error` naming the file when it does not exist, is a directory or another
/// non-regular file, cannot be opened or read, or (unless `allow_empty`) is empty: an empty
/// file is never a model, though protobuf would parse it as an empty message.
inline std::string read_model_file(const std::filesystem::path& path, const std::string& what, bool allow_empty = false) {
  error_context where;
  where.file = path.string();
  std::error_code ec;
  const auto st = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(st)) throw error("cannot open the " + what + " file: no such file", where);
  if (std::filesystem::is_directory(st)) throw error("cannot read the " + what + " file: it is a directory", where);
  if (!std::filesystem::is_regular_file(st) && !std::filesystem::is_fifo(st) && !std::filesystem::is_character_file(st))
    throw error("cannot read the " + what + " file: not a regular file", where);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw error("cannot open the " + what + " file: " + std::strerror(errno), where);
  // in blocks (a character at a time through istreambuf_iterator costs ~40 instructions a
  // byte: 0.5 s for a 100 MB model); the size of a regular file reserves the string once
  std::string bytes;
  if (std::filesystem::is_regular_file(st))
    if (const auto size = std::filesystem::file_size(path, ec); !ec) bytes.reserve(static_cast<std::size_t>(size));
  char block[1 << 16];
  while (in.read(block, sizeof block) || in.gcount() > 0) bytes.append(block, static_cast<std::size_t>(in.gcount()));
  if (in.bad()) throw error("cannot read the " + what + " file", where);
  if (bytes.empty() && !allow_empty) throw error("the " + what + " file is empty", where);
  return bytes;
}

}  // namespace gpass::detail
