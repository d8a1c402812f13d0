#include "scheduler/buffer_data.hpp"

#include "runtime/errors.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>

namespace gridflow {

namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
} // namespace

F32Range f32_values_in(double low, double high) {
  constexpr float inf = std::numeric_limits<float>::infinity();
  float first = static_cast<float>(low);
  if (static_cast<double>(first) < low)
    first = std::nextafter(first, inf);
  float last = static_cast<float>(high);
  if (static_cast<double>(last) >= high)
    last = std::nextafter(last, -inf);
  return {first, last};
}

double uniform_sample(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t bits = splitmix64(splitmix64(seed) ^ (i * 0xd1b54a32d192ed03ull));
  return static_cast<double>(bits >> 11) * 0x1.0p-53; // [0, 1)
}

HostTensor allocate_host(const Buffer& b) {
  try {
    return HostTensor(b.dtype, b.elements());
  } catch (const std::bad_alloc&) {
    throw RuntimeError(fmt::format("buffer '{}': cannot allocate {} bytes of host memory", printable(b.name),
                                   b.elements() * static_cast<std::int64_t>(dtype_size(b.dtype))));
  }
}

namespace {

std::uint64_t buffer_bytes(const Buffer& b) {
  return static_cast<std::uint64_t>(b.elements()) * dtype_size(b.dtype);
}

InputFile open_checked(const Buffer& b, const InitFile& f, const FilePolicy& files) {
  InputFile in = open_init_file(files, b.name, f.path);
  if (in.size() != buffer_bytes(b))
    throw_buffer_error(b.name, "init.file", fmt::format("\"{}\"", f.path),
                       fmt::format("holds {} bytes, the buffer needs {} ({} x {})", in.size(), buffer_bytes(b),
                                   b.elements(), to_string(b.dtype)));
  return in;
}

} // namespace

void check_init_file(const Buffer& b, const FilePolicy& files) {
  if (const auto* f = std::get_if<InitFile>(&b.init))
    open_checked(b, *f, files);
}

HostTensor initial_data(const Buffer& b, const FilePolicy& files) {
  // A file is checked before the memory is taken.
  InputFile file;
  if (const auto* f = std::get_if<InitFile>(&b.init))
    file = open_checked(b, *f, files);
  HostTensor t = allocate_host(b);
  const std::int64_t n = b.elements();
  const bool i32 = b.dtype == DType::i32;
  auto set = [&](std::int64_t i, double v) {
    if (i32)
      t.i32()[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
    else
      t.f32()[static_cast<std::size_t>(i)] = static_cast<float>(v);
  };
  if (const auto* u = std::get_if<InitUniform>(&b.init)) {
    // f32: [low, high) after rounding to f32 as well (a sample next to either end may round past it).
    const F32Range r = f32_values_in(u->low, u->high);
    for (std::int64_t i = 0; i < n; ++i) {
      const double s = uniform_sample(u->seed, static_cast<std::uint64_t>(i));
      if (i32) {
        set(i, std::floor(u->low + s * (u->high - u->low + 1.0))); // integers in [low, high]
      } else {
        const float v = static_cast<float>(u->low + s * (u->high - u->low));
        t.f32()[static_cast<std::size_t>(i)] = std::clamp(v, r.first, r.last);
      }
    }
  } else if (const auto* io = std::get_if<InitIota>(&b.init)) {
    for (std::int64_t i = 0; i < n; ++i)
      set(i, io->start + io->step * static_cast<double>(i));
  } else if (const auto* c = std::get_if<InitConstant>(&b.init)) {
    for (std::int64_t i = 0; i < n; ++i)
      set(i, c->value);
  } else if (std::holds_alternative<InitFile>(b.init)) {
    file.read_all(t.data(), t.bytes(), fmt::format("buffer '{}': init.file", printable(b.name)));
  } else if (const auto* h = std::get_if<InitHost>(&b.init)) {
    if (h->bytes && h->bytes->size() == t.bytes() && !h->bytes->empty())
      std::memcpy(t.data(), h->bytes->data(), t.bytes());
  } else {
    t.fill_bits(poison_bits(b.dtype));
  }
  return t;
}

std::vector<HostTensor> initial_data(const Graph& graph, const FilePolicy& files) {
  std::vector<HostTensor> out;
  out.reserve(graph.buffers().size());
  for (const Buffer& b : graph.buffers())
    out.push_back(initial_data(b, files));
  return out;
}

std::filesystem::path save_tensor(const HostTensor& tensor, const FilePolicy& files, std::string_view buffer,
                                  const std::string& given) {
  return write_save_file(files, buffer, given, tensor.data(), tensor.bytes());
}

} // namespace gridflow
