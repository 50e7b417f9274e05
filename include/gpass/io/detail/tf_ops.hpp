// SPDX-License-Identifier: Apache-2.0
#pragma once
/// \file tf_ops.hpp
/// Private: what the GraphDef importer knows about TensorFlow ops without their schemas: the
/// output arguments of known ops (name, count, element type), so that it can give every node
/// its output ports (`Split` has `num_split`, `TopKV2` 2, `NoOp` none), check `name:i`
/// references, map `node:out_arg:i` references inside functions to ports, and give the types
/// from `_output_shapes` their dtype. Ops not listed are "unknown": the importer then takes
/// the output count from the references and `_output_shapes`.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include <gpass/core/attribute.hpp>
#include <gpass/core/dtype.hpp>
#include <gpass/core/error.hpp>

namespace gpass::detail::tf_io {

/// One output argument of an op (OpDef.ArgDef): its name ("" when the op has one output
/// argument: any name is accepted), how many ports it has, and their element type.
struct out_arg {
  std::string name;
  enum class count_kind : std::uint8_t { one, number_attr, list_attr } count = count_kind::one;
  std::string count_attr;  ///< int attribute (number_attr) or list attribute (list_attr)
  enum class type_kind : std::uint8_t { unknown, fixed, attr, list_attr } type = type_kind::unknown;
  dtype fixed = dtype::undefined;
  std::string type_attr;
};

/// The output arguments of an op.
struct op_outputs {
  std::vector<out_arg> args;
};

/// The table: `Op Op2 ... = arg, arg` per line; `arg` is `[name][*count][:type]` where count
/// is an int attribute (`*num_split`) or `[list attribute]` (its length), and type a dtype
/// name (`i32`, `bool`, `resource`), a type attribute (`T`), or `[list attribute]` (element k
/// of a list of types). An empty right side: no outputs. Output argument names follow
/// TensorFlow's OpDefs; they matter only for ops with more than one output argument.
inline constexpr std::string_view op_output_table = R"(
NoOp ControlTrigger Abort Assert PrintV2 SaveV2 Save SaveSlices AssignVariableOp AssignAddVariableOp AssignSubVariableOp TensorArrayCloseV3 DestroyResourceOp InitializeTableV2 InitializeTableFromTextFileV2 ResourceScatterUpdate ResourceScatterAdd ResourceScatterSub ResourceApplyGradientDescent ResourceApplyMomentum ResourceApplyAdam ResourceApplyAdagrad ResourceApplyAdagradV2 ResourceApplyRMSProp ResourceStridedSliceAssign _Retval MergeV2Checkpoints DisableCopyOnRead =
Identity Snapshot StopGradient PreventGradient CheckNumerics Print DebugIdentity Enter RefEnter Exit RefExit NextIteration RefNextIteration _Arg = :T
Add AddV2 AddN Sub Mul MulNoNan Div DivNoNan RealDiv FloorDiv FloorMod TruncateDiv TruncateMod Mod Maximum Minimum Pow SquaredDifference Atan2 Xdivy Xlogy = :T
Neg Abs Sign Square Sqrt Rsqrt Reciprocal Inv Exp Expm1 Log Log1p Tanh Sigmoid Sin Cos Tan Asin Acos Atan Sinh Cosh Asinh Acosh Atanh Floor Ceil Round Rint Erf Erfc Lgamma Digamma Relu Relu6 Elu Selu LeakyRelu Softplus Softsign Softmax LogSoftmax ClipByValue L2Loss = :T
ReluGrad Relu6Grad EluGrad SeluGrad SigmoidGrad TanhGrad SqrtGrad RsqrtGrad ReciprocalGrad SoftplusGrad BiasAddGrad = :T
MatMul BatchMatMul BatchMatMulV2 BiasAdd BiasAddV1 Conv2D Conv3D DepthwiseConv2dNative Conv2DBackpropInput Conv2DBackpropFilter DepthwiseConv2dNativeBackpropInput DepthwiseConv2dNativeBackpropFilter MaxPool AvgPool MaxPool3D AvgPool3D MaxPoolGrad AvgPoolGrad Conj Conv3DBackpropInputV2 Conv3DBackpropFilterV2 MaxPool3DGrad AvgPool3DGrad LRN Einsum = :T
Reshape Transpose ConjugateTranspose ExpandDims Squeeze ConcatV2 Concat Pack Fill ZerosLike OnesLike Tile Select SelectV2 Slice StridedSlice StridedSliceGrad Pad PadV2 MirrorPad BroadcastTo Reverse ReverseV2 Cumsum Cumprod DynamicStitch ParallelDynamicStitch ScatterNd TensorScatterUpdate TensorScatterAdd MatrixDiag MatrixBandPart MatrixInverse Cholesky SpaceToBatchND BatchToSpaceND SpaceToDepth DepthToSpace ResizeNearestNeighbor OneHot LinSpace SparseToDense Roll InvertPermutation SegmentSum UnsortedSegmentSum UnsortedSegmentMax ReverseSequence TensorScatterSub BatchNormWithGlobalNormalization SegmentMean SegmentProd SegmentMax SegmentMin UnsortedSegmentMin UnsortedSegmentProd TensorScatterMax TensorScatterMin Bincount DenseBincount = :T
Sum Mean Max Min Prod EuclideanNorm = :T
Assign AssignAdd AssignSub ScatterUpdate ScatterAdd ScatterSub StackPushV2 = :T
Gather GatherV2 GatherNd ResourceGather = :Tparams
Less LessEqual Greater GreaterEqual Equal NotEqual LogicalAnd LogicalOr LogicalNot IsFinite IsNan IsInf ApproximateEqual LoopCond IsVariableInitialized VarIsInitializedOp InTopKV2 All Any = :bool
Const Placeholder PlaceholderWithDefault VariableV2 Variable TemporaryVariable ReadVariableOp TensorArrayReadV3 TensorArrayGatherV3 TensorArrayPackV3 RandomUniform RandomStandardNormal TruncatedNormal StatelessRandomUniform StatelessRandomNormal StatelessTruncatedNormal Restore StatelessRandomUniformV2 StatelessRandomNormalV2 StatelessTruncatedNormalV2 StatelessRandomUniformInt StatelessRandomUniformIntV2 StatelessRandomUniformFullInt StatelessRandomUniformFullIntV2 = :dtype
StatelessRandomGetKeyCounter = key:u64, counter:u64
StatelessRandomGetKeyCounterAlg = key:u64, counter:u64, alg:i32
StatelessRandomGetAlg = :i32
VarHandleOp StackV2 HashTableV2 MutableHashTableV2 = :resource
TensorArrayWriteV3 TensorArrayScatterV3 TensorArraySplitV3 ResizeBilinear = :f32
Rank TensorArraySizeV3 NonMaxSuppression NonMaxSuppressionV2 NonMaxSuppressionV3 = :i32
Where = :i64
Shape Size StringToNumber = :out_type
Cast = :DstT
Bitcast = :type
ArgMax ArgMin = :output_type
Range = :Tidx
RandomUniformInt Complex Real Imag ComplexAbs Angle BatchMatMulV3 = :Tout
Multinomial = :output_dtype
StackPopV2 = :elem_type
StringJoin AsString ReduceJoin RegexReplace StringFormat ShardedFilename = :str
StaticRegexFullMatch RegexFullMatch = :bool
Split SplitV = output*num_split:T
Unpack = output*num:T
DynamicPartition = outputs*num_partitions:T
ShapeN = output*N:out_type
IdentityN = output*[T]:[T]
RestoreV2 = tensors*[dtypes]:[dtypes]
While StatelessWhile = output*[T]:[T]
If StatelessIf Case StatelessCase PartitionedCall StatefulPartitionedCall = output*[Tout]:[Tout]
QueueDequeueV2 QueueDequeueManyV2 QueueDequeueUpToV2 = components*[component_types]:[component_types]
TopK TopKV2 = values:T, indices:i32
Unique UniqueV2 = y:T, idx:out_idx
UniqueWithCounts UniqueWithCountsV2 = y:T, idx:out_idx, count:out_idx
ListDiff = out:T, idx:out_idx
Switch RefSwitch = output_false:T, output_true:T
Merge RefMerge = output:T, value_index:i32
TensorArrayV3 = handle:resource, flow:f32
TensorArrayGradV3 TensorArrayGradWithShape = grad_handle:resource, flow_out:f32
TensorArrayConcatV3 = value:dtype, lengths:i64
BroadcastGradientArgs = r0:T, r1:T
SoftmaxCrossEntropyWithLogits SparseSoftmaxCrossEntropyWithLogits = loss:T, backprop:T
FusedBatchNorm = y:T, batch_mean:T, batch_variance:T, reserve_space_1:T, reserve_space_2:T
FusedBatchNormV2 = y:T, batch_mean:U, batch_variance:U, reserve_space_1:U, reserve_space_2:U
FusedBatchNormV3 = y:T, batch_mean:U, batch_variance:U, reserve_space_1:U, reserve_space_2:U, reserve_space_3:U
FusedBatchNormGrad = x_backprop:T, scale_backprop:T, offset_backprop:T, reserve_space_3:T, reserve_space_4:T
FusedBatchNormGradV2 FusedBatchNormGradV3 = x_backprop:T, scale_backprop:U, offset_backprop:U, reserve_space_4:U, reserve_space_5:U
Svd = s:T, u:T, v:T
Qr = q:T, r:T
SelfAdjointEigV2 = e:T, v:T
MaxPoolWithArgmax = output:T, argmax:Targmax
SparseReshape = output_indices:i64, output_shape:i64
SparseFillEmptyRows = output_indices:i64, output_values:T, empty_row_indicator:bool, reverse_index_map:i64
CTCGreedyDecoder = decoded_indices:i64, decoded_values:i64, decoded_shape:i64, log_probability:T
NonMaxSuppressionV4 = selected_indices:i32, valid_outputs:i32
NonMaxSuppressionV5 = selected_indices:i32, selected_scores:T, valid_outputs:i32
CombinedNonMaxSuppression = nmsed_boxes:f32, nmsed_scores:f32, nmsed_classes:f32, valid_detections:i32
FFT IFFT FFT2D IFFT2D FFT3D IFFT3D RFFT RFFT2D RFFT3D = :Tcomplex
IRFFT IRFFT2D IRFFT3D = :Treal
LSTMBlockCell BlockLSTM BlockLSTMV2 = i:T, cs:T, f:T, o:T, ci:T, co:T, h:T
GRUBlockCell = r:T, u:T, c:T, h:T
TensorListReserve EmptyTensorList TensorListFromTensor TensorListSetItem TensorListPushBack TensorListScatter TensorListScatterV2 TensorListScatterIntoExistingList TensorListSplit TensorListResize = output_handle:variant
TensorListGetItem = item:element_dtype
TensorListStack = tensor:element_dtype
TensorListGather = values:element_dtype
TensorListPopBack = output_handle:variant, tensor:element_dtype
TensorListLength = length:i32
TensorListElementShape = element_shape:shape_type
TensorListConcat TensorListConcatV2 = tensor:element_dtype, lengths:i64
)";

/// The ops of `op_output_table`, parsed once.
inline const std::unordered_map<std::string, op_outputs>& known_ops() {
  static const std::unordered_map<std::string, op_outputs> table = [] {
    std::unordered_map<std::string, op_outputs> t;
    auto trim = [](std::string_view s) {
      while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
      while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
      return s;
    };
    std::string_view rest = op_output_table;
    while (!rest.empty()) {
      std::size_t nl = rest.find('\n');
      std::string_view line = rest.substr(0, nl);
      rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
      std::size_t eq = line.find('=');
      if (eq == std::string_view::npos) continue;
      op_outputs outs;
      std::string_view sig = trim(line.substr(eq + 1));
      while (!sig.empty()) {
        std::size_t comma = sig.find(',');
        std::string_view a = trim(sig.substr(0, comma));
        sig = comma == std::string_view::npos ? std::string_view() : trim(sig.substr(comma + 1));
        out_arg arg;
        std::size_t colon = a.find(':');
        std::string_view head = a.substr(0, colon);
        std::string_view type = colon == std::string_view::npos ? std::string_view() : a.substr(colon + 1);
        std::size_t star = head.find('*');
        arg.name = std::string(head.substr(0, star));
        if (star != std::string_view::npos) {
          std::string_view c = head.substr(star + 1);
          if (!c.empty() && c.front() == '[') {
            arg.count = out_arg::count_kind::list_attr;
            arg.count_attr = std::string(c.substr(1, c.size() - 2));
          } else {
            arg.count = out_arg::count_kind::number_attr;
            arg.count_attr = std::string(c);
          }
        }
        if (!type.empty() && type.front() == '[') {
          arg.type = out_arg::type_kind::list_attr;
          arg.type_attr = std::string(type.substr(1, type.size() - 2));
        } else if (auto d = parse_dtype(type); d && !type.empty()) {
          arg.type = out_arg::type_kind::fixed;
          arg.fixed = *d;
        } else if (!type.empty()) {
          arg.type = out_arg::type_kind::attr;
          arg.type_attr = std::string(type);
        }
        outs.args.push_back(std::move(arg));
      }
      std::string_view ops = trim(line.substr(0, eq));
      while (!ops.empty()) {
        std::size_t sp = ops.find(' ');
        t.emplace(std::string(ops.substr(0, sp)), outs);
        ops = sp == std::string_view::npos ? std::string_view() : trim(ops.substr(sp + 1));
      }
    }
    return t;
  }();
  return table;
}

/// The most output ports the importer gives one node (a bound against hostile attributes).
inline constexpr std::int64_t max_output_ports = 1 << 20;

/// The number of ports of `a` on a node with attributes `attrs`.
inline std::int64_t arg_port_count(const out_arg& a, const attribute_map& attrs) {
  if (a.count == out_arg::count_kind::one) return 1;
  auto it = attrs.find(a.count_attr);
  if (it == attrs.end())
    throw error("attribute '" + a.count_attr + "' (the number of outputs '" + (a.name.empty() ? "output" : a.name) +
                "') is missing");
  std::int64_t n = 0;
  if (a.count == out_arg::count_kind::number_attr) {
    if (!it->second.is<std::int64_t>())
      throw error("attribute '" + a.count_attr + "' (the number of outputs) is a " + std::string(it->second.kind_name()) +
                  ", not an int");
    n = it->second.as<std::int64_t>();
  } else {
    n = std::visit(
        [](const auto& v) -> std::int64_t {
          using V = std::decay_t<decltype(v)>;
          if constexpr (requires { v.size(); typename V::value_type; } && !std::is_same_v<V, std::string>)
            return static_cast<std::int64_t>(v.size());
          else
            return -1;
        },
        it->second.value());
    if (n < 0)
      throw error("attribute '" + a.count_attr + "' (whose length is the number of outputs) is a " +
                  std::string(it->second.kind_name()) + ", not a list");
  }
  if (n < 0 || n > max_output_ports)
    throw error("attribute '" + a.count_attr + "' = " + std::to_string(n) + " is not a valid number of outputs");
  return n;
}

/// The element type of port `k` of argument `a` (undefined when not known).
inline dtype arg_port_dtype(const out_arg& a, const attribute_map& attrs, std::int64_t k) {
  switch (a.type) {
    case out_arg::type_kind::fixed: return a.fixed;
    case out_arg::type_kind::attr: {
      auto it = attrs.find(a.type_attr);
      if (it != attrs.end() && it->second.is<dtype>()) return it->second.as<dtype>();
      return dtype::undefined;
    }
    case out_arg::type_kind::list_attr: {
      auto it = attrs.find(a.type_attr);
      if (it != attrs.end() && it->second.is<std::vector<dtype>>()) {
        const auto& v = it->second.as<std::vector<dtype>>();
        if (k >= 0 && static_cast<std::size_t>(k) < v.size()) return v[static_cast<std::size_t>(k)];
      }
      return dtype::undefined;
    }
    default: return dtype::undefined;
  }
}

/// The output arguments of a known op, or nullptr.
inline const op_outputs* find_known_op(std::string_view op) {
  const auto& t = known_ops();
  auto it = t.find(std::string(op));
  return it == t.end() ? nullptr : &it->second;
}

}  // namespace gpass::detail::tf_io
