#include "daemon/shell/launch/launch_child.hpp"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdint>
#include <mutex>
#include <optional>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif

// Only async-signal-safe calls below this line: no allocation, no stdio, no locks.

namespace pkit::shell {

namespace {

[[noreturn]] void fail(int report_fd, ChildStage stage, int index = -1) {
    ChildReport report;
    report.stage = static_cast<int>(stage);
    report.error = errno;
    report.index = index;
    ssize_t ignored = write(report_fd, &report, sizeof report);
    (void)ignored;
    _exit(127);
}

// Moves `fd` to a number >= 3 (close-on-exec) if it sits on 0, 1 or 2, so that the
// dup2 calls onto the standard streams cannot clobber a source before it is used. Only
// happens when pkitd was started with a standard stream closed.
int above_stdio(int fd, int report_fd) {
    if (fd >= 3) {
        return fd;
    }
    int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (moved < 0) {
        fail(report_fd, ChildStage::setup);
    }
    return moved;
}

// glibc refuses its own internal signals (32, 33) with EINVAL, yet pkitd may have
// inherited them ignored from whatever started it, and an ignored disposition survives
// exec. The kernel call itself takes them; it is async-signal-safe.
void reset_reserved_signal(int signo) {
#if defined(__x86_64__)
    struct KernelSigaction {
        void (*handler)(int);
        unsigned long flags;
        void (*restorer)();
        unsigned long mask;
    };
    KernelSigaction action{SIG_DFL, 0, nullptr, 0};
    syscall(SYS_rt_sigaction, signo, &action, nullptr, sizeof action.mask);
#else
    (void)signo;
#endif
}

// Writes the run's record with this process's pid and the time now: it started before.
// A failed write leaves the run unrecorded, never unstarted.
void write_record(const ChildRecord& child) {
    if (child.fd < 0) {
        return;
    }
    RunRecord record = child.record;
    record.pid = getpid();
    record.before_ns = boottime_ns();
    ssize_t ignored = pwrite(child.fd, &record, sizeof record, child.offset);
    (void)ignored;
}

void reset_signals() {
    struct sigaction default_action {};
    default_action.sa_handler = SIG_DFL;
    sigemptyset(&default_action.sa_mask);
    for (int signo = 1; signo < NSIG; ++signo) {
        if (signo == SIGKILL || signo == SIGSTOP) {
            continue;
        }
        if (sigaction(signo, &default_action, nullptr) != 0) {
            reset_reserved_signal(signo);
        }
    }
    sigset_t empty;
    sigemptyset(&empty);
    sigprocmask(SIG_SETMASK, &empty, nullptr);
}

// Writes the decimal digits of `value` and a NUL at `out` (room for 21 bytes).
void write_digits(char* out, unsigned long value) {
    char reversed[24];
    int n = 0;
    do {
        reversed[n++] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value != 0);
    while (n > 0) {
        *out++ = reversed[--n];
    }
    *out = '\0';
}

// Puts the [[listen]] sockets at 3, 4, ... in order (without close-on-exec), as
// sd_listen_fds(3) expects, and writes LISTEN_PID: this process's pid, known only
// now. Each source is first moved above the targets, so that no dup2 can clobber a
// source (or the report pipe) still to be used; returns the report fd, moved too if
// it sat in the targets' range.
int place_listen_fds(const ChildListen& listen, int report_fd) {
    const int count = static_cast<int>(listen.fds.size());
    if (count == 0) {
        return report_fd;
    }
    const int first_free = 3 + count;
    if (report_fd < first_free) {
        int moved = fcntl(report_fd, F_DUPFD_CLOEXEC, first_free);
        if (moved < 0) {
            fail(report_fd, ChildStage::setup);
        }
        report_fd = moved;
    }
    for (int i = 0; i < count; ++i) {
        listen.scratch[i] =
            fcntl(listen.fds[static_cast<std::size_t>(i)], F_DUPFD_CLOEXEC, first_free);
        if (listen.scratch[i] < 0) {
            fail(report_fd, ChildStage::setup);
        }
    }
    for (int i = 0; i < count; ++i) {
        // dup2 clears close-on-exec on the target.
        if (dup2(listen.scratch[i], 3 + i) < 0) {
            fail(report_fd, ChildStage::setup);
        }
    }
    write_digits(listen.pid_digits, static_cast<unsigned long>(getpid()));
    return report_fd;
}

// Closes every fd >= `first` but the report pipe, which must survive until execve (it
// is close-on-exec itself). Closing here rather than marking the range close-on-exec
// costs the same per fd, but leaves execve nothing to sweep; either way, with 2,000
// inherited fds the copy made by fork is what this undoes.
void close_inherited_fds(int first, int report_fd) {
    bool closed = report_fd > first ? close_range(static_cast<unsigned>(first),
                                                  static_cast<unsigned>(report_fd) - 1, 0) == 0
                                    : true;
    if (closed && close_range(static_cast<unsigned>(report_fd) + 1, ~0U, 0) == 0) {
        return;
    }
    // Kernels before 5.9: close one by one up to the fd limit.
    rlimit limit{};
    int max_fd = getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
                         limit.rlim_cur < static_cast<rlim_t>(INT_MAX)
                     ? static_cast<int>(limit.rlim_cur)
                     : 65536;
    for (int fd = first; fd < max_fd; ++fd) {
        if (fd != report_fd) {
            close(fd);
        }
    }
}

// Moves the child into its service's cgroup before anything else it does: writing "0"
// to a cgroup.procs moves the writer. Everything the run starts from here on is in that
// cgroup.
void join_cgroup(const ChildPlan& plan, int report_fd) {
    if (plan.cgroup_procs_fd < 0) {
        return;
    }
    if (write(plan.cgroup_procs_fd, "0", 1) != 1) {
        fail(report_fd, ChildStage::cgroup);
    }
}

}  // namespace

void run_child(const ChildPlan& plan, ChildFds fds, bool in_cgroup, int unshare_below) {
    // Until the unshare below, the table may be pkitd's own: nothing but writes to its
    // descriptors (the cgroup's, the record's, the report pipe on failure).
    if (!in_cgroup) {
        join_cgroup(plan, fds.report_fd);
    }
    if (setsid() < 0) {
        fail(fds.report_fd, ChildStage::setup);
    }
    // From here on, killing the process group recorded ends everything of the run. A
    // child that fails below leaves its record behind: its pid is found gone (or reused,
    // and its start time tells) and the slot is the next run's.
    write_record(plan.record);
    reset_signals();
    if (unshare_below > 0 &&
        close_range(static_cast<unsigned>(unshare_below), ~0U, CLOSE_RANGE_UNSHARE) != 0) {
        fail(fds.report_fd, ChildStage::setup);
    }
    int report_fd = above_stdio(fds.report_fd, fds.report_fd);

    int out_fd = above_stdio(fds.stdout_fd, report_fd);
    int err_fd = above_stdio(fds.stderr_fd, report_fd);
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
        fail(report_fd, ChildStage::setup);
    }
    null_fd = above_stdio(null_fd, report_fd);
    // dup2 clears close-on-exec on the target, so exactly 0, 1 and 2 survive execve.
    if (dup2(null_fd, 0) < 0 || dup2(out_fd, 1) < 0 || dup2(err_fd, 2) < 0) {
        fail(report_fd, ChildStage::setup);
    }
    report_fd = place_listen_fds(plan.listen, report_fd);
    close_inherited_fds(3 + static_cast<int>(plan.listen.fds.size()), report_fd);

    // Before the service's own rlimits, which may set nofile themselves.
    if (plan.nofile && setrlimit(RLIMIT_NOFILE, &*plan.nofile) != 0) {
        fail(report_fd, ChildStage::setup);
    }
    if (plan.umask) {
        umask(*plan.umask);
    }
    for (std::size_t i = 0; i < plan.rlimits.size(); ++i) {
        const ChildRlimit& entry = plan.rlimits[i];
        if (setrlimit(static_cast<__rlimit_resource_t>(entry.resource), &entry.limit) != 0) {
            fail(report_fd, ChildStage::rlimit, static_cast<int>(i));
        }
    }
    if (plan.sandbox.any()) {
        if (SandboxResult failed = sandbox_before_credentials(plan.sandbox);
            failed != k_sandbox_ok) {
            fail(report_fd, ChildStage::sandbox, failed);
        }
    }
    if (!plan.cwd.empty() && chdir(plan.cwd.c_str()) != 0) {
        fail(report_fd, ChildStage::cwd);
    }
    if (plan.change_credentials) {
        // Groups first: once the uid is dropped, setgroups and setgid are no longer
        // permitted.
        // Raw system calls: glibc's wrappers would broadcast the change to every thread of
        // the process (setxid), and a child sharing pkitd's memory would signal pkitd's
        // threads instead of changing only itself.
        if (syscall(SYS_setgroups, plan.groups.size(), plan.groups.data()) != 0 ||
            syscall(SYS_setgid, plan.gid) != 0 || syscall(SYS_setuid, plan.uid) != 0) {
            fail(report_fd, ChildStage::credentials);
        }
    }
    if (plan.sandbox.any()) {
        if (SandboxResult failed = sandbox_after_credentials(plan.sandbox);
            failed != k_sandbox_ok) {
            fail(report_fd, ChildStage::sandbox, failed);
        }
    }
    execve(plan.path.c_str(), plan.argv.data(), plan.envp.data());
    fail(report_fd, ChildStage::exec);
}

namespace {

struct CloneArgs {
    const ChildPlan* plan;
    ChildFds fds;
    bool in_cgroup = false;
    int unshare_below = 0;  // > 0: CLONE_FILES, see run_child
};

int clone_entry(void* arg) {
    const auto* args = static_cast<const CloneArgs*>(arg);
    run_child(*args->plan, args->fds, args->in_cgroup, args->unshare_below);
}

// The stack a vfork-style child runs on, one per calling thread: the thread is
// suspended while its child uses it, so one is enough. Mapped once, with a guard page.
class ChildStack {
public:
    static constexpr std::size_t k_size = 128 * 1024;

    ChildStack() {
        void* base = mmap(nullptr, k_size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
        if (base != MAP_FAILED) {
            m_base = static_cast<char*>(base);
            mprotect(m_base, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)), PROT_NONE);
        }
    }
    ~ChildStack() {
        if (m_base != nullptr) {
            munmap(m_base, k_size);
        }
    }
    ChildStack(const ChildStack&) = delete;
    ChildStack& operator=(const ChildStack&) = delete;

    // The top of the stack (it grows down), 64-byte aligned; null if mmap failed.
    void* top() const { return m_base == nullptr ? nullptr : m_base + k_size - 64; }
    // The usable part above the guard page, up to top(): clone3's stack and size.
    char* bottom() const { return m_base + guard(); }
    std::size_t usable() const { return k_size - 64 - guard(); }
    static std::size_t guard() { return static_cast<std::size_t>(sysconf(_SC_PAGESIZE)); }

    // Under AddressSanitizer: the previous child's frames never returned (it exec'd), so
    // their redzones are still marked in the shadow memory it shared with pkitd; the
    // next child would trip over them.
    void forget_frames() const {
#if defined(__SANITIZE_ADDRESS__)
        std::size_t guard = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
        ASAN_UNPOISON_MEMORY_REGION(m_base + guard, k_size - guard);
#endif
    }

private:
    char* m_base = nullptr;
};

#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
// clone3's arguments up to `cgroup` (CLONE_ARGS_SIZE_VER2), laid out as the kernel's.
struct Clone3Args {
    std::uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls, set_tid,
        set_tid_size, cgroup;
};
constexpr std::uint64_t k_clone_into_cgroup = 0x200000000ULL;

// Whether clone3 with CLONE_INTO_CGROUP may work here: false once the kernel said it has
// neither (ENOSYS before 5.3, E2BIG or EINVAL for the cgroup field before 5.7).
std::atomic<bool> g_clone3_usable{true};

// clone3 run on the child's own stack: the child starts at the instruction after the
// system call with the new stack pointer and no frame to return to, so the call and
// the jump into `entry` are one piece of assembly. Returns the pid, or -errno.
long raw_clone3(Clone3Args* args, int (*entry)(void*), void* arg) {
    long result;
    register void* entry_reg asm("r12") = reinterpret_cast<void*>(entry);
    register void* arg_reg asm("r13") = arg;
    asm volatile(
        "syscall\n\t"
        "test %%rax, %%rax\n\t"
        "jnz 1f\n\t"
        // The child, on its stack (16-byte aligned at its top): entry(arg), then exit
        // with its result should it ever return (run_child never does).
        "xor %%ebp, %%ebp\n\t"
        "mov %%r13, %%rdi\n\t"
        "call *%%r12\n\t"
        "mov %%eax, %%edi\n\t"
        "mov $60, %%eax\n\t"
        "syscall\n\t"
        "hlt\n"
        "1:\n\t"
        : "=a"(result)
        : "0"(435L /* SYS_clone3 */), "D"(args), "S"(sizeof(Clone3Args)), "r"(entry_reg),
          "r"(arg_reg)
        : "rcx", "r11", "memory");
    return result;
}
#endif

// Starts the child straight in the cgroup of plan.cgroup_dir_fd (clone3 with
// CLONE_INTO_CGROUP, vfork-style like the clone below): every instruction of it runs
// there. Returns the pid, or nullopt where the kernel cannot, and the caller clones the
// child to join the cgroup itself (join_cgroup). A failure that is the cgroup's (it was
// removed, a controller refuses) is left to that join too, which reports it.
std::optional<pid_t> clone_into_cgroup(const ChildPlan& plan, CloneArgs& args, ChildStack& stack) {
#if defined(__x86_64__) && !defined(__SANITIZE_THREAD__)
    if (plan.cgroup_dir_fd < 0 || !g_clone3_usable.load(std::memory_order_relaxed)) {
        return std::nullopt;
    }
    Clone3Args clone{};
    clone.flags =
        CLONE_VM | CLONE_VFORK | k_clone_into_cgroup | (args.unshare_below > 0 ? CLONE_FILES : 0);
    clone.exit_signal = SIGCHLD;
    clone.stack = reinterpret_cast<std::uint64_t>(stack.bottom());
    clone.stack_size = stack.usable();
    clone.cgroup = static_cast<std::uint64_t>(plan.cgroup_dir_fd);
    args.in_cgroup = true;
    long pid = raw_clone3(&clone, &clone_entry, &args);
    if (pid > 0) {
        return static_cast<pid_t>(pid);
    }
    args.in_cgroup = false;
    if (pid == -ENOSYS || pid == -E2BIG || pid == -EINVAL) {
        g_clone3_usable.store(false, std::memory_order_relaxed);
    }
    return std::nullopt;
#else
    (void)plan;
    (void)args;
    (void)stack;
    return std::nullopt;
#endif
}

// The calling thread's child stack: one for its clones and for the probe of the slots.
ChildStack& thread_child_stack() {
    thread_local ChildStack stack;
    return stack;
}

// The low slots (reserve_low_slots): while a clone uses them, the child's three
// descriptors sit there, and only this lock's holder touches them.
struct LowSlots {
    std::mutex mutex;
    std::array<int, 3> fds{-1, -1, -1};
    int null_fd = -1;
    bool usable = false;
};

LowSlots& low_slots() {
    static LowSlots slots;
    return slots;
}

// Run in a child that shares the caller's table: whether it can unshare it below a
// bound. Its exit status answers.
int probe_unshare(void* /*arg*/) {
    return close_range(3, ~0U, CLOSE_RANGE_UNSHARE) == 0 ? 0 : 1;
}

pid_t clone_plain(const ChildPlan& plan, CloneArgs& args, ChildStack& stack) {
    if (auto pid = clone_into_cgroup(plan, args, stack)) {
        return *pid;
    }
#if defined(__SANITIZE_THREAD__)
    // ThreadSanitizer keeps its state per thread in the thread's memory; a child that
    // shares that memory and calls the C library's intercepted functions (open, dup2,
    // close) would rewrite the parent thread's state and make every report after it
    // false. Under TSan only, the child gets its own copy of the memory (fork-style); the
    // parent still waits for its exec, so everything else is as in the real build.
    constexpr int k_flags = CLONE_VFORK | SIGCHLD;
#else
    constexpr int k_flags = CLONE_VM | CLONE_VFORK | SIGCHLD;
#endif
    return clone(&clone_entry, stack.top(), k_flags | (args.unshare_below > 0 ? CLONE_FILES : 0),
                 &args);
}

}  // namespace

bool reserve_low_slots() {
    LowSlots& slots = low_slots();
    std::lock_guard lock(slots.mutex);
    if (slots.usable) {
        return true;
    }
    int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null_fd < 0) {
        return false;
    }
    std::array<int, 3> fds{-1, -1, -1};
    for (int& fd : fds) {
        fd = fcntl(null_fd, F_DUPFD_CLOEXEC, 3);
    }
    // A child that shares this table and unshares it, as run_child would.
    ChildStack& stack = thread_child_stack();
    bool works = false;
    if (std::ranges::none_of(fds, [](int fd) { return fd < 0; }) && stack.top() != nullptr) {
        stack.forget_frames();
#if defined(__SANITIZE_THREAD__)
        constexpr int k_flags = CLONE_VFORK | CLONE_FILES;  // as clone_plain under TSan
#else
        constexpr int k_flags = CLONE_VM | CLONE_VFORK | CLONE_FILES;
#endif
        // No exit signal: only a __WCLONE wait sees the probe, never the reaper.
        pid_t pid = clone(&probe_unshare, stack.top(), k_flags, nullptr);
        int status = 0;
        works = pid > 0 && waitpid(pid, &status, __WCLONE) == pid && WIFEXITED(status) &&
                WEXITSTATUS(status) == 0;
    }
    if (!works) {
        close_fds({fds[0], fds[1], fds[2], null_fd});
        return false;
    }
    slots.fds = fds;
    slots.null_fd = null_fd;
    slots.usable = true;
    return true;
}

pid_t clone_child(const ChildPlan& plan, ChildFds fds) {
    ChildStack& stack = thread_child_stack();
    if (stack.top() == nullptr) {
        errno = ENOMEM;
        return -1;
    }
    stack.forget_frames();
    CloneArgs args{&plan, fds};
    LowSlots& slots = low_slots();
    std::unique_lock lock(slots.mutex);
    if (!slots.usable || !plan.listen.fds.empty()) {
        lock.unlock();
        return clone_plain(plan, args, stack);
    }
    // Once the child has exec'd or exited (or never was), the pipes' ends go back to
    // pkitd's own numbers only, so that they see their EOF when the child is gone.
    auto release = [&slots] {
        int error = errno;
        for (int slot : slots.fds) {
            dup3(slots.null_fd, slot, O_CLOEXEC);
        }
        errno = error;
    };
    if (dup3(fds.stdout_fd, slots.fds[0], O_CLOEXEC) < 0 ||
        dup3(fds.stderr_fd, slots.fds[1], O_CLOEXEC) < 0 ||
        dup3(fds.report_fd, slots.fds[2], O_CLOEXEC) < 0) {
        release();
        lock.unlock();
        return clone_plain(plan, args, stack);
    }
    args.fds = ChildFds{slots.fds[0], slots.fds[1], slots.fds[2]};
    args.unshare_below = std::ranges::max(slots.fds) + 1;
    pid_t pid = clone_plain(plan, args, stack);
    release();
    return pid;
}

}  // namespace pkit::shell
