// SPDX-License-Identifier: Apache-2.0
// cuBLASLt and NVRTC are opened when first used, not when the program starts (no GPU needed):
// a process that has not used them has neither mapped, and every function gpass calls
// resolves from the toolkit's libraries; a missing library is a clear gpass::error.

#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include <gpass/exec/cuda.hpp>

namespace gpass_test_cuda_dynload {

namespace dl = gpass::exec::cuda_dynload;

// whether a file whose name contains `name` is mapped into this process
bool mapped(const std::string& name) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find(name) != std::string::npos) return true;
  return false;
}

TEST_CASE("cuda.dynload: cuBLASLt and NVRTC are mapped only once opened, and every function gpass calls resolves") {
  // gpass never links them: mapped exactly when gpass has opened them (other test cases of
  // this process may have)
  CHECK(mapped("libcublasLt") == dl::cublaslt().loaded());
  CHECK(mapped("libnvrtc.so") == dl::nvrtc().loaded());

  REQUIRE(dl::cublaslt().available());
  CHECK(mapped("libcublasLt"));
  MESSAGE("cuBLASLt: " << dl::cublaslt().path() << ", NVRTC: " << (dl::nvrtc().available() ? dl::nvrtc().path() : "-"));
  CHECK(GPASS_CUBLASLT(cublasLtGetVersion)() / 10000 == CUBLAS_VER_MAJOR);
  // the functions the policy and the products call
  CHECK((GPASS_CUBLASLT(cublasLtCreate) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtDestroy) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtGetStatusName) != nullptr));
  CHECK(std::string(GPASS_CUBLASLT(cublasLtGetStatusString)(CUBLAS_STATUS_NOT_INITIALIZED)).size() > 0);
  CHECK((GPASS_CUBLASLT(cublasLtMatrixLayoutCreate) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatrixLayoutDestroy) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatrixLayoutSetAttribute) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmulDescCreate) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmulDescDestroy) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmulDescSetAttribute) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmulPreferenceCreate) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmulPreferenceDestroy) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmulPreferenceSetAttribute) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmulAlgoGetHeuristic) != nullptr));
  CHECK((GPASS_CUBLASLT(cublasLtMatmul) != nullptr));
  // a layout needs no GPU: made and destroyed through the loaded library
  cublasLtMatrixLayout_t layout = nullptr;
  CHECK(GPASS_CUBLASLT(cublasLtMatrixLayoutCreate)(&layout, CUDA_R_32F, 4, 3, 4) == CUBLAS_STATUS_SUCCESS);
  CHECK(GPASS_CUBLASLT(cublasLtMatrixLayoutDestroy)(layout) == CUBLAS_STATUS_SUCCESS);

  REQUIRE(dl::nvrtc().available());
  CHECK(mapped("libnvrtc.so"));
  CHECK(gpass::exec::nvrtc_version() / 1000 == CUDART_VERSION / 1000);
  CHECK(!gpass::exec::nvrtc_compile("extern \"C\" __global__ void k(float* p) { p[0] = 1; }", "k.cu", 90,
                                    gpass::exec::nvrtc_target::ptx)
             .empty());
}

TEST_CASE("cuda.dynload: a library that cannot be opened is an error naming it, raised where it is needed") {
  const dl::shared_library missing("libgpass-missing", {"", "/nonexistent/libgpass-missing.so.1", "libgpass-missing.so"});
  CHECK(!missing.loaded());
  CHECK(!missing.available());
  CHECK(missing.path().empty());
  CHECK_THROWS_WITH_AS(missing.symbol("f"), doctest::Contains("cuda: cannot load libgpass-missing: /nonexistent/libgpass-missing.so.1"),
                       gpass::error);
  REQUIRE(dl::nvrtc().available());
  CHECK_THROWS_WITH_AS(dl::nvrtc().symbol("nvrtcNoSuchFunction"), doctest::Contains("has no symbol nvrtcNoSuchFunction"), gpass::error);
}

}  // namespace gpass_test_cuda_dynload
