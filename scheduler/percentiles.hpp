// Percentiles of a sample of latencies (nearest rank: the value at floor(q x n) of the sorted sample), as the
// round-trip tables print them (gridflow serve-bench, gridflow bench sync).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace gridflow {

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0; // in the sample's unit
  std::size_t n = 0;
};

inline Percentiles percentiles(std::vector<double> sample) {
  Percentiles p;
  p.n = sample.size();
  if (sample.empty())
    return p;
  std::sort(sample.begin(), sample.end());
  const auto at = [&](double q) {
    return sample[std::min(sample.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sample.size())))];
  };
  p.p50 = at(0.50);
  p.p90 = at(0.90);
  p.p99 = at(0.99);
  return p;
}

} // namespace gridflow
