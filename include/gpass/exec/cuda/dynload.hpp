// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file dynload.hpp
/// cuBLASLt and NVRTC, loaded when first used (`dlopen`) instead of linked. Loading
/// libcublasLt makes about 210 MB resident before anything is called (its kernel images are
/// registered when the library is loaded) and libnvrtc about 33 MB: a program built with the
/// `cuda` component that runs on the CPU, or only imports and optimizes, pays neither.
///
/// Calls go through `GPASS_CUBLASLT(fn)(args...)` and `GPASS_NVRTC(fn)(args...)`: the symbol
/// `fn` of the library, typed as the toolkit's header declares it, resolved once. The library
/// is looked for at the path the build found (`GPASS_CUDA_CUBLASLT_PATH`,
/// `GPASS_CUDA_NVRTC_PATH`: the CMake target `gpass::cuda` defines them from the toolkit's
/// `CUDA::cublasLt` / `CUDA::nvrtc`), then by its versioned name (`libcublasLt.so.13`,
/// `libnvrtc.so.13` for the headers' major version) and its plain name on the loader's path
/// (`LD_LIBRARY_PATH`, the ld.so cache). A library or symbol that cannot be found is a
/// `gpass::error` naming both, raised by the call that needed it.

#include <dlfcn.h>

#include <atomic>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <gpass/core/error.hpp>

namespace gpass::exec::cuda_dynload {

/// A shared library opened on first use (thread-safe; it stays loaded for the process's life).
class shared_library {
 public:
  shared_library(std::string what, std::vector<std::string> candidates) : what_(std::move(what)), candidates_(std::move(candidates)) {}
  shared_library(const shared_library&) = delete;
  shared_library& operator=(const shared_library&) = delete;

  /// Whether the library has been opened (never opens it).
  bool loaded() const noexcept { return loaded_.load(std::memory_order_acquire); }
  /// Whether the library can be used (opens it if not yet tried).
  bool available() const {
    open();
    return handle_ != nullptr;
  }
  /// The file that was opened ("" when none).
  const std::string& path() const {
    open();
    return opened_;
  }
  /// The address of `name`; throws `gpass::error` if the library or the symbol is missing.
  void* symbol(const char* name) const {
    open();
    if (!handle_) throw error("cuda: cannot load " + what_ + ": " + failures_);
    void* p = ::dlsym(handle_, name);
    if (!p) throw error("cuda: " + what_ + " (" + opened_ + ") has no symbol " + name);
    return p;
  }

 private:
  void open() const {
    std::call_once(once_, [&] {
      for (const std::string& c : candidates_) {
        if (c.empty()) continue;
        handle_ = ::dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle_) {
          opened_ = c;
          loaded_.store(true, std::memory_order_release);
          return;
        }
        const char* e = ::dlerror();
        failures_ += (failures_.empty() ? "" : "; ") + (e ? std::string(e) : c + ": not found");
      }
    });
  }

  std::string what_;
  std::vector<std::string> candidates_;
  mutable std::once_flag once_;
  mutable std::atomic<bool> loaded_{false};
  mutable void* handle_ = nullptr;
  mutable std::string opened_, failures_;
};

#ifndef GPASS_CUDA_CUBLASLT_PATH
#define GPASS_CUDA_CUBLASLT_PATH ""
#endif
#ifndef GPASS_CUDA_NVRTC_PATH
#define GPASS_CUDA_NVRTC_PATH ""
#endif

/// cuBLASLt of the headers' major version.
inline const shared_library& cublaslt() {
  static const shared_library lib("cuBLASLt", {GPASS_CUDA_CUBLASLT_PATH, "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "libcublasLt.so"});
  return lib;
}

/// NVRTC of the toolkit's major version (NVRTC's soname follows the CUDA release).
inline const shared_library& nvrtc() {
  static const shared_library lib("NVRTC", {GPASS_CUDA_NVRTC_PATH, "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000), "libnvrtc.so"});
  return lib;
}

/// `name` of `lib` as a pointer of type F.
template <class F>
F resolve(const shared_library& lib, const char* name) {
  return reinterpret_cast<F>(lib.symbol(name));
}

}  // namespace gpass::exec::cuda_dynload

/// The cuBLASLt function `fn` (resolved on first use), e.g. `GPASS_CUBLASLT(cublasLtCreate)(&h)`.
#define GPASS_CUBLASLT(fn)                                                                                                 \
  ([]() -> decltype(&::fn) {                                                                                               \
    static const auto p = ::gpass::exec::cuda_dynload::resolve<decltype(&::fn)>(::gpass::exec::cuda_dynload::cublaslt(), #fn); \
    return p;                                                                                                              \
  }())

/// The NVRTC function `fn` (resolved on first use), e.g. `GPASS_NVRTC(nvrtcVersion)(&major, &minor)`.
#define GPASS_NVRTC(fn)                                                                                                 \
  ([]() -> decltype(&::fn) {                                                                                            \
    static const auto p = ::gpass::exec::cuda_dynload::resolve<decltype(&::fn)>(::gpass::exec::cuda_dynload::nvrtc(), #fn); \
    return p;                                                                                                           \
  }())
