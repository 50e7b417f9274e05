// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file step_stats.hpp
/// `gpass::step_stats`: what each kernel of a traced session run did and when, per device,
/// and its export as a Chrome trace (`chrome://tracing`, Perfetto).

#include <cstdint>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace gpass {

/// One kernel run.
struct node_exec_stats {
  std::string node;           ///< node name (in its partition)
  std::string op;             ///< op (`domain::op` outside the default domain)
  std::string frame;          ///< the call it ran in ("" for the main graph; `/body#3`... for functions)
  std::int64_t start_us = 0;  ///< start, microseconds since the session was made
  std::int64_t end_us = 0;    ///< end, same clock
  std::uint64_t thread = 0;   ///< the thread that ran it (a small number per thread)
};

/// The kernels one device ran in a step.
struct device_step_stats {
  std::string device;  ///< full device name
  std::vector<node_exec_stats> nodes;
};

/// The kernels of a step, per device (`run_metadata::step_stats`).
struct step_stats {
  std::vector<device_step_stats> devices;

  /// Kernels recorded, over all devices.
  std::size_t size() const {
    std::size_t n = 0;
    for (const auto& d : devices) n += d.nodes.size();
    return n;
  }
};

namespace detail {
inline void json_string(std::ostream& os, std::string_view s) {
  os << '"';
  for (char c : s) {
    switch (c) {
      case '"': os << "\\\""; break;
      case '\\': os << "\\\\"; break;
      case '\n': os << "\\n"; break;
      case '\t': os << "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          os << buf;
        } else {
          os << c;
        }
    }
  }
  os << '"';
}
}  // namespace detail

/// Writes `s` as a Chrome trace (the JSON object format of the Trace Event Format): one
/// process per device (named by its device name), one complete event (`"ph": "X"`) per
/// kernel with its node, op and frame, on the thread that ran it. Open it in
/// `chrome://tracing` or https://ui.perfetto.dev.
/// \code
///   gpass::run_metadata md;
///   sess.run(feeds, fetches, {}, {.trace = true}, &md);
///   std::ofstream f("trace.json");
///   gpass::write_chrome_trace(f, md.step_stats);
/// \endcode
inline void write_chrome_trace(std::ostream& os, const step_stats& s) {
  os << "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [";
  bool first = true;
  auto sep = [&] {
    os << (first ? "\n" : ",\n");
    first = false;
  };
  for (std::size_t d = 0; d < s.devices.size(); ++d) {
    sep();
    os << R"({"name": "process_name", "ph": "M", "pid": )" << d << R"(, "tid": 0, "args": {"name": )";
    detail::json_string(os, s.devices[d].device);
    os << "}}";
    for (const auto& n : s.devices[d].nodes) {
      sep();
      os << "{\"name\": ";
      detail::json_string(os, n.node);
      os << ", \"cat\": ";
      detail::json_string(os, n.op);
      os << ", \"ph\": \"X\", \"pid\": " << d << ", \"tid\": " << n.thread << ", \"ts\": " << n.start_us
         << ", \"dur\": " << (n.end_us - n.start_us) << ", \"args\": {\"op\": ";
      detail::json_string(os, n.op);
      os << ", \"frame\": ";
      detail::json_string(os, n.frame);
      os << "}}";
    }
  }
  os << "\n]}\n";
}

/// `write_chrome_trace` to a string.
inline std::string chrome_trace(const step_stats& s) {
  std::ostringstream os;
  write_chrome_trace(os, s);
  return os.str();
}

}  // namespace gpass
