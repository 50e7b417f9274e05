// SPDX-License-Identifier: Apache-2.0
#pragma once
// The ONNX backend conformance runner: runs one test folder of ONNX's backend test data
// (model.onnx + test_data_set_*/input_*.pb -> output_*.pb) on gpass's Eigen CPU executor.

#include <algorithm>
#include <cmath>
#include <complex>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <gpass/core/low_precision.hpp>
#include <gpass/passes/common/infer_shapes.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/passes/optimize.hpp>
#include <gpass/io/onnx.hpp>
#include <gpass/io/onnx_tensor_file.hpp>
#include <gpass/session.hpp>

namespace gpass_conformance {

namespace fs = std::filesystem;
namespace ex = gpass::exec;

// random: the test's op draws random numbers (its reference outputs come from numpy's
// generator, which no other implementation reproduces): only element types and sizes are
// compared, and Bernoulli's values must be 0 or 1
enum class status { pass, fail, unsupported, error, random };

inline const char* status_name(status s) {
  switch (s) {
    case status::pass: return "pass";
    case status::fail: return "FAIL";
    case status::unsupported: return "unsupported";
    case status::random: return "random";
    default: return "ERROR";
  }
}

struct result {
  status st = status::pass;
  double max_abs_error = 0;
  std::string message;
  std::size_t nodes_before = 0, nodes_after = 0;  // with an optimize pipeline
  std::size_t sends = 0, partitions = 0;          // with a session: send/recv pairs, parts run
  std::size_t placed_nodes = 0, first_device_nodes = 0;  // with devices: nodes placed, on the first device
};

// The devices of a run through a session instead of the plan (`--device=cuda`: the GPUs,
// then the CPU): the session's outputs are compared with the references.
using device_factory = std::function<std::vector<std::shared_ptr<gpass::session_device<gpass::graph<>>>>()>;

struct tolerance {
  double rtol = 1e-3;
  double atol = 1e-7;
};

// Compares one output with ONNX's rule |actual - expected| <= atol + rtol * |expected|
// (NaN equals NaN). Returns an empty string when equal, else a description.
inline std::string compare(const gpass::tensor& got, const gpass::tensor& want, tolerance tol, double& max_err) {
  if (got.element_type() != want.element_type())
    return "element type " + std::string(gpass::to_string(got.element_type())) + ", expected " +
           std::string(gpass::to_string(want.element_type()));
  if (got.sizes() != want.sizes())
    return "sizes " + gpass::shape::of(got.sizes()).to_string() + ", expected " + gpass::shape::of(want.sizes()).to_string();
  std::string bad;
  // bfloat16 keeps 8 significant bits: ONNX 1.12's reference made its bf16 data by truncating,
  // later ones (and gpass, TensorFlow, ONNX Runtime) round to nearest even, one bf16 ulp apart
  if (got.element_type() == gpass::dtype::bf16) tol.rtol = std::max(tol.rtol, 1.0 / 128);
  auto check_real = [&](double a, double e, std::int64_t i) {
    if (std::isnan(a) && std::isnan(e)) return;
    if (std::isinf(e) && a == e) return;
    const double d = std::abs(a - e);
    if (!(d <= tol.atol + tol.rtol * std::abs(e))) {
      if (std::isnan(d) || d > max_err) max_err = std::isnan(d) ? INFINITY : d;
      if (bad.empty()) bad = "element " + std::to_string(i) + ": " + std::to_string(a) + ", expected " + std::to_string(e);
    }
  };
  const auto n = got.size();
  switch (got.element_type()) {
    case gpass::dtype::string:
      for (std::int64_t i = 0; i < n; ++i)
        if (got.data<std::string>()[i] != want.data<std::string>()[i])
          return "element " + std::to_string(i) + ": \"" + got.data<std::string>()[i] + "\", expected \"" +
                 want.data<std::string>()[i] + "\"";
      return {};
    case gpass::dtype::complex64:
      for (std::int64_t i = 0; i < n; ++i) {
        check_real(got.data<std::complex<float>>()[i].real(), want.data<std::complex<float>>()[i].real(), i);
        check_real(got.data<std::complex<float>>()[i].imag(), want.data<std::complex<float>>()[i].imag(), i);
      }
      return bad;
    case gpass::dtype::complex128:
      for (std::int64_t i = 0; i < n; ++i) {
        check_real(got.data<std::complex<double>>()[i].real(), want.data<std::complex<double>>()[i].real(), i);
        check_real(got.data<std::complex<double>>()[i].imag(), want.data<std::complex<double>>()[i].imag(), i);
      }
      return bad;
    default:
      if (gpass::is_low_precision(got.element_type())) {  // the values of the codes (NaN equals NaN)
        const auto* a = reinterpret_cast<const std::uint8_t*>(got.raw());
        const auto* e = reinterpret_cast<const std::uint8_t*>(want.raw());
        for (std::int64_t i = 0; i < n; ++i)
          check_real(gpass::from_low_precision(got.element_type(), a[i]), gpass::from_low_precision(want.element_type(), e[i]), i);
        return bad;
      }
      gpass::visit_dtype(got.element_type(), [&]<class T>() {
        if constexpr (!std::is_same_v<T, std::string> && !std::is_same_v<T, std::complex<float>> &&
                      !std::is_same_v<T, std::complex<double>>) {
          const T* a = got.data<T>();
          const T* e = want.data<T>();
          for (std::int64_t i = 0; i < n; ++i) check_real(static_cast<double>(a[i]), static_cast<double>(e[i]), i);
        }
      });
      return bad;
  }
}

// What a graph input or output holds, from the model's declared type.
enum class kind { tensor, sequence, optional_tensor, optional_sequence };

inline kind kind_of(const onnx::TypeProto& t) {
  if (t.has_sequence_type()) return kind::sequence;
  if (t.has_optional_type())
    return t.optional_type().elem_type().has_sequence_type() ? kind::optional_sequence : kind::optional_tensor;
  return kind::tensor;
}

inline std::vector<gpass::tensor> sequence_of(const onnx::SequenceProto& s, const fs::path& dir) {
  std::vector<gpass::tensor> r;
  for (const auto& t : s.tensor_values()) r.push_back(gpass::detail::onnx_io::tensor_from_onnx(t, dir));
  return r;
}

// ONNX's test data stores bfloat16 tensors as uint16 bit patterns: reinterpret them.
inline ex::value as_declared(ex::value v, gpass::dtype declared) {
  if (declared == gpass::dtype::bf16 && v.is_tensor() && v.tensor().element_type() == gpass::dtype::uint16) {
    const auto& t = v.tensor();
    return gpass::tensor::wrap(gpass::dtype::bf16, t.sizes(), t.buffer());
  }
  return v;
}

inline gpass::dtype declared_dtype(const onnx::TypeProto& t) {
  if (!t.has_tensor_type()) return gpass::dtype::undefined;
  return t.tensor_type().elem_type() == onnx::TensorProto::BFLOAT16 ? gpass::dtype::bf16 : gpass::dtype::undefined;
}

// Reads input/output file `p` (TensorProto, SequenceProto or OptionalProto) as `k` says.
inline ex::value read_value(const fs::path& p, kind k) {
  using namespace gpass::detail::onnx_io;
  switch (k) {
    case kind::tensor: return gpass::read_onnx_tensor_file(p);
    case kind::sequence: return gpass::read_onnx_sequence_file(p);
    default: {
      auto o = parse_proto_file<onnx::OptionalProto>(p, "OptionalProto");
      if (o.has_tensor_value()) return tensor_from_onnx(o.tensor_value(), p.parent_path());
      if (o.has_sequence_value()) return sequence_of(o.sequence_value(), p.parent_path());
      return ex::value{};  // an empty optional
    }
  }
}

// Runs every test_data_set_* of the test in `dir`; with `optimize` (a pipeline, "O3"), on
// the model that pipeline made of it (the optimizer's differential test: the outputs must
// still match the suite's references).
// Bitwise equality of two values ("" when equal, else what differs).
inline std::string identical(const ex::value& a, const ex::value& b) {
  auto same_tensor = [](const gpass::tensor& x, const gpass::tensor& y) {
    if (x.element_type() != y.element_type() || x.sizes() != y.sizes()) return false;
    if (x.element_type() == gpass::dtype::string) return x == y;
    return std::equal(x.raw(), x.raw() + x.nbytes(), y.raw());
  };
  if (a.is_none() || b.is_none()) return a.is_none() == b.is_none() ? "" : "a none value on one side only";
  if (a.is_tensor() && b.is_tensor()) return same_tensor(a.tensor(), b.tensor()) ? "" : "tensors differ";
  if (a.is_sequence() && b.is_sequence()) {
    if (a.sequence().size() != b.sequence().size()) return "sequence lengths differ";
    for (std::size_t j = 0; j < a.sequence().size(); ++j)
      if (!same_tensor(a.sequence()[j], b.sequence()[j])) return "sequence element " + std::to_string(j) + " differs";
    return "";
  }
  return "kinds differ";
}

// The op of the graph's first random-number node ("" when none).
inline std::string random_op(const gpass::graph<>& g) {
  for (auto v : g.nodes()) {
    const std::string& op = g[v].op;
    if (op == "Bernoulli" || op == "RandomUniform" || op == "RandomUniformLike" || op == "RandomNormal" ||
        op == "RandomNormalLike" || op == "Multinomial")
      return op;
  }
  return "";
}

// Whether the graph has a Dropout with a training_mode input: random when that is true and
// the ratio is not 0 (known only at run time), so its outputs are compared, and checked for
// types and sizes alone when they differ.
inline bool may_drop_out(const gpass::graph<>& g) {
  for (auto v : g.nodes())
    if (g[v].op == "Dropout" && g.num_inputs(v) >= 3) return true;
  return false;
}

// Types and sizes of a random op's output, and 0/1 values from Bernoulli ("" when fine).
inline std::string check_random(const gpass::tensor& got, const gpass::tensor& want, bool bernoulli) {
  if (got.element_type() != want.element_type())
    return "element type " + std::string(gpass::to_string(got.element_type())) + ", expected " +
           std::string(gpass::to_string(want.element_type()));
  if (got.sizes() != want.sizes())
    return "sizes " + gpass::shape::of(got.sizes()).to_string() + ", expected " + gpass::shape::of(want.sizes()).to_string();
  auto zero_one = [&]<class T>() -> std::string {
    for (std::int64_t i = 0; i < got.size(); ++i) {
      const T v = got.data<T>()[i];
      if (v != T(0) && v != T(1)) return "element " + std::to_string(i) + ": " + std::to_string(v) + ", not 0 or 1";
    }
    return "";
  };
  if (!bernoulli) return "";
  switch (got.element_type()) {
    case gpass::dtype::f32: return zero_one.operator()<float>();
    case gpass::dtype::f64: return zero_one.operator()<double>();
    case gpass::dtype::int32: return zero_one.operator()<std::int32_t>();
    case gpass::dtype::int64: return zero_one.operator()<std::int64_t>();
    default: return "";
  }
}

inline result run_test(const fs::path& dir, ex::eigen_cpu& cpu, tolerance tol, const std::string& optimize = {},
                       int session_devices = 0, const device_factory* devices = nullptr) {
  result r;
  gpass::graph<> g;
  try {
    g = gpass::read_onnx_file(dir / "model.onnx");
  } catch (const std::exception& e) {
    return {status::error, 0, std::string("import: ") + e.what()};
  }
  if (!optimize.empty()) {
    r.nodes_before = g.num_nodes();
    try {
      gpass::pass_context ctx;
      gpass::pass_registry<gpass::graph<>>::global().parse(optimize)(g, ctx);
      r.nodes_after = g.num_nodes();
    } catch (const std::exception& e) {
      return {status::error, 0, std::string("optimize: ") + e.what()};
    }
  }
  try {
    gpass::pass_context ctx;
    gpass::infer_shapes(g, ctx);
  } catch (const std::exception&) {
    // run without static types (no buffer plan); the kernels check at run time
  }
  std::vector<kind> in_kind, out_kind;
  std::vector<gpass::dtype> in_dtype, out_dtype;
  {
    onnx::ModelProto m;
    try {
      m = gpass::detail::onnx_io::parse_proto_file<onnx::ModelProto>(dir / "model.onnx", "ModelProto");
    } catch (const std::exception& e) {
      return {status::error, 0, e.what()};
    }
    for (const auto& v : m.graph().input()) {
      in_kind.push_back(kind_of(v.type()));
      in_dtype.push_back(declared_dtype(v.type()));
    }
    for (const auto& v : m.graph().output()) {
      out_kind.push_back(kind_of(v.type()));
      out_dtype.push_back(declared_dtype(v.type()));
    }
  }
  std::unique_ptr<ex::plan<ex::eigen_cpu>> p;
  try {
    p = std::make_unique<ex::plan<ex::eigen_cpu>>(g, cpu);
  } catch (const gpass::error& e) {
    const bool unsupported = e.message().find("unsupported") != std::string::npos;
    return {unsupported ? status::unsupported : status::error, 0, e.what()};
  }
  std::string random = random_op(g);
  const bool dropout = may_drop_out(g);
  std::vector<fs::path> sets;
  for (const auto& d : fs::directory_iterator(dir))
    if (d.is_directory() && d.path().filename().string().rfind("test_data_set_", 0) == 0) sets.push_back(d.path());
  std::sort(sets.begin(), sets.end());
  if (sets.empty()) return {status::error, 0, "no test_data_set_* folder"};
  for (const auto& s : sets) {
    std::vector<ex::value> inputs(p->input_names().size());
    // input_k.pb feed the graph inputs in order (inputs with initializers may be left out)
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const fs::path f = s / ("input_" + std::to_string(k) + ".pb");
      if (!fs::exists(f)) continue;
      try {
        inputs[k] = read_value(f, k < in_kind.size() ? in_kind[k] : kind::tensor);
        if (k < in_dtype.size()) inputs[k] = as_declared(std::move(inputs[k]), in_dtype[k]);
      } catch (const std::exception& e) {
        return {status::error, 0, std::string("reading ") + f.string() + ": " + e.what()};
      }
    }
    std::vector<ex::value> outputs;
    std::vector<ex::value> session_inputs = session_devices > 0 ? inputs : std::vector<ex::value>{};
    if (devices) {
      // through a session on the given devices (placement: the first device that has the
      // kernels and holds the types), compared with the references below
      try {
        gpass::session_options<gpass::graph<>> so;
        so.devices = (*devices)();
        gpass::session<gpass::graph<>> sess(g, std::move(so));
        outputs = sess.run_graph(std::move(inputs), {});
        const std::string first = sess.device_names().front();
        std::size_t placed = 0, on_first = 0;
        for (const auto& [node, dev] : sess.last_placement()) {
          ++placed;
          on_first += dev == first;
        }
        r.placed_nodes = placed;
        r.first_device_nodes = on_first;
      } catch (const std::exception& e) {
        return {status::error, 0, std::string("session: ") + e.what()};
      }
    } else {
      try {
        outputs = p->run(std::move(inputs));
      } catch (const std::exception& e) {
        return {status::error, 0, std::string("run: ") + e.what()};
      }
    }
    if (session_devices > 0) {
      // the same graph through a session on `session_devices` CPU devices, nodes spread
      // round-robin: the outputs must be the plan's, bit for bit
      std::vector<ex::value> got;
      try {
        gpass::session_options<gpass::graph<>> so;
        so.devices = gpass::cpu_devices<gpass::graph<>>(session_devices);
        so.placement.spread = gpass::placement_options::spread_kind::round_robin;
        gpass::session<gpass::graph<>> sess(g, std::move(so));
        gpass::run_metadata md;
        got = sess.run_graph(std::move(session_inputs), {}, &md);
        r.sends += md.sends;
        r.partitions = std::max(r.partitions, md.partitions);
      } catch (const std::exception& e) {
        return {status::error, 0, std::string("session: ") + e.what()};
      }
      if (got.size() != outputs.size()) return {status::fail, 0, "session: " + std::to_string(got.size()) + " outputs, the plan " + std::to_string(outputs.size())};
      for (std::size_t k = 0; k < got.size(); ++k)
        if (auto d = identical(got[k], outputs[k]); !d.empty()) {
          r.st = status::fail;
          r.message = s.filename().string() + " output " + std::to_string(k) + ": the session on " + std::to_string(session_devices) +
                      " device(s) differs from the plan: " + d;
          return r;
        }
    }
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const fs::path f = s / ("output_" + std::to_string(k) + ".pb");
      if (!fs::exists(f)) continue;
      ex::value want;
      try {
        want = read_value(f, k < out_kind.size() ? out_kind[k] : kind::tensor);
        if (k < out_dtype.size()) want = as_declared(std::move(want), out_dtype[k]);
      } catch (const std::exception& e) {
        return {status::error, 0, std::string("reading ") + f.string() + ": " + e.what()};
      }
      std::string diff;
      const auto& got = outputs[k];
      if (want.is_none() || got.is_none()) {
        if (want.is_none() != got.is_none()) diff = std::string("a ") + got.kind_name() + ", expected a " + want.kind_name();
      } else if (want.is_tensor() && got.is_tensor() && !random.empty()) {
        diff = check_random(got.tensor(), want.tensor(), random == "Bernoulli");
      } else if (want.is_tensor() && got.is_tensor()) {
        diff = compare(got.tensor(), want.tensor(), tol, r.max_abs_error);
        if (!diff.empty() && dropout && check_random(got.tensor(), want.tensor(), false).empty()) {
          diff.clear();
          random = "Dropout (training mode)";
        }
      } else if (want.is_sequence() && got.is_sequence()) {
        if (got.sequence().size() != want.sequence().size())
          diff = "sequence of " + std::to_string(got.sequence().size()) + ", expected " + std::to_string(want.sequence().size());
        for (std::size_t j = 0; diff.empty() && j < got.sequence().size(); ++j)
          diff = compare(got.sequence()[j], want.sequence()[j], tol, r.max_abs_error);
      } else {
        diff = std::string("a ") + got.kind_name() + ", expected a " + want.kind_name();
      }
      if (!diff.empty()) {
        r.st = status::fail;
        r.message = s.filename().string() + " output " + std::to_string(k) + " ('" + p->output_names()[k] + "'): " + diff;
        return r;
      }
    }
  }
  if (!random.empty()) {
    r.st = status::random;
    r.message = "random op " + random + ": element types and sizes checked" +
                std::string(random == "Bernoulli" ? ", values 0 or 1" : "");
  }
  return r;
}

}  // namespace gpass_conformance
