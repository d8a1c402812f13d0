// Built when gridflow has no CUDA compiler: the GPU backend reports itself missing.
#include "runtime/errors.hpp"
#include "runtime/gpu_baselines.hpp"
#include "runtime/gpu_executor.hpp"
#include "runtime/resident_backend.hpp"

namespace gridflow {

GpuShape plan_gpu_shape(std::uint32_t, std::uint32_t) {
  throw RuntimeError("this gridflow was built without its GPU backend (no CUDA compiler at build time)");
}

std::unique_ptr<Executor> make_gpu_executor(LoweredProgram, const GpuShape&) {
  throw RuntimeError("this gridflow was built without its GPU backend (no CUDA compiler at build time)");
}

std::unique_ptr<ResidentBackend> make_gpu_resident(const GpuShape&, std::uint32_t, std::uint32_t,
                                                   const resident::IdlePacing&) {
  throw RuntimeError("this gridflow was built without its GPU backend (no CUDA compiler at build time)");
}

BaselineTimes time_per_task_launches(Executor&, int, int) {
  throw RuntimeError("this gridflow was built without its GPU backend (no CUDA compiler at build time)");
}

} // namespace gridflow
