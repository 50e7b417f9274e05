// SPDX-License-Identifier: Apache-2.0
// gpass._gpass: the C++ side of the Python module `gpass` (python/gpass/__init__.py is the
// public face). A Graph holds a gpass::graph<>; loading, printing, saving, pass pipelines
// and shape inference work on it in place; `run` compiles it once (a copy, shapes inferred)
// into an Eigen CPU plan, kept until the graph changes, and runs it on NumPy arrays read
// through the buffer protocol without a copy (C-contiguous, aligned, a numeric dtype); the
// results are NumPy arrays over the executor's buffers, again without a copy. A Session is a
// gpass::session over CPU devices, and GPUs first when asked for (`gpus`: a module built with
// the cuda component, GPASS_PY_CUDA; a machine without a GPU has only the CPU devices). gpass::error becomes gpass.Error; the GIL is released
// while a pass pipeline or a run works.
#include <Python.h>

#ifndef GPASS_PY_CUDA
#define GPASS_PY_CUDA 0  // 1: built with the cuda component (python/CMakeLists.txt)
#endif

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <gpass/all.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/io/format.hpp>
#include <gpass/io/onnx.hpp>
#include <gpass/io/onnx_tensor_file.hpp>
#include <gpass/io/saved_model.hpp>
#include <gpass/io/tensorflow.hpp>
#include <gpass/io/tf_signature.hpp>
#include <gpass/passes/optimize.hpp>
#include <gpass/passes/tf.hpp>
#include <gpass/session.hpp>
#include <gpass/version.hpp>
#if GPASS_PY_CUDA
#include <gpass/session/cuda_devices.hpp>
#endif

#include "binding.hpp"

namespace gpass_python {

using graph_t = gpass::graph<>;
namespace ex = gpass::exec;

// ---- arrays <-> tensors ----------------------------------------------------------------

// What a fed value is called in errors ("run: input 'x'"), spelled out only for an error.
struct feed_label {
  std::string_view prefix, name;
  std::string str() const { return std::string(prefix) + " '" + std::string(name) + "'"; }
};

// The gpass dtype of a buffer-protocol format string with item size `itemsize` (native byte
// order); undefined when there is none.
gpass::dtype dtype_of_format(std::string_view f, std::size_t itemsize) {
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '|' ||
                     (f[0] == '<' && std::endian::native == std::endian::little)))
    f.remove_prefix(1);
  using gpass::dtype;
  auto by_size = [&](bool is_signed) {
    switch (itemsize) {
      case 1: return is_signed ? dtype::int8 : dtype::uint8;
      case 2: return is_signed ? dtype::int16 : dtype::uint16;
      case 4: return is_signed ? dtype::int32 : dtype::uint32;
      case 8: return is_signed ? dtype::int64 : dtype::uint64;
      default: return dtype::undefined;
    }
  };
  dtype t = dtype::undefined;
  if (f == "?") t = dtype::bool_;
  else if (f == "b" || f == "h" || f == "i" || f == "l" || f == "q") t = by_size(true);
  else if (f == "B" || f == "H" || f == "I" || f == "L" || f == "Q") t = by_size(false);
  else if (f == "e") t = dtype::f16;
  else if (f == "f") t = dtype::f32;
  else if (f == "d") t = dtype::f64;
  else if (f == "Zf") t = dtype::complex64;
  else if (f == "Zd") t = dtype::complex128;
  return t != dtype::undefined && gpass::size_of(t) == itemsize ? t : dtype::undefined;
}

numpy_dtype numpy_dtype_of(gpass::dtype t) {
  using gpass::dtype;
  switch (t) {
    case dtype::bool_: return {"bool", 6, 8};
    case dtype::int8: return {"int8", 0, 8};
    case dtype::int16: return {"int16", 0, 16};
    case dtype::int32: return {"int32", 0, 32};
    case dtype::int64: return {"int64", 0, 64};
    case dtype::uint8: return {"uint8", 1, 8};
    case dtype::uint16: return {"uint16", 1, 16};
    case dtype::uint32: return {"uint32", 1, 32};
    case dtype::uint64: return {"uint64", 1, 64};
    case dtype::f16: return {"float16", 2, 16};
    case dtype::f32: return {"float32", 2, 32};
    case dtype::f64: return {"float64", 2, 64};
    case dtype::complex64: return {"complex64", 5, 64};
    case dtype::complex128: return {"complex128", 5, 128};
    default: break;
  }
  throw gpass::error("no NumPy element type for gpass dtype " + std::string(gpass::to_string(t)));
}

// A tensor over a C-contiguous buffer-protocol object (a NumPy array) of a gpass element
// type in native byte order, sharing its memory: the buffer is released (with the GIL taken,
// from whichever thread drops the last reference) when no tensor refers to it any more.
// Unaligned memory is copied. Nothing when `obj` exports no such buffer.
std::optional<gpass::tensor> tensor_from_buffer(py::handle obj, gpass::dtype expected) {
  if (!PyObject_CheckBuffer(obj.ptr())) return std::nullopt;
  auto view = std::make_unique<Py_buffer>();
  if (PyObject_GetBuffer(obj.ptr(), view.get(), PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    return std::nullopt;
  }
  std::unique_ptr<Py_buffer, void (*)(Py_buffer*)> guard(view.release(), [](Py_buffer* b) {
    PyBuffer_Release(b);
    delete b;
  });
  Py_buffer* b = guard.get();
  gpass::dtype t = dtype_of_format(b->format ? b->format : "B", static_cast<std::size_t>(b->itemsize));
  if (t == gpass::dtype::undefined) return std::nullopt;
  // NumPy has no bfloat16: a bf16 input takes uint16 bit patterns (as ONNX's test data stores them)
  if (expected == gpass::dtype::bf16 && t == gpass::dtype::uint16) t = gpass::dtype::bf16;
  std::vector<std::int64_t> sizes(b->shape, b->shape + b->ndim);
  if (b->ndim == 0 && b->len != b->itemsize) sizes = {b->len / b->itemsize};
  const auto address = reinterpret_cast<std::uintptr_t>(b->buf);
  if (b->len == 0 || address % static_cast<std::uintptr_t>(b->itemsize) != 0) {
    gpass::tensor copy = gpass::tensor::uninitialized(t, sizes);
    if (b->len > 0) std::memcpy(copy.raw(), b->buf, static_cast<std::size_t>(b->len));
    return copy;
  }
  std::shared_ptr<std::byte[]> bytes(static_cast<std::byte*>(b->buf), [b = guard.release()](std::byte*) {
    PyGILState_STATE s = PyGILState_Ensure();
    PyBuffer_Release(b);
    delete b;
    PyGILState_Release(s);
  });
  return gpass::tensor::wrap(t, std::move(sizes), std::move(bytes));
}

// A tensor of Python strings from a NumPy array of kind 'U', 'S' or 'O' (copied).
gpass::tensor string_tensor(py::handle arr, const std::string& what) {
  py::object shape = arr.attr("shape");
  std::vector<std::int64_t> sizes;
  for (py::handle d : shape) sizes.push_back(py::cast<std::int64_t>(d));
  gpass::tensor t(gpass::dtype::string, sizes);
  std::int64_t i = 0;
  std::string* out = t.data<std::string>();
  for (py::handle s : arr.attr("ravel")().attr("tolist")()) {
    if (PyBytes_Check(s.ptr())) out[i++] = std::string(PyBytes_AsString(s.ptr()), static_cast<std::size_t>(PyBytes_Size(s.ptr())));
    else if (PyUnicode_Check(s.ptr())) out[i++] = py::cast<std::string>(s);
    else throw gpass::error(what + ": an object array may hold only str or bytes");
  }
  return t;
}

bool is_string_array(py::handle obj) {
  if (!py::hasattr(obj, "dtype")) return false;
  const std::string kind = py::cast<std::string>(obj.attr("dtype").attr("kind"));
  return kind == "U" || kind == "S" || kind == "O";
}

// A fed value: a NumPy array (numeric, C-contiguous, native byte order: shared, not copied;
// strings: copied), a list of arrays (a sequence), None (an omitted optional input), or
// anything numpy.asarray takes (converted to the input's declared element type when known).
ex::value value_from_python(py::handle obj, const feed_label& what, gpass::dtype expected) {
  if (obj.is_none()) return {};
  if (auto t = tensor_from_buffer(obj, expected)) return std::move(*t);
  if (PyList_Check(obj.ptr()) || PyTuple_Check(obj.ptr())) {
    bool arrays = py::len(obj) > 0;
    for (py::handle x : obj) arrays = arrays && PyObject_CheckBuffer(x.ptr());
    if (arrays) {
      std::vector<gpass::tensor> seq;
      for (py::handle x : obj) {
        ex::value v = value_from_python(x, what, gpass::dtype::undefined);
        if (!v.is_tensor()) throw gpass::error(what.str() + ": a sequence holds arrays only");
        seq.push_back(std::move(v.tensor()));
      }
      return seq;
    }
  }
  if (is_string_array(obj)) return string_tensor(obj, what.str());
  py::object np = import_module("numpy");
  py::object arr;
  if (expected != gpass::dtype::undefined && expected != gpass::dtype::string && gpass::is_trivial(expected))
    arr = np.attr("asarray")(obj, py::arg("dtype") = str_of(expected == gpass::dtype::bf16 ? "uint16" : numpy_dtype_of(expected).name));
  else
    arr = np.attr("asarray")(obj);
  if (is_string_array(arr)) return string_tensor(arr, what.str());
  arr = np.attr("ascontiguousarray")(arr, py::arg("dtype") = arr.attr("dtype").attr("newbyteorder")(str_of("=")));
  if (auto t = tensor_from_buffer(arr, expected)) return std::move(*t);
  throw gpass::error(what.str() + ": arrays of dtype " + py::cast<std::string>(py::str(arr.attr("dtype"))) +
                     " have no gpass element type (bool, int8-64, uint8-64, float16/32/64, complex64/128 and str do)");
}

// A NumPy array of `t` over its buffer (no copy; bf16 is widened to float32, strings copied).
py::object tensor_to_python(gpass::tensor t) {
  if (t.element_type() == gpass::dtype::string) {
    py::list items;
    for (const std::string& s : t.values<std::string>()) items.append(py::str(s.data(), s.size()));
    py::object np = import_module("numpy");
    py::list shape;
    for (auto d : t.sizes()) shape.append(py::int_(d));
    return np.attr("array")(items, py::arg("dtype") = np.attr("object_")).attr("reshape")(py::tuple(shape));
  }
  if (t.element_type() == gpass::dtype::bf16) {
    gpass::tensor w(gpass::dtype::f32, t.sizes());
    auto src = t.values<Eigen::bfloat16>();
    auto dst = w.values<float>();
    for (std::size_t i = 0; i < src.size(); ++i) dst[i] = static_cast<float>(src[i]);
    t = std::move(w);
  }
  const numpy_dtype dt = numpy_dtype_of(t.element_type());
  if (t.size() == 0 || !t.raw()) t = gpass::tensor(t.element_type(), t.sizes());  // an allocated (empty) buffer
  auto* keep = new gpass::tensor(std::move(t));
  py::capsule owner = owning_capsule(keep);
  return to_numpy(dt, keep->sizes(), keep->raw(), owner);
}

py::object value_to_python(ex::value v) {
  if (v.is_none()) return py::none();
  if (v.is_sequence()) {
    py::list r;
    for (auto& t : v.sequence()) r.append(tensor_to_python(std::move(t)));
    return std::move(r);
  }
  return tensor_to_python(std::move(v.tensor()));
}

// An output that shares a fed array's memory (an Identity's result) is copied, so that
// writing to a result never changes an input, as in ONNX Runtime.
void unshare_outputs(std::vector<ex::value>& out, const std::vector<ex::value>& in) {
  for (auto& o : out) {
    if (!o.is_tensor() || !o.tensor().raw()) continue;
    for (const auto& i : in)
      if (i.is_tensor() && i.tensor().buffer() && o.tensor().raw() >= i.tensor().raw() &&
          o.tensor().raw() < i.tensor().raw() + std::max<std::size_t>(1, i.tensor().nbytes())) {
        o = o.tensor().clone();
        break;
      }
  }
}

// ---- types as Python values ----------------------------------------------------------------

// (dtype name, shape) of a tensor type: dims are ints, str (a symbol) or None (unknown);
// the shape is None when the rank is unknown.
py::tuple type_to_python(const gpass::type& t) {
  if (!t.is_tensor()) return py::make_tuple(str_of(t.to_string()), py::none());
  const auto& tt = t.tensor();
  py::object shape = py::none();
  if (tt.shape.has_rank()) {
    py::list dims;
    for (std::size_t d = 0; d < tt.shape.rank(); ++d) {
      const gpass::dim& x = tt.shape[d];
      if (x.is_known()) dims.append(py::int_(x.value()));
      else if (x.is_unknown()) dims.append(py::none());
      else dims.append(str_of(x.to_string()));
    }
    shape = std::move(dims);
  }
  return py::make_tuple(str_of(std::string(gpass::to_string(tt.element))), shape);
}

// ---- Graph ----------------------------------------------------------------------------

void register_passes_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto& reg = gpass::pass_registry<graph_t>::global();
    gpass::register_tf_passes(reg);
    gpass::register_optimizer_passes(reg);
  });
}

bool has_extension(const std::string& path, std::string_view ext) {
  return path.size() >= ext.size() && path.compare(path.size() - ext.size(), ext.size(), ext) == 0;
}

// A run-ready copy of a graph: shapes inferred (when they can be), an Eigen CPU plan.
struct compiled {
  graph_t g;
  std::unique_ptr<ex::eigen_cpu> cpu;
  std::unique_ptr<ex::plan<ex::eigen_cpu>> plan;
  int threads = 1;
};

class graph_handle {
 public:
  graph_handle() = default;
  explicit graph_handle(graph_t g) : g_(std::move(g)) {}
  // (the compiled plan is not carried over: a copy compiles its own)
  graph_handle(const graph_handle& o) : g_(o.g_) {}
  graph_handle(graph_handle&& o) noexcept : g_(std::move(o.g_)) {}
  graph_handle& operator=(const graph_handle&) = delete;

  static graph_handle load(const std::string& path, const std::string& format, const std::vector<std::string>& feeds,
                           const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
                           const std::string& signature, const std::vector<std::string>& tags) {
    namespace fs = std::filesystem;
    if (!fs::exists(path)) throw gpass::error("cannot open '" + path + "': no such file");
    const std::string f = format.empty() ? gpass::model_format_of(path) : format;
    const bool bound = !feeds.empty() || !fetches.empty() || !targets.empty();
    if (bound && f != "tf") throw gpass::error("load('" + path + "'): feeds, fetches and targets apply to a TensorFlow GraphDef");
    if (f == "onnx") return graph_handle(gpass::read_onnx_file<graph_t>(path));
    if (f == "tf") {
      graph_t g = gpass::read_tf_graph_file<graph_t>(path);
      if (bound) gpass::bind_tf_signature(g, {.feeds = feeds, .fetches = fetches, .targets = targets});
      return graph_handle(std::move(g));
    }
    if (f == "gir") return graph_handle(gpass::read_text_file<graph_t>(path));
    if (f == "saved_model") {
      // read with its variables, bound to the signature, then through tf-frontend (its calls
      // inlined, control flow and variables lowered): ready to run
      graph_t g = gpass::read_tf_saved_model<graph_t>(path, {.signature = signature, .tags = tags});
      gpass::pass_context ctx;
      gpass::tf_frontend(g, ctx);
      return graph_handle(std::move(g));
    }
    throw gpass::error("load('" + path + "'): unknown format '" + f + "' (onnx, tf, saved_model, gir)");
  }

  static graph_handle parse(const std::string& text, const std::string& source) {
    return graph_handle(gpass::parse_text<graph_t>(text, source));
  }

  std::string text(int elide) const {
    std::ostringstream os;
    gpass::write_text(os, g_, {.elide_elements_over = elide});
    return os.str();
  }

  void save(const std::string& path, const std::string& format) const {
    const std::string f = !format.empty() ? format : has_extension(path, ".onnx") ? "onnx" : "gir";
    if (f == "onnx") {
      gpass::write_onnx_file(g_, path);
      return;
    }
    if (f != "gir") throw gpass::error("save('" + path + "'): unknown format '" + f + "' (onnx, gir)");
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    gpass::write_text(out, g_);
    out.flush();
    if (!out) throw gpass::error("cannot write '" + path + "'");
  }

  // Runs a pipeline (`passes`, after the `O<level>` pipeline when level > 0) in place;
  // returns (statistics, diagnostics as (severity, pass, node, message)).
  py::tuple optimize(const std::string& passes, int level, bool verify_each) {
    if (level < 0 || level > 3) throw gpass::error("optimize: level must be 0 to 3, got " + std::to_string(level));
    register_passes_once();
    std::string text = passes;
    if (level > 0) text = "O" + std::to_string(level) + (text.empty() ? "" : "," + text);
    gpass::pass_context ctx;
    if (!text.empty()) {
      py::gil_scoped_release unlocked;
      auto pipe = gpass::pass_registry<graph_t>::global().parse(text, gpass::held_facts_of(g_));
      gpass::instrumentation_options io;
      io.verify_each = verify_each;
      pipe.run(g_, ctx, io);
    } else if (verify_each) {
      gpass::verify(g_);
    }
    changed();
    return report(ctx);
  }

  void infer_shapes() {
    register_passes_once();
    gpass::pass_context ctx;
    gpass::infer_shapes(g_, ctx);
    changed();
  }

  void verify() const { gpass::verify(g_); }

  py::list inputs() const {
    const gpass::graph_interface io = gpass::interface_of(g_);
    py::list r;
    for (std::size_t i = 0; i < io.inputs.size(); ++i) {
      py::tuple t = type_to_python(io.input_types[i]);
      bool has_default = false;
      if (auto v = g_.find(io.inputs[i])) {
        auto it = g_[*v].attrs.find("default");
        has_default = it != g_[*v].attrs.end() && it->second.template is<gpass::tensor>();
      }
      r.append(py::make_tuple(str_of(io.inputs[i]), t[0], t[1], py::bool_(has_default)));
    }
    return r;
  }
  std::vector<std::string> outputs() const { return gpass::interface_of(g_).outputs; }

  py::dict op_counts() const {
    py::dict r;
    for (const auto& [k, n] : gpass::op_counts(g_)) r[str_of(k)] = py::int_(n);
    return r;
  }

  std::size_t num_nodes() const { return g_.num_nodes(); }

  graph_handle copy() const { return graph_handle(g_); }

  // Runs the graph on the Eigen CPU executor: feeds by input name, results by output name.
  py::dict run(py::dict feeds, int threads) {
    std::shared_ptr<compiled> c = compile(threads);
    std::vector<ex::value> in = inputs_from(feeds, *c);
    std::vector<ex::value> out;
    {
      py::gil_scoped_release unlocked;
      out = c->plan->run(in);
    }
    unshare_outputs(out, in);
    py::dict r;
    const auto& names = c->plan->output_names();
    for (std::size_t k = 0; k < out.size(); ++k)
      r[str_of(k < names.size() ? names[k] : "output_" + std::to_string(k))] = value_to_python(std::move(out[k]));
    return r;
  }

  // The mean time of `repeat` runs of the compiled plan on `feeds`, timed in C++ (the
  // baseline of the Python call overhead): seconds per run.
  double time_runs(py::dict feeds, int repeat, int threads) {
    std::shared_ptr<compiled> c = compile(threads);
    std::vector<ex::value> in = inputs_from(feeds, *c);
    py::gil_scoped_release unlocked;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < repeat; ++i) (void)c->plan->run(in);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / std::max(1, repeat);
  }

  py::dict plan_stats(int threads) {
    std::shared_ptr<compiled> c = compile(threads);
    const auto& st = c->plan->stats();
    py::dict r;
    r["steps"] = py::int_(st.steps);
    r["pruned"] = py::int_(st.pruned);
    r["planned_buffers"] = py::int_(st.planned_buffers);
    r["planned_peak_bytes"] = py::int_(st.planned_peak_bytes);
    r["dynamic_buffers"] = py::int_(st.dynamic_buffers);
    return r;
  }

  const graph_t& graph() const noexcept { return g_; }

 private:
  void changed() {
    std::lock_guard lock(mutex_);
    compiled_.reset();
  }

  std::shared_ptr<compiled> compile(int threads) {
    std::lock_guard lock(mutex_);
    if (compiled_ && compiled_->threads == std::max(1, threads)) return compiled_;
    auto c = std::make_shared<compiled>();
    c->g = g_;
    c->threads = std::max(1, threads);
    try {
      gpass::pass_context ctx;
      gpass::infer_shapes(c->g, ctx);
    } catch (const gpass::error&) {
      // run without static sizes: no buffer plan, the kernels check at run time
    }
    c->cpu = std::make_unique<ex::eigen_cpu>(ex::eigen_cpu::options{.threads = c->threads});
    c->plan = std::make_unique<ex::plan<ex::eigen_cpu>>(c->g, *c->cpu);
    compiled_ = c;
    return c;
  }

  static std::vector<ex::value> inputs_from(py::dict feeds, const compiled& c) {
    const auto& names = c.plan->input_names();
    const auto& types = c.plan->input_types();
    std::vector<ex::value> in(names.size());
    for (auto [k, v] : feeds) {
      const std::string name = py::cast<std::string>(k);
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end() && name.find(':') != std::string::npos) {
        // a TensorFlow tensor name: the fed Placeholder "x" as "x:0", another tensor's arg
        // (bind_tf_signature's `_arg_<node>_<port>`) as "node:port"
        const std::size_t colon = name.rfind(':');
        const std::string node = name.substr(0, colon), port = name.substr(colon + 1);
        it = std::find(names.begin(), names.end(), port == "0" ? node : std::string());
        if (it == names.end()) it = std::find(names.begin(), names.end(), "_arg_" + node + "_" + port);
      }
      if (it == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "'" : ", '") + n + "'";
        throw gpass::error("run: the graph has no input '" + name + "' (its inputs: " + list + ")",
                           gpass::error_context{.node = name, .op = "arg"});
      }
      const auto i = static_cast<std::size_t>(it - names.begin());
      const gpass::dtype expected = types[i].is_tensor() ? types[i].tensor().element : gpass::dtype::undefined;
      in[i] = value_from_python(v, feed_label{"run: input", name}, expected);
    }
    return in;
  }

  static py::tuple report(const gpass::pass_context& ctx) {
    py::dict stats;
    for (const auto& [k, v] : ctx.statistics()) stats[str_of(k)] = py::int_(v);
    py::list diags;
    for (const auto& d : ctx.diagnostics()) {
      const char* sev = d.severity == gpass::severity::warning ? "warning" : d.severity == gpass::severity::error ? "error" : "note";
      diags.append(py::make_tuple(py::str(sev), str_of(d.pass), str_of(d.node), str_of(d.message)));
    }
    return py::make_tuple(stats, diags);
  }

  graph_t g_;
  std::mutex mutex_;
  std::shared_ptr<compiled> compiled_;
};

// ---- Session ----------------------------------------------------------------------------

class session_handle {
 public:
  session_handle(const graph_handle& g, int devices, int threads, const std::string& place, bool allow_soft_placement,
                 bool log_device_placement, const std::string& passes, int gpus, bool allow_tf32) {
    if (devices < 1) throw gpass::error("Session: devices must be >= 1, got " + std::to_string(devices));
    if (gpus < 0) throw gpass::error("Session: gpus must be >= 0, got " + std::to_string(gpus));
    register_passes_once();
    gpass::session_options<graph_t> so;
    if (gpus > 0) {
#if GPASS_PY_CUDA
      // the GPUs there are (up to `gpus`), then the CPU devices
      for (auto& d : gpass::cuda_devices<graph_t>({.max_gpus = gpus, .cpu_threads = threads, .allow_tf32 = allow_tf32}))
        if (d->name().type != "CPU") so.devices.push_back(std::move(d));
#else
      (void)allow_tf32;
      throw gpass::error("Session: gpus=" + std::to_string(gpus) + ", but this gpass module was built without the cuda component");
#endif
    }
    for (auto& d : gpass::cpu_devices<graph_t>(devices, threads)) so.devices.push_back(std::move(d));
    so.placement.allow_soft_placement = allow_soft_placement;
    so.placement.log_device_placement = log_device_placement;
    if (place == "round-robin") so.placement.spread = gpass::placement_options::spread_kind::round_robin;
    else if (place != "first") throw gpass::error("Session: place must be 'first' or 'round-robin', got '" + place + "'");
    if (!passes.empty()) {
      auto pipe = std::make_shared<gpass::dynamic_pipeline<graph_t>>(gpass::pass_registry<graph_t>::global().parse(passes));
      so.prepare = [pipe](graph_t& h) {
        gpass::pass_context ctx;
        pipe->run(h, ctx, gpass::instrumentation_options{});
      };
    }
    outputs_ = gpass::interface_of(g.graph()).outputs;
    sess_ = std::make_unique<gpass::session<graph_t>>(g.graph(), std::move(so));
  }

  // TensorFlow's Session.run: fetches by name (tensor "node:port", an ONNX output name, a
  // graph input), feeds by name, targets run for their effects.
  py::list run(const std::vector<std::string>& fetches, py::dict feeds, const std::vector<std::string>& targets) {
    std::vector<std::pair<std::string, ex::value>> in;
    for (auto [k, v] : feeds) {
      const std::string name = py::cast<std::string>(k);
      in.emplace_back(name, value_from_python(v, feed_label{"Session.run: feed", name}, gpass::dtype::undefined));
    }
    std::vector<ex::value> out;
    {
      py::gil_scoped_release unlocked;
      out = sess_->run(in, fetches, targets);
    }
    std::vector<ex::value> fed;
    for (auto& [n, v] : in) fed.push_back(v);
    unshare_outputs(out, fed);
    py::list r;
    for (auto& v : out) r.append(value_to_python(std::move(v)));
    return r;
  }

  std::vector<std::string> outputs() const { return outputs_; }
  std::vector<std::string> device_names() const { return sess_->device_names(); }
  py::dict placement() const {
    py::dict r;
    for (const auto& [node, dev] : sess_->last_placement()) r[str_of(node)] = str_of(dev);
    return r;
  }
  std::size_t compilations() const { return sess_->compilations(); }

 private:
  std::vector<std::string> outputs_;
  std::unique_ptr<gpass::session<graph_t>> sess_;
};

// ---- module functions ----------------------------------------------------------------------

py::list list_passes() {
  register_passes_once();
  auto& reg = gpass::pass_registry<graph_t>::global();
  py::list r;
  for (const auto& name : reg.names()) {
    const auto* p = reg.find(name);
    py::list opts;
    if (p)
      for (const auto& o : p->info().options) opts.append(str_of(gpass::describe_option(o)));
    r.append(py::make_tuple(str_of(name), str_of(p ? std::string(p->description()) : std::string()), opts));
  }
  for (const auto& name : reg.pipeline_names()) {
    const auto* p = reg.find_pipeline(name);
    r.append(py::make_tuple(str_of(name), str_of(p ? "= " + p->text : std::string()), py::list()));
  }
  return r;
}

py::object read_tensor(const std::string& path, const std::string& format) {
  if (!std::filesystem::exists(path)) throw gpass::error("cannot open '" + path + "': no such file");
  if (format == "tf") return tensor_to_python(gpass::read_tf_tensor_file(path));
  if (format != "onnx") throw gpass::error("read_tensor('" + path + "'): format must be 'onnx' or 'tf', got '" + format + "'");
  return tensor_to_python(gpass::read_onnx_tensor_file(path));
}

}  // namespace gpass_python

GPASS_PY_MODULE(_gpass, m) {
  using namespace gpass_python;
  m.doc() = "gpass: import, optimize and run deep-learning graphs (the C++ core of the gpass package)";
  m.attr("__version__") = str_of(gpass::version_string);
  m.attr("binding") = str_of(GPASS_PY_BINDING);
  register_exception<gpass::error>(m, "Error", PyExc_RuntimeError);

  py::class_<graph_handle>(m, "Graph")
      .def_static("load", &graph_handle::load, py::arg("path"), py::arg("format") = "",
                  py::arg("feeds") = std::vector<std::string>{}, py::arg("fetches") = std::vector<std::string>{},
                  py::arg("targets") = std::vector<std::string>{}, py::arg("signature") = "serving_default",
                  py::arg("tags") = std::vector<std::string>{"serve"})
      .def_static("parse", &graph_handle::parse, py::arg("text"), py::arg("source") = "<string>")
      .def("text", &graph_handle::text, py::arg("elide") = -1)
      .def("save", &graph_handle::save, py::arg("path"), py::arg("format") = "")
      .def("optimize", &graph_handle::optimize, py::arg("passes") = "", py::arg("level") = 0, py::arg("verify_each") = false)
      .def("infer_shapes", &graph_handle::infer_shapes)
      .def("verify", &graph_handle::verify)
      .def("op_counts", &graph_handle::op_counts)
      .def("copy", &graph_handle::copy)
      .def("run", &graph_handle::run, py::arg("feeds"), py::arg("threads") = 1)
      .def("time_runs", &graph_handle::time_runs, py::arg("feeds"), py::arg("repeat"), py::arg("threads") = 1)
      .def("plan_stats", &graph_handle::plan_stats, py::arg("threads") = 1)
      .GPASS_PY_PROP_RO("inputs", &graph_handle::inputs)
      .GPASS_PY_PROP_RO("outputs", &graph_handle::outputs)
      .GPASS_PY_PROP_RO("num_nodes", &graph_handle::num_nodes);

  py::class_<session_handle>(m, "Session")
      .def(py::init<const graph_handle&, int, int, const std::string&, bool, bool, const std::string&, int, bool>(), py::arg("graph"),
           py::arg("devices") = 1, py::arg("threads") = 1, py::arg("place") = "first", py::arg("allow_soft_placement") = false,
           py::arg("log_device_placement") = false, py::arg("passes") = "", py::arg("gpus") = 0, py::arg("allow_tf32") = false)
      .def("run", &session_handle::run, py::arg("fetches"), py::arg("feeds"), py::arg("targets") = std::vector<std::string>{})
      .def("placement", &session_handle::placement)
      .def("compilations", &session_handle::compilations)
      .GPASS_PY_PROP_RO("outputs", &session_handle::outputs)
      .GPASS_PY_PROP_RO("devices", &session_handle::device_names);

  m.def("list_passes", &list_passes);
  // whether Session(gpus=...) is available, and the GPUs this process sees (0 without the component)
  m.attr("cuda_available") = py::bool_(GPASS_PY_CUDA != 0);
  m.def("cuda_device_count", [] {
#if GPASS_PY_CUDA
    return ex::cuda_device_count();
#else
    return 0;
#endif
  });
  m.def("read_tensor", &read_tensor, py::arg("path"), py::arg("format") = "onnx");
}
