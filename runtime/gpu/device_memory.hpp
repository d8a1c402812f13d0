// Move-only RAII owners of CUDA resources: device memory, pinned host memory, streams, events.
#pragma once

#include "runtime/gpu/cuda_check.hpp"

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>
#include <vector>

namespace gridflow::gpu {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0)
      GRIDFLOW_CUDA_CHECK(cudaMalloc(&ptr_, bytes_));
  }
  ~DeviceBuffer() {
    if (ptr_)
      GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaFree(ptr_));
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept : ptr_(std::exchange(o.ptr_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      DeviceBuffer tmp(std::move(*this));
      ptr_ = std::exchange(o.ptr_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // A buffer holding a copy of `v`.
  template <class T> static DeviceBuffer of(const std::vector<T>& v) {
    DeviceBuffer b(v.size() * sizeof(T));
    if (!v.empty())
      GRIDFLOW_CUDA_CHECK(cudaMemcpy(b.ptr_, v.data(), b.bytes_, cudaMemcpyHostToDevice));
    return b;
  }

  void* get() const { return ptr_; }
  template <class T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }

private:
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory holding one T, the target of asynchronous device-to-host copies.
template <class T> class Pinned {
public:
  Pinned() { GRIDFLOW_CUDA_CHECK(cudaMallocHost(reinterpret_cast<void**>(&p_), sizeof(T))); }
  ~Pinned() {
    if (p_)
      GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaFreeHost(p_));
  }
  Pinned(Pinned&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Pinned& operator=(Pinned&&) = delete;
  Pinned(const Pinned&) = delete;
  Pinned& operator=(const Pinned&) = delete;
  T* get() const { return p_; }

private:
  T* p_ = nullptr;
};

class Stream {
public:
  Stream() { GRIDFLOW_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_)
      GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaStreamDestroy(s_));
  }
  Stream(Stream&& o) noexcept : s_(std::exchange(o.s_, nullptr)) {}
  Stream& operator=(Stream&&) = delete;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }

private:
  cudaStream_t s_ = nullptr;
};

class Event {
public:
  Event() { GRIDFLOW_CUDA_CHECK(cudaEventCreate(&e_)); }
  ~Event() {
    if (e_)
      GRIDFLOW_CUDA_CHECK_NOEXCEPT(cudaEventDestroy(e_));
  }
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }
  // Milliseconds from `start` to this event (both recorded and complete).
  float since(const Event& start) const {
    float ms = 0;
    GRIDFLOW_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

private:
  cudaEvent_t e_ = nullptr;
};

} // namespace gridflow::gpu
