// Assertions on validation errors, shared by the host suites.
#pragma once

#include "scheduler/analysis.hpp"
#include "scheduler/errors.hpp"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

namespace gridflow::testing {

// Expects analyze() to throw a GraphError whose message contains every fragment.
inline void expect_graph_error(const Graph& g, std::initializer_list<std::string> fragments) {
  try {
    analyze(g);
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    const std::string msg = e.what();
    for (const std::string& f : fragments)
      EXPECT_NE(msg.find(f), std::string::npos) << "message: " << msg << "\nmissing: " << f;
  }
}

} // namespace gridflow::testing
