#include "daemon/shell/deadlines/deadlines.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace pkit::shell {

Deadlines::Deadlines(uv_loop_t* loop, Clock clock, Fired fired)
    : m_clock(std::move(clock)), m_fired(std::move(fired)), m_timer(loop) {}

void Deadlines::add(DeadlineOwner& owner) {
    m_owners.push_back(&owner);
}

void Deadlines::wake_at(core::TimePoint deadline) {
    m_wake_ups.push(deadline);
}

void Deadlines::on_timer() {
    ScopedFlag in_timer(m_in_timer);
    core::Now t = m_clock();
    for (DeadlineOwner* owner : m_owners) {
        owner->on_time(t.mono);
    }
    while (!m_wake_ups.empty() && m_wake_ups.top() <= t.mono) {
        m_wake_ups.pop();  // the pump that follows answers what was waiting for it
    }
    m_fired(t);
}

void Deadlines::arm(std::optional<core::TimePoint> next) {
    for (const DeadlineOwner* owner : m_owners) {
        if (auto due = owner->next_deadline(); due && (!next || *due < *next)) {
            next = due;
        }
    }
    if (!m_wake_ups.empty() && (!next || m_wake_ups.top() < *next)) {
        next = m_wake_ups.top();  // a `wait` request's `within`
    }
    if (!next) {
        m_timer.stop();
        return;
    }
    auto left = *next - std::chrono::steady_clock::now();
    // Round up: a timer that fires a hair early would only find nothing due and re-arm.
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    std::int64_t least = m_in_timer ? 1 : 0;
    m_timer.start(static_cast<std::uint64_t>(std::max<std::int64_t>(least, ms)),
                  [this] { on_timer(); });
}

}  // namespace pkit::shell
