// Service: start_first replacements (SPEC §14; service_table.hpp's start_first grid). The
// current run's inputs stay where they are; this file holds what concerns the
// draining run: taking it aside, stopping it once the new run is ready, its end, and
// making it current again when the new run fails.

#include <csignal>

#include "daemon/core/service.hpp"

namespace pkit::core {

bool Service::can_replace(const config::ServiceSpec* spec) const {
    // Runs still ending from earlier replacements may remain: only one may be waiting
    // for its successor.
    if (m_phase != Phase::running || !m_ready || m_pid == 0 || replacing() || m_no_restarts) {
        return false;
    }
    const config::ServiceSpec& next = spec != nullptr ? *spec : m_spec;
    return next.restart.order == config::RestartOrder::start_first &&
           next.type == config::ServiceType::service;
}

bool Service::begin_replacement(Now now, Actions& out, config::ServiceSpec* spec) {
    (void)now;
    (void)out;
    if (!can_replace(spec)) {
        return false;
    }
    if (spec != nullptr) {
        m_spec = std::move(*spec);
        reset_counters();
    }
    m_draining.push_back(DrainingRun{m_run, m_pid, m_started, m_started_wall, false, std::nullopt});
    m_replacement = std::make_unique<Replacement>(Replacement{m_run, 0, false, std::nullopt});
    // The current run is the new one from now on, launched by the Supervisor as any
    // waiting service is.
    m_pid = 0;
    m_ready = false;
    m_killing = KilledBy::none;
    m_timers = {};
    m_match_output = false;
    m_desired_up = true;
    m_after_stop = AfterStop::stay_stopped;
    m_stopped.reset();
    m_phase = Phase::waiting;
    return true;
}

void Service::on_ready_reached(Now now, Actions& out) {
    if (!replacing()) {
        return;
    }
    signal_draining(m_draining.size() - 1, now, out, m_spec.stop.signal);
    if (m_replacement && !m_replacement->done) {
        m_replacement->done = true;
    }
}

void Service::stop_draining(Now now, Actions& out, int signo) {
    for (std::size_t i = 0; i < m_draining.size(); ++i) {
        signal_draining(i, now, out, signo);
    }
}

void Service::signal_draining(std::size_t i, Now now, Actions& out, int signo) {
    DrainingRun& d = m_draining[i];
    const bool group = m_spec.stop.mode == config::StopMode::group;
    if (signo == SIGKILL) {
        d.stopping = true;
        d.kill.reset();
        out.push_back(SignalAction{m_index, d.run, d.pid, SIGKILL, group, false});
        return;
    }
    if (d.stopping) {
        return;
    }
    d.stopping = true;
    out.push_back(SignalAction{m_index, d.run, d.pid, signo, group, true});
    d.kill = now.mono + m_spec.stop.timeout;
}

void Service::end_draining(std::size_t i, const ProcessExit& status, Now now, Actions& out) {
    const DrainingRun d = m_draining[i];
    m_draining.erase(m_draining.begin() + static_cast<std::ptrdiff_t>(i));
    ExitRecord exit;
    exit.code = status.code;
    exit.signal = status.signal;
    exit.duration = d.started ? now.mono - *d.started : Duration::zero();
    exit.at = now.wall;
    exit.killed_by = d.stopping ? KilledBy::operator_ : KilledBy::none;
    m_last_exit = exit;
    Event e = event(EventType::exited, now);
    e.run = d.run;
    e.pid = d.pid;
    e.exit = exit;
    emit(out, std::move(e));
    if (m_spec.stop.mode == config::StopMode::group) {
        out.push_back(CleanupGroupAction{m_index, d.pid, m_spec.stop.signal, m_spec.stop.timeout});
    }
}

void Service::restore_draining(const std::string& why, Now now, Actions& out) {
    const DrainingRun d = m_draining.back();
    m_draining.pop_back();
    m_run = d.run;
    m_pid = d.pid;
    m_started = d.started;
    m_started_wall = d.started_wall;
    m_ready = true;
    m_killing = KilledBy::none;
    m_phase = Phase::running;
    m_timers = {};
    if (m_spec.timeout > Duration::zero() && d.started) {
        timer(Timer::run_timeout) = *d.started + m_spec.timeout;
    }
    start_liveness(now);
    (void)out;
    if (m_replacement) {
        m_replacement->done = true;
        m_replacement->failure = why;
    }
}

}  // namespace pkit::core
