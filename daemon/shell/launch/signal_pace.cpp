#include "daemon/shell/launch/signal_pace.hpp"

#include <utility>

namespace pkit::shell {

SignalPace::SignalPace(uv_loop_t* loop, std::uint64_t budget_ns, std::size_t per_turn)
    : m_loop(loop),
      m_budget_ns(budget_ns),
      m_per_turn(per_turn),
      m_more(loop, [this] { next_turn(); }) {}

bool SignalPace::within_budget() {
    const std::uint64_t turn = uv_now(m_loop);
    if (turn != m_turn) {
        m_turn = turn;
        m_sent = 0;
    }
    if (m_sent == 0) {
        m_turn_began = uv_hrtime();
        return true;
    }
    if (m_per_turn != 0 && m_sent >= m_per_turn) {
        return false;
    }
    return uv_hrtime() - m_turn_began < m_budget_ns;
}

void SignalPace::submit(Send send) {
    if (m_queue.empty() && within_budget()) {
        ++m_sent;
        send();
        return;
    }
    m_queue.push_back(std::move(send));
    m_more.schedule();
}

void SignalPace::next_turn() {
    // A fresh budget, even when libuv's clock has not moved since the last signal.
    m_turn = uv_now(m_loop);
    m_sent = 0;
    while (!m_queue.empty() && within_budget()) {
        Send send = std::move(m_queue.front());
        m_queue.pop_front();
        ++m_sent;
        send();  // may submit more: they queue behind the rest
    }
    if (!m_queue.empty()) {
        m_more.schedule();
    }
}

void SignalPace::flush() {
    m_more.cancel();
    while (!m_queue.empty()) {
        Send send = std::move(m_queue.front());
        m_queue.pop_front();
        send();
    }
}

}  // namespace pkit::shell
