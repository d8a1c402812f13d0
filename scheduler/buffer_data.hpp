// Buffer contents on the host: initial data from a buffer's init (seeded generators, a binary file, host bytes),
// poison patterns for outputs, and saving results.
#pragma once

#include "runtime/host_tensor.hpp"
#include "scheduler/graph.hpp"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace gridflow {

// Poison written into every output before a run, so an element the run never wrote cannot pass a check.
inline constexpr std::uint32_t kPoisonF32Bits = 0xffc0deadu; // a negative quiet NaN
inline constexpr std::uint32_t kPoisonI32Bits = 0xdeadbeefu;
inline std::uint32_t poison_bits(DType d) { return d == DType::f32 ? kPoisonF32Bits : kPoisonI32Bits; }

// Element i of the seeded uniform stream (counter-based, so identical on every platform and thread count).
double uniform_sample(std::uint64_t seed, std::uint64_t i);

// The buffer's initial contents; buffers without init get the poison pattern. File paths are relative to
// `base_dir`. Throws GraphError naming the buffer when a file is missing or has the wrong size.
HostTensor initial_data(const Buffer& buffer, const std::filesystem::path& base_dir);

// Initial contents of every buffer of the graph.
std::vector<HostTensor> initial_data(const Graph& graph, const std::filesystem::path& base_dir);

// Raw little-endian elements, as init.file reads them. Throws RuntimeError on I/O failure.
void save_tensor(const HostTensor& tensor, const std::filesystem::path& path);

} // namespace gridflow
