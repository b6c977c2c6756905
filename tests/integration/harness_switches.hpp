#pragma once
// How often pkitd is woken, for idle cases: context switches summed over every thread
// of a process (a blocked thread that wakes up costs one voluntary switch when it
// sleeps again; a preempted one an involuntary one). Reading /proc does not wake it.

#include <sys/types.h>

#include <chrono>
#include <string>

namespace pkit::itest {

struct Switches {
    long voluntary = 0;
    long nonvoluntary = 0;
    long threads = 0;
    long total() const { return voluntary + nonvoluntary; }
};

Switches read_switches(pid_t pid);
std::string text_of(const Switches& s);
// Waits until the count of `pid` stays unchanged for `quiet` (settling, not an
// assertion) and returns it; fails the case after `timeout`.
Switches settle_switches(pid_t pid, std::chrono::milliseconds quiet,
                         std::chrono::milliseconds timeout);

}  // namespace pkit::itest
