// Overflow-checked integer arithmetic for every size, offset, tile count and byte count the host computes from
// user input (views, buffer shapes, tiling, the state arena, memory budgets). Each helper returns nullopt where the
// exact result does not fit the type; callers turn that into an error naming the field. Host code only.
#pragma once

#include <concepts>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace gridflow::checked {

template <std::integral T> constexpr std::optional<T> add(T a, T b) {
  T r{};
  if (__builtin_add_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

template <std::integral T> constexpr std::optional<T> sub(T a, T b) {
  T r{};
  if (__builtin_sub_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

template <std::integral T> constexpr std::optional<T> mul(T a, T b) {
  T r{};
  if (__builtin_mul_overflow(a, b, &r))
    return std::nullopt;
  return r;
}

// ceil(a / b) for a >= 0 and b > 0; never overflows (no a + b - 1).
template <std::integral T> constexpr T ceil_div(T a, std::type_identity_t<T> b) {
  return a / b + (a % b != 0 ? 1 : 0);
}

// The smallest multiple of m (m > 0) that is >= a (a >= 0), or nullopt when it does not fit.
template <std::integral T> constexpr std::optional<T> round_up(T a, std::type_identity_t<T> m) {
  return mul(ceil_div(a, m), m);
}

// A running sum that remembers whether it ever overflowed (byte totals over many buffers or tasks).
template <std::integral T> class Sum {
public:
  constexpr Sum& operator+=(T x) {
    if (const std::optional<T> r = add(value_, x))
      value_ = *r;
    else
      overflowed_ = true;
    return *this;
  }
  constexpr bool ok() const { return !overflowed_; }
  constexpr T value() const { return value_; } // meaningful only when ok()

private:
  T value_{};
  bool overflowed_ = false;
};

} // namespace gridflow::checked
