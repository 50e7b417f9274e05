// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file nvrtc.hpp
/// Run-time compilation of generated CUDA C++: `nvrtc_compile` (NVRTC: source to PTX or
/// CUBIN, with no GPU needed) and `cuda_kernel_cache` (compiled libraries loaded into the
/// process, keyed by the generated source, in memory and on disk).
///
/// The disk cache is a directory of `<key hash>.cubin` files, each beside the `.key` text it
/// was compiled from (compared on load, so a hash collision recompiles). The directory is
/// `$GPASS_CUDA_CACHE_DIR`, else `$XDG_CACHE_HOME/gpass/cuda`, else `$HOME/.cache/gpass/cuda`;
/// `GPASS_CUDA_CACHE_DIR=off` disables it. Files are written to a temporary name and renamed,
/// so concurrent processes never read half a file.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <cuda_runtime_api.h>
#include <nvrtc.h>

#include <gpass/core/error.hpp>
#include <gpass/exec/cuda/dynload.hpp>
#include <gpass/exec/cuda/runtime.hpp>

namespace gpass::exec {

/// What `nvrtc_compile` makes.
enum class nvrtc_target {
  ptx,    ///< PTX for `compute_<arch>` (loadable on that architecture and newer)
  cubin,  ///< machine code for `sm_<arch>`
};

/// NVRTC's version as major * 1000 + minor * 10 (13000 for CUDA 13.0); 0 when NVRTC cannot
/// be loaded.
inline int nvrtc_version() {
  if (!cuda_dynload::nvrtc().available()) return 0;
  int major = 0, minor = 0;
  if (GPASS_NVRTC(nvrtcVersion)(&major, &minor) != NVRTC_SUCCESS) return 0;
  return major * 1000 + minor * 10;
}

/// Compiles `source` (CUDA C++ with `extern "C" __global__` entry points, no includes) for
/// compute capability `arch` (80, 90). `name` names the program in NVRTC's messages. Throws
/// `gpass::error` with NVRTC's log when the source does not compile.
inline std::string nvrtc_compile(std::string_view source, std::string_view name, int arch, nvrtc_target target) {
  auto check = [&](nvrtcResult r, std::string_view what) {
    if (r != NVRTC_SUCCESS) throw error("nvrtc: " + std::string(what) + " of '" + std::string(name) + "': " + GPASS_NVRTC(nvrtcGetErrorString)(r));
  };
  nvrtcProgram prog = nullptr;
  const std::string src(source), nm(name);
  check(GPASS_NVRTC(nvrtcCreateProgram)(&prog, src.c_str(), nm.c_str(), 0, nullptr, nullptr), "creating the program");
  struct destroy {
    nvrtcProgram* p;
    ~destroy() { GPASS_NVRTC(nvrtcDestroyProgram)(p); }
  } guard{&prog};
  const std::string arch_opt = (target == nvrtc_target::ptx ? "-arch=compute_" : "-arch=sm_") + std::to_string(arch);
  const char* opts[] = {arch_opt.c_str(), "-std=c++17", "-default-device", "--fmad=false"};
  const nvrtcResult compiled = GPASS_NVRTC(nvrtcCompileProgram)(prog, static_cast<int>(std::size(opts)), opts);
  if (compiled != NVRTC_SUCCESS) {
    std::size_t n = 0;
    GPASS_NVRTC(nvrtcGetProgramLogSize)(prog, &n);
    std::string log(n, '\0');
    if (n) GPASS_NVRTC(nvrtcGetProgramLog)(prog, log.data());
    while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    throw error("nvrtc: '" + nm + "' does not compile for " + arch_opt.substr(6) + ": " + GPASS_NVRTC(nvrtcGetErrorString)(compiled) +
                (log.empty() ? std::string() : "\n" + log));
  }
  std::size_t n = 0;
  std::string out;
  if (target == nvrtc_target::ptx) {
    check(GPASS_NVRTC(nvrtcGetPTXSize)(prog, &n), "PTX size");
    out.resize(n);
    check(GPASS_NVRTC(nvrtcGetPTX)(prog, out.data()), "PTX");
  } else {
    check(GPASS_NVRTC(nvrtcGetCUBINSize)(prog, &n), "CUBIN size");
    out.resize(n);
    check(GPASS_NVRTC(nvrtcGetCUBIN)(prog, out.data()), "CUBIN");
  }
  return out;
}

/// Compiled, loaded kernel libraries of this process, keyed by (source, architecture). Safe to
/// use from several threads; a library stays loaded for the life of the process.
class cuda_kernel_cache {
 public:
  /// Counters since the process started.
  struct statistics {
    std::uint64_t compiled = 0;     ///< sources compiled by NVRTC
    std::uint64_t disk_hits = 0;    ///< libraries read from the disk cache
    std::uint64_t memory_hits = 0;  ///< lookups answered by a loaded library
    double compile_seconds = 0;     ///< time spent in NVRTC
    double load_seconds = 0;        ///< time spent reading the disk cache and loading libraries
  };

  static cuda_kernel_cache& instance() {
    static cuda_kernel_cache c;
    return c;
  }

  /// The entry point `entry` of `source` compiled for compute capability `arch`, loaded.
  cudaKernel_t get(const std::string& source, const std::string& entry, int arch) {
    cudaLibrary_t lib = library(source, arch);
    std::lock_guard lock(mu_);
    const auto k = std::make_pair(lib, entry);
    if (auto it = kernels_.find(k); it != kernels_.end()) return it->second;
    cudaKernel_t fn = nullptr;
    cuda_detail::check(cudaLibraryGetKernel(&fn, lib, entry.c_str()), "kernel '" + entry + "' of a generated library");
    kernels_.emplace(k, fn);
    return fn;
  }

  /// The library of `source` for `arch`: loaded already, read from the disk cache, or compiled.
  cudaLibrary_t library(const std::string& source, int arch) {
    const std::string key = "// gpass kernel library, sm_" + std::to_string(arch) + ", nvrtc " +
                            std::to_string(nvrtc_version()) + "\n" + source;
    {
      std::lock_guard lock(mu_);
      if (auto it = loaded_.find(key); it != loaded_.end()) {
        ++stats_.memory_hits;
        return it->second;
      }
    }
    // compiled outside the lock: other kernels may load meanwhile (two threads compiling the
    // same source both load it; the second is dropped below)
    const auto t0 = std::chrono::steady_clock::now();
    std::string cubin = read_disk(key);
    const bool from_disk = !cubin.empty();
    const auto t1 = std::chrono::steady_clock::now();
    if (!from_disk) {
      cubin = nvrtc_compile(source, "gpass_generated.cu", arch, nvrtc_target::cubin);
      write_disk(key, cubin);
    }
    const auto t2 = std::chrono::steady_clock::now();
    cudaLibrary_t lib = nullptr;
    cudaError_t loaded = cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    if (loaded != cudaSuccess && from_disk) {
      // a damaged cache entry (a disk that filled up while it was written): drop it, compile
      (void)cudaGetLastError();
      remove_disk(key);
      cubin = nvrtc_compile(source, "gpass_generated.cu", arch, nvrtc_target::cubin);
      write_disk(key, cubin);
      loaded = cudaLibraryLoadData(&lib, cubin.data(), nullptr, nullptr, 0, nullptr, nullptr, 0);
    }
    cuda_detail::check(loaded, "loading a generated library");
    const auto t3 = std::chrono::steady_clock::now();
    std::lock_guard lock(mu_);
    if (from_disk) ++stats_.disk_hits;
    else ++stats_.compiled;
    stats_.compile_seconds += std::chrono::duration<double>(t2 - t1).count();
    stats_.load_seconds += std::chrono::duration<double>((t1 - t0) + (t3 - t2)).count();
    auto [it, inserted] = loaded_.emplace(key, lib);
    if (!inserted) cudaLibraryUnload(lib);
    return it->second;
  }

  statistics stats() const {
    std::lock_guard lock(mu_);
    return stats_;
  }

  /// The disk cache directory; empty when disabled.
  static std::filesystem::path directory() {
    if (const char* d = std::getenv("GPASS_CUDA_CACHE_DIR")) {
      if (std::string_view(d) == "off" || !*d) return {};
      return d;
    }
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "gpass" / "cuda";
    if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "gpass" / "cuda";
    return {};
  }

 private:
  cuda_kernel_cache() = default;

  static std::uint64_t fnv1a(std::string_view s) noexcept {
    std::uint64_t h = 1469598103934665603ull;
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
  }
  static std::string file_stem(const std::string& key) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(key)));
    return buf;
  }
  static std::string read_all(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    if (!f) return {};
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  // A cache miss or an unreadable cache reads as empty: the source is compiled instead.
  static std::string read_disk(const std::string& key) {
    const auto dir = directory();
    if (dir.empty()) return {};
    const std::string stem = file_stem(key);
    if (read_all(dir / (stem + ".key")) != key) return {};
    return read_all(dir / (stem + ".cubin"));
  }
  // Best effort: a cache that cannot be written only costs the next process a compile.
  static void write_disk(const std::string& key, const std::string& cubin) {
    const auto dir = directory();
    if (dir.empty()) return;
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) return;
    const std::string stem = file_stem(key);
    static std::atomic<std::uint64_t> counter{0};
    const std::string tmp = "." + stem + ".tmp" + std::to_string(counter.fetch_add(1)) + "." +
                            std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
    auto put = [&](const std::string& name, const std::string& bytes) {
      {
        std::ofstream f(dir / tmp, std::ios::binary | std::ios::trunc);
        if (!f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()))) return false;
        f.close();  // errors of the last flush (a full disk) show here
        if (f.fail()) return false;
      }
      std::filesystem::rename(dir / tmp, dir / name, ec);
      return !ec;
    };
    // the binary first: a reader checks the key, which appears last
    if (put(stem + ".cubin", cubin)) put(stem + ".key", key);
    std::filesystem::remove(dir / tmp, ec);
  }

  static void remove_disk(const std::string& key) {
    const auto dir = directory();
    if (dir.empty()) return;
    std::error_code ec;
    const std::string stem = file_stem(key);
    std::filesystem::remove(dir / (stem + ".key"), ec);
    std::filesystem::remove(dir / (stem + ".cubin"), ec);
  }

  mutable std::mutex mu_;
  std::map<std::string, cudaLibrary_t, std::less<>> loaded_;
  std::map<std::pair<cudaLibrary_t, std::string>, cudaKernel_t> kernels_;
  statistics stats_;
};

}  // namespace gpass::exec
