#pragma once
// The daemon's one deadline timer (ARCHITECTURE.md, "One deadline timer"): armed after
// every pump at the earliest of the core's next deadline (restarts, stop escalations,
// timeouts, probes, schedules' ticks) and each DeadlineOwner's (a run's leftovers, a
// held exit's cgroup kill), and the wake-ups the control room asked for (a `wait`'s
// `within`). When it fires, each owner's due deadlines go first, in the order they
// were added, then Fired hands the moment to the core (on_time) and pumps. A new
// capability with deadlines of its own is one more DeadlineOwner.

#include <functional>
#include <optional>
#include <queue>
#include <vector>

#include "daemon/core/types.hpp"
#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class DeadlineOwner {
public:
    // The earliest deadline not yet acted on, if any.
    virtual std::optional<core::TimePoint> next_deadline() const = 0;
    // Acts on every deadline due at `now`.
    virtual void on_time(core::TimePoint now) = 0;

protected:
    ~DeadlineOwner() = default;
};

class Deadlines {
public:
    using Clock = std::function<core::Now()>;
    // The timer fired at `now`, after the owners' on_time: the core's turn and a pump.
    using Fired = std::function<void(core::Now now)>;

    Deadlines(uv_loop_t* loop, Clock clock, Fired fired);
    Deadlines(const Deadlines&) = delete;
    Deadlines& operator=(const Deadlines&) = delete;

    // `owner` is asked for its deadline at each arm() and told the time when the timer
    // fires, after the owners added before it. It must outlive this object.
    void add(DeadlineOwner& owner);
    // The timer fires at `deadline` (or earlier); dropped once passed. A wake-up nobody
    // needs any more costs one firing.
    void wake_at(core::TimePoint deadline);
    // Arms the timer at the earliest of `core_next`, the owners' deadlines and the
    // wake-ups; stops it when there is none. Rounded up to the millisecond, and at least
    // 1 ms when called from its own callback: libuv (before 1.45) would run a 0 ms timer
    // again in the same pass, before any I/O.
    void arm(std::optional<core::TimePoint> core_next);
    // Whether the timer is armed (for tests).
    bool armed() const { return m_timer.active(); }

private:
    void on_timer();

    Clock m_clock;
    Fired m_fired;
    Timer m_timer;
    std::vector<DeadlineOwner*> m_owners;
    std::priority_queue<core::TimePoint, std::vector<core::TimePoint>, std::greater<>> m_wake_ups;
    bool m_in_timer = false;
};

}  // namespace pkit::shell
