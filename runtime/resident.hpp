// The resident protocol: a megakernel (or the CPU backend's workers) that stays running and takes submissions from a
// ring the host fills, written once for both backends as serve() over a Worker policy.
//
// Memory (GPU): the submission and completion rings are pinned host memory mapped into the device; the control words,
// the program records and the programs themselves are device memory. CPU: all of it is host memory.
//
// Protocol, for submission k (tickets count from 0 per launch; the slot is k % depth):
//   host    writes slot k's payload (if any), then stores slot.seq = doorbell(k, program, payload) (release, system
//           scope): ticket + 1 and the program in one word.
//   block 0 waits until submission k - 1 is retired (control.retired >= k, acquire; the line also names the program
//           retired and its epoch and barrier generations after it; when block 0 retired k - 1 itself it knows all
//           that and reads nothing), polls slot.seq for ticket k + 1 (acquire, system scope; spinning for the idle
//           window, then sleeping), copies a payload into control (every thread of block 0, relaxed system loads
//           issued after the leader's acquire and a block barrier), writes the run's epoch and barrier base into
//           control.run (from the retired line when it names the same program, else from the program's record) and
//           stores the doorbell into control.published (release). Block 0 then runs k without reading back what it
//           published. A lone submission (block 0 its one participant) skips the run line and is published, relaxed,
//           after block 0 retired it: the other blocks run nothing of it and need only its ticket.
//   blocks  wait for control.published to show a ticket above their last (acquire; tickets in between retired
//           without them). Blocks 0 .. participants - 1 (participants_of the program) run it: copy the program's record
//           into their own storage (every thread a word) unless they hold it from their last run (a record's
//           descriptors never change once added), take the run's epoch and barrier base from control.run (which block
//           0 rewrites only after every participant arrived) and the buffer table from the payload if there is one,
//           run the program with the same interpreter as a launch (every sync mode), then arrive on control.finished
//           (acq_rel; a lone participant is the last without arriving); the others wait for the next ticket. The last
//           of the arrivals for k reads the program's error record (not for a lone run that saw no failure: only its
//           block could have raised one); after an error (or an epoch about to wrap) it zeroes the program's state
//           arena so the next run of it starts from run 1; it then writes the completion slot (times, error) and its
//           seq = k + 1 (release, system scope), zeroes control.finished, writes the record's new epoch and
//           generations into the record and, unless it is block 0, into control.retired, and stores control.retired =
//           k + 1 (release), which lets block 0 take submission k + 1.
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
  std::uint64_t published_ns = 0; // executor clock: block 0 took the submission (and published it, unless lone)
  std::uint64_t first_ns = 0;     // executor clock: the first block began it
  std::uint64_t done_ns = 0;      // executor clock: the last block finished it
  program::ErrorRecord error{};   // the run's first error (code 0: none)
  std::uint32_t lean_tiles = 0;   // 1: the run went through the lean tile path (runs_lean)
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
  void* const* table = nullptr; // the program's own buffer table (the view's, for a submission that names none)
  // Owned by the device from the first submission on: runs on the arena since it was zeroed, barrier generations.
  std::uint64_t epoch = 0;
  std::uint64_t barrier_generations = 0;
};

// Whether a run of `r` (its buffers set for the submission: load_run) goes through the lean tile path: the program has
// the lean megakernel's instructions (GPU, every task a lean row tile: runtime/lean_program.hpp, resident_lean_program)
// and the run is over the program's own buffers, whose addresses those instructions hold. Any other run takes the
// general interpreter.
GRIDFLOW_HOST_DEVICE bool runs_lean(const ProgramRecord& r) {
  return r.view.tile_instrs != nullptr && r.view.buffers == r.table;
}

// A Worker's held_program() before it holds a record (no program index is this).
inline constexpr std::uint32_t kNoProgram = kStop;

struct alignas(128) Line {
  std::uint64_t value = 0;
  unsigned char pad[120] = {};
};

// The last submission completed, written by its last block (ticket stored last, release) and read by block 0.
struct alignas(128) RetiredLine {
  std::uint64_t ticket = 0;  // ticket + 1
  std::uint64_t program = 0; // its program index + 1 (0: no program, or none retired since the launch)
  std::uint64_t epoch = 0;   // that program's record epoch and barrier generations after it
  std::uint64_t generations = 0;
  unsigned char pad[96] = {};
};

// The published submission's run (block 0, before the doorbell; rewritten only after every participant arrived).
struct alignas(128) RunLine {
  std::uint64_t epoch = 0;        // RunParams::epoch of the run
  std::uint64_t barrier_base = 0; // RunParams::barrier_base of the run
  unsigned char pad[112] = {};
};

// The kernel's own words (device memory, zeroed before the launch).
struct alignas(128) Control {
  Line published;                       // the doorbell of the submission every block is to run (release by block 0)
  Line finished;                        // arrivals of participants at the end of the current submission
  RetiredLine retired;                  // the last submission completed
  Line first_ns;                        // min over blocks of when they began the current submission
  RunLine run;                          // the published submission's epoch and barrier base
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

// What a block's leader knows of the submission it is to run: the doorbell, the blocks that run it, and (block 0
// alone, which published them) the run's epoch and barrier base.
struct Published {
  std::uint64_t bell = 0;
  std::uint64_t participants = 0;
  std::uint64_t epoch = 0;
  std::uint64_t barrier_base = 0;
  std::uint64_t published_ns = 0; // block 0: when it took the submission
  std::uint64_t first_ns = 0;     // block 0, a lone submission: when it began it
};

// Whether block 0 runs the submission alone (participants_of is 1): it then publishes it to the other blocks only
// after retiring it (they run nothing of it), and keeps the run's epoch, barrier base and times to itself.
GRIDFLOW_HOST_DEVICE bool lone(const Published& p) {
  return p.participants == 1;
}

// Block 0's leader: submission p's doorbell to every block (release: a multi-block submission's run line and, for
// every submission, what block 0 acquired of the host's writes). A lone submission's is relaxed: the other blocks
// read nothing of it but its ticket, and block 0's next publication releases all it wrote.
GRIDFLOW_HOST_DEVICE void publish(Control& c, const Published& p) {
  protocol::atomic_ref<std::uint64_t>(c.published.value)
      .store(p.bell, lone(p) ? cuda::std::memory_order_relaxed : cuda::std::memory_order_release);
}

// Block 0's leader, between submissions: what it knows of the last submission without reading control memory, when
// it retired that submission itself (it is then ahead of the retired line, which it does not write), so take()
// neither waits for the line nor reads it.
struct Ahead {
  std::uint64_t retired = 0; // ticket + 1 of the submission block 0 retired itself, 0: none (read the line)
  RetiredLine line{};        // what that retirement wrote of it (program, epoch, generations)
};

// Leader: how many blocks run `program_id` (blocks 0 .. n - 1): its record's participants, which never change once it
// is added (so a block reads them for the ticket it saw, whatever block 0 published since; from the worker's own copy
// when it holds that record), every block for kStop and for a record that names none or more than the grid, block 0
// alone for kPing.
template <class Worker>
GRIDFLOW_HOST_DEVICE std::uint64_t participants_of(Worker& w, const Rings& rings, std::uint32_t program_id) {
  if (program_id == kPing)
    return 1;
  std::uint64_t n = 0;
  if (program_id < rings.max_programs)
    n = w.held_program() == program_id ? w.record().participants : rings.programs[program_id].participants;
  return n == 0 || n > rings.grid ? rings.grid : n;
}

// Block 0's leader: wait for submission k (after k - 1 retired) and work out what running and publishing it needs:
// the doorbell, the blocks that run it, the run's epoch and barrier base, the time it was taken. Nothing is written:
// publish_taken does that (serve: at once without a payload, after copy_payload with one).
template <class Worker>
GRIDFLOW_HOST_DEVICE Published take(Worker& w, const Rings& rings, std::uint64_t k, const Ahead& ahead) {
  Control& c = *rings.control;
  Submission& slot = rings.submissions[k % rings.depth];
  Published p;
  RetiredLine last;
  if (ahead.retired == k) {
    last = ahead.line; // block 0 retired k - 1 itself
  } else {
    idle_wait(
        [&] { return protocol::atomic_ref<std::uint64_t>(c.retired.ticket).load(cuda::std::memory_order_acquire); }, k,
        rings.idle);
    // Written before the ticket that was acquired, and not again before this block publishes k.
    last.program = c.retired.program;
    last.epoch = c.retired.epoch;
    last.generations = c.retired.generations;
  }
  std::uint32_t polls = 0;
  idle_wait(
      [&] {
        if (++polls % kQuitPollInterval == 0 && rings.quit != nullptr &&
            system_ref<std::uint32_t>(*rings.quit).load(cuda::std::memory_order_relaxed) != 0) {
          p.bell = doorbell(k, kStop, false);
          return k + 1;
        }
        p.bell = system_ref<std::uint64_t>(slot.seq).load(cuda::std::memory_order_acquire);
        return p.bell & kTicketMask;
      },
      k + 1, rings.idle);
  const std::uint32_t program_id = program_of_code(doorbell_code(p.bell));
  p.participants = participants_of(w, rings, program_id);
  if (program_id < rings.max_programs) {
    const bool same = last.program == std::uint64_t{program_id} + 1;
    const ProgramRecord& rec = rings.programs[program_id];
    p.epoch = (same ? last.epoch : rec.epoch) + 1;
    p.barrier_base = same ? last.generations : rec.barrier_generations;
  }
  p.published_ns = protocol::now_ns();
  return p;
}

// Block 0, every thread, once its leader's take() of submission k reached every thread and the doorbell has the
// payload bit: the payload into control (every thread's loads follow the leader's acquire and the barrier that
// broadcast it), then a block barrier, so the leader's publish_taken() releases the copy.
template <class Worker> GRIDFLOW_HOST_DEVICE void copy_payload(Worker& w, const Rings& rings, std::uint64_t k) {
  auto* words = reinterpret_cast<std::uint64_t*>(&rings.submissions[k % rings.depth]);
  for (std::uint32_t i = 1 + w.thread(); i < kSubmissionWords; i += w.threads())
    rings.control->slot[i] = system_ref<std::uint64_t>(words[i]).load(cuda::std::memory_order_relaxed);
  w.sync();
}

// Block 0's leader, after take() (and copy_payload() when there is a payload): unless the submission is lone
// (published after it retired: serve), the run line, then the doorbell to every block (release).
GRIDFLOW_HOST_DEVICE void publish_taken(const Rings& rings, const Published& p) {
  if (lone(p))
    return;
  Control& c = *rings.control;
  if (program_of_code(doorbell_code(p.bell)) < rings.max_programs) {
    c.run.epoch = p.epoch;
    c.run.barrier_base = p.barrier_base;
  }
  protocol::atomic_ref<std::uint64_t>(c.first_ns.value).store(~std::uint64_t{0}, cuda::std::memory_order_relaxed);
  c.published_ns = p.published_ns;
  publish(c, p);
}

// Every thread: the run of `program_id` into the worker's copy of its record (copied, every thread a word, unless the
// worker holds it from its last run), with the leader's epoch and barrier base and, from the payload if there is one,
// the buffers and the fault. The leader's writes (the view's buffers, the parameters) are published by Worker::run's
// first block barrier: until then no other thread reads them.
template <class Worker>
GRIDFLOW_HOST_DEVICE void load_run(Worker& w, const Rings& rings, std::uint32_t program_id, bool payload,
                                   const Published& p) {
  if (w.held_program() != program_id) {
    auto* dst = reinterpret_cast<std::uint64_t*>(&w.record());
    const auto* src = reinterpret_cast<const std::uint64_t*>(&rings.programs[program_id]);
    for (std::uint32_t i = w.thread(); i < kRecordWords; i += w.threads())
      dst[i] = src[i];
    w.sync();
  }
  w.held_program() = program_id;
  if (w.is_leader()) {
    ProgramRecord& r = w.record();
    r.params.epoch = static_cast<std::uint32_t>(p.epoch);
    r.params.barrier_base = p.barrier_base;
    const auto* s = reinterpret_cast<const Submission*>(rings.control->slot);
    r.view.buffers = payload ? s->buffers : r.table;
    r.params.fault_skip_signal_tile = payload ? s->fault_skip_signal_tile : program::kNoTile;
  }
}

// The last block to finish submission k, every thread: reset the program's arena after a failed run, complete k in
// the completion ring and retire it. `clean`: this block's run saw no failure (Worker::run); for a lone submission
// that means no error was raised (only this block ran it), so the error record is not read, and every thread tells
// from the record whether the arena is reset (an epoch about to wrap) without a broadcast. `lone_run`: every thread's
// copy of lone(p). Returns (leader) what block 0 keeps of the retirement (Ahead) when it is the retiring block, which
// then does not write the retired line.
template <class Worker>
GRIDFLOW_HOST_DEVICE Ahead retire(Worker& w, const Rings& rings, std::uint64_t k, std::uint32_t program_id,
                                  const Published& p, bool lone_run, bool clean) {
  Control& c = *rings.control;
  const bool has_program = program_id < rings.max_programs;
  program::ErrorRecord error{};
  std::uint32_t reset = 0;
  std::uint64_t published_ns = p.published_ns, first_ns = p.first_ns;
  if (lone_run && clean) {
    reset = has_program && w.record().params.epoch >= kEpochLimit ? 1u : 0u;
  } else if (w.is_leader()) {
    // One round of loads: the times the completion reports (block 0 keeps a lone submission's), the run's error
    // record and abort flag.
    if (!lone_run) {
      published_ns = c.published_ns;
      first_ns = protocol::atomic_ref<std::uint64_t>(c.first_ns.value).load(cuda::std::memory_order_relaxed);
    }
    if (has_program) {
      auto* control = reinterpret_cast<program::ControlBlock*>(w.record().view.state);
      error = control->error;
      const bool failed = error.code != 0 || protocol::is_aborted(control);
      reset = failed || w.record().params.epoch >= kEpochLimit ? 1u : 0u;
    }
  }
  if (!(lone_run && clean))
    reset = w.share(reset);
  if (reset != 0) {
    auto* state = reinterpret_cast<std::uint64_t*>(w.record().view.state);
    const std::uint64_t words = w.record().state_bytes / 8;
    for (std::uint64_t i = w.thread(); i < words; i += w.threads())
      state[i] = 0;
    w.sync(); // every thread's zeroes precede the leader's release below
  }
  Ahead kept;
  if (!w.is_leader())
    return kept;
  // The completion first: its release orders the run's outputs and the fields before seq, and nothing the host does
  // not read waits in front of it.
  Completion& done = rings.completions[k % rings.depth];
  done.published_ns = published_ns;
  done.first_ns = first_ns;
  done.done_ns = protocol::now_ns();
  done.error = error;
  done.lean_tiles = has_program && runs_lean(w.record()) ? 1u : 0u;
  system_ref<std::uint64_t>(done.seq).store(k + 1, cuda::std::memory_order_release); // after the fields above
  // Then what block 0 reads before it takes k + 1 (released by `retired` below, unless block 0 is this block).
  RetiredLine& line = kept.line;
  kept.retired = k + 1;
  line.ticket = k + 1;
  if (has_program) {
    ProgramRecord& rec = rings.programs[program_id];
    rec.epoch = reset ? 0 : w.record().params.epoch;
    rec.barrier_generations = reset ? 0 : w.record().params.barrier_base + w.record().barrier_advance;
    line.program = std::uint64_t{program_id} + 1;
    line.epoch = rec.epoch;
    line.generations = rec.barrier_generations;
  }
  // The next submission's arrivals count from zero: they follow block 0's publication of it, which follows its
  // acquire of `retired` below (or this store, when block 0 retires).
  if (!lone_run)
    protocol::atomic_ref<std::uint64_t>(c.finished.value).store(0, cuda::std::memory_order_relaxed);
  if (w.index() != 0) {
    c.retired.program = line.program;
    c.retired.epoch = line.epoch;
    c.retired.generations = line.generations;
    protocol::atomic_ref<std::uint64_t>(c.retired.ticket).store(k + 1, cuda::std::memory_order_release);
  }
  return kept;
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
//   std::uint32_t& held_program();           // whose record record() holds (kNoProgram at first): each thread's
//                                            // own, which serve() keeps equal across the block
//   bool run(std::uint32_t program, std::uint64_t ticket);  // interpret record().view with record().params: its
//                                                           // answer (false: the block saw the run fail)
// Every thread of a block calls serve(); only leaders touch the control words. The ticket `k` is the leader's: a
// block that runs none of the submissions between two it sees skips them (block 0 never does: it takes each one),
// and only the leader's copy follows the skip (the other threads use it for nothing).
template <class Worker> GRIDFLOW_HOST_DEVICE void serve(Worker& w, const Rings& rings) {
  // What every thread learns of a submission from its leader, in one word: the program's code (23 bits) and flags.
  constexpr std::uint32_t kPayload = 0x80000000u; // the doorbell's payload bit
  constexpr std::uint32_t kRuns = 0x40000000u;    // this block runs it
  constexpr std::uint32_t kLone = 0x20000000u;    // block 0 runs it alone (lone)
  constexpr std::uint32_t kCode = 0x1fffffffu;
  Control& c = *rings.control;
  detail::Ahead ahead; // block 0's leader
  for (std::uint64_t k = 0;; ++k) {
    detail::Published p;
    if (w.index() == 0 && w.is_leader()) {
      p = detail::take(w, rings, k, ahead);
      ahead = {};
      if ((p.bell & kPayloadBit) == 0)
        detail::publish_taken(rings, p); // nothing to copy first
    } else if (w.is_leader()) {
      idle_wait(
          [&] {
            p.bell = protocol::atomic_ref<std::uint64_t>(c.published.value).load(cuda::std::memory_order_acquire);
            return p.bell & kTicketMask;
          },
          k + 1, rings.idle);
      k = (p.bell & kTicketMask) - 1; // a later ticket than k + 1: those in between retired without this block
      const std::uint32_t program_id = program_of_code(doorbell_code(p.bell));
      p.participants = detail::participants_of(w, rings, program_id);
      if (w.index() < p.participants && program_id < rings.max_programs) {
        p.epoch = c.run.epoch; // written before the doorbell acquired; rewritten only after this block arrives
        p.barrier_base = c.run.barrier_base;
      }
    }
    const std::uint32_t shared = w.share(doorbell_code(p.bell) | ((p.bell & kPayloadBit) != 0 ? kPayload : 0u) |
                                         (w.index() < p.participants ? kRuns : 0u) | (detail::lone(p) ? kLone : 0u));
    const std::uint32_t program_id = program_of_code(shared & kCode);
    const bool payload = (shared & kPayload) != 0, lone_run = (shared & kLone) != 0;
    if (w.index() == 0 && payload) {
      detail::copy_payload(w, rings, k);
      if (w.is_leader())
        detail::publish_taken(rings, p);
    }
    if ((shared & kRuns) == 0)
      continue; // kStop runs on every block, so a block that runs nothing of k does not stop here
    if (w.is_leader()) {
      if (lone_run)
        p.first_ns = protocol::now_ns();
      else
        detail::note_first(c);
    }
    bool clean = true;
    if (program_id < rings.max_programs) {
      detail::load_run(w, rings, program_id, payload, p);
      clean = w.run(program_id, k);
    }
    w.sync(); // every thread of the block is done with the run before the leader arrives (or completes a lone one)
    // A lone run's block is its last; the leaders of another run's blocks arrive, and each tells its threads whether
    // it was the last.
    std::uint32_t last = 1;
    if (!lone_run) {
      std::uint32_t arrived = 0;
      if (w.is_leader())
        arrived =
            protocol::atomic_ref<std::uint64_t>(c.finished.value).fetch_add(1, cuda::std::memory_order_acq_rel) + 1 ==
                    p.participants
                ? 1u
                : 0u;
      last = w.share(arrived);
    }
    if (last != 0) {
      const detail::Ahead kept = detail::retire(w, rings, k, program_id, p, lone_run, clean);
      if (w.index() == 0 && w.is_leader())
        ahead = kept;
    }
    if (w.is_leader() && lone_run) // block 0: the lone submission's publication (the others skip it)
      detail::publish(c, p);
    if (program_id == kStop)
      return;
  }
}

} // namespace gridflow::resident
