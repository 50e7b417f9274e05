// SPDX-License-Identifier: Apache-2.0
#pragma once
// The binding library under gpass's Python module: nanobind (what `pip install .` builds
// with, from the build requirements) or pybind11 (Debian's pybind11-dev, which builds the
// module offline for scripts/test.sh). The module is written once against the names both
// share (`py::class_`, `py::arg`, `py::dict`, `py::cast` ...); the few that differ are here.
// Arrays cross through the Python buffer protocol (input) and these `to_numpy` functions
// (output), never through either library's array caster, so both builds behave the same.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#if defined(GPASS_PY_NANOBIND)
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
namespace py = nanobind;
#define GPASS_PY_MODULE(name, m) NB_MODULE(name, m)
#define GPASS_PY_PROP_RO def_prop_ro
#define GPASS_PY_BINDING "nanobind"
#else
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
namespace py = pybind11;
#define GPASS_PY_MODULE(name, m) PYBIND11_MODULE(name, m)
#define GPASS_PY_PROP_RO def_property_readonly
#define GPASS_PY_BINDING "pybind11"
#endif

namespace gpass_python {

inline py::module_ import_module(const char* name) {
#if defined(GPASS_PY_NANOBIND)
  return py::module_::import_(name);
#else
  return py::module_::import(name);
#endif
}

/// Registers `E` (a C++ exception type) as the Python exception `name`, a subclass of `base`.
template <class E>
void register_exception(py::module_& m, const char* name, PyObject* base) {
#if defined(GPASS_PY_NANOBIND)
  py::exception<E>(m, name, base);
#else
  py::register_exception<E>(m, name, base);
#endif
}

/// A Python str of a C++ string (nanobind's str takes no std::string).
inline py::str str_of(std::string_view s) { return py::str(s.data(), s.size()); }

/// A NumPy element type: its name and, for nanobind, its DLPack code and bits.
struct numpy_dtype {
  const char* name;  // "float32", "bool", ...
  std::uint8_t dlpack_code;
  std::uint8_t bits;
};

/// A C-contiguous NumPy array over `data` (shape `sizes`), kept alive by `owner` (a capsule
/// that owns the memory): no copy.
inline py::object to_numpy(const numpy_dtype& dt, const std::vector<std::int64_t>& sizes, void* data, py::handle owner) {
#if defined(GPASS_PY_NANOBIND)
  std::vector<std::size_t> shape(sizes.begin(), sizes.end());
  py::dlpack::dtype t{dt.dlpack_code, dt.bits, 1};
  py::ndarray<py::numpy> a(data, shape.size(), shape.data(), owner, nullptr, t);
  return a.cast();
#else
  // Strides are given, not derived from the dtype: pybind11 before 2.12 reads the item size
  // from NumPy 1's descriptor layout, which under NumPy 2 gives 0 (every element aliased).
  std::vector<py::ssize_t> shape(sizes.begin(), sizes.end()), strides(sizes.size());
  py::ssize_t step = dt.bits / 8;
  for (std::size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return py::array(py::dtype(dt.name), shape, strides, data, owner);
#endif
}

/// A capsule that deletes `p` (a `T*`) when Python drops it.
template <class T>
py::capsule owning_capsule(T* p) {
#if defined(GPASS_PY_NANOBIND)
  return py::capsule(p, [](void* q) noexcept { delete static_cast<T*>(q); });
#else
  return py::capsule(p, [](void* q) { delete static_cast<T*>(q); });
#endif
}

}  // namespace gpass_python
