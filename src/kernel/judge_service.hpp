#pragma once
// Internal to the kernel module: what upskill does for the kernel judge that the judge, in a PID
// namespace of its own, cannot do itself (docs/SECURITY.md, "The judge's threat model"). On one
// socket, until the judge closes it, requests of a command byte and their arguments (integers
// little-endian; `who` is 'c' for the candidate's worker, 'r' for the judge's reference worker):
//
// - 'C': the candidate's CPU time, 8 bytes of ns (all ones: unknown).
// - 'W' who: find that worker now and pin it (its pid and start time). The judge asks before the
//   worker has loaded any code but the harness's, so the command line it is found by is the
//   harness's own; every later read checks the pinned process is still the one that lives there.
// - 'M' u64 size, with one fd: map that memfd (the judge's snapshot, sealed against shrinking and
//   at least `size` bytes), replacing any earlier one.
// - 'R' who u32 n, then n times (u64 address, u64 length, u64 offset): read each range of the
//   worker's memory into the snapshot at `offset`.
//
// 'W', 'M' and 'R' answer 8 bytes: 0 done, 2 a range could not be read, 3 the worker is not found
// or is gone, 4 a malformed request, 5 this machine does not let upskill read another process
// (ptrace rules, seccomp). The reads are process_vm_readv(2) from outside the workers' namespaces:
// the worker's memory as it is at that moment, copied by the kernel, with no step of the worker's
// own. Anything else on the socket ends the service; answers are sent without SIGPIPE.
#include <sys/types.h>

#include <atomic>

namespace upskill::kernel::detail {

// Serves the judge's requests on `fd`. `candidate` and `judge` are the first pids of the two
// sandboxed runs (Options::on_start); `judge` may still be 0 when serving starts.
void serve_judge(int fd, pid_t candidate, const std::atomic<pid_t>& judge);

}  // namespace upskill::kernel::detail
