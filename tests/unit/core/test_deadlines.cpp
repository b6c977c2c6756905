// The Supervisor's indices (supervisor.hpp): next_deadline() and on_time() read an
// index of per-service deadlines and launch_ready() a set of waiting services, both
// refreshed only for the services an input touched. These tests hold them against a
// scan of every service after each input, so a deadline or a launch the indices
// missed fails here.

#include <doctest/doctest.h>

#include <map>
#include <random>

#include "daemon/core/supervisor.hpp"
#include "tests/unit/core/fake.hpp"

namespace pkit::core {
namespace {

using namespace test;

std::string text(std::optional<TimePoint> t) {
    if (!t) {
        return "none";
    }
    return std::to_string(
               std::chrono::duration_cast<std::chrono::milliseconds>(t->time_since_epoch())
                   .count()) +
           "ms";
}

// The earliest deadline of every service, retired ones included, and of the shutdown.
std::optional<TimePoint> scanned_deadline(const Supervisor& sup,
                                          std::optional<TimePoint> shutdown_deadline) {
    std::optional<TimePoint> next = shutdown_deadline;
    for (std::size_t i = 0; i < sup.size(); ++i) {
        if (auto due = sup.service(i).next_deadline()) {
            next = next ? std::min(*next, *due) : *due;
        }
    }
    return next;
}

bool group_busy(const Supervisor& sup, std::size_t service) {
    for (const Group& group : sup.groups()) {
        if (std::find(group.members.begin(), group.members.end(), service) != group.members.end()) {
            return group.busy();
        }
    }
    return false;
}

// What holds after every input, whatever the indices say:
// - next_deadline() is the earliest deadline of them all;
// - nothing is left waiting that could launch (settle() ends with launch_ready());
// - during a daemon-wide storm pause every pending restart is held to its end.
void check_after_input(const Supervisor& sup, std::optional<TimePoint> shutdown_deadline, Now now) {
    REQUIRE(text(sup.next_deadline()) == text(scanned_deadline(sup, shutdown_deadline)));
    if (sup.shutting_down()) {
        return;
    }
    for (std::size_t i : sup.start_order()) {
        const Service& s = sup.service(i);
        INFO("service " << s.name());
        bool could_launch = s.state() == State::waiting && s.desired_up() &&
                            sup.unsatisfied_dependencies(i).empty() && !group_busy(sup, i);
        REQUIRE_FALSE(could_launch);
    }
    std::optional<TimePoint> until = sup.daemon_storm_until();
    if (!until || now.mono >= *until) {
        return;
    }
    for (std::size_t i = 0; i < sup.size(); ++i) {
        const Service& s = sup.service(i);
        INFO("service " << s.name());
        bool to_hold = s.restart_pending() && s.desired_up() &&
                       (s.state() == State::waiting || s.state() == State::backoff ||
                        s.state() == State::storm_pause);
        if (to_hold) {
            REQUIRE(s.state() == State::storm_pause);
            REQUIRE(s.restart_at());
            REQUIRE(*s.restart_at() >= *until);
        }
    }
}

Now at_ms(std::int64_t ms) {
    return Now{TimePoint{} + std::chrono::milliseconds(ms), 1000.0 + ms / 1000.0};
}

TEST_CASE("deadlines: many services fire each at its own time, and only then") {
    // 40 services whose first runs crash at once: service k backs off (k + 1) * 10ms.
    std::vector<config::ServiceSpec> specs;
    for (int k = 0; k < 40; ++k) {
        config::ServiceSpec s = spec("s" + std::string(k < 10 ? "0" : "") + std::to_string(k));
        s.restart.backoff_initial = std::chrono::milliseconds((k + 1) * 10);
        specs.push_back(s);
    }
    Supervisor sup = supervisor(specs);
    sup.start(at_ms(0));
    sup.take_actions();
    for (std::size_t i = 0; i < sup.size(); ++i) {
        sup.on_spawned(i, 1, static_cast<pid_t>(100 + i), at_ms(0));
    }
    // In reverse, so the index is not filled in deadline order.
    for (std::size_t i = sup.size(); i-- > 0;) {
        sup.on_exit(static_cast<pid_t>(100 + i), exited(1), at_ms(0));
        check_after_input(sup, std::nullopt, at_ms(0));
    }
    sup.take_actions();
    CHECK(text(sup.next_deadline()) == "10ms");
    for (std::size_t k = 0; k < 40; ++k) {
        std::int64_t due = static_cast<std::int64_t>(k + 1) * 10;
        sup.on_time(at_ms(due - 1));  // early: nothing
        CHECK(take(sup).empty());
        sup.on_time(at_ms(due));
        CHECK(take(sup) == "spawn " + std::to_string(k) + " r2");
        check_after_input(sup, std::nullopt, at_ms(due));
    }
    CHECK(sup.next_deadline() == std::nullopt);
}

TEST_CASE("deadlines: services due at the same time fire in service order") {
    config::ServiceSpec s = spec("a");
    s.restart.backoff_initial = 100ms;
    config::ServiceSpec t = s;
    t.name = "b";
    config::ServiceSpec u = s;
    u.name = "c";
    Supervisor sup = supervisor({s, t, u});
    sup.start(at_ms(0));
    sup.on_spawned(0, 1, 100, at_ms(0));
    sup.on_spawned(1, 1, 101, at_ms(0));
    sup.on_spawned(2, 1, 102, at_ms(0));
    sup.on_exit(102, exited(1), at_ms(0));
    sup.on_exit(100, exited(1), at_ms(0));
    sup.on_exit(101, exited(1), at_ms(0));
    sup.take_actions();
    sup.on_time(at_ms(500));
    CHECK(take(sup) == "spawn 0 r2 | spawn 1 r2 | spawn 2 r2");
}

TEST_CASE("deadlines: a deadline moves with stop, start, restart and a run timeout") {
    config::ServiceSpec s = spec("web");
    s.timeout = 10s;
    s.stop.timeout = 2s;
    Supervisor sup = supervisor({s, spec("zidle")});  // web 0, zidle 1
    sup.start(at_ms(0));
    sup.on_spawned(0, 1, 100, at_ms(0));
    sup.on_spawned(1, 1, 101, at_ms(0));
    sup.take_actions();
    CHECK(text(sup.next_deadline()) == "10000ms");  // web's run timeout

    sup.stop_service(0, at_ms(1000));
    CHECK(text(sup.next_deadline()) == "3000ms");  // its SIGKILL escalation
    sup.on_exit(100, killed(SIGTERM), at_ms(1500));
    CHECK(sup.next_deadline() == std::nullopt);

    sup.start_service(0, at_ms(2000));
    sup.on_spawned(0, 2, 102, at_ms(2000));
    CHECK(text(sup.next_deadline()) == "12000ms");

    sup.restart_service(0, at_ms(3000));
    CHECK(text(sup.next_deadline()) == "5000ms");
    sup.on_exit(102, killed(SIGTERM), at_ms(3100));
    sup.on_spawned(0, 3, 103, at_ms(3100));
    CHECK(text(sup.next_deadline()) == "13100ms");
    sup.take_actions();

    // The run timeout fires at its time and nowhere else.
    sup.on_time(at_ms(13099));
    CHECK(take(sup).empty());
    sup.on_time(at_ms(13100));
    CHECK(take(sup) == "signal 0 r3 pid 103 TERM group +cont");
    CHECK(text(sup.next_deadline()) == "15100ms");
    sup.on_time(at_ms(15100));
    CHECK(take(sup) == "signal 0 r3 pid 103 KILL group");
    CHECK(sup.next_deadline() == std::nullopt);
}

TEST_CASE("deadlines: a group restart, a reload and a shutdown move them too") {
    config::ServiceSpec a = spec("a");
    a.stop.timeout = 1s;
    config::ServiceSpec b = spec("b");
    b.stop.timeout = 2s;
    config::DaemonSpec daemon;
    daemon.groups.push_back(config::GroupSpec{
        .name = "g", .strategy = config::Strategy::one_for_all, .members = {"a", "b"}});
    daemon.shutdown_timeout = 20s;
    config::Tree t = tree({a, b, spec("solo")});
    t.daemon = daemon;
    Supervisor sup(t, [] { return 0.5; });
    sup.start(at_ms(0));
    sup.on_spawned(0, 1, 100, at_ms(0));
    sup.on_spawned(1, 1, 101, at_ms(0));
    sup.on_spawned(2, 1, 102, at_ms(0));
    sup.take_actions();
    CHECK(sup.next_deadline() == std::nullopt);

    // a crashes: its backoff, and b is stopped by the strategy.
    sup.on_exit(100, exited(1), at_ms(1000));
    check_after_input(sup, std::nullopt, at_ms(1000));
    CHECK(text(sup.next_deadline()) == "1200ms");
    CHECK(sup.service(1).state() == State::stopping);
    sup.on_time(at_ms(1200));  // a's backoff ends; b still stopping holds the group
    check_after_input(sup, std::nullopt, at_ms(1200));
    CHECK(text(sup.next_deadline()) == "3000ms");  // b's SIGKILL
    sup.on_exit(101, killed(SIGTERM), at_ms(1500));
    check_after_input(sup, std::nullopt, at_ms(1500));
    CHECK(sup.next_deadline() == std::nullopt);
    sup.on_spawned(0, 2, 103, at_ms(1500));
    sup.on_spawned(1, 2, 104, at_ms(1500));
    sup.take_actions();

    // A reload that changes solo: its stop escalation is a deadline, and the
    // replacement's run timeout one after it.
    config::ServiceSpec solo = spec("solo");
    solo.timeout = 7s;
    config::Tree changed = tree({a, b, solo});
    changed.daemon = daemon;
    sup.reload(changed, at_ms(2000));
    check_after_input(sup, std::nullopt, at_ms(2000));
    CHECK(text(sup.next_deadline()) == "7000ms");
    sup.on_exit(102, killed(SIGTERM), at_ms(2500));
    check_after_input(sup, std::nullopt, at_ms(2500));
    sup.on_spawned(2, 2, 105, at_ms(2500));
    CHECK(text(sup.next_deadline()) == "9500ms");
    sup.take_actions();

    // Shutdown: the deadline is the earliest of the stop escalations and the shutdown's.
    sup.shutdown(at_ms(3000));
    std::optional<TimePoint> shutdown_deadline = at_ms(23000).mono;
    check_after_input(sup, shutdown_deadline, at_ms(3000));
    // b and solo stop first (nothing starts after them): b's 2s, solo's 5s.
    CHECK(text(sup.next_deadline()) == "5000ms");
    sup.on_exit(104, killed(SIGTERM), at_ms(3100));
    check_after_input(sup, shutdown_deadline, at_ms(3100));
    CHECK(text(sup.next_deadline()) == "4100ms");  // a, stopped once b is down, 1s
    sup.on_exit(103, killed(SIGTERM), at_ms(3200));
    sup.on_exit(105, killed(SIGTERM), at_ms(3300));
    check_after_input(sup, shutdown_deadline, at_ms(3300));
    CHECK(take(sup).ends_with("exit 0"));
    CHECK(text(sup.next_deadline()) == "23000ms");  // only the shutdown's is left
}

TEST_CASE("deadlines: a daemon-wide storm pause holds restarts decided before and during it") {
    config::DaemonSpec daemon;
    daemon.storm.pause = 10s;
    daemon.storm.threshold = 3.0;
    std::vector<config::ServiceSpec> specs;
    for (int k = 0; k < 6; ++k) {
        config::ServiceSpec s = spec("s" + std::to_string(k));
        s.restart.backoff_initial = 5s;
        specs.push_back(s);
    }
    Supervisor sup = supervisor(specs, daemon);
    sup.start(at_ms(0));
    for (std::size_t i = 0; i < 6; ++i) {
        sup.on_spawned(i, 1, static_cast<pid_t>(100 + i), at_ms(0));
    }
    sup.on_exit(100, exited(1), at_ms(1000));
    sup.on_exit(101, exited(1), at_ms(1000));
    CHECK(text(sup.next_deadline()) == "6000ms");
    sup.on_exit(102, exited(1), at_ms(1000));  // the third crash trips the pause
    REQUIRE(sup.daemon_storm_pauses() == 1);
    check_after_input(sup, std::nullopt, at_ms(1000));
    CHECK(text(sup.next_deadline()) == "11000ms");
    sup.on_exit(103, exited(1), at_ms(2000));  // decided during the pause
    check_after_input(sup, std::nullopt, at_ms(2000));
    CHECK(sup.service(3).state() == State::storm_pause);
    CHECK(text(sup.service(3).restart_at()) == "11000ms");
    sup.on_exit(104, exited(1), at_ms(8000));  // its backoff outlasts the pause
    check_after_input(sup, std::nullopt, at_ms(8000));
    CHECK(text(sup.service(4).restart_at()) == "13000ms");
    sup.take_actions();
    sup.on_time(at_ms(11000));
    CHECK(take(sup) == "spawn 0 r2 | spawn 1 r2 | spawn 2 r2 | spawn 3 r2");
    CHECK(text(sup.next_deadline()) == "13000ms");
}

// Drives a Supervisor over a random tree with random inputs, as the shell would:
// spawns answered, exits of live runs, deadlines reached (or passed), probe results,
// notify messages, operator commands, reloads and at last a shutdown. Every input is
// followed by check_after_input().
class Simulation {
public:
    explicit Simulation(unsigned seed) : m_rng(seed), m_sup(make_tree(), [] { return 0.5; }) {}

    // The actions of the whole run, one input a line.
    const std::string& log() const { return m_log; }

    void run(int steps) {
        m_sup.start(now());
        after_input("start");
        for (int k = 0; k < steps && !m_exited; ++k) {
            if (k == steps * 9 / 10) {
                shutdown();
                continue;
            }
            step();
        }
        // Let the shutdown finish: every run ends, deadlines pass.
        for (int k = 0; k < 500 && !m_exited; ++k) {
            if (!m_live.empty() && chance(0.7)) {
                exit_one();
            } else {
                advance();
            }
        }
    }

private:
    bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(m_rng) < p; }
    std::size_t pick(std::size_t n) {
        return std::uniform_int_distribution<std::size_t>(0, n - 1)(m_rng);
    }
    std::int64_t between(std::int64_t lo, std::int64_t hi) {
        return std::uniform_int_distribution<std::int64_t>(lo, hi)(m_rng);
    }
    Now now() const { return at_ms(m_ms); }

    config::ServiceSpec random_spec(std::string name, int index) {
        config::ServiceSpec s = spec(std::move(name));
        s.restart.backoff_initial = std::chrono::milliseconds(between(20, 2000));
        s.restart.max_backoff = 5s;
        s.restart.policy =
            std::array{config::RestartPolicy::on_crash, config::RestartPolicy::always,
                       config::RestartPolicy::never}[pick(3)];
        if (chance(0.2)) {
            s.restart.max_restarts = static_cast<int>(between(2, 8));
            s.restart.within = 20s;
        }
        if (chance(0.3)) {
            s.timeout = std::chrono::milliseconds(between(500, 8000));
        }
        switch (pick(3)) {
            case 0:
                break;
            case 1:
                s.ready.edit().notify = true;
                s.ready.edit().timeout = std::chrono::milliseconds(between(500, 4000));
                break;
            case 2:
                s.ready.edit().probe.kind = config::ProbeKind::exec;
                s.ready.edit().probe.argv = {"/bin/true"};
                s.ready.edit().probe.interval = std::chrono::milliseconds(between(100, 900));
                s.ready.edit().timeout = std::chrono::milliseconds(between(500, 4000));
                break;
        }
        switch (pick(3)) {
            case 0:
                break;
            case 1:
                s.health.edit().kind = config::ProbeKind::exec;
                s.health.edit().argv = {"/bin/true"};
                s.health.edit().interval = std::chrono::milliseconds(between(200, 3000));
                s.health.edit().failures = static_cast<int>(between(1, 3));
                break;
            case 2:
                s.health.edit().kind = config::ProbeKind::watchdog;
                s.health.edit().watchdog = std::chrono::milliseconds(between(500, 3000));
                s.health.edit().failures = static_cast<int>(between(1, 3));
                break;
        }
        s.stop.timeout = std::chrono::milliseconds(between(100, 4000));
        if (chance(0.3)) {
            s.stop.mode = config::StopMode::process;
        }
        if (chance(0.15)) {
            s.storm.edit().pause = std::chrono::milliseconds(between(1000, 6000));
            s.storm.edit().threshold = 3.0;
        }
        s.autostart = chance(0.9);
        s.escalate = chance(0.03);
        // Dependencies only on services earlier in name order: no cycles.
        for (int d = 0; d < index; ++d) {
            if (chance(0.08)) {
                s.after.push_back(m_names[static_cast<std::size_t>(d)]);
            }
        }
        return s;
    }

    config::Tree make_tree() {
        for (int k = 0; k < 24; ++k) {
            m_names.push_back("s" + std::string(k < 10 ? "0" : "") + std::to_string(k));
        }
        std::vector<config::ServiceSpec> specs;
        for (std::size_t k = 0; k < m_names.size(); ++k) {
            specs.push_back(random_spec(m_names[k], static_cast<int>(k)));
        }
        config::Tree t = tree(specs);
        config::DaemonSpec& daemon = t.daemon;
        daemon.storm.pause = std::chrono::milliseconds(between(1000, 8000));
        daemon.storm.threshold = 6.0;
        daemon.storm.decay = 10s;
        daemon.root.max_restarts = static_cast<int>(between(0, 3));
        daemon.root.within = 30s;
        if (chance(0.5)) {
            daemon.shutdown_timeout = std::chrono::milliseconds(between(1000, 10000));
        }
        // Two groups of three, members in name order (their start order).
        for (std::size_t g = 0; g < 2; ++g) {
            config::GroupSpec group;
            group.name = "g" + std::to_string(g);
            group.strategy =
                std::array{config::Strategy::one_for_one, config::Strategy::one_for_all,
                           config::Strategy::rest_for_one}[pick(3)];
            for (std::size_t m = 0; m < 3; ++m) {
                group.members.push_back(m_names[4 + g * 8 + m * 2]);
            }
            if (chance(0.7)) {
                group.max_restarts = static_cast<int>(between(2, 6));
                group.within = 10s;
            }
            daemon.groups.push_back(group);
        }
        m_shutdown_timeout = daemon.shutdown_timeout;
        m_tree = t;
        return t;
    }

    void after_input(const std::string& what) {
        INFO("seed step: " << what << " at " << m_ms << "ms");
        if (!m_was_shutting_down && m_sup.shutting_down()) {
            m_was_shutting_down = true;
            if (m_shutdown_timeout > Duration::zero()) {
                m_shutdown_deadline = now().mono + m_shutdown_timeout;
            }
        }
        std::vector<Action> actions = m_sup.take_actions();
        m_log += what + ":";
        for (const Action& a : actions) {
            if (const auto* spawn = std::get_if<SpawnAction>(&a)) {
                m_spawns.push_back(*spawn);
            } else if (const auto* probe = std::get_if<ProbeAction>(&a)) {
                m_probes.push_back(*probe);
                m_log +=
                    " probe " + std::to_string(probe->service) + " r" + std::to_string(probe->run);
                continue;
            } else if (std::holds_alternative<ExitAction>(a)) {
                m_exited = true;
            }
            m_log += " " + describe(a);
        }
        m_log += "\n";
        check_after_input(m_sup, m_shutdown_deadline, now());
    }

    // Time passes: mostly to the next deadline exactly, sometimes short of it or past it.
    void advance() {
        std::optional<TimePoint> next = m_sup.next_deadline();
        if (next && chance(0.6)) {
            std::int64_t due =
                std::chrono::duration_cast<std::chrono::milliseconds>(next->time_since_epoch())
                    .count();
            m_ms = std::max(m_ms, due + (chance(0.2) ? between(-5, 50) : 0));
        } else {
            m_ms += between(1, 1500);
        }
        if (m_shutdown_deadline && now().mono >= *m_shutdown_deadline) {
            m_shutdown_deadline.reset();  // on_time passes it
        }
        m_sup.on_time(now());
        after_input("time");
    }

    void exit_one() {
        auto it = std::next(m_live.begin(), static_cast<std::ptrdiff_t>(pick(m_live.size())));
        pid_t pid = it->first;
        m_live.erase(it);
        ProcessExit status =
            std::array{exited(0), exited(1), killed(SIGTERM), killed(SIGKILL)}[pick(4)];
        m_sup.on_exit(pid, status, now());
        after_input("exit " + std::to_string(pid));
    }

    void spawn_one() {
        std::size_t k = pick(m_spawns.size());
        SpawnAction spawn = m_spawns[k];
        m_spawns.erase(m_spawns.begin() + static_cast<std::ptrdiff_t>(k));
        if (chance(0.1)) {
            m_sup.on_launch_failed(spawn.service, spawn.run,
                                   LaunchFailure{config::LaunchError::not_found, "not_found"},
                                   now());
            after_input("launch_failed");
            return;
        }
        pid_t pid = m_next_pid++;
        m_live[pid] = spawn.service;
        m_sup.on_spawned(spawn.service, spawn.run, pid, now());
        after_input("spawned " + std::to_string(pid));
    }

    void probe_one() {
        std::size_t k = pick(m_probes.size());
        ProbeAction probe = m_probes[k];
        m_probes.erase(m_probes.begin() + static_cast<std::ptrdiff_t>(k));
        m_sup.on_probe_result(probe.service, probe.run, probe.purpose, chance(0.7), now());
        after_input("probe result");
    }

    void notify_one() {
        std::size_t service = pick(m_sup.size());
        NotifyMessage message;
        message.ready = chance(0.5);
        message.watchdog = chance(0.5);
        if (chance(0.2)) {
            message.extend_timeout_usec = static_cast<std::uint64_t>(between(1000, 3000000));
        }
        m_sup.on_notify(service, m_sup.service(service).run(), message, now());
        after_input("notify");
    }

    void operator_command() {
        std::size_t service = pick(m_sup.size());
        switch (pick(3)) {
            case 0:
                m_sup.start_service(service, now());
                break;
            case 1:
                m_sup.stop_service(service, now());
                break;
            case 2:
                m_sup.restart_service(service, now());
                break;
        }
        after_input("operator");
    }

    // Drops a service, adds a new one, changes two (one maybe a group member).
    void reload() {
        config::Tree t = m_tree;
        std::size_t drop = pick(t.services.size());
        std::string dropped = t.services[drop].name;
        t.services.erase(t.services.begin() + static_cast<std::ptrdiff_t>(drop));
        for (config::GroupSpec& group : t.daemon.groups) {
            std::erase(group.members, dropped);
        }
        for (config::ServiceSpec& s : t.services) {
            std::erase(s.after, dropped);
        }
        for (int k = 0; k < 2; ++k) {
            config::ServiceSpec& s = t.services[pick(t.services.size())];
            s.restart.backoff_initial = std::chrono::milliseconds(between(20, 2000));
            s.timeout = chance(0.5) ? std::chrono::milliseconds(between(500, 8000)) : 0s;
        }
        std::string added = "z" + std::to_string(m_next_pid);
        m_names.push_back(added);
        t.services.push_back(random_spec(added, 0));
        m_tree = tree(t.services);
        m_tree.daemon = t.daemon;
        m_sup.reload(m_tree, now());
        after_input("reload");
    }

    void shutdown() {
        m_sup.shutdown(now());
        after_input("shutdown");
    }

    void step() {
        m_ms += between(0, 20);
        double r = std::uniform_real_distribution<double>(0, 1)(m_rng);
        if (r < 0.2 && !m_spawns.empty()) {
            spawn_one();
        } else if (r < 0.35 && !m_live.empty()) {
            exit_one();
        } else if (r < 0.45 && !m_probes.empty()) {
            probe_one();
        } else if (r < 0.52) {
            notify_one();
        } else if (r < 0.6) {
            operator_command();
        } else if (r < 0.61) {
            reload();
        } else if (r < 0.62) {
            m_sup.on_output(pick(m_sup.size()), 1, Stream::stdout_, "line", now().wall);
            after_input("output");
        } else {
            advance();
        }
    }

    std::mt19937 m_rng;
    std::vector<std::string> m_names;
    config::Tree m_tree;
    Duration m_shutdown_timeout{};
    Supervisor m_sup;
    std::int64_t m_ms = 0;
    std::vector<SpawnAction> m_spawns;
    std::vector<ProbeAction> m_probes;
    std::map<pid_t, std::size_t> m_live;
    pid_t m_next_pid = 1000;
    bool m_was_shutting_down = false;
    bool m_exited = false;
    std::optional<TimePoint> m_shutdown_deadline;
    std::string m_log;
};

TEST_CASE("deadlines: random inputs never leave the indices behind a scan") {
    for (unsigned seed = 1; seed <= 60; ++seed) {
        CAPTURE(seed);
        Simulation sim(seed);
        sim.run(1500);
    }
}

}  // namespace
}  // namespace pkit::core
