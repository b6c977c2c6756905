#pragma once
// Signals to runs, paced so that a mass stop cannot hold the loop.
//
// A shutdown or a group stop of ten thousand services asks for ten thousand kill()s
// in one pump. Each one that wakes a process can cost the sender the CPU until that
// process has exited (about 0.5 ms a kill on a small VM), so sent in one go they held
// the loop for seconds: no reaping, no control socket, no timers meanwhile. Here each
// loop turn sends what fits in a time budget; the rest waits, in order, for the next
// turns, between which the loop reaps, answers and fires timers. A signal that waited
// is sent only if its run is still there to receive it (the caller's check, made when
// it is sent): a run reaped meanwhile has a pid the kernel may have given to another.

#include <uv.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>

#include "daemon/shell/uv_handle.hpp"

namespace pkit::shell {

class SignalPace {
public:
    // One signal to send: it checks that its run is still there, then sends.
    using Send = std::function<void()>;

    // A turn sends while less than this has passed since its first signal (and at
    // least one): the loop comes back within a few milliseconds of it.
    static constexpr std::uint64_t k_default_budget_ns = 5'000'000;

    // `budget_ns`: the time a turn may spend; `per_turn`: at most this many a turn
    // (for tests; 0: no count bound).
    SignalPace(uv_loop_t* loop, std::uint64_t budget_ns = k_default_budget_ns,
               std::size_t per_turn = 0);

    SignalPace(const SignalPace&) = delete;
    SignalPace& operator=(const SignalPace&) = delete;

    // Sends now while this turn's budget lasts and nothing waits before it; otherwise
    // queues `send` behind the others, for the next turns.
    void submit(Send send);

    // Sends everything that waits, now (before an upgrade hands the runs over, or
    // pkitd exits).
    void flush();

    std::size_t waiting() const { return m_queue.size(); }

private:
    bool within_budget();
    void next_turn();

    uv_loop_t* m_loop;
    std::uint64_t m_budget_ns;
    std::size_t m_per_turn;
    std::deque<Send> m_queue;
    NextTurn m_more;
    // The current turn, as libuv's loop time (fixed within a turn), when its first
    // signal went and how many went.
    std::uint64_t m_turn = ~std::uint64_t{0};
    std::uint64_t m_turn_began = 0;
    std::size_t m_sent = 0;
};

}  // namespace pkit::shell
