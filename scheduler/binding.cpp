#include "scheduler/binding.hpp"

#include "runtime/checked_math.hpp"
#include "scheduler/errors.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <optional>
#include <string>

namespace gridflow {

namespace {

// The alignment the bodies' vector loads and stores need of a buffer's first element.
constexpr std::uintptr_t kDirectAlignment = 16;

std::string device_name(int device) {
  return device == kHostMemory ? std::string("host") : fmt::format("cuda:{}", device);
}

} // namespace

BoundMemory plan_binding(const Buffer& b, const ExternalTensor& m, int device) {
  const auto refuse = [&](std::string_view field, const std::string& value, const std::string& why) {
    throw_buffer_error(b.name, field, value, why);
  };
  if (m.dtype != b.dtype)
    refuse("bind.dtype", std::string(to_string(m.dtype)), fmt::format("the buffer is {}", to_string(b.dtype)));
  if (m.device != device)
    refuse("bind.device", device_name(m.device),
           fmt::format("this session's backend runs on {} memory", device_name(device)));
  if (m.elements < 0)
    refuse("bind.elements", std::to_string(m.elements), "a count of elements cannot be negative");
  if (m.row_stride < 0)
    refuse("bind.row_stride", std::to_string(m.row_stride), "rows cannot run backwards");
  const std::int64_t n = b.elements();
  const std::int64_t rows = b.is_matrix() ? b.shape[0] : 1;
  const std::int64_t cols = b.is_matrix() ? b.shape[1] : n;
  // One row has no stride to speak of; rows at a stride of cols are contiguous.
  const bool contiguous = m.row_stride == 0 || (b.is_matrix() && (m.row_stride == cols || rows <= 1));
  if (!contiguous && !b.is_matrix())
    refuse("bind.row_stride", std::to_string(m.row_stride),
           fmt::format("only a [rows, cols] buffer has rows; this one's shape is [{}]", n));
  if (!contiguous && m.row_stride < cols)
    refuse("bind.row_stride", std::to_string(m.row_stride), fmt::format("rows of {} elements would overlap", cols));
  std::int64_t need = n;
  if (!contiguous && rows > 0) {
    const std::optional<std::int64_t> span = checked::mul(rows - 1, m.row_stride);
    const std::optional<std::int64_t> total = span ? checked::add(*span, cols) : std::nullopt;
    if (!total)
      refuse("bind.row_stride", std::to_string(m.row_stride),
             fmt::format("{} rows at this stride overflow a 64-bit element count", rows));
    need = *total;
  }
  if (contiguous ? m.elements != need : m.elements < need)
    refuse("bind.elements", std::to_string(m.elements),
           contiguous
               ? fmt::format("the buffer has {} elements", n)
               : fmt::format("{} rows of {} at a stride of {} need at least {}", rows, cols, m.row_stride, need));
  if (m.data == nullptr && n > 0)
    refuse("bind.data", "null", "the buffer has elements");
  // The extent in bytes (which bounds the row pitch) must be addressable.
  const std::size_t size = dtype_size(b.dtype);
  if (!checked::mul(need, static_cast<std::int64_t>(size)))
    refuse(contiguous ? "bind.elements" : "bind.row_stride", std::to_string(contiguous ? m.elements : m.row_stride),
           "the memory's extent overflows a 64-bit byte count");

  BoundMemory out;
  out.data = m.data;
  const auto address = reinterpret_cast<std::uintptr_t>(m.data);
  out.staged = !contiguous || address % kDirectAlignment != 0;
  if (out.staged) {
    out.rows = contiguous ? 1 : rows;
    out.row_bytes = static_cast<std::size_t>(contiguous ? n : cols) * size;
    out.pitch_bytes = contiguous ? out.row_bytes : static_cast<std::size_t>(m.row_stride) * size;
  }
  return out;
}

} // namespace gridflow
