// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file globals.hpp
/// Eigen CPU kernels of the core ops `get_global` and `set_global` (TensorFlow variables
/// after `gpass::variables_to_globals`): they read and write the running plan's
/// `global_store`.

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <gpass/exec/eigen_cpu/kernels/common.hpp>
#include <gpass/exec/globals.hpp>
#include <gpass/exec/update_step.hpp>
#include <gpass/ops/core_ops.hpp>

namespace gpass::exec::cpu_detail {

/// Registers `get_global` (output 0: the global's current value; a global without a value is
/// an error naming it) and `set_global` (stores a copy of input 0, which may live in a run's
/// arena, and outputs input 0: the new value, as TensorFlow's `Assign` does). Both need
/// the `variable` string attribute. Ordering between reads and writes is the graph's (data
/// and control edges).
template <class P = eigen_cpu>
void register_globals(kernel_registry<P>& r) {
  using context = kernel_context<P>;
  using fn = kernel_fn<P>;
  r.add({.op = "get_global", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const std::string var = n.attr<std::string>("variable");
    return [var](context& ctx) {
      auto v = ctx.globals().get(var);
      if (!v) ctx.fail("global '" + var + "' has no value (the variable was never initialized or assigned)");
      ctx.set_output(0, std::move(*v));
    };
  }});
  r.add({.op = "set_global", .type_input = 0, .make = [](const kernel_node& n) -> fn {
    const std::string var = n.attr<std::string>("variable");
    return [var](context& ctx) {
      const auto& x = ctx.input(0);
      ctx.globals().set(var, x.clone());
      if (ctx.num_outputs() > 0) ctx.set_output(0, ctx.input_value(0));
    };
  }});
}

/// Registers `update_globals` (an optimizer step on globals, TensorFlow's ApplyGradientDescent /
/// ApplyMomentum / ApplyAdam / ApplyAdagrad(V2) / ApplyRMSProp after `variables-to-globals`),
/// with TensorFlow's update rules:
/// - `gradient_descent` (alpha, delta): var -= alpha * delta;
/// - `momentum` (lr, grad, momentum), variables [var, accum]: accum = accum * momentum + grad;
///   var -= lr * accum (Nesterov: var -= lr * grad + lr * momentum * accum);
/// - `adam` (beta1_power, beta2_power, lr, beta1, beta2, epsilon, grad), variables [var, m, v]:
///   lr_t = lr * sqrt(1 - beta2_power) / (1 - beta1_power); m += (grad - m) * (1 - beta1);
///   v += (grad^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon) (Nesterov: with
///   m * beta1 + (1 - beta1) * grad in place of m);
/// - `adagrad` (lr, grad) / `adagrad_v2` (lr, epsilon, grad), variables [var, accum]: accum +=
///   grad^2 (unless update_slots is false); var -= lr * grad / (sqrt(accum) + epsilon);
/// - `rmsprop` (lr, rho, momentum, epsilon, grad), variables [var, ms, mom]: ms += (grad^2 - ms) *
///   (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms + epsilon); var -= mom;
/// - `centered_rmsprop` (the same inputs), variables [var, mg, ms, mom]: ms as above, mg +=
///   (grad - mg) * (1 - rho); mom = mom * momentum + lr * grad / sqrt(ms - mg^2 + epsilon);
///   var -= mom;
/// - `adadelta` (lr, rho, epsilon, grad), variables [var, accum, accum_update]: accum = accum *
///   rho + grad^2 * (1 - rho); update = sqrt(accum_update + epsilon) / sqrt(accum + epsilon) *
///   grad; var -= update * lr; accum_update = accum_update * rho + update^2 * (1 - rho);
/// - `ftrl` (grad, lr, l1, l2, lr_power) / `ftrl_v2` (grad, lr, l1, l2, l2_shrinkage, lr_power),
///   variables [var, accum, linear]: new_accum = accum + grad^2; linear += g' - (new_accum^-p -
///   accum^-p) / lr * var (g' = grad + 2 * l2_shrinkage * var; with multiply_linear_by_lr, g' *
///   lr - (...) * var); var = (clamp(linear, -l1, l1) - linear) / (new_accum^-p / lr + 2 * l2)
///   (multiply_linear_by_lr: new_accum^-p + 2 * l2 * lr); accum = new_accum (p = lr_power;
///   sqrt when p = -0.5, as TensorFlow special-cases it);
/// - `proximal_gradient_descent` (alpha, l1, l2, delta): p = var - alpha * delta; var = sign(p) *
///   max(|p| - alpha * l1, 0) / (1 + alpha * l2) (l1 > 0), else p / (1 + alpha * l2);
/// - `proximal_adagrad` (lr, l1, l2, grad), variables [var, accum]: accum += grad^2; the same
///   with alpha = lr / sqrt(accum) and delta = grad.
/// f32 and f64 variables; the hyper-parameters are scalars of any numeric type. Each global
/// gets a new tensor (stored tensors are never written in place); output 0 is the first
/// variable's new value. Not atomic across concurrent runs (TensorFlow's `use_locking` false).
template <class P = eigen_cpu>
void register_update_globals(kernel_registry<P>& r) {
  using context = kernel_context<P>;
  using fn = kernel_fn<P>;
  r.add({.op = "update_globals", .type_input = -1, .make = [](const kernel_node& n) -> fn {
    const update_step step = update_step::of(n);
    return [step](context& ctx) {
      const std::string& rule = step.rule;
      const auto& vars = step.variables;
      const bool nesterov = step.nesterov, update_slots = step.update_slots, linear_by_lr = step.linear_by_lr;
      auto& store = ctx.globals();
      const gpass::tensor& grad = ctx.input(step.gradient);  // (TF's argument order)
      std::vector<gpass::tensor> cur;
      for (const auto& v : vars) {
        auto t = store.get(v);
        if (!t) ctx.fail("global '" + v + "' has no value (the variable was never initialized or assigned)");
        if (t->element_type() != grad.element_type() || t->sizes() != grad.sizes())
          ctx.fail("global '" + v + "' is " + t->shape().to_string() + " " + std::string(to_string(t->element_type())) +
                   ", the gradient " + grad.shape().to_string() + " " + std::string(to_string(grad.element_type())));
        cur.push_back(t->clone());
      }
      auto scalar = [&](std::size_t i) {
        const gpass::tensor& t = ctx.input(i);
        if (t.size() != 1) ctx.fail("input " + std::to_string(i) + " must be a scalar, got " + t.shape().to_string());
        double v = 0;
        visit_dtype(t.element_type(), [&]<class S>() {
          if constexpr (std::is_arithmetic_v<S>) v = static_cast<double>(t.data<S>()[0]);
          else ctx.fail("input " + std::to_string(i) + " must be numeric");
        });
        return v;
      };
      auto run = [&]<class T>() {
        const T* g = grad.data<T>();
        T* var = cur[0].data<T>();
        const std::int64_t count = grad.size();
        if (rule == "gradient_descent") {
          const T alpha = static_cast<T>(scalar(0));
          for (std::int64_t i = 0; i < count; ++i) var[i] -= alpha * g[i];
        } else if (rule == "momentum") {
          const T lr = static_cast<T>(scalar(0)), mom = static_cast<T>(scalar(2));
          T* acc = cur[1].data<T>();
          for (std::int64_t i = 0; i < count; ++i) {
            acc[i] = acc[i] * mom + g[i];
            var[i] -= nesterov ? g[i] * lr + acc[i] * mom * lr : acc[i] * lr;
          }
        } else if (rule == "adagrad" || rule == "adagrad_v2") {
          const T lr = static_cast<T>(scalar(0)), eps = rule == "adagrad_v2" ? static_cast<T>(scalar(1)) : T(0);
          T* acc = cur[1].data<T>();
          for (std::int64_t i = 0; i < count; ++i) {
            if (update_slots) acc[i] += g[i] * g[i];
            var[i] -= lr * g[i] / (std::sqrt(acc[i]) + eps);
          }
        } else if (rule == "rmsprop") {
          const T lr = static_cast<T>(scalar(0)), rho = static_cast<T>(scalar(1)), momentum = static_cast<T>(scalar(2));
          const T eps = static_cast<T>(scalar(3));
          T* ms = cur[1].data<T>();
          T* mom = cur[2].data<T>();
          for (std::int64_t i = 0; i < count; ++i) {
            ms[i] += (g[i] * g[i] - ms[i]) * (T(1) - rho);
            mom[i] = mom[i] * momentum + lr * g[i] / std::sqrt(ms[i] + eps);
            var[i] -= mom[i];
          }
        } else if (rule == "centered_rmsprop") {
          const T lr = static_cast<T>(scalar(0)), rho = static_cast<T>(scalar(1)), momentum = static_cast<T>(scalar(2));
          const T eps = static_cast<T>(scalar(3));
          T* mg = cur[1].data<T>();
          T* ms = cur[2].data<T>();
          T* mom = cur[3].data<T>();
          for (std::int64_t i = 0; i < count; ++i) {
            ms[i] += (g[i] * g[i] - ms[i]) * (T(1) - rho);
            mg[i] += (g[i] - mg[i]) * (T(1) - rho);
            mom[i] = mom[i] * momentum + g[i] * lr / std::sqrt(ms[i] - mg[i] * mg[i] + eps);
            var[i] -= mom[i];
          }
        } else if (rule == "adadelta") {
          const T lr = static_cast<T>(scalar(0)), rho = static_cast<T>(scalar(1)), eps = static_cast<T>(scalar(2));
          T* acc = cur[1].data<T>();
          T* acc_up = cur[2].data<T>();
          for (std::int64_t i = 0; i < count; ++i) {
            acc[i] = acc[i] * rho + g[i] * g[i] * (T(1) - rho);
            const T update = std::sqrt(acc_up[i] + eps) * (T(1) / std::sqrt(acc[i] + eps)) * g[i];
            var[i] -= update * lr;
            acc_up[i] = acc_up[i] * rho + update * update * (T(1) - rho);
          }
        } else if (rule == "ftrl" || rule == "ftrl_v2") {
          const bool v2 = rule == "ftrl_v2";
          const T lr = static_cast<T>(scalar(1)), l1 = static_cast<T>(scalar(2)), l2 = static_cast<T>(scalar(3));
          const T shrink = v2 ? static_cast<T>(scalar(4)) : T(0), power = static_cast<T>(scalar(v2 ? 5 : 4));
          T* acc = cur[1].data<T>();
          T* lin = cur[2].data<T>();
          auto root = [&](T a) { return power == T(-0.5) ? std::sqrt(a) : std::pow(a, -power); };
          for (std::int64_t i = 0; i < count; ++i) {
            const T gs = v2 ? g[i] + T(2) * shrink * var[i] : g[i];
            const T new_acc = acc[i] + g[i] * g[i];
            if (linear_by_lr) lin[i] += gs * lr - (root(new_acc) - root(acc[i])) * var[i];
            else lin[i] += gs - (root(new_acc) - root(acc[i])) / lr * var[i];
            const T x = std::max(-l1, std::min(lin[i], l1)) - lin[i];
            const T y = linear_by_lr ? root(new_acc) + T(2) * l2 * lr : root(new_acc) / lr + T(2) * l2;
            var[i] = x / y;
            acc[i] = new_acc;
          }
        } else if (rule == "proximal_gradient_descent" || rule == "proximal_adagrad") {
          const bool ada = rule == "proximal_adagrad";
          const T lr = static_cast<T>(scalar(0)), l1 = static_cast<T>(scalar(1)), l2 = static_cast<T>(scalar(2));
          T* acc = ada ? cur[1].data<T>() : nullptr;
          for (std::int64_t i = 0; i < count; ++i) {
            T alpha = lr;
            if (ada) {
              acc[i] += g[i] * g[i];
              alpha = lr / std::sqrt(acc[i]);
            }
            const T p = var[i] - alpha * g[i];
            var[i] = l1 > T(0) ? (p > T(0) ? T(1) : p < T(0) ? T(-1) : T(0)) * std::max(std::abs(p) - alpha * l1, T(0)) / (T(1) + alpha * l2)
                               : p / (T(1) + alpha * l2);
          }
        } else {
          const T b1p = static_cast<T>(scalar(0)), b2p = static_cast<T>(scalar(1)), lr = static_cast<T>(scalar(2));
          const T b1 = static_cast<T>(scalar(3)), b2 = static_cast<T>(scalar(4)), eps = static_cast<T>(scalar(5));
          const T lr_t = lr * std::sqrt(T(1) - b2p) / (T(1) - b1p);
          T* m = cur[1].data<T>();
          T* v = cur[2].data<T>();
          for (std::int64_t i = 0; i < count; ++i) {
            m[i] += (g[i] - m[i]) * (T(1) - b1);
            v[i] += (g[i] * g[i] - v[i]) * (T(1) - b2);
            const T step = nesterov ? m[i] * b1 + (T(1) - b1) * g[i] : m[i];
            var[i] -= step * lr_t / (std::sqrt(v[i]) + eps);
          }
        }
      };
      if (grad.element_type() == dtype::f32) run.template operator()<float>();
      else if (grad.element_type() == dtype::f64) run.template operator()<double>();
      else ctx.fail("update_globals supports f32 and f64 variables, got " + std::string(to_string(grad.element_type())));
      for (std::size_t k = 0; k < vars.size(); ++k) store.set(vars[k], cur[k]);
      if (ctx.num_outputs() > 0) ctx.set_output(0, cur[0]);
    };
  }});
}

}  // namespace gpass::exec::cpu_detail
