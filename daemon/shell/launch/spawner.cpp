#include "daemon/shell/launch/spawner.hpp"

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <system_error>
#include <utility>

namespace pkit::shell {

Spawner::Spawner(uv_loop_t* loop, Ready ready) : m_ready(std::move(ready)), m_async(this) {
    m_async.init(uv_async_init, loop, &Spawner::on_async);
}

Spawner::~Spawner() {
    {
        std::lock_guard lock(m_mutex);
        m_stopping = true;
    }
    m_wake.notify_all();
    for (std::thread& thread : m_threads) {
        thread.join();
    }
    for (Outcome& outcome : m_done) {
        if (outcome.started) {
            close_fds({outcome.started->stdout_fd, outcome.started->stderr_fd,
                       outcome.started->report_fd});
        }
    }
    // m_queue's PreparedLaunches close their fds as they go.
}

std::expected<void, int> Spawner::start(std::size_t threads) {
    if (!m_threads.empty()) {
        return {};
    }
    // The thread inherits this mask: no signal of pkitd's is ever handled there, and its
    // children start with every signal blocked, as clone_child requires.
    sigset_t all;
    sigset_t saved;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &saved);
    // Before the first launch opens its pipes: the slots take low numbers.
    reserve_low_slots();
    int error = 0;
    for (std::size_t i = 0; i < std::max<std::size_t>(1, threads); ++i) {
        try {
            m_threads.emplace_back([this] { work(); });
        } catch (const std::system_error& e) {
            error = e.code().value();
            break;
        }
    }
    pthread_sigmask(SIG_SETMASK, &saved, nullptr);
    if (m_threads.empty()) {
        return std::unexpected(error);
    }
    return {};
}

void Spawner::submit(std::size_t service, std::uint64_t run,
                     std::unique_ptr<PreparedLaunch> prepared) {
    std::uint64_t ticket = ++m_submitted;
    m_unfinished.push_back(Ticket{ticket, service});
    if (m_threads.empty()) {
        // No thread: spawn here, the outcome still reported from the loop.
        Outcome outcome{ticket, service, run, spawn_prepared(*prepared)};
        {
            std::lock_guard lock(m_mutex);
            m_done.push_back(std::move(outcome));
        }
        uv_async_send(m_async.get());
        return;
    }
    {
        std::lock_guard lock(m_mutex);
        m_queue.push_back(Job{ticket, service, run, std::move(prepared)});
    }
    m_wake.notify_one();
}

std::vector<Spawner::Outcome> Spawner::take() {
    std::vector<Outcome> done;
    {
        std::lock_guard lock(m_mutex);
        done.swap(m_done);
    }
    for (const Outcome& outcome : done) {
        std::erase_if(m_unfinished, [&](const Ticket& t) { return t.number == outcome.ticket; });
    }
    return done;
}

void Spawner::wait_until(std::uint64_t ticket) {
    // Done when neither queued nor being cloned (the queue is in ticket order).
    std::unique_lock lock(m_mutex);
    m_finished.wait(lock, [&] {
        return (m_queue.empty() || m_queue.front().ticket > ticket) &&
               std::ranges::none_of(m_cloning, [&](std::uint64_t t) { return t <= ticket; });
    });
}

void Spawner::wait_all() {
    if (!m_unfinished.empty()) {
        wait_until(m_unfinished.back().number);
    }
}

void Spawner::wait_service(std::size_t service) {
    auto last = std::find_if(m_unfinished.rbegin(), m_unfinished.rend(),
                             [service](const Ticket& t) { return t.service == service; });
    if (last != m_unfinished.rend()) {
        wait_until(last->number);
    }
}

void Spawner::work() {
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
        if (m_stopping) {
            return;
        }
        Job job = std::move(m_queue.front());
        m_queue.pop_front();
        m_cloning.push_back(job.ticket);
        lock.unlock();
        // The only wait: the clone returns once the child has exec'd or failed.
        Outcome outcome{job.ticket, job.service, job.run, spawn_prepared(*job.prepared)};
        job.prepared.reset();
        lock.lock();
        std::erase(m_cloning, job.ticket);
        m_done.push_back(std::move(outcome));
        m_finished.notify_all();
        // uv_async_send coalesces: one callback on the loop for any number of sends.
        uv_async_send(m_async.get());
    }
}

void Spawner::on_async(uv_async_t* handle) {
    auto* self = static_cast<Spawner*>(handle->data);
    if (self == nullptr || !self->m_ready) {
        return;
    }
    try {
        self->m_ready();
    } catch (...) {
    }
}

}  // namespace pkit::shell
