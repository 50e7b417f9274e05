// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file schema.hpp
/// `gpass::op_schema`: what gpass knows about an op (arity, attributes, behaviour flags).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>

namespace gpass {

class infer_context;

/// An op inference function: reads a node's inputs and attributes from the context and fills
/// in its outputs (types, shapes or values), or reports an incompatibility with `ctx.fail`.
/// Never depends on the graph type. See `gpass::infer_context`.
using infer_function = std::function<void(infer_context&)>;

/// How often a formal input or output occurs.
enum class formal_option : std::uint8_t {
  single,    ///< exactly once
  optional,  ///< zero or one time (an omitted input is an empty port)
  variadic,  ///< the last formal: any number of times (at least `min_arity`)
};

/// One formal input or output of an op: its name and its type, either a dtype's short
/// name (`i64`, `bool`) or a type parameter (`T`) constrained by `op_schema::type_constraints`
/// and shared by every formal with the same parameter (which must then have equal dtypes).
/// A parameter starting with `S` (sequence) or `V` / `O` (any value) is not a tensor dtype.
struct formal_parameter {
  std::string name;
  std::string type;                              ///< dtype name or type parameter
  formal_option option = formal_option::single;
  bool homogeneous = true;                       ///< variadic: every occurrence has the same type
  int min_arity = 1;                             ///< variadic: minimum number of occurrences
};

/// The dtypes a type parameter may take (documentation and checking).
struct type_constraint {
  std::string param;
  std::vector<dtype> allowed;  ///< empty: any
  std::string doc;
};

/// The declaration of one attribute of an op.
struct attribute_spec {
  std::string name;
  std::string kind;                   ///< `attribute::kind_name()` of the expected value ("int", "floats", ...)
  bool required = false;
  std::optional<attribute> default_value;
};

/// Behaviour of an op that passes must respect.
struct op_traits {
  bool side_effects = false;  ///< has effects beyond its outputs (writes state, I/O): never dead
  bool terminator = false;    ///< a graph or function result (`return`, `retval`): a root of liveness
  bool control_flow = false;  ///< TF v1 control flow (Enter/Merge/Switch/...): may form cycles
  bool stateful = false;      ///< output depends on hidden state (reads variables, random): never folded or merged
  bool interface = false;     ///< part of the graph's signature (arguments): never removed as dead or disconnected
};

/// The schema of an op: identity, opset range, arity, attributes, traits, formal inputs and
/// outputs with their type constraints, and its inference functions.
///
/// `max_inputs`/`max_outputs` are `unbounded` for variadic ops.
///
/// Inference functions (all optional; they never depend on the graph type):
/// - `infer`: types and shapes of the outputs from the inputs' types, attributes and known
///   input contents (Reshape reads its shape input's value). Output dtypes fixed by the
///   formals (`Shape` -> `i64`) or shared with an input through a type parameter are filled
///   in by the engine, so most shape functions only set shapes.
/// - `propagate`: the contents of the outputs (`known_value`) for ops that compute on small
///   integer tensors (Shape, Gather, Concat, ...): a shape computed in the graph becomes known.
/// - `infer_backward`: types of inputs from the outputs' known types (`ctx.refine_input`).
/// \code
///   gpass::op_schema s{.name = "MyRelu", .min_inputs = 1, .max_inputs = 1};
///   s.inputs = {{"X", "T"}};
///   s.outputs = {{"Y", "T"}};
///   s.infer = [](gpass::infer_context& c) { c.set_shape(0, c.input_shape(0)); };
///   gpass::op_registry::global().add(std::move(s));
/// \endcode
struct op_schema {
  static constexpr int unbounded = std::numeric_limits<int>::max();

  std::string domain;  ///< empty for the default domain
  std::string name;
  int since_version = 1;            ///< first opset this schema applies to
  int until_version = unbounded;    ///< last opset this schema applies to
  int min_inputs = 0;
  int max_inputs = unbounded;
  int min_outputs = 1;
  int max_outputs = 1;
  std::vector<attribute_spec> attributes;
  op_traits traits;
  std::string doc;
  /// The frontend whose semantics the schema describes: `"onnx"` for the ONNX default-domain
  /// schemas, empty for gpass core ops and generic schemas. TensorFlow graphs share the
  /// default domain with ONNX, so inference skips `"onnx"` schemas of the default domain on
  /// a graph whose string attribute `frontend` is `"tensorflow"` (see
  /// `gpass::type_inference`); other domains (`gpass`, `com.microsoft`) serve every graph.
  std::string frontend;
  std::vector<formal_parameter> inputs;            ///< formal inputs (may be empty: not described)
  std::vector<formal_parameter> outputs;           ///< formal outputs (may be empty: not described)
  std::vector<type_constraint> type_constraints;   ///< constraints of the type parameters
  infer_function infer;                            ///< types and shapes of outputs
  infer_function propagate;                        ///< contents of outputs (value propagation)
  infer_function infer_backward;                   ///< types of inputs from outputs

  const attribute_spec* find_attribute(std::string_view n) const {
    for (const auto& a : attributes)
      if (a.name == n) return &a;
    return nullptr;
  }

  /// The formal parameter describing actual input `i` (the last formal when it is variadic),
  /// or nullptr.
  const formal_parameter* formal_input(std::size_t i) const { return formal_at(inputs, i); }
  /// The formal parameter describing actual output `k`, or nullptr.
  const formal_parameter* formal_output(std::size_t k) const { return formal_at(outputs, k); }

 private:
  static const formal_parameter* formal_at(const std::vector<formal_parameter>& f, std::size_t i) {
    if (i < f.size()) return &f[i];
    if (!f.empty() && f.back().option == formal_option::variadic) return &f.back();
    return nullptr;
  }
};

}  // namespace gpass
