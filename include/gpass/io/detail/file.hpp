// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file file.hpp
/// `read_model_file`: the whole contents of a model file, with the errors every reader gives
/// for what is not a model file (a missing file, a directory, an unreadable or empty file).

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
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
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw error("cannot read the " + what + " file", where);
  if (bytes.empty() && !allow_empty) throw error("the " + what + " file is empty", where);
  return bytes;
}

}  // namespace gpass::detail
