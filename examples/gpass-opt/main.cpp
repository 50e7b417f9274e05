// SPDX-License-Identifier: Apache-2.0
// gpass-opt: reads a graph, runs a pass pipeline on it, writes the result; with --run, also
// executes the result on the Eigen CPU executor.
//
//   gpass-opt [options] [INPUT]
//
// INPUT is a text-IR file (.gir), an ONNX model (.onnx, when built with gpass::onnx) or a
// TensorFlow GraphDef (.pbtxt text, .pb binary, when built with gpass::tensorflow), and
// defaults to a bundled example graph. Exit status: 0 on success, 1 when the input, a
// pass or the run fails (the message names the file, pass, node and op), 2 on a usage error.
#include <charconv>
#include <chrono>
#include <cmath>
#include <complex>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <gpass/all.hpp>
#include <gpass/io/format.hpp>
#include <gpass/exec/eigen_cpu.hpp>
#include <gpass/exec/plan.hpp>
#include <gpass/session.hpp>
#include <gpass/passes/optimize.hpp>
#include <gpass/passes/tf.hpp>
#ifdef GPASS_OPT_WITH_ONNX
#include <gpass/io/onnx.hpp>
#include <gpass/io/onnx_tensor_file.hpp>
#endif
#ifdef GPASS_OPT_WITH_CUDA
#include <gpass/exec/cuda.hpp>
#endif
#ifdef GPASS_OPT_WITH_MPI
#include <gpass/session/mpi.hpp>
#endif
#ifdef GPASS_OPT_WITH_TENSORFLOW
#include <gpass/io/tensorflow.hpp>
#include <gpass/io/tf_signature.hpp>
#include <gpass/io/saved_model.hpp>
#endif

#include "example_graph.hpp"

namespace {

using graph_t = gpass::graph<>;

constexpr std::string_view usage_text = R"(usage: gpass-opt [options] [INPUT]

Reads INPUT (default: a bundled example graph), runs a pass pipeline and writes the
resulting text IR to stdout or -o FILE. Input formats, by extension:
  .gir                    gpass text IR (also any other extension)
  .onnx                   ONNX model (when built with ONNX support)
  .pbtxt .pbtx .prototxt  TensorFlow GraphDef, protobuf text format (when built with
                          TensorFlow support)
  .pb                     ONNX or TensorFlow, by the first byte: an ONNX ModelProto starts
                          with its ir_version field (0x08), a GraphDef with a node (0x0a),
                          library (0x12) or versions (0x22) field
                          (ONNX tensor files are also .pb: they are read by --input only)
  DIRECTORY               TensorFlow SavedModel (saved_model.pb + variables/, when built
                          with TensorFlow support): read with its variables and bound to
                          --tf-signature; add --passes=tf-frontend to make it runnable

options:
  --input-format=FMT      read INPUT as FMT whatever its extension: gir, onnx, tf,
                          saved_model
  --tf-signature=KEY      SavedModel input: the signature to bind (default serving_default;
                          its input and output keys name the graph's inputs and outputs)
  --tf-tags=T,...         SavedModel input: the MetaGraphDef tagged T,... (default serve)
  --tf-feeds=T,...        TensorFlow input: bind the signature before the passes
  --tf-fetches=T,...        (gpass::bind_tf_signature): fed tensors ("x:0") become the
  --tf-targets=N,...        graph's inputs in this order, fetched tensors its outputs,
                            targets ("init") run for their effects; then tf-frontend
                            keeps only what the fetches and targets need
  -O0 -O1 -O2 -O3         optimization level (default -O0: none), run before --passes:
                          -O1 cleanup (constant and shape folding, identities, CSE, DCE),
                          -O2 adds simplify-inference and batch norms folded into weights
                          and Pad / MatMul+Add fusions (standard ONNX ops only), -O3 adds
                          gpass's fused ops (Conv/Gemm with residual Add and activation)
                          and CPU convolutions and pools in the channel-blocked layout
  --passes=PIPELINE       passes to run, e.g. "delete-disconnected,dce" or "dce{keep=y}"
                          (named pipelines such as "default" and "O2" expand)
  --input-shape=NAME:D,D  fix the shape of graph input NAME before the passes (symbolic or
                          unknown dims become D; repeatable), e.g. --input-shape=x:1,3,224,224
  --check=N               run the input graph and the optimized one on N seeded random
                          inputs (see --seed) and report the largest difference; exit 1
                          when an output differs by more than the tolerance
  --check-tolerance=T     the tolerance of --check: |a-b| <= T + T*|a| (default 1e-4)
  --summary               print, per op type, the node count before and after the passes
                          (to stderr)
  --print-large-constants print tensors of more than 64 elements in full in the printed IR
                          (stdout, --print-ir-after-all); -o FILE always has them all
  --pipeline=NAME         run a named pipeline (same as --passes=NAME)
  --list-passes           list registered passes and named pipelines, then exit
  --print-ir-after-all    print the IR after every pass (to stderr)
  --timing                print one timing line per pass and the total, "optimize: MS ms"
                          (to stderr; the one-time registration of op schemas and kernels
                          is not part of it)
  --timing-runs=N         with --timing: optimize N copies of the input graph in this process
                          (the per-pass lines are the last run's) and print the median and
                          the fastest: optimize: MS ms (median of N, min MS ms)
  --stats                 print pass statistics (to stderr)
  --no-verify             do not verify the graph after each pass
  --dump-dir=DIR          write the IR before/after each pass into DIR
  --reproducer-dir=DIR    when a pass fails, write its input graph into DIR
  --dot=FILE              also write the result as Graphviz DOT
  -o FILE                 write the result to FILE (.gir, or .onnx with ONNX support)
  --external-data=BYTES   .onnx output: tensors of at least BYTES bytes go to FILE.data
                          beside it (default: only when the model would pass 2 GiB)

running (Eigen CPU executor; after the passes, on the resulting graph):
  --run                   infer shapes, plan and run the graph once; print the plan's
                          statistics and one line per output:
                            NAME DTYPE[SHAPE] checksum=SUM [mean_abs=M]
                          (SUM: sum of the elements as double; mean_abs for float outputs).
                          The text IR is then written only with -o.
  --input=FILE.pb         an input as an ONNX TensorProto file (repeatable, in graph-input
                          order; inputs with a default may be left out at the end)
  --seed=N                without --input: random inputs from std::mt19937_64 seeded N
                          (default 0): floats uniform in [-1,1), integers in [0,10);
                          unknown dims of a declared shape are taken as 1
  --save-outputs=DIR      write output K as DIR/output_K.pb (ONNX TensorProto)
  --threads=N             intra-op threads (default 1)
  --no-batch-split        run a batch whole even where the graph is proven batch-separable
                          (by default such a batch runs as one sub-batch per thread, or
                          sample by sample, where that pays; the 'batch:' line says which)
  --repeat=N              run N more times after the first (warm-up) run on the same inputs
                          and print the line 'latency median: M ms, min: L ms (N runs)'.
  --max-tensor-bytes=N    limits that stop a hostile model before it takes the machine
  --max-run-bytes=N         (0: no limit): bytes of one tensor made by a kernel or read
  --max-loop-iterations=N   from a TensorFlow constant (default 1 GiB), bytes alive at once
  --max-call-depth=N        in a run (default 2 GiB), iterations of one loop (default 10^7),
                            nested function calls (default 64); over a limit is an error
  --session               run as --run does, through a gpass::session: the graph is placed
                          on the devices, partitioned (send/recv pairs where an edge
                          crosses devices) and run by one executor per device; prints the
                          placement counts and the send/recv pairs, then the outputs
  --devices=cpu:0,cpu:1   the session's devices (default cpu:0); each CPU device has its
                          own pool of --threads threads; gpu:N is CUDA device N (a gpass-opt
                          built with the cuda component; with gpu:0,cpu:0 the nodes the GPU
                          has no kernel for run on the CPU)
  --place=first|round-robin  where nodes without a constraint go: the first device that
                          can run them (default), or the devices in turn (testing: every
                          cross-device path gets exercised)
  --allow-soft-placement  a node whose requested device is missing or cannot run it goes
                          to one that can (else: an error)
  --log-device-placement  print each node's device (to stderr): NAME: (OP): DEVICE
  --trace=FILE.json       write the run's kernel timeline, per device, as a Chrome trace
                          (chrome://tracing, ui.perfetto.dev); with --repeat, of one more
                          (warm) run after the timed ones
  --init=TARGET,...       TensorFlow input: run these targets first, each in its own run
  --steps=N                 (an initializer), then N runs of the signature (--tf-feeds,
                            --tf-fetches, --tf-targets: a training step) on the --input
                            feeds (TensorFlow TensorProto files, in --tf-feeds order); the
                            session keeps the graph and its variables across the runs and
                            applies --passes to each signature's graph; prints (and
                            --save-outputs) the last run's fetches
  --data-parallel=N       with --session: the step replicated over N CPU devices (default
                          --devices cpu:0..N-1), each on a slice of the batch, gradients
                          all-reduced before the updates, fetches combined (passes
                          multi-devices and multi-devices-check on each signature)
  --data-parallel=mpi[:N]  the same over the ranks of `mpirun -np R` (N replicas per rank,
                          default 1): rank r feeds slice r of the batch; rank 0 prints
  --cluster=JOB:N[,JOB:N...]  with --session under `mpirun -np R`: the devices of every task
                          of the cluster (TensorFlow's ClusterSpec: `ps:1,worker:1` is
                          /job:ps/task:0 on rank 0, /job:worker/task:0 on rank 1; R = the
                          tasks), each task with the --devices (default cpu:0); nodes that
                          request `/job:worker/task:1` run on that rank, values cross ranks
                          over MPI; rank 0 prints
  --print-tensor=FILE.pb  print FILE's NAME DTYPE[SHAPE] checksum=... line (same format as
                          --run; repeatable), then exit
  --version               print the version
  -h, --help              this text
)";

struct usage_error {
  std::string message;
};

struct options {
  std::optional<std::string> input;
  std::string input_format;  // "", "gir", "onnx", "tf", "saved_model"
  std::optional<std::string> tf_saved_signature;  // --tf-signature
  std::optional<std::vector<std::string>> tf_tags;  // --tf-tags
  std::vector<std::string> tf_feeds, tf_fetches, tf_targets;
  bool tf_signature = false;
  std::string passes;
  bool list_passes = false;
  bool print_after_all = false;
  bool timing = false;
  bool stats = false;
  bool verify = true;
  std::string dump_dir;
  std::string reproducer_dir;
  std::string dot_file;
  std::string output;
  std::int64_t external_data = -1;
  // --run
  bool run = false;
  std::vector<std::string> run_inputs;
  std::uint64_t seed = 0;
  std::string save_outputs;
  int threads = 1;
  bool batch_split = true;
  int repeat = 0;
  int timing_runs = 1;
  std::vector<std::string> print_tensors;
  // --session
  bool session = false;
  std::vector<std::string> devices;
  std::string place = "first";
  bool soft_placement = false;
  bool log_placement = false;
  std::string trace;
  std::vector<std::string> init_targets;
  int steps = 0;
  int data_parallel = 0;  // replicas in this process (0: none)
  bool data_parallel_mpi = false;
  std::string cluster;  // --cluster=JOB:N,...
  // optimization
  int level = 0;
  std::vector<std::string> input_shapes;
  int check = 0;
  double check_tolerance = 1e-4;
  bool summary = false;
  bool print_large_constants = false;
  // limits
  std::uint64_t max_tensor_bytes = std::uint64_t{1} << 30;
  std::uint64_t max_run_bytes = std::uint64_t{2} << 30;
  std::int64_t max_loop_iterations = 10'000'000;
  int max_call_depth = 64;
};

bool has_extension(const std::string& path, std::string_view ext) {
  return std::filesystem::path(path).extension() == ext;
}

template <class T>
T parse_number(const std::string& s, std::string_view flag) {
  T v{};
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc{} || p != end)
    throw usage_error{std::string(flag) + " needs a number, got '" + s + "'"};
  return v;
}

/// "a,b,c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> r;
  std::size_t b = 0;
  while (b <= s.size()) {
    const std::size_t e = std::min(s.find(',', b), s.size());
    if (e > b) r.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return r;
}

options parse_args(int argc, char** argv) {
  options o;
  auto value_of = [](std::string_view arg, std::string_view flag) -> std::optional<std::string> {
    if (arg.substr(0, flag.size()) == flag && arg.size() > flag.size() && arg[flag.size()] == '=')
      return std::string(arg.substr(flag.size() + 1));
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << usage_text;
      std::exit(0);
    } else if (a == "--version") {
      std::cout << "gpass-opt " << gpass::version_string << '\n';
      std::exit(0);
    } else if (auto v = value_of(a, "--passes")) {
      o.passes = *v;
    } else if (auto v2 = value_of(a, "--pipeline")) {
      o.passes = *v2;
    } else if (a == "--list-passes") {
      o.list_passes = true;
    } else if (a == "--print-ir-after-all") {
      o.print_after_all = true;
    } else if (a == "--timing") {
      o.timing = true;
    } else if (auto v19 = value_of(a, "--timing-runs")) {
      o.timing_runs = parse_number<int>(*v19, "--timing-runs");
      if (o.timing_runs < 1) throw usage_error{"--timing-runs needs a number >= 1, got '" + *v19 + "'"};
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--no-verify") {
      o.verify = false;
    } else if (a == "--no-batch-split") {
      o.batch_split = false;
    } else if (auto v3 = value_of(a, "--dump-dir")) {
      o.dump_dir = *v3;
    } else if (auto v4 = value_of(a, "--reproducer-dir")) {
      o.reproducer_dir = *v4;
    } else if (auto v5 = value_of(a, "--dot")) {
      o.dot_file = *v5;
    } else if (a == "--run") {
      o.run = true;
    } else if (a == "--session") {
      o.run = o.session = true;
    } else if (auto d1 = value_of(a, "--devices")) {
      o.devices = split_list(*d1);
      if (o.devices.empty()) throw usage_error{"--devices needs at least one device, e.g. --devices=cpu:0,cpu:1"};
    } else if (auto d2 = value_of(a, "--place")) {
      if (*d2 != "first" && *d2 != "round-robin") throw usage_error{"--place takes first or round-robin, got '" + *d2 + "'"};
      o.place = *d2;
    } else if (a == "--allow-soft-placement") {
      o.soft_placement = true;
    } else if (a == "--log-device-placement") {
      o.log_placement = true;
    } else if (auto d3 = value_of(a, "--trace")) {
      o.trace = *d3;
    } else if (auto d4 = value_of(a, "--init")) {
      o.init_targets = split_list(*d4);
    } else if (auto d5 = value_of(a, "--steps")) {
      o.steps = parse_number<int>(*d5, "--steps");
      if (o.steps < 1) throw usage_error{"--steps needs a number >= 1, got '" + *d5 + "'"};
    } else if (auto d6 = value_of(a, "--data-parallel")) {
      std::string n = *d6;
      if (n == "mpi" || n.starts_with("mpi:")) {
        o.data_parallel_mpi = true;
        n = n == "mpi" ? "1" : n.substr(4);
      }
      o.data_parallel = parse_number<int>(n, "--data-parallel");
      if (o.data_parallel < 1) throw usage_error{"--data-parallel takes N >= 1, mpi or mpi:N, got '" + *d6 + "'"};
    } else if (auto c1 = value_of(a, "--cluster")) {
      o.cluster = *c1;
      (void)gpass::parse_cluster(o.cluster);  // a malformed spec is a usage error, before MPI starts
    } else if (auto v6 = value_of(a, "--input")) {
      o.run_inputs.push_back(*v6);
    } else if (auto v7 = value_of(a, "--seed")) {
      o.seed = parse_number<std::uint64_t>(*v7, "--seed");
    } else if (auto v8 = value_of(a, "--save-outputs")) {
      o.save_outputs = *v8;
    } else if (auto v9 = value_of(a, "--threads")) {
      o.threads = parse_number<int>(*v9, "--threads");
      if (o.threads < 1) throw usage_error{"--threads needs a number >= 1, got '" + *v9 + "'"};
    } else if (auto l1 = value_of(a, "--max-tensor-bytes")) {
      o.max_tensor_bytes = parse_number<std::uint64_t>(*l1, "--max-tensor-bytes");
    } else if (auto l2 = value_of(a, "--max-run-bytes")) {
      o.max_run_bytes = parse_number<std::uint64_t>(*l2, "--max-run-bytes");
    } else if (auto l3 = value_of(a, "--max-loop-iterations")) {
      o.max_loop_iterations = parse_number<std::int64_t>(*l3, "--max-loop-iterations");
      if (o.max_loop_iterations < 0) throw usage_error{"--max-loop-iterations needs a number >= 0, got '" + *l3 + "'"};
    } else if (auto xd = value_of(a, "--external-data")) {
      o.external_data = parse_number<std::int64_t>(*xd, "--external-data");
      if (o.external_data < 0) throw usage_error{"--external-data needs a number >= 0, got '" + *xd + "'"};
    } else if (auto l4 = value_of(a, "--max-call-depth")) {
      o.max_call_depth = parse_number<int>(*l4, "--max-call-depth");
      if (o.max_call_depth < 1) throw usage_error{"--max-call-depth needs a number >= 1, got '" + *l4 + "'"};
    } else if (auto v18 = value_of(a, "--repeat")) {
      o.repeat = parse_number<int>(*v18, "--repeat");
      if (o.repeat < 0) throw usage_error{"--repeat needs a number >= 0, got '" + *v18 + "'"};
    } else if (auto v10 = value_of(a, "--print-tensor")) {
      o.print_tensors.push_back(*v10);
    } else if (auto v11 = value_of(a, "--input-format")) {
      if (*v11 != "gir" && *v11 != "onnx" && *v11 != "tf" && *v11 != "saved_model")
        throw usage_error{"--input-format needs gir, onnx, tf or saved_model, got '" + *v11 + "'"};
      o.input_format = *v11;
    } else if (auto sig = value_of(a, "--tf-signature")) {
      o.tf_saved_signature = *sig;
    } else if (auto tags = value_of(a, "--tf-tags")) {
      o.tf_tags = split_list(*tags);
    } else if (auto v12 = value_of(a, "--tf-feeds")) {
      o.tf_feeds = split_list(*v12), o.tf_signature = true;
    } else if (auto v13 = value_of(a, "--tf-fetches")) {
      o.tf_fetches = split_list(*v13), o.tf_signature = true;
    } else if (auto v14 = value_of(a, "--tf-targets")) {
      o.tf_targets = split_list(*v14), o.tf_signature = true;
    } else if (a == "-O0" || a == "-O1" || a == "-O2" || a == "-O3") {
      o.level = a[2] - '0';
    } else if (auto v15 = value_of(a, "--input-shape")) {
      o.input_shapes.push_back(*v15);
    } else if (auto v16 = value_of(a, "--check")) {
      o.check = parse_number<int>(*v16, "--check");
      if (o.check < 0) throw usage_error{"--check needs a number >= 0, got '" + *v16 + "'"};
    } else if (auto v17 = value_of(a, "--check-tolerance")) {
      o.check_tolerance = parse_number<double>(*v17, "--check-tolerance");
    } else if (a == "--summary") {
      o.summary = true;
    } else if (a == "--print-large-constants") {
      o.print_large_constants = true;
    } else if (a == "-o") {
      if (i + 1 >= argc) throw usage_error{"-o needs a file name"};
      o.output = argv[++i];
    } else if (a.size() > 1 && a[0] == '-') {
      throw usage_error{"unknown option '" + std::string(a) + "'"};
    } else {
      if (o.input) throw usage_error{"more than one input file ('" + *o.input + "' and '" + std::string(a) + "')"};
      o.input = std::string(a);
    }
  }
  if (!o.session && (!o.devices.empty() || o.place != "first" || o.soft_placement || o.log_placement || !o.trace.empty() ||
                     !o.init_targets.empty() || o.steps > 0 || o.data_parallel > 0 || !o.cluster.empty()))
    throw usage_error{"--devices, --place, --allow-soft-placement, --log-device-placement, --trace, --init, --steps, "
                      "--data-parallel and --cluster need --session"};
  if (!o.cluster.empty() && o.data_parallel > 0)
    throw usage_error{"--cluster and --data-parallel do not go together (replicas over ranks: --data-parallel=mpi)"};
  if (o.data_parallel > 0 && !o.devices.empty() && static_cast<int>(o.devices.size()) != o.data_parallel)
    throw usage_error{"--data-parallel=" + std::to_string(o.data_parallel) + " needs as many --devices, got " +
                      std::to_string(o.devices.size())};
  if (!o.run && ((o.check == 0 && !o.run_inputs.empty()) || !o.save_outputs.empty()))
    throw usage_error{"--input needs --run or --check, --save-outputs needs --run"};
  return o;
}

// The format of the input file: --input-format, else by extension (see usage_text); a .pb
// file is ONNX when its first byte is 0x08 (ModelProto.ir_version), TensorFlow otherwise.
std::string input_format_of(const options& o) {
  if (!o.input_format.empty()) return o.input_format;
  return gpass::model_format_of(*o.input);
}

graph_t read_input(const options& o) {
  if (!o.input) {
    if (o.tf_signature) throw usage_error{"--tf-feeds, --tf-fetches and --tf-targets need a TensorFlow input"};
    return gpass::parse_text<graph_t>(gpass_opt::example_graph, "<bundled example>");
  }
  if (!std::filesystem::exists(*o.input)) throw gpass::error("cannot open '" + *o.input + "': no such file");
  const std::string format = input_format_of(o);
  if (o.tf_signature && format != "tf")
    throw usage_error{"--tf-feeds, --tf-fetches and --tf-targets need a TensorFlow GraphDef input"};
  if ((o.tf_saved_signature || o.tf_tags) && format != "saved_model")
    throw usage_error{"--tf-signature and --tf-tags need a SavedModel input (a directory)"};
  if (format == "saved_model") {
#ifdef GPASS_OPT_WITH_TENSORFLOW
    gpass::saved_model_options so;
    if (o.tf_saved_signature) so.signature = *o.tf_saved_signature;
    if (o.tf_tags) so.tags = *o.tf_tags;
    if (o.max_tensor_bytes) so.import.max_tensor_bytes = o.max_tensor_bytes;
    return gpass::read_tf_saved_model<graph_t>(*o.input, so);
#else
    throw gpass::error("'" + *o.input + "': this gpass-opt was built without TensorFlow support");
#endif
  }
  if (format == "onnx") {
#ifdef GPASS_OPT_WITH_ONNX
    return gpass::read_onnx_file<graph_t>(*o.input);
#else
    throw gpass::error("'" + *o.input + "': this gpass-opt was built without ONNX support");
#endif
  }
  if (format == "tf") {
#ifdef GPASS_OPT_WITH_TENSORFLOW
    gpass::tf_import_options to;
    if (o.max_tensor_bytes) to.max_tensor_bytes = o.max_tensor_bytes;
    graph_t g = gpass::read_tf_graph_file<graph_t>(*o.input, to);
    if (o.tf_signature) gpass::bind_tf_signature(g, {.feeds = o.tf_feeds, .fetches = o.tf_fetches, .targets = o.tf_targets});
    return g;
#else
    throw gpass::error("'" + *o.input + "': this gpass-opt was built without TensorFlow support");
#endif
  }
  return gpass::read_text_file<graph_t>(*o.input);
}

// How IR printed for reading is printed: tensors of more than 64 elements elided.
gpass::text_print_options print_options(const options& o) {
  return {.elide_elements_over = o.print_large_constants ? -1 : 64};
}

void write_output(const options& o, const graph_t& g) {
  if (o.output.empty()) {
    gpass::write_text(std::cout, g, print_options(o));
    return;
  }
  if (has_extension(o.output, ".onnx")) {
#ifdef GPASS_OPT_WITH_ONNX
    gpass::write_onnx_file(g, o.output, {.external_data_threshold = o.external_data});
    return;
#else
    throw gpass::error("cannot write '" + o.output + "': this gpass-opt was built without ONNX support");
#endif
  }
  std::ofstream f(o.output, std::ios::binary | std::ios::trunc);
  gpass::write_text(f, g);
  f.flush();
  if (!f) throw gpass::error("cannot write '" + o.output + "'");
}

void list_passes() {
  auto& reg = gpass::pass_registry<graph_t>::global();
  std::cout << "passes:\n";
  for (const auto& name : reg.names()) {
    const auto* p = reg.find(name);
    std::cout << "  " << name;
    if (p && !p->description().empty()) std::cout << " - " << p->description();
    std::cout << '\n';
    if (p)
      for (const auto& o : p->info().options) std::cout << "      " << gpass::describe_option(o) << '\n';
  }
  std::cout << "  fixed-point - " << gpass::dynamic_fixed_point<graph_t>::description << '\n';
  for (const auto& o : gpass::fixed_point_options) std::cout << "      " << gpass::describe_option(o) << '\n';
  std::cout << "pipelines:\n";
  for (const auto& name : reg.pipeline_names()) {
    const auto* p = reg.find_pipeline(name);
    std::cout << "  " << name;
    if (p) std::cout << " = " << p->text;
    std::cout << '\n';
  }
}

// ---- --run: execute the graph on the Eigen CPU executor ----

namespace ex = gpass::exec;

[[noreturn]] void no_onnx(std::string_view what) {
  throw gpass::error(std::string(what) + ": this gpass-opt was built without ONNX support (needed for .pb tensor files)");
}

std::string format_g(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// "NAME DTYPE[SHAPE] checksum=SUM[ mean_abs=M]": SUM is the sum of the elements as double
// (bool: the number of trues; complex: real plus imaginary parts; string: total length).
std::string describe_tensor(const std::string& name, const gpass::tensor& t) {
  std::string line = (name.empty() ? std::string("<unnamed>") : name) + ' ' + std::string(gpass::to_string(t.element_type())) +
                     gpass::shape::of(t.sizes()).to_string();
  double sum = 0, abs_sum = 0;
  const std::int64_t n = t.size();
  gpass::visit_dtype(t.element_type(), [&]<class T>() {
    const T* p = t.data<T>();
    for (std::int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, std::string>) {
        sum += static_cast<double>(p[i].size());
      } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
        sum += static_cast<double>(p[i].real()) + static_cast<double>(p[i].imag());
      } else {
        const double v = static_cast<double>(p[i]);
        sum += v;
        abs_sum += std::abs(v);
      }
    }
  });
  line += " checksum=" + format_g(sum);
  if (gpass::is_floating(t.element_type())) line += " mean_abs=" + format_g(n ? abs_sum / static_cast<double>(n) : 0.0);
  return line;
}

std::string describe_value(const std::string& name, const ex::value& v) {
  if (v.is_tensor()) return describe_tensor(name, v.tensor());
  if (v.is_sequence()) {
    std::string line = name + " sequence(" + std::to_string(v.sequence().size()) + ")";
    for (std::size_t k = 0; k < v.sequence().size(); ++k)
      line += "\n  " + describe_tensor(name + "[" + std::to_string(k) + "]", v.sequence()[k]);
    return line;
  }
  return name + " none";
}

void print_tensor_files(const options& o) {
#ifdef GPASS_OPT_WITH_ONNX
  for (const auto& f : o.print_tensors) {
    if (!std::filesystem::exists(f)) throw gpass::error("cannot open '" + f + "': no such file");
    const auto proto = gpass::detail::onnx_io::parse_proto_file<onnx::TensorProto>(f, "TensorProto");
    std::cout << describe_tensor(proto.name(), gpass::read_onnx_tensor_file(f)) << '\n';
  }
#else
  no_onnx("--print-tensor=" + o.print_tensors.front());
#endif
}

// A random tensor for input `name` of declared type `t`.
gpass::tensor random_input(const std::string& name, const gpass::type& t, std::mt19937_64& rng) {
  if (!t.is_tensor() || t.tensor().element == gpass::dtype::undefined || !t.tensor().shape.has_rank())
    throw gpass::error("--run: input '" + name + "' has type " + t.to_string() +
                           ": cannot make a random value for it (give its values with --input=FILE.pb)",
                       gpass::error_context{.node = name, .op = "arg"});
  const auto& tt = t.tensor();
  std::vector<std::int64_t> sizes;
  for (std::size_t d = 0; d < tt.shape.rank(); ++d) sizes.push_back(tt.shape[d].is_known() ? tt.shape[d].value() : 1);
  const gpass::dtype dt = tt.element;
  if (!gpass::is_floating(dt) && !gpass::is_integer(dt) && dt != gpass::dtype::bool_)
    throw gpass::error("--run: input '" + name + "': no random values for element type " + std::string(gpass::to_string(dt)) +
                           " (give its values with --input=FILE.pb)",
                       gpass::error_context{.node = name, .op = "arg"});
  gpass::tensor x(dt, sizes);
  gpass::visit_dtype(dt, [&]<class T>() {
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::complex<float>> ||
                  std::is_same_v<T, std::complex<double>>) {
      // excluded above
    } else {
      T* p = x.data<T>();
      const std::int64_t n = x.size();
      if (gpass::is_floating(dt)) {
        std::uniform_real_distribution<double> u(-1.0, 1.0);
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<float>(u(rng)));
      } else if (dt == gpass::dtype::bool_) {
        std::uniform_int_distribution<int> u(0, 1);
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(u(rng) != 0);
      } else {
        std::uniform_int_distribution<int> u(0, 9);
        for (std::int64_t i = 0; i < n; ++i) p[i] = static_cast<T>(u(rng));
      }
    }
  });
  return x;
}

bool has_default(const graph_t& g, const std::string& input) {
  auto v = g.find(input);
  if (!v) return false;
  auto it = g[*v].attrs.find("default");
  return it != g[*v].attrs.end() && it->second.template is<gpass::tensor>();
}

// Reads --input files (in graph-input order) or makes random inputs.
std::vector<ex::value> make_inputs(const options& o, const graph_t& g, const std::vector<std::string>& names,
                                   const std::vector<gpass::type>& types) {
  std::vector<ex::value> in(names.size());
  if (!o.run_inputs.empty()) {
    std::size_t needed = names.size();
    while (needed > 0 && has_default(g, names[needed - 1])) --needed;
    if (o.run_inputs.size() < needed || o.run_inputs.size() > names.size()) {
      std::string list;
      for (std::size_t i = 0; i < names.size(); ++i) list += (i ? ", '" : "'") + names[i] + "'";
      const std::string want = needed == names.size() ? std::to_string(needed)
                                                       : std::to_string(needed) + " to " + std::to_string(names.size());
      throw gpass::error("--run: the graph has " + std::to_string(names.size()) + " input(s) (" + list + "): expected " + want +
                         " --input file(s), got " + std::to_string(o.run_inputs.size()));
    }
#ifdef GPASS_OPT_WITH_ONNX
    for (std::size_t i = 0; i < o.run_inputs.size(); ++i) {
      const auto& f = o.run_inputs[i];
      if (!std::filesystem::exists(f)) throw gpass::error("cannot open '" + f + "': no such file");
      gpass::tensor x = gpass::read_onnx_tensor_file(f);
      // ONNX test data stores bfloat16 as uint16 bit patterns
      if (types[i].is_tensor() && types[i].tensor().element == gpass::dtype::bf16 && x.element_type() == gpass::dtype::uint16)
        x = gpass::tensor::wrap(gpass::dtype::bf16, x.sizes(), x.buffer());
      in[i] = std::move(x);
    }
#else
    no_onnx("--input=" + o.run_inputs.front());
#endif
  } else {
    std::mt19937_64 rng(o.seed);
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (has_default(g, names[i])) continue;  // none: the input's default
      in[i] = random_input(names[i], types[i], rng);
    }
  }
  return in;
}

std::vector<ex::value> clone_values(const std::vector<ex::value>& in);

ex::plan_options plan_options_of(const options& o) {
  ex::plan_options p;
  p.limits.max_tensor_bytes = o.max_tensor_bytes;
  p.limits.max_run_bytes = o.max_run_bytes;
  p.limits.max_loop_iterations = o.max_loop_iterations;
  p.limits.max_call_depth = o.max_call_depth;
  p.split_batch = o.batch_split;
  return p;
}

// --repeat=N: N more runs on copies of the inputs, then the median and fastest latency.
template <class Run>
void repeat_runs(const options& o, const std::vector<ex::value>& inputs, Run run) {
  if (o.repeat <= 0) return;
  std::vector<double> times;
  for (int r = 0; r < o.repeat; ++r) {
    auto args = clone_values(inputs);
    const auto t1 = std::chrono::steady_clock::now();
    run(std::move(args));
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t1).count());
  }
  std::sort(times.begin(), times.end());
  std::cout << "latency median: " << format_g(times[times.size() / 2]) << " ms, min: " << format_g(times.front())
            << " ms (" << times.size() << " runs)\n";
}

// Prints one line per output and writes --save-outputs.
void report_outputs(const options& o, const std::vector<std::string>& names, const std::vector<ex::value>& out) {
  for (std::size_t k = 0; k < out.size(); ++k) std::cout << describe_value(k < names.size() ? names[k] : std::string(), out[k]) << '\n';
  if (!o.save_outputs.empty()) {
#ifdef GPASS_OPT_WITH_ONNX
    std::error_code ec;
    std::filesystem::create_directories(o.save_outputs, ec);
    if (ec) throw gpass::error("cannot create '" + o.save_outputs + "': " + ec.message());
    for (std::size_t k = 0; k < out.size(); ++k) {
      const std::string name = k < names.size() ? names[k] : std::string();
      if (!out[k].is_tensor())
        throw gpass::error("--save-outputs: output " + std::to_string(k) + " ('" + name + "') is a " + out[k].kind_name() +
                           ", not a tensor: cannot write it as a TensorProto");
      gpass::write_onnx_tensor_file(std::filesystem::path(o.save_outputs) / ("output_" + std::to_string(k) + ".pb"),
                                    out[k].tensor(), name);
    }
#endif
  }
}


#ifdef GPASS_OPT_WITH_MPI
// The ranks of this mpirun (MPI initialized on first use, finalized at exit); outside
// rank 0, standard output is silenced (one copy of the results).
std::shared_ptr<gpass::mpi_process_group> mpi_world() {
  static gpass::mpi_environment env;
  static auto world = std::make_shared<gpass::mpi_process_group>();
  if (world->rank() != 0) std::cout.setstate(std::ios::failbit);
  return world;
}
// The transport of --cluster: the ranks of this mpirun (made once; it ends before MPI does).
std::shared_ptr<gpass::mpi_transport> mpi_cluster_transport() {
  (void)mpi_world();
  static auto transport = std::make_shared<gpass::mpi_transport>();
  return transport;
}
#endif

// The session options of --session: --devices (CPU, --threads each), placement, limits; the
// signature pipeline `passes` (run per signature) and, with --data-parallel, the
// multi-devices passes after it.
gpass::session_options<graph_t> session_options_of(const options& o, std::string passes = {}) {
  gpass::session_options<graph_t> so;
  std::vector<std::string> devices = o.devices;
  if (devices.empty())
    for (int r = 0; r < std::max(1, o.data_parallel); ++r) devices.push_back("cpu:" + std::to_string(r));
  // with --cluster, every task has the --devices, named after it; the others' are remote
  std::vector<gpass::cluster_task> tasks;
  int my_task = 0;
  if (!o.cluster.empty()) {
#ifdef GPASS_OPT_WITH_MPI
    tasks = gpass::parse_cluster(o.cluster);
    auto world = mpi_world();
    if (static_cast<int>(tasks.size()) != world->size())
      throw gpass::error("--cluster=" + o.cluster + ": " + std::to_string(tasks.size()) + " task(s) for the " +
                         std::to_string(world->size()) + " rank(s) of this mpirun (one task per rank)");
    my_task = world->rank();
    so.transport = mpi_cluster_transport();
#else
    throw gpass::error("--cluster: this gpass-opt was built without MPI (install libopenmpi-dev and rebuild)");
#endif
  }
  const std::string prefix = tasks.empty() ? std::string("/job:localhost/replica:0/task:0")
                                           : "/job:" + tasks[static_cast<std::size_t>(my_task)].job + "/replica:0/task:" +
                                                 std::to_string(tasks[static_cast<std::size_t>(my_task)].task);
  std::string device_list;
  for (const auto& d : devices) {
    gpass::device_name n = gpass::parse_device_name(d);
    if (n.type && *n.type == "GPU" && n.id) {
#ifdef GPASS_OPT_WITH_CUDA
      if (*n.id >= ex::cuda_device_count())
        throw gpass::error("--devices: '" + d + "': no such CUDA device (" + std::to_string(ex::cuda_device_count()) + " here)");
      so.devices.push_back(std::make_shared<gpass::policy_device<ex::cuda, graph_t>>(
          gpass::parse_device_name(prefix + "/device:GPU:" + std::to_string(*n.id)),
          std::make_unique<ex::cuda>(ex::cuda::options{.device = static_cast<int>(*n.id)})));
      device_list += (device_list.empty() ? "" : ",") + std::string("/device:GPU:") + std::to_string(*n.id);
      continue;
#else
      throw gpass::error("--devices: '" + d + "': this gpass-opt was built without the cuda component: CPU devices only, named cpu:N");
#endif
    }
    if ((n.type && *n.type != "CPU") || !n.id)
      throw gpass::error("--devices: '" + d + "': devices are named cpu:N or gpu:N");
    so.devices.push_back(std::make_shared<gpass::policy_device<ex::eigen_cpu, graph_t>>(
        gpass::parse_device_name(prefix + "/device:CPU:" + std::to_string(*n.id)),
        std::make_unique<ex::eigen_cpu>(ex::eigen_cpu::options{.threads = o.threads})));
    device_list += (device_list.empty() ? "" : ",") + std::string("/device:CPU:") + std::to_string(*n.id);
  }
  if (!tasks.empty()) {
    std::vector<std::shared_ptr<gpass::session_device<graph_t>>> all;
    for (std::size_t p = 0; p < tasks.size(); ++p)
      for (const auto& mine : so.devices) {
        if (static_cast<int>(p) == my_task) {
          all.push_back(mine);
          continue;
        }
        gpass::device_name n = mine->name();
        n.job = tasks[p].job;
        n.task = tasks[p].task;
        all.push_back(std::make_shared<gpass::remote_device<graph_t>>(n, static_cast<int>(p), mine));
      }
    so.devices = std::move(all);
  }
  so.placement.allow_soft_placement = o.soft_placement;
  so.placement.log_device_placement = o.log_placement;
  so.placement.spread = o.place == "round-robin" ? gpass::placement_options::spread_kind::round_robin
                                                 : gpass::placement_options::spread_kind::first;
  so.plan = plan_options_of(o);
  if (o.data_parallel > 0) {
    int rank = 0, ranks = 1;
    if (o.data_parallel_mpi) {
#ifdef GPASS_OPT_WITH_MPI
      auto world = mpi_world();
      rank = world->rank();
      ranks = world->size();
      so.processes = world;
#else
      throw gpass::error("--data-parallel=mpi: this gpass-opt was built without MPI (install libopenmpi-dev and rebuild)");
#endif
    }
    passes += (passes.empty() ? "" : ",") + std::string("multi-devices{replicas=") + std::to_string(o.data_parallel) +
              ",rank=" + std::to_string(rank) + ",ranks=" + std::to_string(ranks) + ",devices=\"" + device_list +
              "\"},multi-devices-check";
  }
  if (!passes.empty()) {
    const auto pipe = std::make_shared<gpass::dynamic_pipeline<graph_t>>(gpass::pass_registry<graph_t>::global().parse(passes));
    // the channel-blocked ops of -O3's nchwc-layout have CPU kernels only: with a GPU among
    // the devices the convolutions stay NCHW, so that placement can put them there
    const bool gpu = device_list.find("/device:GPU:") != std::string::npos;
    so.prepare = [pipe, gpu](graph_t& h) {
      gpass::pass_context ctx;
      if (gpu) ctx.set_option("nchwc-layout.enable", "false");
      pipe->run(h, ctx, gpass::instrumentation_options{});
    };
  }
  return so;
}

// --session: the graph run through a gpass::session on --devices.
void run_session(const options& o, graph_t& g) {
  gpass::session_options<graph_t> so = session_options_of(o);
  const gpass::graph_interface io = gpass::interface_of(g);
  gpass::session<graph_t> sess(g, std::move(so));
  std::vector<ex::value> in = make_inputs(o, g, io.inputs, io.input_types);
  std::vector<ex::value> again = o.repeat > 0 ? clone_values(in) : std::vector<ex::value>{};
  std::vector<ex::value> traced = o.repeat > 0 && !o.trace.empty() ? clone_values(in) : std::vector<ex::value>{};
  gpass::run_metadata md;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<ex::value> out = sess.run_graph(std::move(in), {.trace = !o.trace.empty() && o.repeat == 0}, &md);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (o.timing) std::cerr << "run: " << format_g(ms) << " ms\n";
  std::map<std::string, std::size_t> per_device;
  for (const auto& name : sess.device_names()) per_device[name] = 0;
  for (const auto& [node, dev] : sess.last_placement()) ++per_device[dev];
  std::cout << "session: " << sess.device_names().size() << " device(s), " << md.partitions << " partition(s) run, "
            << md.sends << " send/recv pair(s) (" << md.control_sends << " for control edges), " << md.copied_constants
            << " constant(s) copied; placement:";
  for (const auto& [dev, count] : per_device) std::cout << ' ' << gpass::parse_device_name(dev).short_name() << '=' << count;
  std::cout << '\n';
  repeat_runs(o, again, [&](std::vector<ex::value> args) { (void)sess.run_graph(std::move(args)); });
  if (!o.trace.empty()) {
    // with --repeat, the timeline of one more (warm) run after the timed ones
    if (o.repeat > 0) (void)sess.run_graph(std::move(traced), {.trace = true}, &md);
    std::ofstream f(o.trace, std::ios::binary | std::ios::trunc);
    gpass::write_chrome_trace(f, md.stats);
    f.flush();
    if (!f) throw gpass::error("cannot write '" + o.trace + "'");
  }
  report_outputs(o, io.outputs, out);
}

#ifdef GPASS_OPT_WITH_TENSORFLOW
// --session with --init / --steps: a session on the imported GraphDef itself (not bound to a
// signature), --passes applied per signature, the init targets run once, then --steps runs.
void run_steps(const options& o) {
  if (input_format_of(o) != "tf") throw usage_error{"--init and --steps need a TensorFlow input"};
  if (o.run_inputs.size() != o.tf_feeds.size())
    throw gpass::error("--steps: " + std::to_string(o.tf_feeds.size()) + " --tf-feeds need as many --input files (TensorFlow " +
                       "TensorProto), got " + std::to_string(o.run_inputs.size()));
  gpass::tf_import_options to;
  if (o.max_tensor_bytes) to.max_tensor_bytes = o.max_tensor_bytes;
  graph_t g = gpass::read_tf_graph_file<graph_t>(*o.input, to);
  std::string passes = o.passes;
  if (o.level > 0) passes = "O" + std::to_string(o.level) + (passes.empty() ? "" : "," + passes);
  gpass::session_options<graph_t> so = session_options_of(o, passes);
  const std::shared_ptr<ex::process_group> so_processes = so.processes;
  gpass::session<graph_t> sess(std::move(g), std::move(so));
  std::vector<std::pair<std::string, ex::value>> feeds;
  for (std::size_t i = 0; i < o.tf_feeds.size(); ++i) {
    if (!std::filesystem::exists(o.run_inputs[i])) throw gpass::error("cannot open '" + o.run_inputs[i] + "': no such file");
    feeds.emplace_back(o.tf_feeds[i], gpass::read_tf_tensor_file(o.run_inputs[i]));
  }
  for (const auto& t : o.init_targets) (void)sess.run(feeds, {}, {t});
  const int steps = std::max(o.steps, 1);
  std::vector<ex::value> out;
  gpass::run_metadata md;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) out = sess.run(feeds, o.tf_fetches, o.tf_targets, {}, &md);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "session: " << steps << " step(s) after " << o.init_targets.size() << " init target(s), "
            << sess.compilations() << " signature(s) compiled, " << md.partitions << " partition(s) per step, " << md.sends
            << " send/recv pair(s)";
  if (o.data_parallel > 0)
    std::cout << ", data-parallel: " << o.data_parallel << " replica(s) x "
              << (so_processes ? so_processes->size() : 1) << " process(es)";
  if (!o.cluster.empty()) std::cout << ", cluster: " << sess.device_names().size() << " device(s) in " << o.cluster;
  std::cout << '\n';
  if (o.timing) std::cerr << "steps: " << format_g(ms) << " ms (" << format_g(ms / steps) << " ms per step)\n";
  report_outputs(o, o.tf_fetches, out);
}
#endif

// The 'batch:' line of --run: whether the graph is batch-separable and how this run splits.
void print_batch_split(const options& o, const ex::batch_split_info& b, const std::vector<gpass::type>& types,
                       const std::vector<ex::value>& in) {
  if (!b.separable) {
    std::cout << "batch: whole (" << (b.reason.empty() ? "not analysed" : b.reason) << ")\n";
    return;
  }
  const std::int64_t n = ex::batch_size_of(b, types, in).value_or(0);
  const auto c = ex::choose_batch_split(b, n, o.threads);
  std::cout << "batch: separable over '" << b.symbol << "' (" << format_g(b.sample_bytes / 1e6) << " MB of values a sample, "
            << format_g(b.constant_bytes / 1e6) << " MB of weights read whole" << (b.recurrent ? ", recurrent" : "") << "); ";
  if (!c.splits(n)) std::cout << "run whole\n";
  else std::cout << "runs as " << c.parts << " part(s) of sub-batches of " << c.micro << "\n";
}

void run_graph(const options& o, graph_t& g) {
#ifndef GPASS_OPT_WITH_ONNX
  if (!o.save_outputs.empty()) no_onnx("--save-outputs=" + o.save_outputs);
#endif
  try {
    gpass::pass_context ictx;
    gpass::infer_shapes(g, ictx);
  } catch (const std::exception&) {
    // run without static sizes: no buffer plan, the kernels check at run time
  }
  if (o.session) {
    run_session(o, g);
    return;
  }
  ex::eigen_cpu cpu({.threads = o.threads});
  ex::plan<ex::eigen_cpu> p(g, cpu, plan_options_of(o));
  std::vector<ex::value> in = make_inputs(o, g, p.input_names(), p.input_types());
  const auto& st = p.stats();
  std::cout << "plan: " << st.steps << " steps, " << st.pruned << " pruned, " << st.planned_buffers << " planned buffers ("
            << st.planned_peak_bytes << " peak bytes, " << st.naive_bytes << " naive bytes), " << st.dynamic_buffers
            << " dynamic buffers, " << st.functions << " functions"
            << (st.recorded_memory_plan ? ", recorded memory plan (" + std::to_string(st.in_place) + " in place)" : std::string())
            << '\n';
  print_batch_split(o, p.batch_split(), p.input_types(), in);
  std::vector<ex::value> again = o.repeat > 0 ? clone_values(in) : std::vector<ex::value>{};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<ex::value> out = p.run(std::move(in));
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (o.timing) std::cerr << "run: " << format_g(ms) << " ms\n";
  repeat_runs(o, again, [&](std::vector<ex::value> args) { (void)p.run(std::move(args)); });
  report_outputs(o, p.output_names(), out);
}

// ---- optimization: --input-shape, --summary, --check ----

// --input-shape=NAME:D,D,...: the declared shape of graph input NAME becomes [D, D, ...].
void apply_input_shapes(const options& o, graph_t& g) {
  for (const auto& spec : o.input_shapes) {
    const std::size_t colon = spec.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw usage_error{"--input-shape needs NAME:D,D,..., got '" + spec + "'"};
    const std::string name = spec.substr(0, colon);
    std::vector<std::int64_t> dims;
    for (const auto& d : split_list(spec.substr(colon + 1))) {
      dims.push_back(parse_number<std::int64_t>(d, "--input-shape"));
      if (dims.back() < 0) throw usage_error{"--input-shape: dims must be >= 0, got '" + spec + "'"};
    }
    auto v = g.find(name);
    if (!v || g[*v].op != "arg") {
      std::string inputs;
      for (auto u : g.nodes())
        if (g[u].op == "arg") inputs += (inputs.empty() ? "'" : ", '") + g[u].name + "'";
      throw gpass::error("--input-shape: the graph has no input '" + name + "' (its inputs: " + inputs + ")");
    }
    gpass::type& t = g[*v].outputs[0];
    if (!t.is_tensor()) throw gpass::error("--input-shape: input '" + name + "' is a " + t.to_string() + ", not a tensor");
    const auto& old = t.tensor().shape;
    if (old.has_rank() && old.rank() != dims.size())
      throw gpass::error("--input-shape: input '" + name + "' has rank " + std::to_string(old.rank()) + " (" + t.to_string() +
                         "), the shape given has " + std::to_string(dims.size()) + " dims");
    for (std::size_t i = 0; old.has_rank() && i < dims.size(); ++i)
      if (old[i].is_known() && old[i].value() != dims[i])
        throw gpass::error("--input-shape: input '" + name + "' has dim " + std::to_string(i) + " = " +
                           std::to_string(old[i].value()) + ", not " + std::to_string(dims[i]));
    t = gpass::type(gpass::tensor_type{t.tensor().element, gpass::shape::of(dims)});
  }
}

// onnxsim's summary: one row per op type, count before and after.
void print_summary(const std::map<std::string, std::int64_t>& before, const std::map<std::string, std::int64_t>& after) {
  std::map<std::string, std::pair<std::int64_t, std::int64_t>> rows;
  std::int64_t tb = 0, ta = 0;
  for (const auto& [k, n] : before) rows[k].first = n, tb += n;
  for (const auto& [k, n] : after) rows[k].second = n, ta += n;
  std::size_t w = 5;
  for (const auto& [k, _] : rows) w = std::max(w, k.size());
  auto line = [&](const std::string& k, const std::string& b, const std::string& a) {
    std::cerr << k << std::string(w - k.size() + 2, ' ') << std::string(8 - std::min<std::size_t>(8, b.size()), ' ') << b
              << std::string(8 - std::min<std::size_t>(8, a.size()), ' ') << a << '\n';
  };
  line("op", "before", "after");
  for (const auto& [k, ba] : rows) line(k, std::to_string(ba.first), std::to_string(ba.second));
  line("total", std::to_string(tb), std::to_string(ta));
}

// A deep copy of run inputs (a plan may reuse its input buffers).
std::vector<ex::value> clone_values(const std::vector<ex::value>& in) {
  std::vector<ex::value> r(in.size());
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i].is_tensor()) r[i] = in[i].tensor().clone();
    else r[i] = in[i];
  return r;
}

// The largest |a - b| of two outputs and whether every element is within tolerance
// (|a-b| <= tol + tol*|a|; NaN matches NaN; integers exactly).
std::pair<double, bool> compare_outputs(const ex::value& a, const ex::value& b, double tol) {
  if (!a.is_tensor() || !b.is_tensor()) return {0.0, a.is_tensor() == b.is_tensor()};
  const gpass::tensor &x = a.tensor(), &y = b.tensor();
  if (x.element_type() != y.element_type() || x.sizes() != y.sizes())
    return {std::numeric_limits<double>::infinity(), false};
  double worst = 0;
  bool ok = true;
  gpass::visit_dtype(x.element_type(), [&]<class T>() {
    if constexpr (std::is_same_v<T, std::string>) {
      ok = x == y;
    } else if constexpr (std::is_same_v<T, std::complex<float>> || std::is_same_v<T, std::complex<double>>) {
      auto p = x.values<T>(), q = y.values<T>();
      for (std::size_t i = 0; i < p.size(); ++i) {
        const double d = std::abs(std::complex<double>(p[i]) - std::complex<double>(q[i]));
        worst = std::max(worst, d);
        ok = ok && d <= tol + tol * std::abs(std::complex<double>(p[i]));
      }
    } else {
      auto p = x.values<T>(), q = y.values<T>();
      for (std::size_t i = 0; i < p.size(); ++i) {
        const double u = static_cast<double>(p[i]), v = static_cast<double>(q[i]);
        if (std::isnan(u) || std::isnan(v)) {
          ok = ok && std::isnan(u) && std::isnan(v);
          continue;
        }
        const double d = u == v ? 0.0 : std::abs(u - v);
        worst = std::max(worst, d);
        ok = ok && (gpass::is_floating(x.element_type()) ? d <= tol + tol * std::abs(u) : d == 0);
      }
    }
  });
  return {worst, ok};
}

// --check=N: runs `before` and `after` on N seeded random inputs (seeds --seed, +1, ...; or
// the --input files once) and compares their outputs.
void check_graphs(const options& o, graph_t before, graph_t after) {
  for (graph_t* g : {&before, &after}) {
    try {
      gpass::pass_context ictx;
      gpass::infer_shapes(*g, ictx);
    } catch (const std::exception&) {
      // run without static sizes
    }
  }
  ex::eigen_cpu cpu({.threads = o.threads});
  ex::plan<ex::eigen_cpu> pa(before, cpu, plan_options_of(o)), pb(after, cpu, plan_options_of(o));
  if (pa.input_names() != pb.input_names() || pa.output_names().size() != pb.output_names().size())
    throw gpass::error("--check: the optimized graph's inputs or outputs differ from the input graph's");
  const int runs = o.run_inputs.empty() ? o.check : 1;
  double worst = 0;
  std::string worst_where = "-";
  bool ok = true;
  for (int r = 0; r < runs; ++r) {
    options oi = o;
    oi.seed = o.seed + static_cast<std::uint64_t>(r);
    std::vector<ex::value> in = make_inputs(oi, before, pa.input_names(), pa.input_types());
    std::vector<ex::value> ya = pa.run(clone_values(in)), yb = pb.run(std::move(in));
    for (std::size_t k = 0; k < ya.size() && k < yb.size(); ++k) {
      auto [d, fine] = compare_outputs(ya[k], yb[k], o.check_tolerance);
      if (d > worst || (!fine && ok)) {
        worst = std::max(worst, d);
        worst_where = "output '" + pa.output_names()[k] + "', run " + std::to_string(r);
      }
      ok = ok && fine;
    }
  }
  std::cerr << "check: " << runs << " run(s) on seeded random inputs, max abs diff " << format_g(worst) << " (" << worst_where
            << "), tolerance " << format_g(o.check_tolerance) << ": " << (ok ? "ok" : "FAILED") << '\n';
  if (!ok) throw gpass::error("--check: the optimized graph's outputs differ from the input graph's (" + worst_where + ")");
}

int run(const options& o) {
  gpass::register_tf_passes(gpass::pass_registry<graph_t>::global());  // tf-frontend and its passes
  gpass::register_optimizer_passes(gpass::pass_registry<graph_t>::global());  // fold-constants, O1-O3
  if (o.list_passes) {
    list_passes();
    return 0;
  }
  if (!o.print_tensors.empty()) {
    print_tensor_files(o);
    return 0;
  }
  if (o.session && (!o.init_targets.empty() || o.steps > 0)) {
#ifdef GPASS_OPT_WITH_TENSORFLOW
    run_steps(o);
    return 0;
#else
    throw gpass::error("--init and --steps need TensorFlow support, which this gpass-opt was built without");
#endif
  }
  graph_t g = read_input(o);
  apply_input_shapes(o, g);
  std::optional<graph_t> original;
  if (o.check > 0) original = g;
  const auto counts_before = o.summary ? gpass::op_counts(g) : std::map<std::string, std::int64_t>{};
  std::string passes = o.passes;
  if (o.level > 0) passes = "O" + std::to_string(o.level) + (passes.empty() ? "" : "," + passes);
  gpass::pass_context ctx;
  if (!passes.empty()) {
    auto pipe = gpass::pass_registry<graph_t>::global().parse(passes, gpass::held_facts_of(g));
    gpass::instrumentation_options io;
    io.verify_each = o.verify;
    io.timing = o.timing;
    io.timing_stream = o.timing ? &std::cerr : nullptr;
    io.print_after_all = o.print_after_all ? &std::cerr : nullptr;
    if (!o.dump_dir.empty()) io.dump_dir = o.dump_dir;
    if (!o.reproducer_dir.empty()) io.reproducer_dir = o.reproducer_dir;
    io.print_options = print_options(o);
    // one-time process set-up outside the timed optimization: the op schemas and CPU kernels
    // are registered on first use (as a runtime does when its environment is created)
    (void)gpass::op_registry::global();
    (void)ex::eigen_cpu({.threads = 1}).kernels();
    // --timing-runs: the earlier runs optimize copies (made outside the timer), the last one g
    std::vector<double> times;
    for (int r = 1; r < o.timing_runs; ++r) {
      graph_t copy = g;
      gpass::pass_context scratch;
      gpass::instrumentation_options quiet = io;
      quiet.timing = false;
      quiet.timing_stream = nullptr;
      quiet.print_after_all = nullptr;
      quiet.dump_dir.clear();
      const auto t0 = std::chrono::steady_clock::now();
      pipe.run(copy, scratch, quiet);
      times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    const auto t0 = std::chrono::steady_clock::now();
    pipe.run(g, ctx, io);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (o.timing) {
      std::sort(times.begin(), times.end());
      std::cerr << "optimize: " << format_g(times[times.size() / 2]) << " ms";
      if (times.size() > 1) std::cerr << " (median of " << times.size() << ", min " << format_g(times.front()) << " ms)";
      std::cerr << '\n';
    }
  } else if (o.verify) {
    gpass::verify(g);
  }
  for (const auto& d : ctx.diagnostics()) {
    std::cerr << "gpass-opt: " << (d.severity == gpass::severity::warning ? "warning" : d.severity == gpass::severity::error ? "error" : "note");
    if (!d.pass.empty()) std::cerr << ": pass '" << d.pass << "'";
    if (!d.node.empty()) std::cerr << ": node '" << d.node << "'";
    std::cerr << ": " << d.message << '\n';
  }
  if (o.stats)
    for (const auto& [k, v] : ctx.statistics()) std::cerr << "statistic " << k << " = " << v << '\n';
  if (o.summary) print_summary(counts_before, gpass::op_counts(g));
  if (original) check_graphs(o, std::move(*original), g);
  if (!o.dot_file.empty()) {
    std::ofstream f(o.dot_file, std::ios::binary | std::ios::trunc);
    gpass::write_dot(f, g);
    f.flush();
    if (!f) throw gpass::error("cannot write '" + o.dot_file + "'");
  }
  if (o.run) {
    run_graph(o, g);
    if (!o.output.empty()) write_output(o, g);
    return 0;
  }
  write_output(o, g);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse_args(argc, argv));
  } catch (const usage_error& e) {
    std::cerr << "gpass-opt: " << e.message << "\n(run 'gpass-opt --help' for usage)\n";
    return 2;
  } catch (const gpass::error& e) {
    std::cerr << e.what() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "gpass-opt: internal error: " << e.what() << '\n';
    return 1;
  }
}
