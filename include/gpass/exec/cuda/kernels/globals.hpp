// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file globals.hpp
/// The CUDA kernels of globals (TensorFlow's variables after `variables-to-globals`), which
/// keep a global's value in device memory, in the plan's `global_store` (`get_on` / `set_on`):
/// - `get_global`: the device's copy of the value (the host value is uploaded on the first
///   read, then kept until someone else writes it);
/// - `set_global`: stores a device copy of input 0 (the host's copy is made when the host
///   asks: `global_store::get`, a checkpoint, a CPU kernel);
/// - `update_globals`: an optimizer step (the 12 rules of the Eigen CPU kernel, TensorFlow's
///   Apply* ops, f32 and f64 variables) as one generated kernel per rule and type: each thread
///   reads its element of the gradient and of every variable and writes the new values into
///   new device tensors (stored tensors are never written in place); the hyper-parameters are
///   scalars of any numeric type read on the device, so a step never waits for the host.
/// None of them can be captured in a CUDA graph (a global's value changes between runs: such
/// a plan runs as a plain plan). Messages follow the Eigen CPU kernels
/// (`eigen_cpu/kernels/globals.hpp`), whose arithmetic the generated code repeats.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gpass/core/error.hpp>
#include <gpass/core/tensor.hpp>
#include <gpass/exec/cuda/codegen.hpp>
#include <gpass/exec/cuda/kernels/common.hpp>
#include <gpass/exec/cuda/policy.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/exec/kernel.hpp>
#include <gpass/exec/update_step.hpp>
#include <gpass/ops/core_ops.hpp>

namespace gpass::exec {

namespace cuda_globals {

using cuda_detail::context;
using cuda_detail::fn;
using cuda_detail::lazy_library;
using i64 = std::int64_t;

/// The name under which a global's value lives in the memory of policy `p`'s device: the
/// device and the policy's stream, so that a value is only used unsynchronized by the stream
/// that wrote it (another policy, on the same device or not, goes through the host copy).
inline std::string device_name(cuda& p) {
  char s[64];
  std::snprintf(s, sizeof s, "cuda:%d/stream:%p", p.device(), static_cast<void*>(p.default_stream().stream));
  return s;
}

/// A host copy of `t`, a global's value on `device`, made without a policy (the store may
/// outlive the policy that wrote it): waits for `written` (an event recorded after the write
/// on the writer's stream; null: the whole device), then copies.
inline gpass::tensor download(const cuda_tensor& t, int device, const std::shared_ptr<CUevent_st>& written) {
  gpass::tensor h = gpass::tensor::uninitialized(t.element_type(), t.sizes());
  if (t.nbytes() == 0) return h;
  cuda_detail::device_guard g(device);
  if (written) cuda_detail::check(cudaEventSynchronize(written.get()), "waiting for a global's value");
  else cuda_detail::check(cudaDeviceSynchronize(), "waiting for the device before reading a global");
  cuda_detail::check(cudaMemcpy(h.raw(), t.data(), t.nbytes(), cudaMemcpyDeviceToHost), "copying a global to the host");
  return h;
}

/// Fails when `ctx` runs in a CUDA graph capture: a replay would read or write the buffers
/// of the run that was captured.
inline void refuse_capture(context& ctx) {
  if (ctx.policy().capturing()) ctx.fail("a global (a variable) cannot be captured in a CUDA graph: its value changes between runs");
}

/// The value of global `var` as the device's tensor; nullopt when it has none.
inline std::optional<cuda_tensor> read(context& ctx, const std::string& var) {
  cuda& p = ctx.policy();
  const int dev = p.device();
  // (the upload keeps the host copy: its download is only a fallback)
  return ctx.globals().get_on<cuda_tensor>(
      var, device_name(p), [&](const gpass::tensor& h) { return p.upload(h, ctx.stream()); },
      [dev](const cuda_tensor& t) { return download(t, dev, nullptr); });
}

/// Stores `t` (a device tensor nobody writes, made on `ctx`'s stream) as the value of global
/// `var`, with an event recorded after the work that makes it.
inline void write(context& ctx, const std::string& var, cuda_tensor t) {
  cuda& p = ctx.policy();
  const int dev = p.device();
  cuda_detail::device_guard g(dev);
  cudaEvent_t ev = nullptr;
  cuda_detail::check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "creating an event");
  std::shared_ptr<CUevent_st> written(ev, [](cudaEvent_t e) { (void)cudaEventDestroy(e); });
  cuda_detail::check(cudaEventRecord(ev, ctx.stream().stream), "recording an event");
  ctx.globals().set_on(var, device_name(p), std::move(t), [dev, written](const cuda_tensor& x) { return download(x, dev, written); });
}

// ---- update_globals ---------------------------------------------------------------------------

/// The hyper-parameter inputs a rule reads as scalars (node input positions; the gradient is
/// the rule's `gradient` input).
inline std::vector<std::size_t> scalars_of(const std::string& rule) {
  if (rule == "gradient_descent" || rule == "adagrad") return {0};
  if (rule == "momentum") return {0, 2};
  if (rule == "adam") return {0, 1, 2, 3, 4, 5};
  if (rule == "adagrad_v2") return {0, 1};
  if (rule == "rmsprop" || rule == "centered_rmsprop") return {0, 1, 2, 3};
  if (rule == "adadelta" || rule == "proximal_gradient_descent" || rule == "proximal_adagrad") return {0, 1, 2};
  if (rule == "ftrl") return {1, 2, 3, 4};
  return {1, 2, 3, 4, 5};  // ftrl_v2
}

/// The code `g_hp` reads a scalar of `t` by; -1: not a numeric type the CPU kernel reads.
inline int scalar_code(dtype t) {
  switch (t) {
    case dtype::f32: return 0;
    case dtype::f64: return 1;
    case dtype::int8: return 2;
    case dtype::int16: return 3;
    case dtype::int32: return 4;
    case dtype::int64: return 5;
    case dtype::uint8: return 6;
    case dtype::uint16: return 7;
    case dtype::uint32: return 8;
    case dtype::uint64: return 9;
    case dtype::bool_: return 10;
    default: return -1;
  }
}

/// The per-element step of `rule` (CUDA C++ over `n` elements at index `i`: gradient `g`,
/// variables `v0..v3` read, `o0..o3` written, hyper-parameter input k as `H(k)` in type T),
/// the CPU kernel's arithmetic in its order.
inline std::string rule_body(const std::string& rule, bool nesterov, bool update_slots, bool linear_by_lr) {
  if (rule == "gradient_descent") return "const T alpha = H(0);\n o0[i] = v0[i] - alpha * gi;\n";
  if (rule == "momentum")
    return std::string("const T lr = H(0), mom = H(2);\n T acc = v1[i] * mom + gi;\n o1[i] = acc;\n o0[i] = v0[i] - (") +
           (nesterov ? "gi * lr + acc * mom * lr" : "acc * lr") + ");\n";
  if (rule == "adagrad" || rule == "adagrad_v2")
    return std::string("const T lr = H(0), eps = ") + (rule == "adagrad_v2" ? "H(1)" : "T(0)") + ";\n T acc = v1[i];\n" +
           (update_slots ? " acc += gi * gi;\n" : "") + " o1[i] = acc;\n o0[i] = v0[i] - lr * gi / (sqrt(acc) + eps);\n";
  if (rule == "rmsprop")
    return "const T lr = H(0), rho = H(1), momentum = H(2), eps = H(3);\n"
           " T ms = v1[i];\n ms += (gi * gi - ms) * (T(1) - rho);\n"
           " const T mom = v2[i] * momentum + lr * gi / sqrt(ms + eps);\n"
           " o1[i] = ms;\n o2[i] = mom;\n o0[i] = v0[i] - mom;\n";
  if (rule == "centered_rmsprop")
    return "const T lr = H(0), rho = H(1), momentum = H(2), eps = H(3);\n"
           " T mg = v1[i], ms = v2[i];\n ms += (gi * gi - ms) * (T(1) - rho);\n mg += (gi - mg) * (T(1) - rho);\n"
           " const T mom = v3[i] * momentum + gi * lr / sqrt(ms - mg * mg + eps);\n"
           " o1[i] = mg;\n o2[i] = ms;\n o3[i] = mom;\n o0[i] = v0[i] - mom;\n";
  if (rule == "adadelta")
    return "const T lr = H(0), rho = H(1), eps = H(2);\n"
           " const T acc = v1[i] * rho + gi * gi * (T(1) - rho);\n"
           " const T update = sqrt(v2[i] + eps) * (T(1) / sqrt(acc + eps)) * gi;\n"
           " o0[i] = v0[i] - update * lr;\n o1[i] = acc;\n o2[i] = v2[i] * rho + update * update * (T(1) - rho);\n";
  if (rule == "ftrl" || rule == "ftrl_v2") {
    const bool v2 = rule == "ftrl_v2";
    return std::string("const T lr = H(1), l1 = H(2), l2 = H(3), shrink = ") + (v2 ? "H(4)" : "T(0)") +
           ", power = " + (v2 ? "H(5)" : "H(4)") +
           ";\n const T var = v0[i], acc = v1[i];\n"
           " const T gs = " + (v2 ? "gi + T(2) * shrink * var" : "gi") +
           ";\n const T new_acc = acc + gi * gi;\n"
           " const T r_new = power == T(-0.5) ? sqrt(new_acc) : pow(new_acc, -power);\n"
           " const T r_old = power == T(-0.5) ? sqrt(acc) : pow(acc, -power);\n" +
           (linear_by_lr ? " const T lin = v2[i] + (gs * lr - (r_new - r_old) * var);\n"
                         : " const T lin = v2[i] + (gs - (r_new - r_old) / lr * var);\n") +
           " const T lo = -l1;\n const T hi = (l1 < lin) ? l1 : lin;\n const T x = ((lo < hi) ? hi : lo) - lin;\n" +
           (linear_by_lr ? " const T y = r_new + T(2) * l2 * lr;\n" : " const T y = r_new / lr + T(2) * l2;\n") +
           " o0[i] = x / y;\n o1[i] = new_acc;\n o2[i] = lin;\n";
  }
  if (rule == "proximal_gradient_descent" || rule == "proximal_adagrad") {
    const bool ada = rule == "proximal_adagrad";
    return std::string("const T lr = H(0), l1 = H(1), l2 = H(2);\n T alpha = lr;\n") +
           (ada ? " const T acc = v1[i] + gi * gi;\n o1[i] = acc;\n alpha = lr / sqrt(acc);\n" : "") +
           " const T p = v0[i] - alpha * gi;\n const T ap = p < T(0) ? -p : p;\n const T shrunk = ap - alpha * l1;\n"
           " o0[i] = l1 > T(0) ? (p > T(0) ? T(1) : p < T(0) ? T(-1) : T(0)) * (shrunk < T(0) ? T(0) : shrunk) / (T(1) + alpha * l2)\n"
           "                 : p / (T(1) + alpha * l2);\n";
  }
  // adam
  return std::string("const T b1p = H(0), b2p = H(1), lr = H(2), b1 = H(3), b2 = H(4), eps = H(5);\n"
                     " const T lr_t = lr * sqrt(T(1) - b2p) / (T(1) - b1p);\n"
                     " T m = v1[i], v = v2[i];\n m += (gi - m) * (T(1) - b1);\n v += (gi * gi - v) * (T(1) - b2);\n"
                     " const T step = ") +
         (nesterov ? "m * b1 + (T(1) - b1) * gi" : "m") + ";\n o1[i] = m;\n o2[i] = v;\n o0[i] = v0[i] - step * lr_t / (sqrt(v) + eps);\n";
}

/// The library of one rule, element type (f32 / f64) and set of flags: kernel `update_globals`.
inline std::string update_source(const std::string& rule, dtype t, bool nesterov, bool update_slots, bool linear_by_lr) {
  return cuda_codegen::cuda_prelude() + "typedef " + (t == dtype::f64 ? "double" : "float") + R"( T;
struct g_scalars { const void* p[8]; int code[8]; };
__device__ __forceinline__ double g_hp(const g_scalars& h, int k) {
  const void* p = h.p[k];
  switch (h.code[k]) {
    case 0: return (double)*(const float*)p;
    case 1: return *(const double*)p;
    case 2: return (double)*(const signed char*)p;
    case 3: return (double)*(const short*)p;
    case 4: return (double)*(const int*)p;
    case 5: return (double)*(const long long*)p;
    case 6: return (double)*(const unsigned char*)p;
    case 7: return (double)*(const unsigned short*)p;
    case 8: return (double)*(const unsigned int*)p;
    case 9: return (double)*(const unsigned long long*)p;
    default: return *(const bool*)p ? 1.0 : 0.0;
  }
}
#define H(k) ((T)g_hp(h, k))
extern "C" __global__ void update_globals(long long n, const T* __restrict__ g, const T* v0, const T* v1, const T* v2, const T* v3,
                                          T* o0, T* o1, T* o2, T* o3, g_scalars h) {
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    const T gi = g[i];
    )" + rule_body(rule, nesterov, update_slots, linear_by_lr) +
         "  }\n}\n";
}

inline fn make_update(const kernel_node& n) {
  const update_step step = update_step::of(n);
  const std::string& rule = step.rule;
  const auto& vars = step.variables;
  const bool nesterov = step.nesterov, update_slots = step.update_slots, linear_by_lr = step.linear_by_lr;
  auto lib = std::make_shared<lazy_library>();
  return [=](context& ctx) {
    refuse_capture(ctx);
    const cuda_tensor& grad = ctx.input(step.gradient);
    std::vector<cuda_tensor> cur;
    for (const auto& v : vars) {
      auto t = read(ctx, v);
      if (!t) ctx.fail("global '" + v + "' has no value (the variable was never initialized or assigned)");
      if (t->element_type() != grad.element_type() || t->sizes() != grad.sizes())
        ctx.fail("global '" + v + "' is " + t->shape().to_string() + " " + std::string(to_string(t->element_type())) + ", the gradient " +
                 grad.shape().to_string() + " " + std::string(to_string(grad.element_type())));
      cur.push_back(std::move(*t));
    }
    const dtype t = grad.element_type();
    struct {
      const void* p[8];
      int code[8];
    } h{};
    for (std::size_t k : scalars_of(rule)) {
      const cuda_tensor& s = ctx.input(k);
      if (s.size() != 1) ctx.fail("input " + std::to_string(k) + " must be a scalar, got " + s.shape().to_string());
      const int code = scalar_code(s.element_type());
      if (code < 0) ctx.fail("input " + std::to_string(k) + " must be numeric");
      h.p[k] = s.data();
      h.code[k] = code;
    }
    if (t != dtype::f32 && t != dtype::f64)
      ctx.fail("update_globals supports f32 and f64 variables, got " + std::string(to_string(t)));
    auto& pol = ctx.policy();
    std::vector<cuda_tensor> next;
    for (const auto& c : cur) next.push_back(pol.allocate_tensor(t, c.sizes(), ctx.stream()));
    if (grad.size() > 0) {
      const std::string key = std::string(to_string(t)) + (nesterov ? "n" : "") + (update_slots ? "" : "s") + (linear_by_lr ? "l" : "");
      const auto& k = lib->get(pol, key, {"update_globals"}, [&] { return update_source(rule, t, nesterov, update_slots, linear_by_lr); });
      long long count = grad.size();
      const void* gp = grad.data();
      const void* in[4] = {};
      void* out[4] = {};
      for (std::size_t v = 0; v < cur.size(); ++v) {
        in[v] = cur[v].data();
        out[v] = next[v].data();
      }
      void* args[] = {&count, &gp, &in[0], &in[1], &in[2], &in[3], &out[0], &out[1], &out[2], &out[3], &h};
      pol.launch(k.kernels[0], pol.blocks_for(count), 256, args, ctx.stream());
    }
    for (std::size_t v = 0; v < vars.size(); ++v) write(ctx, vars[v], next[v]);
    if (ctx.num_outputs() > 0) ctx.set_output(0, next[0]);
  };
}

/// Every rule's library for f32 and f64 with its flags off and on (the NVRTC compile test).
inline std::vector<std::pair<std::string, std::string>> globals_generated_sources() {
  std::vector<std::pair<std::string, std::string>> r;
  for (const auto& u : gpass::detail::update_rules)
    for (dtype t : {dtype::f32, dtype::f64})
      for (bool flags : {false, true}) {
        const std::string name = "update_globals_" + std::string(u.name) + "_" + std::string(to_string(t)) + (flags ? "_flags" : "");
        r.emplace_back(name, update_source(std::string(u.name), t, flags, !flags, flags));
      }
  return r;
}

}  // namespace cuda_globals

/// Registers `get_global`, `set_global` and `update_globals` (values of any type but strings,
/// which stay with the CPU's kernels).
inline void register_cuda_globals(kernel_registry<cuda>& r) {
  using namespace cuda_globals;
  auto no_strings = [](const kernel_query& q) {
    for (dtype t : q.inputs)
      if (t == dtype::string) return false;
    for (dtype t : q.outputs)
      if (t == dtype::string) return false;
    return true;
  };
  r.add({.op = "get_global", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string var = n.attr<std::string>("variable");
    return [var](context& ctx) {
      refuse_capture(ctx);
      auto v = read(ctx, var);
      if (!v) ctx.fail("global '" + var + "' has no value (the variable was never initialized or assigned)");
      ctx.set_output(0, std::move(*v));
    };
  }, .applies = no_strings});
  r.add({.op = "set_global", .type_input = 0, .make = [](const kernel_node& n) -> fn {
    const std::string var = n.attr<std::string>("variable");
    return [var](context& ctx) {
      refuse_capture(ctx);
      auto& p = ctx.policy();
      const cuda_tensor& x = ctx.input(0);
      cuda_tensor copy = p.allocate_tensor(x.element_type(), x.sizes(), ctx.stream());
      p.copy_on_device(copy.data(), x.data(), x.nbytes(), ctx.stream());
      write(ctx, var, std::move(copy));
      if (ctx.num_outputs() > 0) ctx.set_output(0, ctx.input_value(0));
    };
  }, .applies = no_strings});
  r.add({.op = "update_globals", .type_input = -1, .make = make_update,
         .applies = [](const kernel_query& q) { return q.outputs.empty() || q.outputs[0] == dtype::undefined || q.outputs[0] == dtype::f32 || q.outputs[0] == dtype::f64; }});
}

}  // namespace gpass::exec
