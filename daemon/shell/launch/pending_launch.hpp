#pragma once
// Launches whose exec is not confirmed yet. The Spawner (or start_launch()) returns each
// cloned child with its report unread; PendingLaunches watches each child's close-on-exec report
// pipe from the loop (end of file: the exec succeeded; a record: it failed), so that a thousand
// services exec side by side instead of pkitd waiting for each exec in turn.
//
// A child that failed exits at once, and the Reaper may reap it before its report pipe
// is polled; a child that exec'd may even exit before that. So the daemon offers every
// reaped pid here first (on_exit): a pending launch is then resolved on the spot (its
// report was written before the child exited, so the read does not block), and the
// exit of a failed launch goes no further: it was never a run.

#include <sys/types.h>
#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <unordered_map>
#include <vector>

#include "daemon/shell/launch/launcher.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class PendingLaunches {
public:
    // Called once per launch with its outcome: the running child (pid and output fds,
    // owned by the callee from then on) or the failure. Must not throw (an exception is
    // swallowed) and must not destroy the PendingLaunches; it may add launches.
    using Callback = std::function<void(std::size_t service, std::uint64_t run,
                                        std::expected<Launched, LaunchFailure> outcome)>;
    // Called after an outcome found by the loop (not by on_exit or resolve_all), e.g. to
    // act on what the callback fed the Supervisor.
    using AfterLoop = std::function<void()>;

    PendingLaunches(uv_loop_t* loop, Callback callback, AfterLoop after_loop);
    // Closes the report and output fds of launches still pending; their children are
    // left to the reaper.
    ~PendingLaunches();

    PendingLaunches(const PendingLaunches&) = delete;
    PendingLaunches& operator=(const PendingLaunches&) = delete;

    // Watches `started`, a launch of run `run` of `service`, until its outcome is known.
    void add(std::size_t service, std::uint64_t run, StartedLaunch started);

    // A launch that failed before fork: the callback gets `failure` at the loop's next
    // turn (then AfterLoop) or at resolve_all(), never from inside this call, so that a
    // service restarted at once after such a failure is tried once a turn, not in a
    // loop that never gives the event loop back.
    void add_failed(std::size_t service, std::uint64_t run, LaunchFailure failure);

    // A reaped child. Resolves its launch first when it is pending. Returns true when the
    // exit is a failed launch's, which the caller must not treat as a run's exit.
    bool on_exit(pid_t pid);

    // Whether `pid` is a launch in flight here, or a failed launch's child not reaped yet.
    bool knows(pid_t pid) const;

    // Resolves every pending launch now, blocking until each child has exec'd or failed
    // (they do so side by side, so this waits about as long as the slowest one), and
    // reports the failures add_failed() holds. Returns how many were resolved.
    std::size_t resolve_all();
    // resolve_all() for the launches of one service only.
    std::size_t resolve_service(std::size_t service);

    std::size_t size() const { return m_pending.size() + m_failed_early.size(); }

private:
    struct Entry {
        Entry(PendingLaunches* owner, std::size_t service, std::uint64_t run,
              StartedLaunch started);
        ~Entry();
        PendingLaunches* owner;
        std::size_t service;
        std::uint64_t run;
        StartedLaunch started;
        UvHandle<uv_poll_t> poll;
    };

    struct FailedEarly {
        std::size_t service;
        std::uint64_t run;
        LaunchFailure failure;
    };

    static void on_poll(uv_poll_t* handle, int status, int events);
    // Runs the callback for every launch add_failed() holds; returns how many.
    std::size_t report_failed_early();
    // Reads the report of `pid`'s launch (blocking), forgets it and runs the callback.
    // Returns whether the launch failed.
    bool resolve(pid_t pid);

    uv_loop_t* m_loop;
    Callback m_callback;
    AfterLoop m_after_loop;
    std::unordered_map<pid_t, std::unique_ptr<Entry>> m_pending;
    // Children whose launch failed and that the reaper has not brought yet.
    std::vector<pid_t> m_failed;
    // Launches that failed before fork, reported at the next turn.
    std::vector<FailedEarly> m_failed_early;
    NextTurn m_report_early;
};

}  // namespace pkit::shell
