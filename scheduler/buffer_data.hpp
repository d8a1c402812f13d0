// Buffer contents on the host: initial data from a buffer's init (seeded generators, a binary file, host bytes),
// poison patterns for outputs, and saving results.
#pragma once

#include "runtime/host_tensor.hpp"
#include "scheduler/file_access.hpp"
#include "scheduler/graph.hpp"

#include <cstdint>
#include <filesystem>
#include <vector>

namespace gridflow {

// Poison written into every output before a run, so an element the run never wrote cannot pass a check.
inline constexpr std::uint32_t kPoisonF32Bits = 0xffc0deadu; // a negative quiet NaN
inline constexpr std::uint32_t kPoisonI32Bits = 0xdeadbeefu;
inline std::uint32_t poison_bits(DType d) {
  return d == DType::f32 ? kPoisonF32Bits : kPoisonI32Bits;
}

// The f32 values in [low, high): from the smallest f32 >= low to the largest f32 < high (empty when first > last).
struct F32Range {
  float first;
  float last;
};
F32Range f32_values_in(double low, double high);

// Element i of the seeded uniform stream (counter-based, so identical on every platform and thread count).
double uniform_sample(std::uint64_t seed, std::uint64_t i);

// The buffer's initial contents; buffers without init get the poison pattern. Init files are opened under `files`
// (file_access.hpp). Throws GraphError naming the buffer when a file is refused, missing or has the wrong size, and
// RuntimeError when the host memory cannot be allocated or the file cannot be read.
HostTensor initial_data(const Buffer& buffer, const FilePolicy& files);

// Initial contents of every buffer of the graph.
std::vector<HostTensor> initial_data(const Graph& graph, const FilePolicy& files);

// Checks a buffer's init file without reading it (what initial_data would refuse: the path, its kind, its size).
void check_init_file(const Buffer& buffer, const FilePolicy& files);

// A host tensor of the buffer's dtype and size; RuntimeError naming the buffer when the memory cannot be had.
HostTensor allocate_host(const Buffer& buffer);

// Writes `tensor` as raw little-endian elements (as init.file reads them) to buffer `buffer`'s save target `given`
// under `files` (write_save_file). Returns the path written.
std::filesystem::path save_tensor(const HostTensor& tensor, const FilePolicy& files, std::string_view buffer,
                                  const std::string& given);

} // namespace gridflow
