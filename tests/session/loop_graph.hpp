// SPDX-License-Identifier: Apache-2.0
#pragma once
// Graphs (text IR) that the session tests and the CUDA tests share.

namespace gpass_test_graphs {

/// A while loop whose body has four nodes (spread over devices by a session, its tensors cross
/// inside the loop; on a GPU its condition is read back once per iteration): inputs x f32[3],
/// n i64[]; outputs out, count.
inline const char* const while_loop = R"(graph {
  %x = arg() {index = 0} -> (f32[3])
  %n = arg() {index = 1} -> (i64[])
  %i0 = Constant() {value = tensor<i64[]> [0]}
  %loop:3 = while(%i0, %x, %n) {body = @body, cond = @cond}
  %out = Neg(%loop:1)
  %ret:0 = return(%out, %loop:0) {names = ["out", "count"]}
}
func @body {
  %a:3 = function_entry() -> (i64[], f32[3], i64[])
  %one = Constant() {value = tensor<i64[]> [1]}
  %i = Add(%a:0, %one)
  %h = Constant() {value = tensor<f32[]> [0.5]}
  %s = Mul(%a:1, %h)
  %t = Sin(%s)
  %u = Add(%t, %a:1)
  %ret:0 = return(%i, %u, %a:2)
}
func @cond {
  %a:3 = function_entry() -> (i64[], f32[3], i64[])
  %c = Less(%a:0, %a:2)
  %ret:0 = return(%c)
})";

}  // namespace gpass_test_graphs
