// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_bundle.hpp
/// Private: a reader of TensorFlow's TensorBundle checkpoints (what `tf.train.Checkpoint` and
/// SavedModels write as `variables/variables.index` + `variables.data-NNNNN-of-NNNNN`),
/// without TensorFlow:
///
/// - the index is an SSTable (LevelDB's table format): a 48-byte footer (metaindex and index
///   block handles as varint64 pairs, padding, the magic 0xdb4775248b80fb57); blocks of
///   prefix-compressed entries (shared, non-shared and value lengths as varint32, then the key
///   suffix and the value), a restart array and its count, each block followed by a
///   compression byte and a masked CRC32C of the block and that byte; the index block maps
///   to data blocks by handle. Only uncompressed blocks are read (what TensorFlow writes);
/// - entry "" is the `BundleHeaderProto` (num_shards, endianness: little only); every other
///   entry maps a tensor key to a `BundleEntryProto` (dtype, shape, shard_id, offset, size,
///   masked CRC32C of the bytes, slices: partitioned tensors are refused);
/// - data shards hold raw little-endian tensor bytes; a string tensor is its element lengths
///   (varint64), a masked CRC32C of them (4 bytes), then the bytes.
///
/// Every offset, size and count is checked against the file it points into; a checksum
/// mismatch is an error naming the key (or block) and the file.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gpass/core/checked.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>
#include <gpass/core/shape.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/io/detail/file.hpp>
#include <gpass/io/detail/raw_bytes.hpp>
#include <gpass/io/detail/tf_binary.hpp>
#include <gpass/io/detail/tf_schema.hpp>
#include <gpass/io/detail/tf_tensor.hpp>
#include <gpass/io/detail/tf_wire.hpp>

namespace gpass::detail::tf_io {

// ---- CRC32C (Castagnoli), as LevelDB and TensorFlow mask it ------------------------------

inline std::uint32_t crc32c(std::string_view data, std::uint32_t crc = 0) noexcept {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (unsigned char ch : data) crc = table[(crc ^ ch) & 0xff] ^ (crc >> 8);
  return ~crc;
}

/// LevelDB's masked CRC (stored CRCs are masked so that a CRC of data holding CRCs differs).
inline std::uint32_t mask_crc(std::uint32_t crc) noexcept { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

inline std::uint32_t read_le32(const char* p) noexcept {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<std::uint8_t>(p[i]);
  return v;
}

// ---- schemas -----------------------------------------------------------------------------

inline const message_schema& bundle_header_schema() {
  static const field_schema f[] = {{"num_shards", 1, fkind::int32, false, nullptr},
                                   {"endianness", 2, fkind::int32, false, nullptr},
                                   {"version", 3, fkind::ignored, false, nullptr}};
  static const message_schema s{"BundleHeaderProto", f, std::size(f), false};
  return s;
}
inline const message_schema& bundle_entry_schema() {
  static const field_schema f[] = {{"dtype", 1, fkind::data_type, false, nullptr},
                                   {"shape", 2, fkind::message, false, &tensor_shape_schema},
                                   {"shard_id", 3, fkind::int32, false, nullptr},
                                   {"offset", 4, fkind::int64, false, nullptr},
                                   {"size", 5, fkind::int64, false, nullptr},
                                   {"crc32c", 6, fkind::fixed32, false, nullptr},
                                   {"slices", 7, fkind::ignored, true, nullptr}};
  static const message_schema s{"BundleEntryProto", f, std::size(f), false};
  return s;
}

// ---- the SSTable index ---------------------------------------------------------------------

/// The key -> value pairs of an SSTable file's bytes, in key order.
inline std::map<std::string, std::string, std::less<>> read_sstable(std::string_view file, const std::string& source) {
  auto fail = [&](const std::string& what) -> void {
    error_context c;
    c.file = source;
    throw error("not a TensorBundle index (SSTable): " + what, c);
  };
  constexpr std::size_t footer_size = 48;
  constexpr std::uint64_t magic = 0xdb4775248b80fb57ull;
  if (file.size() < footer_size) fail("the file has " + std::to_string(file.size()) + " bytes, less than a footer");
  const std::string_view footer = file.substr(file.size() - footer_size);
  std::uint64_t m = 0;
  for (int i = 7; i >= 0; --i) m = (m << 8) | static_cast<std::uint8_t>(footer[40 + static_cast<std::size_t>(i)]);
  if (m != magic) fail("bad magic number");
  struct handle {
    std::uint64_t offset, size;
  };
  auto read_handle = [&](wire_reader& r) { return handle{r.read_varint(), r.read_varint()}; };
  wire_reader fr(footer.substr(0, 40), source, file.size() - footer_size);
  (void)read_handle(fr);  // metaindex: not used
  const handle index = read_handle(fr);
  const std::size_t body = file.size() - footer_size;
  // a block's contents, checked
  auto block = [&](handle h, const std::string& what) -> std::string_view {
    if (h.offset > body || h.size > body - h.offset || body - h.offset - h.size < 5)
      fail(what + " block [" + std::to_string(h.offset) + ", +" + std::to_string(h.size) + ") runs past the end of the file");
    const std::string_view b = file.substr(static_cast<std::size_t>(h.offset), static_cast<std::size_t>(h.size));
    const char* trailer = b.data() + b.size();
    if (trailer[0] != 0)
      fail(what + " block is compressed (type " + std::to_string(static_cast<int>(trailer[0])) + "); only uncompressed blocks are read");
    const std::uint32_t want = read_le32(trailer + 1);
    if (mask_crc(crc32c(std::string_view(b.data(), b.size() + 1))) != want) fail(what + " block checksum mismatch");
    return b;
  };
  // the entries of a block, in order
  auto entries = [&](std::string_view b, const std::string& what, auto&& f) {
    if (b.size() < 4) fail(what + " block is shorter than its restart count");
    const std::uint32_t restarts = read_le32(b.data() + b.size() - 4);
    if (static_cast<std::uint64_t>(restarts) * 4 + 4 > b.size()) fail(what + " block has an impossible restart count");
    const std::string_view data = b.substr(0, b.size() - 4 - std::size_t{restarts} * 4);
    wire_reader r(data, source);
    std::string key;
    while (!r.at_end()) {
      const std::uint64_t shared = r.read_varint(), non_shared = r.read_varint(), value_len = r.read_varint();
      if (shared > key.size()) fail(what + " block entry shares " + std::to_string(shared) + " bytes of a shorter key");
      if (non_shared > r.remaining() || value_len > r.remaining() - non_shared)
        fail(what + " block entry runs past the block");
      key.resize(static_cast<std::size_t>(shared));
      const std::size_t at = data.size() - r.remaining();
      key.append(data.substr(at, static_cast<std::size_t>(non_shared)));
      const std::string_view value = data.substr(at + static_cast<std::size_t>(non_shared), static_cast<std::size_t>(value_len));
      r.advance(static_cast<std::size_t>(non_shared + value_len));
      f(key, value);
    }
  };
  std::map<std::string, std::string, std::less<>> out;
  entries(block(index, "index"), "index", [&](const std::string&, std::string_view v) {
    wire_reader hr(v, source);
    const handle h = read_handle(hr);
    entries(block(h, "data"), "data", [&](const std::string& k, std::string_view value) { out.insert_or_assign(k, std::string(value)); });
  });
  return out;
}

// ---- the bundle ----------------------------------------------------------------------------

/// A TensorBundle checkpoint opened at `prefix` (`.../variables/variables`): its entries and
/// the path of each data shard. Tensors are read on demand (`read`).
class tensor_bundle {
 public:
  explicit tensor_bundle(std::filesystem::path prefix) : prefix_(std::move(prefix)) {
    const std::filesystem::path index = prefix_.string() + ".index";
    index_name_ = index.string();
    const std::string bytes = gpass::detail::read_model_file(index, "TensorBundle index");
    auto kv = read_sstable(bytes, index_name_);
    auto h = kv.find(std::string_view());
    if (h == kv.end()) throw error("TensorBundle index " + index_name_ + " has no header entry");
    pb_message header;
    decode_binary(h->second, 0, bundle_header_schema(), header, index_name_);
    num_shards_ = header.i32(1);
    if (num_shards_ < 1 || num_shards_ > 100000)
      throw error("TensorBundle index " + index_name_ + " says it has " + std::to_string(num_shards_) + " shards");
    if (header.i32(2) != 0) throw error("TensorBundle " + index_name_ + " is big-endian; only little-endian bundles are read");
    kv.erase(h);
    entries_ = std::move(kv);
  }

  /// The keys of the bundle's tensors, in order.
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& [key, v] : entries_) k.push_back(key);
    return k;
  }
  bool contains(std::string_view key) const { return entries_.find(key) != entries_.end(); }

  /// The tensor stored under `key`; `budget` bounds the bytes read (decremented).
  tensor read(std::string_view key, std::uint64_t& budget) const {
    auto it = entries_.find(key);
    if (it == entries_.end()) throw error("TensorBundle " + index_name_ + " has no tensor '" + std::string(key) + "'");
    const std::string where = "tensor '" + std::string(key) + "' of TensorBundle " + index_name_;
    pb_message e;
    decode_binary(it->second, 0, bundle_entry_schema(), e, index_name_);
    if (e.has(7)) throw error(where + " is partitioned (slices); partitioned variables are not read");
    const auto dt = dtype_from_tf(e.i64(1));
    if (!dt || *dt == dtype::resource || *dt == dtype::variant)
      throw error(where + " has type " + data_type_name(e.i64(1)) + ", which gpass does not read from checkpoints");
    const shape s = shape_from_tf(e.msg(2));
    if (!s.is_fully_known()) throw error(where + " has shape " + s.to_string() + " with unknown dims");
    const std::vector<std::int64_t> sizes = s.sizes();
    const std::int64_t shard = e.i64(3), offset = e.i64(4), size = e.i64(5);
    if (shard < 0 || shard >= num_shards_) throw error(where + " is in shard " + std::to_string(shard) + " of " + std::to_string(num_shards_));
    if (offset < 0 || size < 0) throw error(where + " has a negative offset or size");
    if (static_cast<std::uint64_t>(size) > budget)
      throw error(where + " has " + std::to_string(size) + " bytes, over the limit (max_tensor_bytes)");
    budget -= static_cast<std::uint64_t>(size);
    const std::string& data = shard_bytes(shard);
    if (static_cast<std::uint64_t>(offset) > data.size() || static_cast<std::uint64_t>(size) > data.size() - static_cast<std::uint64_t>(offset))
      throw error(where + " lies past the end of its data file (" + std::to_string(data.size()) + " bytes)");
    const std::string_view bytes(data.data() + offset, static_cast<std::size_t>(size));
    if (e.has(6) && mask_crc(crc32c(bytes)) != static_cast<std::uint32_t>(e.i64(6)))
      throw error(where + ": checksum mismatch (the data file is corrupted or does not belong to this index)");
    if (*dt == dtype::string) return read_strings(bytes, sizes, where);
    const std::int64_t count = num_elements_or_throw(sizes);
    if (static_cast<std::uint64_t>(count) * size_of(*dt) != bytes.size())
      throw error(where + " has " + std::to_string(bytes.size()) + " bytes for " + std::to_string(count) + " elements of " +
                  std::string(to_string(*dt)));
    tensor t(*dt, sizes);
    if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
    normalize_bools(t);
    return t;
  }

 private:
  const std::string& shard_bytes(std::int64_t shard) const {
    auto it = shards_.find(shard);
    if (it != shards_.end()) return it->second;
    char suffix[64];
    std::snprintf(suffix, sizeof suffix, ".data-%05lld-of-%05d", static_cast<long long>(shard), num_shards_);
    const std::filesystem::path p = prefix_.string() + suffix;
    return shards_.emplace(shard, gpass::detail::read_model_file(p, "TensorBundle data file", true)).first->second;
  }

  static tensor read_strings(std::string_view bytes, const std::vector<std::int64_t>& sizes, const std::string& where) {
    const std::int64_t count = num_elements_or_throw(sizes);
    wire_reader r(bytes, where);
    std::vector<std::uint64_t> lengths;
    for (std::int64_t i = 0; i < count; ++i) {
      lengths.push_back(r.read_varint());
      if (lengths.back() > bytes.size()) throw error(where + ": a string length runs past the data");
    }
    if (count > 0) (void)r.read_fixed32();  // masked CRC32C of the lengths
    tensor t(dtype::string, sizes);
    auto* out = t.template data<std::string>();
    for (std::int64_t i = 0; i < count; ++i) {
      if (lengths[static_cast<std::size_t>(i)] > r.remaining()) throw error(where + ": string " + std::to_string(i) + " runs past the data");
      const std::size_t at = bytes.size() - r.remaining();
      out[i] = std::string(bytes.substr(at, static_cast<std::size_t>(lengths[static_cast<std::size_t>(i)])));
      r.advance(static_cast<std::size_t>(lengths[static_cast<std::size_t>(i)]));
    }
    return t;
  }

  std::filesystem::path prefix_;
  std::string index_name_;
  int num_shards_ = 1;
  std::map<std::string, std::string, std::less<>> entries_;
  mutable std::map<std::int64_t, std::string> shards_;
};

}  // namespace gpass::detail::tf_io
