#include "tests/common/bad_descriptors.hpp"

#include "scheduler/analysis.hpp"
#include "scheduler/lowering.hpp"

namespace gridflow::testing {
namespace {

using program::DescriptorField;

// Every op the checks cover, small: a reduce, a multi-chunk scan, a histogram, a scatter, a select and a map.
Graph checked_graph() {
  Graph g("bad-descriptors");
  g.add_buffer("x", DType::f32, {40000}, InitUniform{-1, 1, 3});
  g.add_buffer("s", DType::f32, {1});
  g.add_buffer("y", DType::f32, {40000});
  g.add_buffer("k", DType::i32, {5000}, InitUniform{0, 7, 4});
  g.add_buffer("h", DType::i32, {8});
  g.add_buffer("off", DType::i32, {8});
  g.add_buffer("p", DType::i32, {5000});
  g.add_buffer("z", DType::f32, {40000});
  g.add_buffer("n", DType::i32, {1});
  g.reduce("sum", "x", "s", ReduceFn::sum);
  g.scan("scan", "x", "y", ScanFn::sum);
  g.histogram("hist", "k", "h");
  g.scan("offsets", "h", "off", ScanFn::sum, true);
  g.scatter("place", "k", "off", "p");
  g.select("keep", "x", "z", "n", CmpFn::gt, 0.0);
  g.add_buffer("m", DType::f32, {40000});
  g.map("act", "x", "m", MapFn::tanh);
  return g;
}

LoweredProgram lowered(std::uint32_t blocks, std::uint32_t threads, Schedule schedule = Schedule::dynamic) {
  const Graph g = checked_graph();
  LoweringOptions lo;
  lo.grid_blocks = blocks;
  lo.threads_per_block = threads;
  lo.schedule = schedule;
  return lower(g, analyze(g), lo);
}

program::TaskDesc& task(LoweredProgram& p, const char* name) {
  for (std::size_t i = 0; i < p.tasks.size(); ++i)
    if (p.task_names[i] == name)
      return p.tasks[i];
  throw std::runtime_error(std::string("no task ") + name);
}

// A corruption of one task's descriptor.
BadDescriptor corrupt(std::string name, DescriptorField field, const char* target,
                      std::function<void(program::TaskDesc&)> f) {
  return {std::move(name), field, [target, f](std::uint32_t blocks, std::uint32_t threads) {
            LoweredProgram p = lowered(blocks, threads);
            f(task(p, target));
            return p;
          }};
}

} // namespace

std::vector<BadDescriptor> bad_descriptors() {
  std::vector<BadDescriptor> v;
  v.push_back(corrupt("input buffer", DescriptorField::buffer, "sum", [](auto& t) { t.in_buffer = 999; }));
  v.push_back(corrupt("output buffer", DescriptorField::buffer, "scan", [](auto& t) { t.out_buffer = 999; }));
  v.push_back(corrupt("aux buffer", DescriptorField::buffer, "keep", [](auto& t) { t.aux_buffer = 999; }));
  v.push_back(
      corrupt("scan tile of a partial chunk", DescriptorField::tile_size, "scan", [](auto& t) { t.tile_size += 1; }));
  v.push_back(
      corrupt("select tile of a partial chunk", DescriptorField::tile_size, "keep", [](auto& t) { t.tile_size -= 1; }));
  v.push_back(corrupt("histogram of no bins", DescriptorField::bins, "hist", [](auto& t) { t.param = 0; }));
  v.push_back(corrupt("histogram of 5000 bins", DescriptorField::bins, "hist", [](auto& t) { t.param = 5000; }));
  v.push_back(corrupt("scatter of 2000 bins", DescriptorField::bins, "place", [](auto& t) { t.param = 2000; }));
  v.push_back(corrupt("reduce of fn 7", DescriptorField::fn, "sum", [](auto& t) { t.fn = 7; }));
  v.push_back(corrupt("map of fn 9", DescriptorField::fn, "act", [](auto& t) { t.fn = 9; }));
  v.push_back({"dependency on no task", DescriptorField::dep_task, [](std::uint32_t blocks, std::uint32_t threads) {
                 LoweredProgram p = lowered(blocks, threads);
                 for (program::DepDesc& d : p.deps)
                   d.task = 9999;
                 return p;
               }});
  v.push_back(
      {"static list entry past the tiles", DescriptorField::tile_id, [](std::uint32_t blocks, std::uint32_t threads) {
         LoweredProgram p = lowered(blocks, threads, Schedule::static_list);
         p.block_tiles[0] = 123456;
         return p;
       }});
  return v;
}

} // namespace gridflow::testing
