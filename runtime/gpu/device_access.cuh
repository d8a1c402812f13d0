// GPU load/store policies that involve the protocol (sentinel mode), and the warp-parallel deterministic look-back.
#pragma once

#include "kernels/device/functors.cuh"
#include "runtime/protocol.hpp"

#include <cuda/std/bit>

namespace gridflow::gpu {

template <class T> __device__ __forceinline__ std::uint32_t to_bits(T v) {
  return cuda::std::bit_cast<std::uint32_t>(v);
}
template <class T> __device__ __forceinline__ T from_bits(std::uint32_t b) {
  return cuda::std::bit_cast<T>(b);
}

// Where a body records a failed wait, and the block's abort flag in shared memory. One per block, in its shared
// storage (SharedStorage::site): control, timeout and block are set once per launch, tile and task by stage_tile.
struct TileSite {
  protocol::WaitSite site;
  std::uint32_t task;
  int* abort; // shared: set by any thread whose wait failed; the body returns false after its last barrier
};

// Sentinel mode: a relaxed (L2) load of each element, polled until it no longer holds the sentinel payload.
struct PollLoad {
  static constexpr bool kVectorizable = false;
  const TileSite* tile;
  template <class T> __device__ __forceinline__ T operator()(const T* p) const {
    auto* word = const_cast<std::uint32_t*>(reinterpret_cast<const std::uint32_t*>(p));
    std::uint32_t bits = protocol::atomic_ref<std::uint32_t>(*word).load(cuda::std::memory_order_relaxed);
    if (bits == program::kSentinelBits) {
      std::uint64_t last = bits;
      const bool ok = protocol::wait_until(
          tile->site, {program::WaitKind::sentinel, tile->task, 0, program::kCanonicalNanBits},
          [&] {
            last = protocol::atomic_ref<std::uint32_t>(*word).load(cuda::std::memory_order_relaxed);
            return last;
          },
          [](std::uint64_t v) { return v != program::kSentinelBits; });
      if (!ok)
        *tile->abort = 1;
      bits = static_cast<std::uint32_t>(last);
    }
    return from_bits<T>(bits);
  }
};

// Sentinel mode outputs: a relaxed store (consumers poll it), never with the sentinel's bit pattern.
struct CanonicalStore {
  static constexpr bool kVectorizable = false;
  template <class T> __device__ __forceinline__ void operator()(T* p, T v) const {
    std::uint32_t bits = to_bits(v);
    if (bits == program::kSentinelBits)
      bits = program::kCanonicalNanBits;
    protocol::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(p))
        .store(bits, cuda::std::memory_order_relaxed);
  }
};

// cub block-prefix callback for a scan_all tile: the warp-parallel version of protocol::lookback_prefix (same tree,
// same publication rule); each level's group fold is a fixed butterfly over the 32 lanes, padded with the identity.
// Every level's word is loaded first, all at once (relaxed: the payload is in the word itself, nothing else is read
// on its strength), so when they are published already the look-back costs one round trip to L2 instead of one per
// level; a word not yet published is then waited for (acquire) at its level.
template <class T, class Op> struct LookbackPrefix {
  const TileSite* tile;
  std::uint64_t* words;
  std::uint32_t num_tiles;
  std::uint32_t index; // tile index within the task
  std::uint32_t epoch;
  Op op;

  __device__ T operator()(T aggregate) {
    const T identity = Op::template identity<T>();
    if (num_tiles <= 1)
      return identity;
    const unsigned lane = threadIdx.x & 31;
    const std::uint32_t levels = protocol::lookback_levels(num_tiles);
    if (lane == 0)
      protocol::publish_word(words + index, epoch, to_bits(aggregate));
    std::uint64_t seen[protocol::kMaxLookbackLevels];
    {
      std::uint64_t offset = 0;
#pragma unroll
      for (std::uint32_t k = 0; k < protocol::kMaxLookbackLevels; ++k) {
        seen[k] = 0;
        if (k >= levels)
          continue;
        const std::uint32_t idx = index >> (protocol::kLookbackRadixBits * k);
        const std::uint32_t group = idx & ~(protocol::kLookbackRadix - 1);
        if (group + lane < idx)
          seen[k] =
              protocol::atomic_ref<std::uint64_t>(words[offset + group + lane]).load(cuda::std::memory_order_relaxed);
        offset += protocol::lookback_level_size(num_tiles, k);
      }
    }
    T parts[protocol::kMaxLookbackLevels];
    T own = aggregate;
    bool carry = true;
    std::uint64_t offset = 0;
#pragma unroll
    for (std::uint32_t k = 0; k < protocol::kMaxLookbackLevels; ++k) {
      parts[k] = identity;
      if (k >= levels)
        continue;
      const std::uint32_t idx = index >> (protocol::kLookbackRadixBits * k);
      const std::uint32_t group = idx & ~(protocol::kLookbackRadix - 1);
      T v = identity;
      if (group + lane < idx) {
        std::uint32_t payload = protocol::word_payload(seen[k]);
        if (protocol::word_epoch(seen[k]) == epoch ||
            protocol::wait_word(tile->site, {program::WaitKind::lookback, tile->task, group + lane, epoch},
                                words + offset + group + lane, epoch, payload))
          v = from_bits<T>(payload);
        else
          *tile->abort = 1;
      }
      parts[k] = kernels::warp_allreduce(v, op);
      const std::uint64_t next = offset + protocol::lookback_level_size(num_tiles, k);
      if (carry && (idx & (protocol::kLookbackRadix - 1)) == protocol::kLookbackRadix - 1 && k + 1 < levels) {
        own = op(parts[k], own);
        if (lane == 0)
          protocol::publish_word(words + next + (idx >> protocol::kLookbackRadixBits), epoch, to_bits(own));
      } else {
        carry = false;
      }
      offset = next;
    }
    T prefix = identity;
#pragma unroll
    for (int k = protocol::kMaxLookbackLevels - 1; k >= 0; --k)
      if (static_cast<std::uint32_t>(k) < levels)
        prefix = op(prefix, parts[k]);
    return prefix;
  }
};

} // namespace gridflow::gpu
