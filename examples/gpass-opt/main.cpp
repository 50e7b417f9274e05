// gpass-opt: reads a graph, runs a pass pipeline on it, writes the result.
//
//   gpass-opt [options] [INPUT]
//
// INPUT is a text-IR file (.gir) — or an ONNX model (.onnx) when built with gpass::onnx —
// and defaults to a bundled example graph. Exit status: 0 on success, 1 when the input or a
// pass fails (the message names the file, pass, node and op), 2 on a usage error.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <gpass/all.hpp>
#ifdef GPASS_OPT_WITH_ONNX
#include <gpass/io/onnx.hpp>
#endif

#include "example_graph.hpp"

namespace {

using graph_t = gpass::graph<>;

constexpr std::string_view usage_text = R"(usage: gpass-opt [options] [INPUT]

Reads INPUT (text IR .gir, or ONNX .onnx when built with ONNX support; default: a bundled
example graph), runs a pass pipeline and writes the resulting text IR to stdout or -o FILE.

options:
  --passes=PIPELINE       passes to run, e.g. "delete-disconnected,dce" or "dce{keep=y}"
                          (named pipelines such as "default" expand)
  --pipeline=NAME         run a named pipeline (same as --passes=NAME)
  --list-passes           list registered passes and named pipelines, then exit
  --print-ir-after-all    print the IR after every pass (to stderr)
  --timing                print one timing line per pass (to stderr)
  --stats                 print pass statistics (to stderr)
  --no-verify             do not verify the graph after each pass
  --dump-dir=DIR          write the IR before/after each pass into DIR
  --reproducer-dir=DIR    when a pass fails, write its input graph into DIR
  --dot=FILE              also write the result as Graphviz DOT
  -o FILE                 write the result to FILE (.gir, or .onnx with ONNX support)
  --version               print the version
  -h, --help              this text
)";

struct usage_error {
  std::string message;
};

struct options {
  std::optional<std::string> input;
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
};

bool has_extension(const std::string& path, std::string_view ext) {
  return std::filesystem::path(path).extension() == ext;
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
    } else if (a == "--stats") {
      o.stats = true;
    } else if (a == "--no-verify") {
      o.verify = false;
    } else if (auto v3 = value_of(a, "--dump-dir")) {
      o.dump_dir = *v3;
    } else if (auto v4 = value_of(a, "--reproducer-dir")) {
      o.reproducer_dir = *v4;
    } else if (auto v5 = value_of(a, "--dot")) {
      o.dot_file = *v5;
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
  return o;
}

graph_t read_input(const options& o) {
  if (!o.input) return gpass::parse_text<graph_t>(gpass_opt::example_graph, "<bundled example>");
  if (!std::filesystem::exists(*o.input)) throw gpass::error("cannot open '" + *o.input + "': no such file");
  if (has_extension(*o.input, ".onnx")) {
#ifdef GPASS_OPT_WITH_ONNX
    return gpass::read_onnx_file<graph_t>(*o.input);
#else
    throw gpass::error("'" + *o.input + "': this gpass-opt was built without ONNX support");
#endif
  }
  return gpass::read_text_file<graph_t>(*o.input);
}

void write_output(const options& o, const graph_t& g) {
  if (o.output.empty()) {
    gpass::write_text(std::cout, g);
    return;
  }
  if (has_extension(o.output, ".onnx")) {
#ifdef GPASS_OPT_WITH_ONNX
    gpass::write_onnx_file(g, o.output);
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
  }
  std::cout << "pipelines:\n";
  for (const auto& name : reg.pipeline_names()) {
    const auto* p = reg.find_pipeline(name);
    std::cout << "  " << name;
    if (p) std::cout << " = " << p->text;
    std::cout << '\n';
  }
}

int run(const options& o) {
  if (o.list_passes) {
    list_passes();
    return 0;
  }
  graph_t g = read_input(o);
  gpass::pass_context ctx;
  if (!o.passes.empty()) {
    auto pipe = gpass::pass_registry<graph_t>::global().parse(o.passes, gpass::held_facts_of(g));
    gpass::instrumentation_options io;
    io.verify_each = o.verify;
    io.timing = o.timing;
    io.timing_stream = o.timing ? &std::cerr : nullptr;
    io.print_after_all = o.print_after_all ? &std::cerr : nullptr;
    if (!o.dump_dir.empty()) io.dump_dir = o.dump_dir;
    if (!o.reproducer_dir.empty()) io.reproducer_dir = o.reproducer_dir;
    pipe.run(g, ctx, io);
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
  if (!o.dot_file.empty()) {
    std::ofstream f(o.dot_file, std::ios::binary | std::ios::trunc);
    gpass::write_dot(f, g);
    f.flush();
    if (!f) throw gpass::error("cannot write '" + o.dot_file + "'");
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
