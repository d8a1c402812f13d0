// A host array of 4-byte elements (f32 or i32): graph buffers on the CPU backend and the host side of GPU runs.
#pragma once

#include "kernels/op_types.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <stdexcept>
#include <vector>

namespace gridflow {

class HostTensor {
public:
  HostTensor() = default;
  HostTensor(DType dtype, std::int64_t elements) : dtype_(dtype), words_(static_cast<std::size_t>(elements)) {}

  DType dtype() const { return dtype_; }
  std::int64_t size() const { return static_cast<std::int64_t>(words_.size()); }
  std::size_t bytes() const { return words_.size() * sizeof(std::uint32_t); }

  void* data() { return words_.data(); }
  const void* data() const { return words_.data(); }
  std::span<std::uint32_t> bits() { return words_; }
  std::span<const std::uint32_t> bits() const { return words_; }

  std::span<float> f32() { return {reinterpret_cast<float*>(words_.data()), words_.size()}; }
  std::span<const float> f32() const { return {reinterpret_cast<const float*>(words_.data()), words_.size()}; }
  std::span<std::int32_t> i32() { return {reinterpret_cast<std::int32_t*>(words_.data()), words_.size()}; }
  std::span<const std::int32_t> i32() const {
    return {reinterpret_cast<const std::int32_t*>(words_.data()), words_.size()};
  }

  // Element i as a double (f32 or i32).
  double value(std::int64_t i) const {
    const std::uint32_t w = words_[static_cast<std::size_t>(i)];
    if (dtype_ == DType::i32)
      return static_cast<std::int32_t>(w);
    float f;
    std::memcpy(&f, &w, sizeof f);
    return f;
  }

  void fill_bits(std::uint32_t bits) { std::fill(words_.begin(), words_.end(), bits); }

private:
  DType dtype_ = DType::f32;
  std::vector<std::uint32_t> words_;
};

// True when both hold the same elements bit for bit (NaN payloads included).
inline bool bit_identical(const HostTensor& a, const HostTensor& b) {
  return a.dtype() == b.dtype() && a.size() == b.size() &&
         std::equal(a.bits().begin(), a.bits().end(), b.bits().begin());
}

// True when every buffer is bit-identical; `which` receives the index of the first that differs.
inline bool bit_identical(const std::vector<HostTensor>& a, const std::vector<HostTensor>& b,
                          std::size_t* which = nullptr) {
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
    if (!bit_identical(a[i], b[i])) {
      if (which)
        *which = i;
      return false;
    }
  return a.size() == b.size();
}

} // namespace gridflow
