#pragma once
// The cgroup v2 directory pkitd manages (SPEC §15), ROOT: pkitd in ROOT/_pkitd, each
// service in ROOT/NAME (an instance in ROOT/NAME@I). Every call is a few small reads
// or writes of cgroupfs files, which never block. Takes its root as a path, so tests
// point it at a directory of plain files standing in for cgroupfs.

#include <sys/types.h>

#include <cstdint>
#include <expected>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/shell/cgroup/cgroup_find.hpp"

namespace pkit::shell {

// Reads `proc_self` (/proc/self) and the cgroup it names: the facts of choose_cgroup.
CgroupFacts gather_cgroup_facts(const std::string& proc_self);

class CgroupTree {
public:
    // Takes `root` over: creates ROOT/_pkitd and moves process `self` into it (0: moves
    // nothing, for tests), enables ROOT's available controllers for its children, and
    // kills what a previous pkitd's services left in ROOT's other children (kept, to be
    // reused, and thawed: a run paused when that pkitd died would leave its cgroup
    // frozen under the next run), unless `adopt` (after an upgrade in place they are
    // this pkitd's runs, paused ones included).
    // Fails with the reason.
    static std::expected<std::unique_ptr<CgroupTree>, std::string> open(std::string root,
                                                                        pid_t self,
                                                                        bool adopt = false);

    const std::string& root() const { return m_root; }
    // The controllers enabled for the services' cgroups.
    const std::vector<std::string>& controllers() const { return m_controllers; }
    // The names of the leftover cgroups open() found populated and killed.
    const std::vector<std::string>& leftovers() const { return m_leftovers; }

    // ROOT/NAME, created when missing; the reason when it cannot be.
    std::expected<std::string, std::string> make(std::string_view name);
    std::string dir(std::string_view name) const { return m_root + "/" + std::string(name); }

    // Whether any process is in ROOT/NAME (cgroup.events); nullopt when unreadable.
    std::optional<bool> populated(std::string_view name) const;
    // SIGKILL to every process in ROOT/NAME: cgroup.kill, or a kill loop over
    // cgroup.procs on kernels without it (before 5.14).
    void kill(std::string_view name);
    // Whether kill() was ever called for ROOT/NAME. Measured on 6.18: a child that
    // clone3 starts in a cgroup (CLONE_INTO_CGROUP) once cgroup.kill was written to is
    // killed at once, so such a cgroup's runs join it instead.
    bool was_killed(std::string_view name) const;
    // `signo` to every process in ROOT/NAME; returns how many got it.
    std::size_t signal(std::string_view name, int signo) const;
    // cpu.stat usage_usec of ROOT/NAME.
    std::optional<std::uint64_t> cpu_usage_usec(std::string_view name) const;
    // memory.events oom_kill of ROOT/NAME: processes the kernel's OOM killer killed in
    // it so far; nullopt without the memory controller.
    std::optional<std::uint64_t> oom_kills(std::string_view name) const;
    // Freezes (`frozen`) or thaws ROOT/NAME (cgroup.freeze, SPEC §15 pause). The write
    // returns at once; the kernel then freezes every process and says so in
    // cgroup.events (`frozen 1`). Returns the errno on failure.
    std::expected<void, int> freeze(std::string_view name, bool frozen) const;
    // Whether every process of ROOT/NAME is frozen (cgroup.events `frozen`); nullopt when
    // unreadable.
    std::optional<bool> frozen(std::string_view name) const;

    // Removes the cgroups it made (they must be empty), gives the controllers back,
    // moves pkitd back into ROOT and removes ROOT/_pkitd. Idempotent.
    void remove_all();

private:
    explicit CgroupTree(std::string root) : m_root(std::move(root)) {}

    std::string m_root;
    pid_t m_self = 0;
    bool m_removed = false;
    std::vector<std::string> m_controllers;
    std::vector<std::string> m_made;  // names, including leftovers reused
    std::vector<std::string> m_leftovers;
    std::vector<std::string> m_killed;
};

// The same reads of a cgroup directory DIR, for a reader off the loop (the /metrics
// pass on libuv's pool): nothing but file reads, safe on any thread.
std::vector<pid_t> cgroup_procs(const std::string& dir);
std::optional<std::uint64_t> cgroup_cpu_usage_usec(const std::string& dir);
std::optional<std::uint64_t> cgroup_memory_current(const std::string& dir);
std::optional<std::uint64_t> cgroup_oom_kills(const std::string& dir);

// The words of a cgroupfs list such as cgroup.controllers ("cpu io memory\n").
std::vector<std::string> cgroup_words(std::string_view text);

// Reads a small file whole; nullopt on any error.
std::optional<std::string> read_small_file(const std::string& path);
// Writes `text` to an existing file (O_WRONLY, no O_CREAT): cgroupfs takes each write as
// one command. Returns the errno on failure.
std::expected<void, int> write_file(const std::string& path, std::string_view text);

}  // namespace pkit::shell
