// SPDX-License-Identifier: Apache-2.0
// Shared by the fuzz harnesses (fuzz/*.cpp). Each harness defines its entry point with
// GPASS_FUZZ_TARGET(name): under libFuzzer (GPASS_FUZZ_LIBFUZZER) that is
// LLVMFuzzerTestOneInput; in the replay build (the CI test that runs the committed corpora
// without a fuzzer) it is a function registered by name, called by replay_main.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>

namespace gpass_fuzz {

using entry_fn = int (*)(const std::uint8_t*, std::size_t);

inline std::map<std::string, entry_fn>& targets() {
  static std::map<std::string, entry_fn> t;
  return t;
}
struct registrar {
  registrar(const char* name, entry_fn f) { targets()[name] = f; }
};

inline std::string_view bytes_of(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// A property that must hold did not: print it and abort (libFuzzer saves the input).
[[noreturn]] inline void finding(const char* target, const std::string& what) {
  std::fprintf(stderr, "gpass fuzz %s: FINDING: %s\n", target, what.c_str());
  std::abort();
}

}  // namespace gpass_fuzz

#ifdef GPASS_FUZZ_LIBFUZZER
#define GPASS_FUZZ_TARGET(name) extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
#else
#define GPASS_FUZZ_TARGET(name)                                                         \
  static int gpass_fuzz_##name(const std::uint8_t* data, std::size_t size);             \
  static const ::gpass_fuzz::registrar gpass_fuzz_registrar_##name(#name, &gpass_fuzz_##name); \
  static int gpass_fuzz_##name(const std::uint8_t* data, std::size_t size)
#endif
