#include "scheduler/buffer_data.hpp"

#include "runtime/errors.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <fstream>

namespace gridflow {

namespace {
std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
} // namespace

double uniform_sample(std::uint64_t seed, std::uint64_t i) {
  const std::uint64_t bits = splitmix64(splitmix64(seed) ^ (i * 0xd1b54a32d192ed03ull));
  return static_cast<double>(bits >> 11) * 0x1.0p-53; // [0, 1)
}

HostTensor initial_data(const Buffer& b, const std::filesystem::path& base_dir) {
  HostTensor t(b.dtype, b.elements());
  const std::int64_t n = b.elements();
  const bool i32 = b.dtype == DType::i32;
  auto set = [&](std::int64_t i, double v) {
    if (i32) t.i32()[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(v);
    else t.f32()[static_cast<std::size_t>(i)] = static_cast<float>(v);
  };
  if (const auto* u = std::get_if<InitUniform>(&b.init)) {
    for (std::int64_t i = 0; i < n; ++i) {
      const double s = uniform_sample(u->seed, static_cast<std::uint64_t>(i));
      // i32: integers in [low, high]; f32: [low, high).
      set(i, i32 ? std::floor(u->low + s * (u->high - u->low + 1.0)) : u->low + s * (u->high - u->low));
    }
  } else if (const auto* io = std::get_if<InitIota>(&b.init)) {
    for (std::int64_t i = 0; i < n; ++i) set(i, io->start + io->step * static_cast<double>(i));
  } else if (const auto* c = std::get_if<InitConstant>(&b.init)) {
    for (std::int64_t i = 0; i < n; ++i) set(i, c->value);
  } else if (const auto* f = std::get_if<InitFile>(&b.init)) {
    const std::filesystem::path given(f->path);
    const std::filesystem::path path = given.is_absolute() ? given : base_dir / given;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw_buffer_error(b.name, "init.file", fmt::format("\"{}\"", f->path), "cannot open " + path.string());
    in.seekg(0, std::ios::end);
    const auto size = static_cast<std::uint64_t>(in.tellg());
    if (size != t.bytes())
      throw_buffer_error(b.name, "init.file", fmt::format("\"{}\"", f->path),
                         fmt::format("holds {} bytes, the buffer needs {} ({} x {})", size, t.bytes(), n,
                                     to_string(b.dtype)));
    in.seekg(0);
    in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(t.bytes()));
  } else if (const auto* h = std::get_if<InitHost>(&b.init)) {
    if (h->bytes && h->bytes->size() == t.bytes() && !h->bytes->empty()) std::memcpy(t.data(), h->bytes->data(), t.bytes());
  } else {
    t.fill_bits(poison_bits(b.dtype));
  }
  return t;
}

std::vector<HostTensor> initial_data(const Graph& graph, const std::filesystem::path& base_dir) {
  std::vector<HostTensor> out;
  out.reserve(graph.buffers().size());
  for (const Buffer& b : graph.buffers()) out.push_back(initial_data(b, base_dir));
  return out;
}

void save_tensor(const HostTensor& tensor, const std::filesystem::path& path) {
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(tensor.data()), static_cast<std::streamsize>(tensor.bytes()));
  if (!out) throw RuntimeError("cannot write " + path.string());
}

} // namespace gridflow
