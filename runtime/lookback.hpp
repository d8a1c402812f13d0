// Deterministic look-back over the radix-32 aggregate tree of protocol.hpp, one thread doing the folds.
// The CPU executor uses it; the GPU has a warp-parallel version (runtime/device/lookback.cuh) with the same
// tree, publication rule and waits, differing only in the association inside a group (a warp tree).
#pragma once

#include "kernels/host_device.hpp"
#include "runtime/protocol.hpp"

#include <cstdint>

namespace gridflow::protocol {

// Publishes tile `tile`'s aggregate `own`, publishes the group aggregates it completes, and returns through
// `prefix` the fold of every earlier tile's aggregate (`identity` for tile 0). `combine(a, b)` folds payloads,
// a before b. Returns false when the run was aborted while waiting.
template <class Combine>
GRIDFLOW_HOST_DEVICE bool lookback_prefix(const WaitSite& site, std::uint32_t task, std::uint64_t* words,
                                          std::uint32_t num_tiles, std::uint32_t tile, std::uint32_t epoch,
                                          std::uint32_t own, std::uint32_t identity, Combine combine,
                                          std::uint32_t& prefix) {
  const std::uint32_t levels = lookback_levels(num_tiles);
  publish_word(words + tile, epoch, own);
  std::uint32_t parts[kMaxLookbackLevels];
  std::uint32_t own_k = own; // this tile's entry at level k, while it is the last of each group so far
  bool carry = true;
  std::uint64_t offset = 0;
  for (std::uint32_t k = 0; k < levels; ++k) {
    const std::uint32_t idx = tile >> (kLookbackRadixBits * k);
    const std::uint32_t group = idx & ~(kLookbackRadix - 1);
    std::uint32_t part = identity;
    for (std::uint32_t j = group; j < idx; ++j) {
      std::uint32_t v = 0;
      if (!wait_word(site, {program::WaitKind::lookback, task, j, epoch}, words + offset + j, epoch, v))
        return false;
      part = combine(part, v);
    }
    parts[k] = part;
    const std::uint64_t next_offset = offset + lookback_level_size(num_tiles, k);
    if (carry && (idx & (kLookbackRadix - 1)) == kLookbackRadix - 1 && k + 1 < levels) {
      own_k = combine(part, own_k);
      publish_word(words + next_offset + (idx >> kLookbackRadixBits), epoch, own_k);
    } else {
      carry = false;
    }
    offset = next_offset;
  }
  std::uint32_t p = identity;
  for (std::uint32_t k = levels; k-- > 0;)
    p = combine(p, parts[k]);
  prefix = p;
  return true;
}

} // namespace gridflow::protocol
