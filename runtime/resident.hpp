// The resident protocol: a megakernel (or the CPU backend's workers) that stays running and takes submissions from a
// ring the host fills, written once for both backends as serve() over a Worker policy.
//
// Memory (GPU): the submission and completion rings are pinned host memory mapped into the device; the control words,
// the program records and the programs themselves are device memory. CPU: all of it is host memory.
//
// Protocol, for submission k (tickets count from 0 per launch; the slot is k % depth):
//   host    writes slot k's payload (if any), then stores slot.seq = doorbell(k, program, payload) (release, system
//           scope): ticket + 1 and the program in one word.
//   block 0 waits until submission k - 1 is retired (control.retired >= k, acquire), polls slot.seq for ticket k + 1
//           (acquire, system scope; spinning for the idle window, then sleeping), copies a payload into control (every
//           thread of block 0, relaxed system loads issued after the leader's acquire and a block barrier), and
//           stores the doorbell into control.published (release).
//   blocks  wait for control.published to show a ticket above their last (acquire; tickets in between retired
//           without them). Blocks 0 .. participants - 1 (participants_of the program) run it: copy the program's record
//           into their own storage (every thread a word), take the run's epoch and barrier base from it and the buffer
//           table from the payload if there is one, run the program with the same interpreter as a launch (every sync
//           mode), then arrive on control.finished (acq_rel); the others wait for the next ticket. The last of the
//           arrivals for k reads the program's error record; after an error (or an epoch about to wrap) it zeroes the
//           program's state arena so the next run of it starts from run 1; it then writes the completion slot (times,
//           error) and its seq = k + 1 (release, system scope), zeroes control.finished and stores control.retired = k
//           + 1 (release), which lets block 0 take submission k + 1.
// Participants: a program on static lists in flags mode (no grid barrier, no grid-wide sentinel fill) runs on the
// blocks that have tiles, which the host moved to the front (ProgramRecord::participants, fixed when the program is
// added); every other program and kStop run on every block, kPing on block 0 alone.
// A submission names a program (its index in the program table), kPing (no program: the round trip alone) or kStop
// (every block leaves after completing it). Submissions run one at a time in ticket order; a run's buffers are the
// slot's table, so a submission can point any buffer at other memory without lowering again. The per-program epoch
// and barrier generations live in the record and are advanced by the device, so a run that failed and reset its
// arena does not disturb the epochs of runs queued behind it.
#pragma once

#include "kernels/host_device.hpp"
#include "runtime/lowered_program.hpp"
#include "runtime/program.hpp"
#include "runtime/protocol.hpp"

#include <cuda/atomic>

#include <cstdint>

#if !GRIDFLOW_DEVICE_PASS
#include <chrono>
#include <thread>
#endif

namespace gridflow::resident {

template <class T> using system_ref = cuda::atomic_ref<T, cuda::thread_scope_system>;

inline constexpr std::uint32_t kMaxBuffers = 64;          // buffers a resident program may have
inline constexpr std::uint32_t kPing = 0xfffffffeu;       // Submission::program: no program, the round trip alone
inline constexpr std::uint32_t kStop = 0xffffffffu;       // Submission::program: every block leaves after it
inline constexpr std::uint32_t kEpochLimit = 0xfffffff0u; // a program's arena is zeroed before its epoch wraps

// A submission slot's doorbell word: ticket + 1 in the low bits, the program code above it, and the top bit when the
// slot's payload (a buffer table, a test fault) is to be read. A submission over the program's own buffers thus costs
// block 0 one read of host memory; one with bindings, a second (every thread of block 0 at once).
inline constexpr unsigned kTicketBits = 40;
inline constexpr std::uint64_t kTicketMask = (std::uint64_t{1} << kTicketBits) - 1;
inline constexpr std::uint64_t kPayloadBit = std::uint64_t{1} << 63;
inline constexpr std::uint32_t kMaxPrograms = 1u << 22; // program codes kMaxPrograms and + 1 are kPing and kStop

GRIDFLOW_HOST_DEVICE std::uint64_t doorbell(std::uint64_t k, std::uint32_t program, bool payload) {
  const std::uint64_t code = program == kPing ? kMaxPrograms : program == kStop ? kMaxPrograms + 1 : program;
  return (k + 1) | (code << kTicketBits) | (payload ? kPayloadBit : 0);
}
GRIDFLOW_HOST_DEVICE std::uint32_t doorbell_code(std::uint64_t bell) {
  return static_cast<std::uint32_t>((bell & ~kPayloadBit) >> kTicketBits);
}
GRIDFLOW_HOST_DEVICE std::uint32_t program_of_code(std::uint32_t code) {
  return code == kMaxPrograms ? kPing : code == kMaxPrograms + 1 ? kStop : code;
}

// One slot of the submission ring, as 64-bit words so block 0 copies it with one load per thread.
struct alignas(128) Submission {
  std::uint64_t seq = 0; // doorbell(ticket, ...) once the payload below is written
  // The payload, read only when the doorbell says so:
  std::uint32_t program = kPing;                           // program table index, kPing or kStop
  std::uint32_t fault_skip_signal_tile = program::kNoTile; // test-only: this tile never signals
  std::uint64_t reserved[2] = {};
  void* buffers[kMaxBuffers] = {}; // the run's buffer table (program buffer slot -> address)
};
inline constexpr std::uint32_t kSubmissionWords = sizeof(Submission) / 8;
static_assert(sizeof(Submission) % 128 == 0 && sizeof(Submission) == 8 * (4 + kMaxBuffers) + 96);

// One slot of the completion ring, written by the last block to finish a submission.
struct alignas(128) Completion {
  std::uint64_t seq = 0;          // ticket + 1 once the fields below are written (stored last)
  std::uint64_t published_ns = 0; // executor clock: block 0 published the submission to every block
  std::uint64_t first_ns = 0;     // executor clock: the first block began it
  std::uint64_t done_ns = 0;      // executor clock: the last block finished it
  program::ErrorRecord error{};   // the run's first error (code 0: none)
};
static_assert(sizeof(Completion) == 128);

// A program as the resident kernel runs it (one per ResidentSession::add, written before its first submission).
struct alignas(16) ProgramRecord {
  program::ProgramView view;         // `buffers` is replaced by each submission's table
  program::RunParams params;         // every run's, but for the epoch, the barrier base and the test-only fault
  std::uint64_t state_bytes = 0;     // the state arena's size (zeroed after an error)
  std::uint64_t barrier_advance = 0; // gridflow-barrier generations one run completes on the arena
  // The blocks that run it: 0 .. participants - 1 (every block when 0 or above the grid). The others have no tile of
  // it and wait nothing of it (static lists, no grid barrier: make_record).
  std::uint64_t participants = 0;
  // Owned by the device from the first submission on: runs on the arena since it was zeroed, barrier generations.
  std::uint64_t epoch = 0;
  std::uint64_t barrier_generations = 0;
};

struct alignas(128) Line {
  std::uint64_t value = 0;
  unsigned char pad[120] = {};
};

// The kernel's own words (device memory, zeroed before the launch).
struct alignas(128) Control {
  Line published;                       // the doorbell of the submission every block is to run (release by block 0)
  Line finished;                        // arrivals of participants at the end of the current submission
  Line retired;                         // ticket + 1 of the last submission completed (release by the last block)
  Line first_ns;                        // min over blocks of when they began the current submission
  std::uint64_t slot[kSubmissionWords]; // block 0's copy of the current submission's payload, if it has one
  std::uint64_t published_ns;
};

inline constexpr std::uint32_t kRecordWords = sizeof(ProgramRecord) / 8;
static_assert(sizeof(ProgramRecord) % 8 == 0);

// How idle blocks poll: back to back for `spin_ns` after the last submission, then sleeping between polls (GPU:
// __nanosleep, CPU: sleep_for) from 1 us doubling up to `max_sleep_ns`, so an idle runtime does not load the memory
// system. The first submission after a long idle time waits up to max_sleep_ns more.
struct IdlePacing {
  std::uint64_t spin_ns = 2'000'000;
  std::uint32_t max_sleep_ns = 20'000;
};

// Everything serve() needs (a kernel parameter on the GPU).
struct Rings {
  Submission* submissions = nullptr; // [depth], host memory the device can read
  Completion* completions = nullptr; // [depth], host memory the device can write
  std::uint32_t depth = 0;
  std::uint32_t grid = 0; // blocks (workers) serving
  Control* control = nullptr;
  ProgramRecord* programs = nullptr; // [max_programs]
  std::uint32_t max_programs = 0;
  IdlePacing idle{};
  // Host memory the device can read: nonzero tells block 0 to stop at its next idle poll, as a kStop submission would
  // (the backend's way out when no session can post one: its destructor, the process's exit).
  std::uint32_t* quit = nullptr;
};

// Block 0 checks Rings::quit once per this many doorbell polls (a second host read in every poll would slow them).
inline constexpr std::uint32_t kQuitPollInterval = 64;

// Polls `load()` until it is >= target, paced by `idle`.
template <class Load> GRIDFLOW_HOST_DEVICE void idle_wait(Load load, std::uint64_t target, const IdlePacing& idle) {
  if (load() >= target)
    return;
  const std::uint64_t start = protocol::now_ns();
  std::uint32_t sleep_ns = 1000;
  while (load() < target) {
    const bool spinning = protocol::now_ns() - start < idle.spin_ns;
#if GRIDFLOW_DEVICE_PASS
    if (!spinning) {
      __nanosleep(sleep_ns);
      sleep_ns = sleep_ns < idle.max_sleep_ns / 2 ? 2 * sleep_ns : idle.max_sleep_ns;
    }
#else
    if (spinning) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::nanoseconds(sleep_ns));
      sleep_ns = sleep_ns < idle.max_sleep_ns / 2 ? 2 * sleep_ns : idle.max_sleep_ns;
    }
#endif
  }
}

namespace detail {

// Block 0, every thread: wait for submission k (after k - 1 retired), copy its payload if it has one, and publish its
// doorbell to every block.
template <class Worker> GRIDFLOW_HOST_DEVICE void take(Worker& w, const Rings& rings, std::uint64_t k) {
  Control& c = *rings.control;
  Submission& slot = rings.submissions[k % rings.depth];
  std::uint64_t bell = 0;
  if (w.is_leader()) {
    idle_wait(
        [&] { return protocol::atomic_ref<std::uint64_t>(c.retired.value).load(cuda::std::memory_order_acquire); }, k,
        rings.idle);
    std::uint32_t polls = 0;
    idle_wait(
        [&] {
          if (++polls % kQuitPollInterval == 0 && rings.quit != nullptr &&
              system_ref<std::uint32_t>(*rings.quit).load(cuda::std::memory_order_relaxed) != 0) {
            bell = doorbell(k, kStop, false);
            return k + 1;
          }
          bell = system_ref<std::uint64_t>(slot.seq).load(cuda::std::memory_order_acquire);
          return bell & kTicketMask;
        },
        k + 1, rings.idle);
  }
  if (w.share((bell & kPayloadBit) != 0 ? 1u : 0u) != 0) { // every thread's loads follow the leader's acquire
    auto* words = reinterpret_cast<std::uint64_t*>(&slot);
    for (std::uint32_t i = 1 + w.thread(); i < kSubmissionWords; i += w.threads())
      c.slot[i] = system_ref<std::uint64_t>(words[i]).load(cuda::std::memory_order_relaxed);
    w.sync(); // the copy precedes the leader's release below
  }
  if (!w.is_leader())
    return;
  protocol::atomic_ref<std::uint64_t>(c.first_ns.value).store(~std::uint64_t{0}, cuda::std::memory_order_relaxed);
  c.published_ns = protocol::now_ns();
  protocol::atomic_ref<std::uint64_t>(c.published.value).store(bell, cuda::std::memory_order_release);
}

// Every thread: the run of `program_id` into the worker's copy of its record (all threads copy words at once), its
// epoch, barrier base, buffers and fault from the record and the payload.
template <class Worker>
GRIDFLOW_HOST_DEVICE void load_run(Worker& w, const Rings& rings, std::uint32_t program_id, bool payload) {
  auto* dst = reinterpret_cast<std::uint64_t*>(&w.record());
  const auto* src = reinterpret_cast<const std::uint64_t*>(&rings.programs[program_id]);
  for (std::uint32_t i = w.thread(); i < kRecordWords; i += w.threads())
    dst[i] = src[i];
  w.sync();
  if (w.is_leader()) {
    ProgramRecord& r = w.record();
    r.params.epoch = static_cast<std::uint32_t>(r.epoch + 1);
    r.params.barrier_base = r.barrier_generations;
    const auto* s = reinterpret_cast<const Submission*>(rings.control->slot);
    if (payload) {
      r.view.buffers = s->buffers;
      r.params.fault_skip_signal_tile = s->fault_skip_signal_tile;
    }
  }
  w.sync();
}

// The last block to finish submission k, every thread: reset the program's arena after a failed run, complete k in
// the completion ring and retire it.
template <class Worker>
GRIDFLOW_HOST_DEVICE void retire(Worker& w, const Rings& rings, std::uint64_t k, std::uint32_t program_id) {
  Control& c = *rings.control;
  const bool has_program = program_id < rings.max_programs;
  program::ErrorRecord error{};
  std::uint32_t reset = 0;
  if (w.is_leader() && has_program) {
    auto* control = reinterpret_cast<program::ControlBlock*>(w.record().view.state);
    error = control->error;
    reset = error.code != 0 || protocol::is_aborted(control) || w.record().params.epoch >= kEpochLimit ? 1u : 0u;
  }
  if (w.share(reset) != 0) {
    auto* state = reinterpret_cast<std::uint64_t*>(w.record().view.state);
    const std::uint64_t words = w.record().state_bytes / 8;
    for (std::uint64_t i = w.thread(); i < words; i += w.threads())
      state[i] = 0;
    w.sync(); // every thread's zeroes precede the leader's release below
  }
  if (!w.is_leader())
    return;
  if (has_program) {
    ProgramRecord& rec = rings.programs[program_id];
    rec.epoch = reset ? 0 : w.record().params.epoch;
    rec.barrier_generations = reset ? 0 : rec.barrier_generations + rec.barrier_advance;
  }
  Completion& done = rings.completions[k % rings.depth];
  done.published_ns = c.published_ns;
  done.first_ns = protocol::atomic_ref<std::uint64_t>(c.first_ns.value).load(cuda::std::memory_order_relaxed);
  done.done_ns = protocol::now_ns();
  done.error = error;
  system_ref<std::uint64_t>(done.seq).store(k + 1, cuda::std::memory_order_release); // after the fields above
  // The next submission's arrivals count from zero: they follow block 0's publication of it, which follows its
  // acquire of `retired` below.
  protocol::atomic_ref<std::uint64_t>(c.finished.value).store(0, cuda::std::memory_order_relaxed);
  protocol::atomic_ref<std::uint64_t>(c.retired.value).store(k + 1, cuda::std::memory_order_release);
}

// How many blocks run `program_id` (blocks 0 .. n - 1): its record's participants, which never change once it is added
// (so a block reads them for the ticket it saw, whatever block 0 published since), every block for kStop and for a
// record that names none or more than the grid, block 0 alone for kPing.
GRIDFLOW_HOST_DEVICE std::uint64_t participants_of(const Rings& rings, std::uint32_t program_id) {
  if (program_id == kPing)
    return 1;
  const std::uint64_t n = program_id < rings.max_programs ? rings.programs[program_id].participants : 0;
  return n == 0 || n > rings.grid ? rings.grid : n;
}

// Leader: when this block began the current submission, into the minimum over blocks (no wait for the result).
GRIDFLOW_HOST_DEVICE void note_first(Control& c) {
#if GRIDFLOW_DEVICE_PASS
  atomicMin(reinterpret_cast<unsigned long long*>(&c.first_ns.value), protocol::now_ns());
#else
  protocol::atomic_ref<std::uint64_t>(c.first_ns.value).fetch_min(protocol::now_ns(), cuda::std::memory_order_relaxed);
#endif
}

} // namespace detail

// The whole life of one block (worker) of a resident launch: submissions in ticket order until kStop. A Worker
// provides, beyond the interpreter's Block basics (index, is_leader, sync, share):
//   std::uint32_t thread(), threads();       // this thread's index in the block, the block's threads (CPU: 0, 1)
//   ProgramRecord& record();                 // the worker's copy of the current run's record (view, parameters)
//   void run(std::uint32_t program, std::uint64_t ticket);  // interpret record().view with record().params
// Every thread of a block calls serve(); only leaders touch the control words. The ticket `k` is the leader's: a
// block that runs none of the submissions between two it sees skips them (block 0 never does: it takes each one),
// and only the leader's copy follows the skip (the other threads use it for nothing).
template <class Worker> GRIDFLOW_HOST_DEVICE void serve(Worker& w, const Rings& rings) {
  Control& c = *rings.control;
  for (std::uint64_t k = 0;; ++k) {
    if (w.index() == 0)
      detail::take(w, rings, k);
    std::uint64_t bell = 0, participants = 0;
    if (w.is_leader()) {
      idle_wait(
          [&] {
            bell = protocol::atomic_ref<std::uint64_t>(c.published.value).load(cuda::std::memory_order_acquire);
            return bell & kTicketMask;
          },
          k + 1, rings.idle);
      k = (bell & kTicketMask) - 1; // a later ticket than k + 1: those in between retired without this block
      participants = detail::participants_of(rings, program_of_code(doorbell_code(bell)));
    }
    // The program's code, the payload flag and whether this block runs it, to every thread (a code fits in 23 bits).
    const std::uint32_t shared = w.share(doorbell_code(bell) | ((bell & kPayloadBit) != 0 ? 0x80000000u : 0u) |
                                         (w.index() < participants ? 0x40000000u : 0u));
    const std::uint32_t program_id = program_of_code(shared & 0x3fffffffu);
    if ((shared & 0x40000000u) == 0)
      continue; // kStop runs on every block, so a block that runs nothing of k does not stop here
    if (w.is_leader())
      detail::note_first(c);
    if (program_id < rings.max_programs) {
      detail::load_run(w, rings, program_id, (shared & 0x80000000u) != 0);
      w.run(program_id, k);
    }
    w.sync(); // every thread of the block is done with the run before the leader arrives
    std::uint32_t last = 0;
    if (w.is_leader())
      last = protocol::atomic_ref<std::uint64_t>(c.finished.value).fetch_add(1, cuda::std::memory_order_acq_rel) + 1 ==
                     participants
                 ? 1u
                 : 0u;
    if (w.share(last) != 0)
      detail::retire(w, rings, k, program_id);
    if (program_id == kStop)
      return;
  }
}

} // namespace gridflow::resident
