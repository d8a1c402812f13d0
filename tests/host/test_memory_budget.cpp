// The memory budget: what this process can take, read the same way whatever the global C++ locale (a host program
// such as Python with torch may change it), and the refusal of a need above the budget.
#include "scheduler/errors.hpp"
#include "scheduler/memory_budget.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <locale>

namespace gridflow {
namespace {

// MemTotal of /proc/meminfo in bytes, read with stdio (0 when unreadable).
std::uint64_t mem_total() {
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f)
    return 0;
  unsigned long long kb = 0;
  const int got = std::fscanf(f, "MemTotal: %llu kB", &kb);
  std::fclose(f);
  return got == 1 ? kb * 1024 : 0;
}

TEST(MemoryBudget, HostMemoryAvailableIsSomeOfWhatTheMachineHasInAnyLocale) {
  const std::uint64_t total = mem_total();
  const std::uint64_t room = host_memory_available();
  EXPECT_GT(room, 0u);
  if (total > 0) {
    EXPECT_LE(room, total);
  }
  // A locale that groups digits: numbers are still read as numbers.
  const std::locale before = std::locale::global(std::locale::classic());
  for (const char* name : {"en_US.UTF-8", "de_DE.UTF-8", "C.UTF-8"}) {
    try {
      std::locale::global(std::locale(name));
    } catch (const std::runtime_error&) {
      continue; // not installed here
    }
    const std::uint64_t again = host_memory_available();
    EXPECT_GT(again, room / 2) << name;
    EXPECT_LT(again, room / 2 * 3 + (std::uint64_t{1} << 30)) << name;
  }
  std::locale::global(before);
}

TEST(MemoryBudget, ANeedAboveTheBudgetIsRefusedNamingTheLargestBuffers) {
  Graph g("big");
  MemoryNeed need;
  need.host_bytes = 3u << 20;
  need.largest = {{"weights", 2u << 20}, {"x", 1u << 20}};
  EXPECT_NO_THROW(check_memory_budget(g, need, 0, 4u << 20, 0));
  try {
    check_memory_budget(g, need, 0, 2u << 20, 0);
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("graph 'big'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3.0 MiB of host memory"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'weights' 2.0 MiB"), std::string::npos) << msg;
  }
  EXPECT_THROW(check_memory_budget(g, need, 1u << 20, 4u << 20, 0), GraphError); // --max-memory caps it
}

} // namespace
} // namespace gridflow
