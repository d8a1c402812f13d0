// libFuzzer harness of the graph loader, the validator and the lowering, and (for graphs small enough) the CPU run
// path: any input is either refused with a GraphError or runs, and passes its float64 check. Anything else (another
// exception, a crash, a sanitizer report, a hang past libFuzzer's timeout) is a finding.
//
//   gridflow_fuzz_graph -seed=1 -runs=100000 -dict=tests/fuzz/graph.dict WORK_CORPUS tests/fuzz/corpus
#include "scheduler/errors.hpp"
#include "scheduler/json_format.hpp"
#include "scheduler/session.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace {

// A graph whose run would take more host memory than this is only validated and lowered.
constexpr std::uint64_t kRunBytes = std::uint64_t{1} << 20;

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gridflow;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const Graph g = graph_from_json(text, "fuzz.json");
    SessionOptions o;
    o.cpu_workers = 2;
    o.files.input_dir = o.files.output_dir = "/nonexistent-gridflow-fuzz"; // no file is ever read or written
    o.max_memory = kRunBytes;
    o.exec.timeout_ns = 2'000'000'000ull;
    Session s(g, o); // plan_run: analyze, files, lowering, the memory budget
    s.run();
    if (!s.check().passed) {
      std::fprintf(stderr, "fuzz: a graph ran and failed its check:\n%.*s\n", static_cast<int>(size), text.data());
      std::abort();
    }
  } catch (const GraphError&) {
    // refused cleanly
  }
  return 0;
}
